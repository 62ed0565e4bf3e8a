// llvm-cpu planning pass cpu-prefetch-next: a k loop's next tiles fetched during its dot (see
// plan_prefetch_next.h).
// SPDX-License-Identifier: Apache-2.0
//
// Why: gemm_cpu.tlir and tl.ops.gemm copy each trip's (BM, BK) and (BK, BN) blocks out of rows
// one matrix row apart (8 KiB at 2048^3: every row its own page, no hardware prefetcher trains
// on 4-8 lines), so each copy waited on L3 or DRAM (~20 % of GEMM's time in a sampling profile,
// session 11). Fetched one trip ahead they are in the cache when copied.
#include "plan_prefetch_next.h"

#include "plan_attrs.h"
#include "tl/ir/uses.h"

namespace tl::llvm_cpu {
namespace {

using ir::Opcode;

/// True when `v` is computed inside `loop` (an argument of its body or of a nested block, or
/// the result of an op nested in it).
bool inside(const ir::Value *v, const ir::Operation *loop) {
  for (const ir::Block *b = v->owner(); b; b = b->parent() ? b->parent()->parent() : nullptr)
    if (b->parent() == loop)
      return true;
  return false;
}

/// True when a dot of `body` reads `v` directly or through reshapes.
bool read_by_dot(const ir::Value *v, const ir::Block *body, const ir::UseList &uses) {
  for (const ir::Operation *u : uses.users(v)) {
    if (u->parent() != body)
      continue;
    if (u->opcode() == Opcode::Dot && (u->operand(0) == v || u->operand(1) == v))
      return true;
    if (u->opcode() == Opcode::Reshape && read_by_dot(u->result(), body, uses))
      return true;
  }
  return false;
}

} // namespace

bool plan_prefetch_next(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kPrefetchNext);
  const ir::UseList uses(*kernel.body());
  ir::walk(kernel.body(), [&](ir::Operation *loop) {
    if (loop->opcode() != Opcode::For)
      return;
    const ir::Block *body = loop->region(0);
    const ir::Value *iv = body->argument(0);
    for (auto &op : body->ops()) {
      ir::Operation *load = op.get();
      const int rank = load->opcode() == Opcode::Load ? load->operand(0)->type().rank() : 0;
      if (rank == 0 || plan::deferred(*load) || load->num_operands() != 1 + size_t(rank))
        continue; // masked loads: their rows are not known to be the block's
      int along = -1;
      bool invariant = true;
      for (int d = 0; d < rank && invariant; ++d) {
        const ir::Value *o = load->operand(1 + d);
        if (o == iv && along < 0)
          along = d;
        else
          invariant = !inside(o, loop);
      }
      const std::vector<int64_t> &shape = load->result()->type().shape();
      int wide = 0; // dimensions before the last wider than 1
      for (int d = 0; d + 1 < rank; ++d)
        wide += shape[d] > 1;
      if (along < 0 || !invariant || wide > 1 || !read_by_dot(load->result(), body, uses))
        continue;
      load->set_attr(std::string(plan::kPrefetchNext), int64_t(along));
      changed = true;
    }
  });
  return changed;
}

} // namespace tl::llvm_cpu
