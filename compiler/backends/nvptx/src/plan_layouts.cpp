// nvptx-plan-layouts: the layout of every tile an op defines (`nvptx.layout`), and for shape
// changes whether the elements move between threads (`nvptx.convert` = "none" or "shared").
// SPDX-License-Identifier: Apache-2.0
#include "plan_layouts.h"

#include "layout.h"

#include <algorithm>

namespace tl::nvptx {

int choose_num_warps(const ir::Kernel &kernel, int requested) {
  if (requested > 0)
    return requested;
  // Every element of a tile is a register of its thread: a whole-row tile of 8192 f32 over 4
  // warps is 64 registers per tile value, ~190 in all, and 2 programs per SM, too few loads in
  // flight to stream memory. At most 16 elements per thread keep registers low and occupancy up.
  constexpr int64_t kElementsPerThread = 16;
  constexpr int kMinWarps = 4, kMaxWarps = 16;
  int64_t largest = 0;
  bool has_dot = false;
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    has_dot |= op->opcode() == ir::Opcode::Dot;
    for (unsigned i = 0; i < op->num_results(); ++i)
      if (op->result(i)->type().is_tile())
        largest = std::max(largest, op->result(i)->type().num_elements());
  });
  if (has_dot)
    return kMinWarps;
  int warps = kMinWarps;
  while (warps < kMaxWarps && largest > 32 * warps * kElementsPerThread)
    warps *= 2;
  return warps;
}

bool plan_layouts(ir::Kernel &kernel, int requested_warps) {
  const int num_warps = choose_num_warps(kernel, requested_warps);
  bool changed = false;
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    if (op->num_results() != 1 || !op->result()->type().is_tile())
      return;
    const ir::Type &t = op->result()->type();
    const Layout l = default_layout(t.shape(), num_warps);
    op->set_attr("nvptx.layout", l.str());
    changed = true;
    const ir::Opcode code = op->opcode();
    if (code == ir::Opcode::Reshape || code == ir::Opcode::ExpandDims) {
      const ir::Type &in = op->operand(0)->type();
      bool same = false;
      if (in.is_tile()) {
        const ElementMap a = element_map(default_layout(in.shape(), num_warps), in.shape());
        const ElementMap b = element_map(l, t.shape());
        same = a.registers == b.registers && a.linear == b.linear;
      }
      op->set_attr("nvptx.convert", std::string(same || in.is_scalar() ? "none" : "shared"));
    } else if (code == ir::Opcode::Broadcast || code == ir::Opcode::Transpose ||
               code == ir::Opcode::Reduce || code == ir::Opcode::Scan || code == ir::Opcode::Dot) {
      op->set_attr("nvptx.convert", std::string("shared"));
    }
  });
  return changed;
}

} // namespace tl::nvptx
