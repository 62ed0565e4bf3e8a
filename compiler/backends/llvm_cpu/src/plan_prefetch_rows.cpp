// llvm-cpu planning pass cpu-prefetch-rows: rows at indices read from memory, fetched a few
// trips ahead (see plan_prefetch_rows.h).
// SPDX-License-Identifier: Apache-2.0
//
// Why: tl.ops.embedding on cpu copied each 4 KiB table row as it came, at 0.45-0.53 of the
// triad with random ids and 1.3-1.4 with sequential ones (Zen 4, 16384 x 1024 f32, session 18):
// the time went to the first lines of each random row (2 MiB pages for the table: 0.47 -> 0.53,
// so not the TLB). Fetched into L2 two rows ahead: 0.72-1.14.
#include "plan_prefetch_rows.h"

#include "plan_attrs.h"

namespace tl::llvm_cpu {
namespace {

using ir::Opcode;

/// The offset of the one-element load `index` is `loop`'s induction variable, plus a value from
/// outside the loop.
bool offset_steps_with_loop(const ir::Operation &index, const ir::Operation &loop) {
  const ir::Value *iv = loop.region(0)->argument(0);
  const ir::Value *o = index.operand(1);
  if (o == iv)
    return true;
  const ir::Operation *add = o->def();
  if (!add || add->opcode() != Opcode::Add)
    return false;
  const ir::Value *other = add->operand(0) == iv   ? add->operand(1)
                           : add->operand(1) == iv ? add->operand(0)
                                                   : nullptr;
  if (!other)
    return false;
  // `other` is defined outside the loop: not in its body or a block nested in it.
  for (const ir::Block *b = other->owner(); b; b = b->parent() ? b->parent()->parent() : nullptr)
    if (b->parent() == &loop)
      return false;
  return true;
}

} // namespace

bool plan_prefetch_rows(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kPrefetchRows);
  ir::walk(kernel.body(), [&](ir::Operation *load) {
    if (load->opcode() != Opcode::Load)
      return;
    const std::vector<int64_t> &shape = load->result()->type().shape();
    for (int d = 0; d < int(shape.size()); ++d) {
      const ir::Operation *r = load->operand(1 + d)->def();
      if (shape[d] != 1 || !r || r->opcode() != Opcode::Reduce ||
          *r->attr_as<std::string>("kind") == "argmax")
        continue; // a sum, max or min of one element is that element
      const ir::Operation *index = r->operand(0)->def();
      if (!index || index->opcode() != Opcode::Load || index->operand(0)->type().rank() != 1 ||
          index->result()->type().num_elements() != 1 ||
          !ir::is_integer(index->result()->type().elem()))
        continue;
      // The innermost for around the index load, which must also hold `load`.
      const ir::Operation *loop = index->parent()->parent();
      if (!loop || loop->opcode() != Opcode::For || !offset_steps_with_loop(*index, *loop))
        continue;
      bool within = false;
      for (const ir::Operation *p = load; p && !within; p = p->parent()->parent())
        within = p == loop;
      if (!within)
        continue;
      load->set_attr(std::string(plan::kPrefetchRows), int64_t(d));
      changed = true;
      return;
    }
  });
  return changed;
}

} // namespace tl::llvm_cpu
