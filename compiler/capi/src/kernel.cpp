// The C API's kernels: creation, source locations, arguments, constexpr parameters, insertion.
// SPDX-License-Identifier: Apache-2.0
#include "handles.h"

#include "tl/ir/verifier.h" // fits

using namespace tl;
using capi::guard;
using capi::make_status;
using capi::to_type;
using capi::unwrap;
using capi::wrap;
using ir::ScalarKind;
using ir::Type;

extern "C" {

tl_cstatus tl_kernel_create(tl_module module, const char *name, tl_kernel *out_kernel) {
  if (!module || !name || !out_kernel)
    return make_status("tl_kernel_create: null argument");
  *out_kernel = nullptr;
  if (module->module->find_kernel(name))
    return make_status("tl_kernel_create: the module already has a kernel '" + std::string(name) +
                       "'");
  ir::Location loc;
  loc.file = std::make_shared<const std::string>("<capi>");
  ir::Kernel *k = module->module->add_kernel(name, loc);
  *out_kernel = &module->kernels.emplace_back(k);
  return nullptr;
}

void tl_kernel_set_location(tl_kernel kernel, const char *file, int32_t line, int32_t col) {
  if (!kernel)
    return;
  ir::Location loc;
  loc.file = std::make_shared<const std::string>(file ? file : "<unknown>");
  loc.line = line;
  loc.col = col;
  kernel->loc = loc;
  kernel->builder.set_location(loc);
}

tl_cstatus tl_kernel_add_arg(tl_kernel kernel, const char *name, const tl_ir_type *type,
                             tl_ir_value *out_value) {
  if (!kernel || !type || !out_value)
    return make_status("tl_kernel_add_arg: null argument");
  *out_value = nullptr;
  Type t;
  if (std::string e = to_type(type, &t); !e.empty())
    return make_status("tl_kernel_add_arg: " + e);
  return guard("tl_kernel_add_arg", [&]() -> tl_cstatus {
    *out_value = wrap(kernel->builder.add_argument(t, name ? name : ""));
    return nullptr;
  });
}

tl_cstatus tl_kernel_add_constexpr(tl_kernel kernel, const char *name, uint32_t dtype, int64_t i,
                                   double f) {
  if (!kernel || !name)
    return make_status("tl_kernel_add_constexpr: null argument");
  if (dtype >= TL_DTYPE_COUNT)
    return make_status("tl_kernel_add_constexpr: invalid dtype");
  if (kernel->kernel->find_constexpr(name))
    return make_status("tl_kernel_add_constexpr: duplicate parameter '" + std::string(name) + "'");
  const auto elem = static_cast<ScalarKind>(dtype);
  ir::ConstexprParam p{name, elem, int64_t(0)};
  if (ir::is_float(elem))
    p.value = f;
  else if (!ir::fits(elem, i))
    return make_status("tl_kernel_add_constexpr: " + std::to_string(i) + " does not fit " +
                       std::string(ir::scalar_name(elem)));
  else
    p.value = i;
  kernel->kernel->constexprs().push_back(std::move(p));
  return nullptr;
}

void tl_kernel_set_insertion_block(tl_kernel kernel, tl_ir_block block) {
  if (kernel)
    kernel->builder.set_insertion_point_to_end(block ? unwrap(block) : kernel->kernel->body());
}
} // extern "C"
