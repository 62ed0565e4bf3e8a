// The dce pass: use counts computed once per sweep, blocks visited last op first.
// SPDX-License-Identifier: Apache-2.0
#include "tl/passes/dce.h"

#include "match.h"
#include "tl/passes/rewrite.h"

#include <string>
#include <unordered_map>

namespace tl::passes {
namespace {

using UseCounts = std::unordered_map<const ir::Value *, size_t>;

bool has_write(const ir::Block &block) {
  for (auto &op : block.ops()) {
    if (op->flags() & ir::kWritesMemory)
      return true;
    for (unsigned r = 0; r < op->num_regions(); ++r)
      if (has_write(*op->region(r)))
        return true;
  }
  return false;
}

/// A for loop surely terminates when its step is a positive constant.
bool surely_terminates(const ir::Operation &op) {
  if (op.opcode() != ir::Opcode::For)
    return true;
  const ir::Attr *step = scalar_constant(op.operand(2));
  std::optional<int64_t> s = step ? attr_int(*step) : std::nullopt;
  return s && *s > 0;
}

bool removable(const ir::Operation &op, const UseCounts &uses) {
  for (auto &r : op.results())
    if (auto it = uses.find(r.get()); it != uses.end() && it->second > 0)
      return false;
  const unsigned f = op.flags();
  if (f & (ir::kTerminator | ir::kWritesMemory))
    return false;
  if (op.num_regions() == 0)
    return f & (ir::kPure | ir::kReadsMemory);
  if (op.opcode() != ir::Opcode::For && op.opcode() != ir::Opcode::If)
    return false;
  for (unsigned r = 0; r < op.num_regions(); ++r)
    if (has_write(*op.region(r)))
      return false;
  return surely_terminates(op);
}

/// Forgets the uses made by `op` and the ops nested in it.
void drop_uses(ir::Operation *op, UseCounts &uses) {
  for (ir::Value *v : op->operands())
    --uses[v];
  for (unsigned r = 0; r < op->num_regions(); ++r)
    ir::walk(op->region(r), [&](ir::Operation *inner) {
      for (ir::Value *v : inner->operands())
        --uses[v];
    });
}

/// Removes dead ops of `block` from the last to the first, so that an op whose only users were
/// removed goes in the same sweep.
bool sweep_block(ir::Block *block, UseCounts &uses) {
  bool changed = false;
  auto &ops = block->ops();
  for (auto it = ops.end(); it != ops.begin();) {
    --it;
    ir::Operation *op = it->get();
    if (removable(*op, uses)) {
      trace_rewrite("dce-" + std::string(op->name()), op->loc());
      drop_uses(op, uses);
      it = ops.erase(it);
      changed = true;
      continue;
    }
    for (unsigned r = op->num_regions(); r-- > 0;)
      changed |= sweep_block(op->region(r), uses);
  }
  return changed;
}

} // namespace

bool run_dce(ir::Kernel &kernel) {
  bool changed = false;
  for (;;) {
    UseCounts uses;
    ir::walk(kernel.body(), [&](ir::Operation *op) {
      for (ir::Value *v : op->operands())
        ++uses[v];
    });
    if (!sweep_block(kernel.body(), uses))
      return changed;
    changed = true;
  }
}

} // namespace tl::passes
