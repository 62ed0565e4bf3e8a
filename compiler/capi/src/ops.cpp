// The C API's ops: making them by name (result types given or inferred), and walking their
// results, regions, block arguments and values.
// SPDX-License-Identifier: Apache-2.0
#include "handles.h"

#include "tl/ir/infer.h"

#include <cstring>

using namespace tl;
using capi::from_type;
using capi::make_status;
using capi::to_attr;
using capi::to_type;
using capi::unwrap;
using capi::wrap;
using ir::Opcode;
using ir::Type;

namespace {

using Attrs = std::vector<std::pair<std::string, ir::Attr>>;

/// tl_ir_op_create's work; a BuildError is the user's mistake, made a located status by the caller.
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

tl_cstatus tl_ir_op_create(tl_kernel kernel, const char *name, const tl_ir_value *operands,
                           size_t operand_count, const tl_ir_attr *attrs, size_t attr_count,
                           const tl_ir_type *result_types, size_t result_count, tl_ir_op *out_op) {
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
