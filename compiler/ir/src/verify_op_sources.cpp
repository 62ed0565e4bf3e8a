// Typing rules of ops that make values from nothing: program ids, tensor dims, constants, arange.
// SPDX-License-Identifier: Apache-2.0
#include "verify_op_rules.h"

namespace tl::ir::op_rules {
namespace {

Error verify_constexpr(const Operation &op, const Kernel &kernel) {
  if (Error e = expect_counts(op, 0, 1))
    return e;
  const std::string *name = op.attr_as<std::string>("name");
  if (!name)
    return "requires string attribute 'name'";
  const ConstexprParam *p = kernel.find_constexpr(*name);
  if (!p)
    return "kernel has no constexpr parameter '" + *name + "'";
  if (op.result()->type() != Type::scalar(p->type))
    return "result must be " + std::string(scalar_name(p->type)) + ", the type of '" + *name + "'";
  return {};
}

/// A rank-1 integer tile of end - start lanes, each representable in its element type.
Error verify_arange(const Operation &op) {
  if (Error e = expect_counts(op, 0, 1))
    return e;
  const int64_t *start = op.attr_as<int64_t>("start"), *end = op.attr_as<int64_t>("end");
  if (!start || !end)
    return "requires integer attributes 'start' and 'end'";
  const Type &t = op.result()->type();
  if (!t.is_tile() || t.rank() != 1 || !is_integer(t.elem()) || t.elem() == ScalarKind::I1)
    return "result must be a rank-1 integer tile, got " + t.str();
  int64_t length;
  if (__builtin_sub_overflow(*end, *start, &length) || length != t.shape()[0])
    return "result length " + std::to_string(t.shape()[0]) + " does not match end - start (" +
           std::to_string(*end) + " - " + std::to_string(*start) + ")";
  if (!fits(t.elem(), *start) || !fits(t.elem(), *end - 1))
    return "range [" + std::to_string(*start) + ", " + std::to_string(*end) +
           ") does not fit element type " + std::string(scalar_name(t.elem()));
  return {};
}

} // namespace

Error verify_tile_source(const Operation &op, const Kernel &kernel) {
  switch (op.opcode()) {
  case Opcode::ProgramId:
  case Opcode::NumPrograms:
    if (Error e = expect_counts(op, 0, 1))
      return e;
    if (op.result()->type() != Type::scalar(ScalarKind::I32))
      return "result must be i32, got " + op.result()->type().str();
    return expect_int_attr(op, "axis", 0, 2);
  case Opcode::TensorDim:
  case Opcode::TensorStride:
    if (Error e = expect_counts(op, 1, 1))
      return e;
    if (Error e = expect_tensor(op))
      return e;
    if (op.result()->type() != Type::scalar(ScalarKind::I64))
      return "result must be i64, got " + op.result()->type().str();
    return expect_int_attr(op, "axis", 0, op.operand(0)->type().rank() - 1);
  case Opcode::Constant:
    if (Error e = expect_counts(op, 0, 1))
      return e;
    if (!op.result()->type().is_scalar())
      return "result must be a scalar (use full for tiles), got " + op.result()->type().str();
    return expect_value_attr(op, "value", op.result()->type().elem(), true);
  case Opcode::Constexpr:
    return verify_constexpr(op, kernel);
  case Opcode::Full:
    if (Error e = expect_counts(op, 0, 1))
      return e;
    if (!op.result()->type().is_tile())
      return "result must be a tile, got " + op.result()->type().str();
    return expect_value_attr(op, "value", op.result()->type().elem(), true);
  default:
    return verify_arange(op);
  }
}

} // namespace tl::ir::op_rules
