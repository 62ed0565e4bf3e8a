// Typing rules of the computing ops that are not elementwise: dot, reduce and scan.
// SPDX-License-Identifier: Apache-2.0
#include "verify_op_rules.h"

namespace tl::ir::op_rules {

Error verify_dot(const Operation &op) {
  if (op.num_operands() != 2 && op.num_operands() != 3)
    return "expects 2 operands (or 3 with an accumulator), got " +
           std::to_string(op.num_operands());
  if (op.num_results() != 1)
    return "expects 1 result, got " + std::to_string(op.num_results());
  const Type &a = op.operand(0)->type(), &b = op.operand(1)->type();
  if (!a.is_tile() || !b.is_tile() || a.rank() != 2 || b.rank() != 2)
    return "operands must be rank-2 tiles, got " + a.str() + " and " + b.str();
  if (a.elem() != b.elem())
    return "operand element types differ: " + a.str() + " and " + b.str();
  if (a.shape()[1] != b.shape()[0])
    return "contraction dimensions differ: " + a.str() + " and " + b.str();
  const Type *acc = op.attr_as<Type>("acc_type");
  if (!acc || !acc->is_scalar())
    return "requires scalar type attribute 'acc_type'";
  if (is_float(acc->elem()) != is_float(a.elem()) || acc->elem() == ScalarKind::I1 ||
      a.elem() == ScalarKind::I1)
    return "accumulator type " + acc->str() + " does not suit inputs " + a.str();
  const Type out = Type::tile(acc->elem(), {a.shape()[0], b.shape()[1]});
  if (op.result()->type() != out)
    return "result must be " + out.str() + ", got " + op.result()->type().str();
  if (op.num_operands() == 3 && op.operand(2)->type() != out)
    return "accumulator must be " + out.str() + ", got " + op.operand(2)->type().str();
  if (bit_width(acc->elem()) < bit_width(a.elem()))
    return "accumulator type " + acc->str() + " is narrower than the inputs " + a.str();
  if (op.attr("input_precision")) {
    if (Error e = expect_string_attr(op, "input_precision", {"ieee", "tf32", "bf16"}))
      return e;
    if (*op.attr_as<std::string>("input_precision") != "ieee" && a.elem() != ScalarKind::F32)
      return "input_precision \"" + *op.attr_as<std::string>("input_precision") +
             "\" applies to f32 inputs only, got " + a.str();
  }
  // "any" is the default contract (ir.h); "exact" pins the ascending-k fma chain.
  if (op.attr("order"))
    if (Error e = expect_string_attr(op, "order", {"any", "exact"}))
      return e;
  return {};
}

Error verify_reduce_scan(const Operation &op) {
  if (Error e = expect_counts(op, 1, 1))
    return e;
  const Type &in = op.operand(0)->type();
  if (!in.is_tile())
    return "operand must be a tile, got " + in.str();
  if (Error e = expect_int_attr(op, "axis", 0, in.rank() - 1))
    return e;
  const bool scan = op.opcode() == Opcode::Scan;
  if (Error e = scan ? expect_string_attr(op, "kind", {"sum", "max", "min"})
                     : expect_string_attr(op, "kind", {"sum", "max", "min", "argmax"}))
    return e;
  if (in.elem() == ScalarKind::I1)
    return "requires numeric operands, got " + in.str();
  Type out = in;
  if (!scan) {
    std::vector<int64_t> shape = in.shape();
    shape.erase(shape.begin() + *op.attr_as<int64_t>("axis"));
    const bool argmax = *op.attr_as<std::string>("kind") == "argmax";
    out = Type::value_of_shape(argmax ? ScalarKind::I32 : in.elem(), shape);
  }
  if (op.result()->type() != out)
    return "result must be " + out.str() + ", got " + op.result()->type().str();
  // scan's "any" is the default contract (ir.h); "exact" pins the ascending chain.
  if (scan && op.attr("order"))
    if (Error e = expect_string_attr(op, "order", {"any", "exact"}))
      return e;
  return {};
}

} // namespace tl::ir::op_rules
