// Typing rules of shape ops: splat, broadcast, reshape, transpose, slice and expand_dims.
// SPDX-License-Identifier: Apache-2.0
#include "verify_op_rules.h"

#include <algorithm>

namespace tl::ir::op_rules {
namespace {

/// 'perm' is a permutation of the operand's dimensions, and the result is permuted so.
Error verify_transpose(const Operation &op, const Type &in, const Type &out) {
  const auto *perm = op.attr_as<std::vector<int64_t>>("perm");
  if (!perm)
    return "requires integer list attribute 'perm'";
  if (static_cast<int>(perm->size()) != in.rank() || !in.is_tile())
    return "'perm' must have one entry per dimension of " + in.str();
  std::vector<int64_t> sorted = *perm;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < in.rank(); ++i)
    if (sorted[i] != i)
      return "'perm' is not a permutation of 0.." + std::to_string(in.rank() - 1);
  std::vector<int64_t> shape;
  for (int64_t p : *perm)
    shape.push_back(in.shape()[p]);
  if (shape != out.shape())
    return "result must be " + Type::tile(in.elem(), shape).str() + ", got " + out.str();
  return {};
}

/// 'offsets' has one entry per dimension, and the result (its extents) lies inside the operand
/// from there.
Error verify_slice(const Operation &op, const Type &in, const Type &out) {
  const auto *offsets = op.attr_as<std::vector<int64_t>>("offsets");
  if (!offsets)
    return "requires integer list attribute 'offsets'";
  if (!in.is_tile() || static_cast<int>(offsets->size()) != in.rank())
    return "'offsets' must have one entry per dimension of " + in.str();
  if (out.rank() != in.rank())
    return "rank changes from " + in.str() + " to " + out.str() + " (reshape after slicing)";
  for (int d = 0; d < in.rank(); ++d) {
    const int64_t at = (*offsets)[size_t(d)], n = out.shape()[size_t(d)];
    if (at < 0 || n < 1 || at > in.shape()[size_t(d)] - n)
      return "dimension " + std::to_string(d) + ": elements " + std::to_string(at) + " to " +
             std::to_string(at + n - 1) + " are outside " + in.str();
  }
  return {};
}

} // namespace

Error verify_shape_op(const Operation &op) {
  if (Error e = expect_counts(op, 1, 1))
    return e;
  if (Error e = expect_value(op, 0))
    return e;
  const Type &in = op.operand(0)->type();
  const Type &out = op.result()->type();
  if (!out.is_tile())
    return "result must be a tile, got " + out.str();
  if (in.elem() != out.elem())
    return "element type changes from " + in.str() + " to " + out.str();
  switch (op.opcode()) {
  case Opcode::Splat:
    if (!in.is_scalar())
      return "operand must be a scalar, got " + in.str();
    return {};
  case Opcode::Broadcast:
    if (in.rank() != out.rank())
      return "rank changes from " + in.str() + " to " + out.str() + " (use expand_dims)";
    for (int i = 0; i < in.rank(); ++i)
      if (in.shape()[i] != out.shape()[i] && in.shape()[i] != 1)
        return "dimension " + std::to_string(i) + " of " + in.str() + " cannot broadcast to " +
               out.str();
    return {};
  case Opcode::Reshape:
    if (in.num_elements() != out.num_elements())
      return "element count changes from " + in.str() + " to " + out.str();
    return {};
  case Opcode::Transpose:
    return verify_transpose(op, in, out);
  case Opcode::Slice:
    return verify_slice(op, in, out);
  default: { // expand_dims
    if (Error e = expect_int_attr(op, "axis", 0, in.rank()))
      return e;
    std::vector<int64_t> shape = in.shape();
    shape.insert(shape.begin() + *op.attr_as<int64_t>("axis"), 1);
    if (shape != out.shape())
      return "result must be " + Type::tile(in.elem(), shape).str() + ", got " + out.str();
    return {};
  }
  }
}

} // namespace tl::ir::op_rules
