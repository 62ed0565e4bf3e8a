// Typing rules of control flow and effects: for, if, yield, return, print and assert.
// SPDX-License-Identifier: Apache-2.0
#include "verify_op_rules.h"

namespace tl::ir::op_rules {
namespace {

/// Bounds of one integer type; one result and one body argument per carried value.
Error verify_for(const Operation &op) {
  if (op.num_operands() < 3)
    return "expects lower bound, upper bound and step operands";
  const Type &iv = op.operand(0)->type();
  if (!iv.is_scalar() || !is_integer(iv.elem()) || iv.elem() == ScalarKind::I1)
    return "bounds must be integer scalars, got " + iv.str();
  if (op.operand(1)->type() != iv || op.operand(2)->type() != iv)
    return "lower bound, upper bound and step must have one type";
  const size_t carried = op.num_operands() - 3;
  if (op.num_results() != carried)
    return "expects one result per carried value (" + std::to_string(carried) + "), got " +
           std::to_string(op.num_results());
  if (op.num_regions() != 1)
    return "expects one body region";
  Block *body = op.region(0);
  if (body->arguments().size() != carried + 1 || body->argument(0)->type() != iv)
    return "body must take the induction variable and one argument per carried value";
  for (size_t i = 0; i < carried; ++i)
    if (op.operand(3 + i)->type() != op.result(i)->type() ||
        body->argument(1 + i)->type() != op.result(i)->type())
      return "carried value #" + std::to_string(i) + " has inconsistent types";
  return {};
}

} // namespace

Error verify_control(const Operation &op) {
  switch (op.opcode()) {
  case Opcode::For:
    return verify_for(op);
  case Opcode::If:
    if (op.num_operands() != 1 || op.operand(0)->type() != Type::scalar(ScalarKind::I1))
      return "expects one i1 scalar condition";
    if (op.num_regions() < 1 || op.num_regions() > 2)
      return "expects a then region and an optional else region";
    if (op.num_results() > 0 && op.num_regions() != 2)
      return "an if with results needs an else region";
    for (unsigned r = 0; r < op.num_regions(); ++r)
      if (!op.region(r)->arguments().empty())
        return "if regions take no arguments";
    return {};
  case Opcode::Yield:
    if (op.num_results() != 0)
      return "takes no results";
    return {};
  case Opcode::Return:
    return expect_counts(op, 0, 0);
  case Opcode::Print:
    if (op.num_results() != 0)
      return "takes no results";
    for (unsigned i = 0; i < op.num_operands(); ++i)
      if (Error e = expect_value(op, i))
        return e;
    if (op.attr("prefix") && !op.attr_as<std::string>("prefix"))
      return "attribute 'prefix' must be a string";
    return {};
  default: // assert
    if (Error e = expect_counts(op, 1, 0))
      return e;
    if (!op.operand(0)->type().is_value() || op.operand(0)->type().elem() != ScalarKind::I1)
      return "condition must be i1, got " + op.operand(0)->type().str();
    if (!op.attr_as<std::string>("message"))
      return "requires string attribute 'message'";
    return {};
  }
}

} // namespace tl::ir::op_rules
