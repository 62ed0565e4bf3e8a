// llvm-cpu planning pass cpu-inline-lanes: lane inlining (see plan_inlining.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_inlining.h"

#include "plan_attrs.h"
#include "tl/ir/uses.h"

#include <algorithm>
#include <unordered_set>

namespace tl::llvm_cpu {

using ir::Opcode;

namespace {

/// A reduction along the rows of a rank-2 tile of several rows (not argmax, not fused into its
/// producer): lower_reduce_scan's row loop, which gives its lanes their row and column.
bool row_reduction(const ir::Operation *op) {
  if (op->opcode() != Opcode::Reduce || *op->attr_as<std::string>("kind") == "argmax")
    return false;
  const ir::Type &t = op->operand(0)->type();
  return t.rank() == 2 && *op->attr_as<int64_t>("axis") == 1 && t.shape()[0] > 1;
}

/// A (R, 1) or (1, C) tile broadcast to (R, C), R and C > 1: a row's statistic (`m[:, None]`
/// with several rows a program) or a column mask.
bool row_or_column_broadcast(const ir::Operation *op) {
  if (op->opcode() != Opcode::Broadcast)
    return false;
  const ir::Type &in = op->operand(0)->type(), &out = op->result()->type();
  return out.rank() == 2 && in.rank() == 2 && out.shape()[0] > 1 && out.shape()[1] > 1 &&
         (in.shape()[0] == 1) != (in.shape()[1] == 1);
}

} // namespace

bool plan_inlining(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kInline);
  const ir::UseList uses(*kernel.body());
  // Users first (program order reversed), so that an op's users are decided before it.
  std::vector<ir::Operation *> ops;
  ir::walk(kernel.body(), [&](ir::Operation *op) { ops.push_back(op); });
  // The inlined ops whose every lane is evaluated inside a row reduction (row_reduction): the
  // reduction's own operand, and inlined ops all of whose users are such.
  std::unordered_set<const ir::Operation *> in_row_reduction;
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    ir::Operation *op = *it;
    if (plan::deferred(*op) || op->num_results() != 1 || op->result()->type().is_scalar())
      continue;
    // A splat, or a `full` constant tile (`0.5 * x` in a kernel), or a broadcast of a one-element
    // tile (a row's statistic, `m[:, None]`, with one row per program): one value for every
    // lane. A materialized broadcast was a pass filling a stack tile per row (softmax's max and
    // sum, layernorm's mean and 1/sigma) that its users read back.
    const bool splat =
        op->opcode() == Opcode::Splat || op->opcode() == Opcode::Full ||
        (op->opcode() == Opcode::Broadcast && op->operand(0)->type().num_elements() == 1);
    // Inside a row reduction only (below): a row or column broadcast, and expand_dims and
    // reshape (the same lanes in the same order). Not an arange (var's column index): its
    // lanes as the loop's index widened its compares to 64 bits (InstCombine drops the
    // truncation), two 8-lane compares a vector where its tile is one load.
    const bool row_only = row_or_column_broadcast(op) || op->opcode() == Opcode::ExpandDims ||
                          op->opcode() == Opcode::Reshape;
    if (!splat && !row_only && !(op->flags() & ir::kElementwise))
      continue;
    // Users in the same block see the same operand values (slots are written once, except a
    // carried tile updated in place, which has no other reader).
    const std::vector<const ir::Operation *> &all = uses.users(op->result());
    std::vector<const ir::Operation *> users = all;
    users.erase(std::unique(users.begin(), users.end()), users.end());
    if (users.empty() || (!splat && users.size() != 1))
      continue;
    bool lanes = true, rows = true;
    for (const ir::Operation *u : users) {
      lanes &= u->parent() == op->parent() &&
               ((u->flags() & ir::kElementwise) || u->opcode() == Opcode::Reduce ||
                u->opcode() == Opcode::Scan || in_row_reduction.count(u) != 0);
      rows &= u->parent() == op->parent() &&
              (plan::flag(*u, plan::kInline) ? in_row_reduction.count(u) != 0
                                             : row_reduction(u) && u->operand(0) == op->result());
    }
    // A row or column broadcast is read at its lane's row or column (KernelCodegen::row_lane_),
    // which only a row reduction's loop gives: var's x - mean[:, None] and its column mask with
    // 16 rows a program, each a pass over a stack tile before, the mask an i1 tile read back a
    // bit at a time (var at 0.13 of the triad). An elementwise op reading a value twice (var's
    // d * d) is one user: its lane reads both at the same index, computed once (LLVM's CSE),
    // inside a row reduction or not (var with one row a program, var_row_loop: d had been a
    // pass storing a stack tile that the squares read back).
    const bool read_once_a_lane = all.size() == 1 || (users[0]->flags() & ir::kElementwise) != 0;
    if (!lanes || (row_only && !rows) || (!splat && !read_once_a_lane))
      continue;
    if (rows)
      in_row_reduction.insert(op);
    op->set_attr(std::string(plan::kInline), true);
    changed = true;
  }
  return changed;
}

} // namespace tl::llvm_cpu
