// nvptx-plan-layouts: the layout of every tile an op defines (`nvptx.layout`), and for shape
// changes whether the elements move between threads (`nvptx.convert` = "none" or "shared").
// SPDX-License-Identifier: Apache-2.0
#include "plan_layouts.h"

#include "layout.h"

namespace tl::nvptx {

bool plan_layouts(ir::Kernel &kernel, int num_warps) {
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
