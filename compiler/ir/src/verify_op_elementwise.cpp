// Typing rules of elementwise ops: arithmetic, bitwise, math, cmp, select, cast and bitcast.
// SPDX-License-Identifier: Apache-2.0
#include "verify_op_rules.h"

namespace tl::ir::op_rules {
namespace {

/// Operands of each elementwise op: fma, clamp and select take 3, unary math and conversions 1.
size_t arity(Opcode code) {
  switch (code) {
  case Opcode::Fma:
  case Opcode::Clamp:
  case Opcode::Select:
    return 3;
  case Opcode::Neg:
  case Opcode::Not:
  case Opcode::Abs:
  case Opcode::Exp:
  case Opcode::Exp2:
  case Opcode::Log:
  case Opcode::Log2:
  case Opcode::Sqrt:
  case Opcode::Rsqrt:
  case Opcode::Tanh:
  case Opcode::Erf:
  case Opcode::Sigmoid:
  case Opcode::Sin:
  case Opcode::Cos:
  case Opcode::Tan:
  case Opcode::Asin:
  case Opcode::Acos:
  case Opcode::Atan:
  case Opcode::Sinh:
  case Opcode::Cosh:
  case Opcode::Log1p:
  case Opcode::Expm1:
  case Opcode::Erfinv:
  case Opcode::Ndtr:
  case Opcode::Rint:
  case Opcode::Floor:
  case Opcode::Ceil:
  case Opcode::Trunc:
  case Opcode::IsNan:
  case Opcode::IsInf:
  case Opcode::IsFinite:
  case Opcode::Popcount:
  case Opcode::Clz:
  case Opcode::Cast:
  case Opcode::Bitcast:
    return 1;
  default:
    return 2;
  }
}

/// cast converts between any element types; bitcast keeps the bit width.
Error verify_conversion(const Operation &op, const Type &in, const Type &out) {
  if (op.opcode() == Opcode::Cast) {
    const std::string *r = op.attr_as<std::string>("rounding");
    if (op.attr("rounding") && !r)
      return "attribute 'rounding' must be a string";
    if (r)
      return expect_string_attr(op, "rounding", {"rne", "rtz", "rd", "ru"});
    return {};
  }
  if (bit_width(in.elem()) != bit_width(out.elem()))
    return "between types of different bit width: " + in.str() + " to " + out.str();
  return {};
}

Error verify_cmp(const Operation &op, const Type &out) {
  if (out.elem() != ScalarKind::I1)
    return "result must have element type i1, got " + out.str();
  if (op.operand(0)->type() != op.operand(1)->type())
    return "operands must have the same type, got " + op.operand(0)->type().str() + " and " +
           op.operand(1)->type().str();
  return expect_string_attr(op, "pred", {"eq", "ne", "lt", "le", "gt", "ge"});
}

/// isnan, isinf and isfinite test float lanes and give i1 lanes of the operand's shape.
Error verify_class_test(const Type &in, const Type &out) {
  if (!is_float(in.elem()))
    return "requires floating-point operands, got " + in.str();
  if (out.elem() != ScalarKind::I1)
    return "result must have element type i1, got " + out.str();
  return {};
}

Error verify_select(const Operation &op, const Type &out) {
  if (op.operand(0)->type().elem() != ScalarKind::I1)
    return "condition must have element type i1, got " + op.operand(0)->type().str();
  if (op.operand(1)->type() != out || op.operand(2)->type() != out)
    return "selected values must have the result type " + out.str();
  return {};
}

/// The element types each arithmetic, bitwise and math op accepts (`out` names the type).
Error expect_elem_kind(Opcode code, ScalarKind e, const Type &out) {
  switch (code) {
  case Opcode::And:
  case Opcode::Or:
  case Opcode::Xor:
  case Opcode::Not:
    if (!is_integer(e))
      return "requires integer or i1 operands, got " + out.str();
    return {};
  case Opcode::Shl:
  case Opcode::Shr:
  case Opcode::Rem:
  case Opcode::Popcount:
  case Opcode::Clz:
    if (!is_integer(e) || e == ScalarKind::I1)
      return "requires integer operands, got " + out.str();
    return {};
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Div:
  case Opcode::Min:
  case Opcode::Max:
  case Opcode::Clamp:
  case Opcode::Neg:
  case Opcode::Abs:
    if (e == ScalarKind::I1)
      return "requires numeric operands, got " + out.str();
    return {};
  default: // pow, fma, minnum/maxnum, rounding to integral values and transcendental math
    if (!is_float(e))
      return "requires floating-point operands, got " + out.str();
    return {};
  }
}

} // namespace

Error verify_elementwise(const Operation &op) {
  const Opcode code = op.opcode();
  const size_t n = arity(code);
  if (Error e = expect_counts(op, n, 1))
    return e;
  for (unsigned i = 0; i < n; ++i)
    if (Error e = expect_value(op, i))
      return e;
  const Type &in = op.operand(n == 3 && code == Opcode::Select ? 1 : 0)->type();
  const Type &out = op.result()->type();
  // Shapes agree for every elementwise op.
  for (unsigned i = 0; i < n; ++i)
    if (op.operand(i)->type().shape() != out.shape() || op.operand(i)->type().kind() != out.kind())
      return "operand #" + std::to_string(i) + " shape " + op.operand(i)->type().str() +
             " does not match result " + out.str();
  switch (code) {
  case Opcode::Cast:
  case Opcode::Bitcast:
    return verify_conversion(op, in, out);
  case Opcode::Cmp:
    return verify_cmp(op, out);
  case Opcode::Select:
    return verify_select(op, out);
  case Opcode::IsNan:
  case Opcode::IsInf:
  case Opcode::IsFinite:
    return verify_class_test(in, out);
  default:
    break;
  }
  for (unsigned i = 0; i < n; ++i)
    if (op.operand(i)->type() != out)
      return "operand #" + std::to_string(i) + " type " + op.operand(i)->type().str() +
             " does not match result type " + out.str();
  return expect_elem_kind(code, in.elem(), out);
}

} // namespace tl::ir::op_rules
