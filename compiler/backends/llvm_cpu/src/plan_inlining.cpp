// llvm-cpu planning pass cpu-inline-lanes: lane inlining (see plan_inlining.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_inlining.h"

#include "plan_attrs.h"
#include "tl/ir/uses.h"

namespace tl::llvm_cpu {

using ir::Opcode;

bool plan_inlining(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kInline);
  const ir::UseList uses(*kernel.body());
  auto walks_lanes = [](const ir::Operation *u) {
    return (u->flags() & ir::kElementwise) || u->opcode() == Opcode::Reduce ||
           u->opcode() == Opcode::Scan;
  };
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    if (plan::deferred(*op) || op->num_results() != 1 || op->result()->type().is_scalar())
      return;
    // A splat, or a `full` constant tile (`0.5 * x` in a kernel), or a broadcast of a one-element
    // tile (a row's statistic, `m[:, None]`, with one row per program): one value for every
    // lane. A materialized broadcast was a pass filling a stack tile per row (softmax's max and
    // sum, layernorm's mean and 1/sigma) that its users read back.
    const bool splat =
        op->opcode() == Opcode::Splat || op->opcode() == Opcode::Full ||
        (op->opcode() == Opcode::Broadcast && op->operand(0)->type().num_elements() == 1);
    if (!splat && !(op->flags() & ir::kElementwise))
      return;
    const auto &users = uses.users(op->result());
    // Users in the same block see the same operand values (slots are written once, except a
    // carried tile updated in place, which has no other reader).
    if (users.empty() || (!splat && users.size() != 1))
      return;
    for (const ir::Operation *u : users)
      if (u->parent() != op->parent() || !walks_lanes(u))
        return;
    op->set_attr(std::string(plan::kInline), true);
    changed = true;
  });
  return changed;
}

} // namespace tl::llvm_cpu
