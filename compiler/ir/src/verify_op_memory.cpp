// Typing rules of memory ops: load and store (blocks), gather, scatter and atomic_add (indexed).
// SPDX-License-Identifier: Apache-2.0
#include "verify_op_rules.h"

namespace tl::ir::op_rules {

Error verify_block_access(const Operation &op) {
  if (Error e = expect_tensor(op))
    return e;
  const Type &tensor = op.operand(0)->type();
  const bool is_store = op.opcode() == Opcode::Store;
  const size_t rank = tensor.rank();
  if (Error e = expect_counts(op, 1 + rank + (is_store ? 1 : 0), is_store ? 0 : 1))
    return e;
  for (unsigned i = 1; i <= rank; ++i)
    if (Error e = expect_index(op, i, "offset"))
      return e;
  const Type &tile = is_store ? op.operand(rank + 1)->type() : op.result()->type();
  if (!tile.is_tile() || tile.rank() != static_cast<int>(rank) || tile.elem() != tensor.elem())
    return std::string(is_store ? "stored value" : "result") + " must be a rank-" +
           std::to_string(rank) + " tile of " + std::string(scalar_name(tensor.elem())) + ", got " +
           tile.str();
  if (!is_store)
    return expect_value_attr(op, "padding", tensor.elem(), false);
  return {};
}

/// gather, scatter, atomic_add: tensor, one index per dimension, [value], [mask].
Error verify_indexed_access(const Operation &op) {
  if (Error e = expect_tensor(op))
    return e;
  const Type &tensor = op.operand(0)->type();
  const size_t rank = tensor.rank();
  const bool has_value = op.opcode() != Opcode::Gather;
  const size_t base = 1 + rank + (has_value ? 1 : 0);
  if (op.num_operands() != base && op.num_operands() != base + 1)
    return "expects " + std::to_string(base) + " operands (or one more for a mask), got " +
           std::to_string(op.num_operands());
  const size_t results = op.opcode() == Opcode::Scatter ? 0 : 1;
  if (op.num_results() != results)
    return "expects " + count_str(results, "result") + ", got " + std::to_string(op.num_results());
  const Type &idx0 = op.operand(1)->type();
  for (unsigned i = 1; i <= rank; ++i) {
    const Type &t = op.operand(i)->type();
    if (!t.is_value() || !is_integer(t.elem()) || t.elem() == ScalarKind::I1)
      return "index operand #" + std::to_string(i) + " must be an integer scalar or tile, got " +
             t.str();
    if (t.shape() != idx0.shape() || t.kind() != idx0.kind())
      return "index operand #" + std::to_string(i) + " shape " + t.str() +
             " differs from index operand #1 " + idx0.str();
  }
  const Type lanes = Type::value_of_shape(tensor.elem(), idx0.shape());
  if (has_value && op.operand(rank + 1)->type() != lanes)
    return "value must be " + lanes.str() + ", got " + op.operand(rank + 1)->type().str();
  if (op.num_operands() == base + 1 && op.operand(base)->type() != lanes.with_elem(ScalarKind::I1))
    return "mask must be " + lanes.with_elem(ScalarKind::I1).str() + ", got " +
           op.operand(base)->type().str();
  if (results && op.result()->type() != lanes)
    return "result must be " + lanes.str() + ", got " + op.result()->type().str();
  if (op.opcode() == Opcode::Gather)
    return expect_value_attr(op, "other", tensor.elem(), false);
  if (op.opcode() == Opcode::AtomicAdd && tensor.elem() == ScalarKind::I1)
    return "requires a numeric tensor, got " + tensor.str();
  return {};
}

} // namespace tl::ir::op_rules
