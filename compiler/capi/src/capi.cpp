// The compiler C API (tl/compiler.h) over the IR builder, parser, verifier and compile pipeline.
// SPDX-License-Identifier: Apache-2.0
#include "tl/compiler.h"

#include "tl/compiler/pipeline.h"
#include "tl/ir/builder.h"
#include "tl/ir/infer.h"
#include "tl/ir/parser.h"
#include "tl/ir/printer.h"
#include "tl/ir/verifier.h"

#include <cstdlib>
#include <cstring>
#include <list>
#include <memory>

using namespace tl;
using ir::Opcode;
using ir::ScalarKind;
using ir::Type;

struct tl_cstatus_s {
  std::string message;
};

/// One kernel being built: its builder and the current source location.
struct tl_kernel_s {
  ir::Kernel *kernel;
  ir::Builder builder;
  ir::Location loc; // where the front end says it is building (named in errors)
  explicit tl_kernel_s(ir::Kernel *k) : kernel(k), builder(*k) {
    loc.file = std::make_shared<const std::string>("<capi>");
  }
};

struct tl_module_s {
  std::unique_ptr<ir::Module> module = std::make_unique<ir::Module>();
  std::list<tl_kernel_s> kernels; // stable addresses: handles point into it
};

static_assert(int(ScalarKind::F8E5M2) + 1 == TL_IR_DTYPE_COUNT, "tl_ir_dtype follows ScalarKind");

namespace {

tl_cstatus make_status(std::string message) { return new tl_cstatus_s{std::move(message)}; }

char *copy_string(const std::string &s) {
  char *p = static_cast<char *>(std::malloc(s.size() + 1));
  if (p)
    std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

ir::Value *unwrap(tl_ir_value v) { return reinterpret_cast<ir::Value *>(v); }
tl_ir_value wrap(ir::Value *v) { return reinterpret_cast<tl_ir_value>(v); }
ir::Operation *unwrap(tl_ir_op op) { return reinterpret_cast<ir::Operation *>(op); }
tl_ir_op wrap(ir::Operation *op) { return reinterpret_cast<tl_ir_op>(op); }
ir::Block *unwrap(tl_ir_block b) { return reinterpret_cast<ir::Block *>(b); }
tl_ir_block wrap(ir::Block *b) { return reinterpret_cast<tl_ir_block>(b); }

/// Converts a C type description; returns an error or "".
std::string to_type(const tl_ir_type *t, Type *out) {
  if (!t)
    return "null type";
  if (t->dtype >= TL_IR_DTYPE_COUNT)
    return "invalid dtype " + std::to_string(t->dtype);
  if (t->rank > TL_IR_MAX_RANK)
    return "rank " + std::to_string(t->rank) + " exceeds " + std::to_string(TL_IR_MAX_RANK);
  const auto elem = static_cast<ScalarKind>(t->dtype);
  switch (t->kind) {
  case TL_IR_SCALAR:
    *out = Type::scalar(elem);
    return {};
  case TL_IR_TENSOR:
    *out = Type::tensor(elem, static_cast<int>(t->rank));
    return {};
  case TL_IR_TILE: {
    if (t->rank == 0)
      return "a tile needs rank >= 1";
    std::vector<int64_t> shape(t->shape, t->shape + t->rank);
    for (int64_t d : shape)
      if (d < 1)
        return "tile dimensions must be >= 1, got " + std::to_string(d);
    *out = Type::tile(elem, std::move(shape));
    return {};
  }
  default:
    return "invalid type kind " + std::to_string(t->kind);
  }
}

void from_type(const Type &t, tl_ir_type *out) {
  std::memset(out, 0, sizeof *out);
  out->kind = t.is_scalar() ? TL_IR_SCALAR : t.is_tile() ? TL_IR_TILE : TL_IR_TENSOR;
  out->dtype = static_cast<uint32_t>(t.elem());
  out->rank = static_cast<uint32_t>(t.rank());
  for (int i = 0; i < t.rank() && i < TL_IR_MAX_RANK; ++i)
    out->shape[i] = t.shape()[i];
}

std::string to_attr(const tl_ir_attr &a, ir::Attr *out) {
  switch (a.kind) {
  case TL_IR_ATTR_BOOL: *out = a.i != 0; return {};
  case TL_IR_ATTR_INT: *out = a.i; return {};
  case TL_IR_ATTR_FLOAT: *out = a.f; return {};
  case TL_IR_ATTR_STRING: *out = std::string(a.s ? a.s : ""); return {};
  case TL_IR_ATTR_INTS: *out = std::vector<int64_t>(a.ints, a.ints + a.ints_len); return {};
  case TL_IR_ATTR_TYPE: {
    Type t;
    std::string e = to_type(&a.type, &t);
    *out = t;
    return e;
  }
  default: return "invalid attribute kind " + std::to_string(a.kind);
  }
}

using Attrs = std::vector<std::pair<std::string, ir::Attr>>;

tl_cstatus create_op(tl_kernel k, const char *name, const tl_ir_value *operands, size_t n,
                     const tl_ir_attr *attrs, size_t nattrs, const tl_ir_type *result_types,
                     size_t nresults, tl_ir_op *out_op) {
  std::optional<Opcode> code = ir::parse_opcode(name ? name : "");
  if (!code)
    throw ir::BuildError("unknown op '" + std::string(name ? name : "") + "'");
  std::vector<ir::Value *> ops;
  for (size_t i = 0; i < n; ++i) {
    if (!operands[i])
      throw ir::BuildError("operand #" + std::to_string(i) + " is null");
    ops.push_back(unwrap(operands[i]));
  }
  Attrs attr_list;
  bool with_else = false;
  for (size_t i = 0; i < nattrs; ++i) {
    ir::Attr a;
    if (std::string e = to_attr(attrs[i], &a); !e.empty())
      throw ir::BuildError(e);
    std::string attr_name = attrs[i].name ? attrs[i].name : "";
    if (*code == Opcode::If && attr_name == "with_else")
      with_else = std::holds_alternative<bool>(a) && std::get<bool>(a);
    else
      attr_list.emplace_back(std::move(attr_name), std::move(a));
  }
  std::vector<Type> types;
  if (nresults == TL_IR_INFER) {
    types = ir::infer_result_types(*code, ops, attr_list, *k->kernel);
  } else {
    for (size_t i = 0; i < nresults; ++i) {
      Type t;
      if (std::string e = to_type(&result_types[i], &t); !e.empty())
        throw ir::BuildError(e);
      types.push_back(std::move(t));
    }
  }
  ir::Operation *op;
  if (*code == Opcode::If) {
    if (ops.size() != 1)
      throw ir::BuildError("expects one condition operand");
    op = k->builder.create_if(ops[0], std::move(types), with_else);
  } else {
    op = k->builder.create(*code, std::move(ops), std::move(types), std::move(attr_list));
  }
  *out_op = wrap(op);
  return nullptr;
}

} // namespace

extern "C" {

const char *tl_cstatus_message(tl_cstatus status) { return status ? status->message.c_str() : ""; }
void tl_cstatus_free(tl_cstatus status) { delete status; }
void tl_compiler_free(void *ptr) { std::free(ptr); }
uint32_t tl_compiler_api_version(void) { return TL_COMPILER_API_VERSION; }

const char *tl_ir_dtype_name(uint32_t dtype) {
  static std::string names[TL_IR_DTYPE_COUNT];
  if (dtype >= TL_IR_DTYPE_COUNT)
    return nullptr;
  if (names[dtype].empty())
    names[dtype] = std::string(ir::scalar_name(static_cast<ScalarKind>(dtype)));
  return names[dtype].c_str();
}

tl_cstatus tl_module_create(tl_module *out_module) {
  if (!out_module)
    return make_status("tl_module_create: out_module is null");
  *out_module = new tl_module_s;
  return nullptr;
}

void tl_module_destroy(tl_module module) { delete module; }

tl_cstatus tl_module_parse(const char *text, const char *filename, tl_module *out_module) {
  if (!out_module || !text)
    return make_status("tl_module_parse: null argument");
  *out_module = nullptr;
  try {
    ir::Diagnostics diags;
    auto m = ir::parse(text, filename ? filename : "<text>", diags);
    if (!m || !ir::verify(*m, diags))
      return make_status(diags.str());
    auto *out = new tl_module_s;
    out->module = std::move(m);
    *out_module = out;
    return nullptr;
  } catch (const std::exception &e) {
    return make_status(std::string("tl_module_parse: ") + e.what());
  }
}

tl_cstatus tl_module_verify(tl_module module) {
  if (!module)
    return make_status("tl_module_verify: module is null");
  try {
    ir::Diagnostics diags;
    if (!ir::verify(*module->module, diags))
      return make_status(diags.str());
    return nullptr;
  } catch (const std::exception &e) {
    return make_status(std::string("tl_module_verify: ") + e.what());
  }
}

tl_cstatus tl_module_print(tl_module module, char **out_text) {
  if (!module || !out_text)
    return make_status("tl_module_print: null argument");
  *out_text = nullptr;
  try {
    *out_text = copy_string(ir::print(*module->module));
    return *out_text ? nullptr : make_status("tl_module_print: out of memory");
  } catch (const std::exception &e) {
    return make_status(std::string("tl_module_print: ") + e.what());
  }
}

tl_cstatus tl_module_compile(tl_module module, const char *target, const char *producer,
                             void **out_data, size_t *out_size) {
  if (!module || !target || !out_data || !out_size)
    return make_status("tl_module_compile: null argument");
  *out_data = nullptr;
  *out_size = 0;
  try {
    if (tl_cstatus s = tl_module_verify(module))
      return s;
    std::string error;
    std::vector<uint8_t> blob = compile::build_executable(
        *module->module, target, producer ? producer : "tl compiler C API", &error);
    if (blob.empty())
      return make_status(error.empty() ? "compilation failed" : error);
    void *p = std::malloc(blob.size());
    if (!p)
      return make_status("tl_module_compile: out of memory");
    std::memcpy(p, blob.data(), blob.size());
    *out_data = p;
    *out_size = blob.size();
    return nullptr;
  } catch (const std::exception &e) {
    return make_status(std::string("tl_module_compile: ") + e.what());
  }
}

const char *tl_compiler_targets(void) {
  static const std::string targets = compile::known_targets();
  return targets.c_str();
}

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
  try {
    *out_value = wrap(kernel->builder.add_argument(t, name ? name : ""));
    return nullptr;
  } catch (const std::exception &e) {
    return make_status(std::string("tl_kernel_add_arg: ") + e.what());
  }
}

tl_cstatus tl_kernel_add_constexpr(tl_kernel kernel, const char *name, uint32_t dtype, int64_t i,
                                   double f) {
  if (!kernel || !name)
    return make_status("tl_kernel_add_constexpr: null argument");
  if (dtype >= TL_IR_DTYPE_COUNT)
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

tl_cstatus tl_ir_op_create(tl_kernel kernel, const char *name, const tl_ir_value *operands,
                           size_t operand_count, const tl_ir_attr *attrs, size_t attr_count,
                           const tl_ir_type *result_types, size_t result_count,
                           tl_ir_op *out_op) {
  if (!kernel || !out_op || (operand_count && !operands) || (attr_count && !attrs) ||
      (result_count && result_count != TL_IR_INFER && !result_types))
    return make_status("tl_ir_op_create: null argument");
  *out_op = nullptr;
  try {
    return create_op(kernel, name, operands, operand_count, attrs, attr_count, result_types,
                     result_count, out_op);
  } catch (const std::exception &e) {
    // The user's mistake, located where the front end said it is building.
    std::string what = e.what();
    if (what.empty() || what[0] != '\'')
      what = "'" + std::string(name ? name : "") + "' " + what;
    return make_status(kernel->loc.str() + ": error: " + what);
  }
}

size_t tl_ir_op_result_count(tl_ir_op op) { return op ? unwrap(op)->num_results() : 0; }

tl_ir_value tl_ir_op_result(tl_ir_op op, size_t index) {
  if (!op || index >= unwrap(op)->num_results())
    return nullptr;
  return wrap(unwrap(op)->result(static_cast<unsigned>(index)));
}

tl_ir_block tl_ir_op_region(tl_ir_op op, size_t index) {
  if (!op || index >= unwrap(op)->num_regions())
    return nullptr;
  return wrap(unwrap(op)->region(static_cast<unsigned>(index)));
}

tl_cstatus tl_ir_if_add_result(tl_ir_op op, const tl_ir_type *type, tl_ir_value *out_value) {
  if (!op || !type || !out_value)
    return make_status("tl_ir_if_add_result: null argument");
  *out_value = nullptr;
  if (unwrap(op)->opcode() != Opcode::If)
    return make_status("tl_ir_if_add_result: not an if op");
  Type t;
  if (std::string e = to_type(type, &t); !e.empty())
    return make_status("tl_ir_if_add_result: " + e);
  *out_value = wrap(unwrap(op)->add_result(t));
  return nullptr;
}

size_t tl_ir_block_arg_count(tl_ir_block block) {
  return block ? unwrap(block)->arguments().size() : 0;
}

tl_ir_value tl_ir_block_arg(tl_ir_block block, size_t index) {
  if (!block || index >= unwrap(block)->arguments().size())
    return nullptr;
  return wrap(unwrap(block)->argument(static_cast<unsigned>(index)));
}

void tl_ir_value_type(tl_ir_value value, tl_ir_type *out_type) {
  if (!out_type)
    return;
  if (!value) {
    std::memset(out_type, 0, sizeof *out_type);
    return;
  }
  from_type(unwrap(value)->type(), out_type);
}

void tl_ir_value_set_name(tl_ir_value value, const char *name) {
  if (value)
    unwrap(value)->set_name(name ? name : "");
}

} // extern "C"
