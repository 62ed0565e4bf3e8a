// llvm-cpu planning pass cpu-fuse-reduces: reductions in their producer's loop (see
// plan_reduce_fusion.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_reduce_fusion.h"

#include "plan_attrs.h"

namespace tl::llvm_cpu {

using ir::Opcode;

bool plan_reduce_fusion(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kInProducer);
  ir::walk(kernel.body(), [&](ir::Operation *r) {
    if (r->opcode() != Opcode::Reduce || *r->attr_as<std::string>("kind") == "argmax")
      return;
    const ir::Type &t = r->operand(0)->type();
    const int64_t axis = *r->attr_as<int64_t>("axis");
    for (int d = 0; d < t.rank(); ++d)
      if (d != axis && t.shape()[d] != 1)
        return; // a reduction per row or column: its own loops
    const ir::Operation *e = r->operand(0)->def();
    if (!e || e->parent() != r->parent() || !(e->flags() & ir::kElementwise) ||
        plan::flag(*e, plan::kInline) || plan::deferred(*e) ||
        e->result()->type().elem() == ir::ScalarKind::I1)
      return;
    r->set_attr(std::string(plan::kInProducer), true);
    changed = true;
  });
  return changed;
}

} // namespace tl::llvm_cpu
