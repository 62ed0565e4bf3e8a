// llvm-cpu planning pass cpu-pair-stores: consecutive fused stores of one tile shape as one loop
// (see plan_paired_stores.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_paired_stores.h"

#include "plan_attrs.h"

namespace tl::llvm_cpu {
namespace {

using ir::Opcode;

/// The tile a store writes.
const ir::Type &stored_type(const ir::Operation &store) {
  return store.operand(store.num_operands() - 1)->type();
}

/// Does the value a fused store's lanes read as `v` come from a load view (cpu.view: the tensor
/// read in place), directly or through ops computed per lane? The other store's writes would
/// then change what later lanes read; the run-time checks cover fused loads only.
bool reads_view(const ir::Value *v) {
  const ir::Operation *def = v->def();
  if (!def)
    return false;
  if (def->opcode() == Opcode::Load)
    return def->attr(plan::kView) != nullptr;
  if (!plan::deferred(*def) && !plan::flag(*def, plan::kInline))
    return false; // materialized in its own slot
  for (const ir::Value *in : def->operands())
    if (reads_view(in))
      return true;
  return false;
}

/// Can fused store `second` run in the loop of fused store `first`? The same tile shape and
/// element type, the same streaming plan, no op between them but `second`'s deferred tree (so
/// every other value its tree reads is computed before `first`), and no view read by either.
bool pairs(const ir::Operation &first, const ir::Operation &second) {
  return !reads_view(first.operand(first.num_operands() - 1)) &&
         !reads_view(second.operand(second.num_operands() - 1)) &&
         stored_type(first).shape() == stored_type(second).shape() &&
         first.operand(0)->type().elem() == second.operand(0)->type().elem() &&
         plan::flag(first, plan::kNontemporal) == plan::flag(second, plan::kNontemporal);
}

} // namespace

bool plan_paired_stores(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kFuseWith);
  auto pair_in = [&](ir::Block *block) {
    const ir::Operation *first = nullptr; // an unpaired fused store, then the ops after it
    for (auto &it : block->ops()) {
      ir::Operation *op = it.get();
      const std::optional<int64_t> g = plan::group(*op, plan::kFuse);
      if (op->opcode() != Opcode::Store) {
        if (!plan::deferred(*op))
          first = nullptr; // computed between the stores
        continue;
      }
      if (first && g && pairs(*first, *op)) {
        op->set_attr(std::string(plan::kFuseWith), *plan::group(*first, plan::kFuse));
        changed = true;
        first = nullptr; // a pair, not a chain
      } else {
        first = g ? op : nullptr;
      }
    }
  };
  pair_in(kernel.body());
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    for (unsigned r = 0; r < op->num_regions(); ++r)
      pair_in(op->region(r));
  });
  return changed;
}

} // namespace tl::llvm_cpu
