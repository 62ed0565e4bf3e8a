// llvm-cpu planning pass cpu-plan-views: loads that read in place (see plan_views.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_views.h"

#include "plan_attrs.h"
#include "tl/ir/uses.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace tl::llvm_cpu {
namespace {

using ir::Opcode;

/// Where the planned attributes evaluate ops: inlined ops at their (only) user, reductions in
/// their producer's loop, ops of a fused tree at its store.
class EvaluatedAt {
public:
  EvaluatedAt(ir::Kernel &kernel, const ir::UseList &uses) : uses_(uses) {
    ir::walk(kernel.body(), [&](ir::Operation *op) {
      if (op->opcode() == Opcode::Store)
        if (auto g = plan::group(*op, plan::kFuse))
          stores_[*g] = op;
    });
  }
  const ir::Operation *operator()(const ir::Operation *op) const {
    for (;;) {
      if (plan::flag(*op, plan::kInline) && op->opcode() != Opcode::Splat &&
          op->opcode() != Opcode::Broadcast) { // those may have several users
        op = uses_.users(op->result()).front();
        continue;
      }
      if (plan::flag(*op, plan::kInProducer)) {
        op = op->operand(0)->def();
        continue;
      }
      if (plan::deferred(*op))
        return stores_.at(*plan::group(*op, plan::kFuse));
      return op;
    }
  }

private:
  const ir::UseList &uses_;
  std::unordered_map<int64_t, const ir::Operation *> stores_; // by fusion group
};

bool writes_memory(const ir::Operation *op) {
  bool w = (op->flags() & ir::kWritesMemory) != 0;
  for (unsigned r = 0; r < op->num_regions(); ++r)
    ir::walk(op->region(r), [&](ir::Operation *o) { w |= (o->flags() & ir::kWritesMemory) != 0; });
  return w;
}

/// True when every user of `load`'s tile, and of the values sharing its storage (reshape,
/// expand_dims), is evaluated before the first write to memory after the load in its block. A
/// fused store that reads the tile as a leaf of its tree counts as a reader, not as a write
/// before it: its loop reads each lane before it writes that lane, as it reads its own fused
/// loads (log_softmax's x - lse: x had been copied, and the copy had no next-row prefetch).
bool used_before_writes(const ir::Operation *load, const ir::UseList &uses,
                        const EvaluatedAt &evaluated_at) {
  const ir::Block *block = load->parent();
  std::vector<const ir::Operation *> ops;
  for (auto &op : block->ops())
    ops.push_back(op.get());
  const size_t at = std::find(ops.begin(), ops.end(), load) - ops.begin();
  size_t last = 0; // the last op of the block that uses the tile (directly or in its regions)
  bool last_reads_first = false; // that op is a fused store of the block reading the tile
  std::vector<const ir::Value *> shared = {load->result()};
  for (size_t v = 0; v < shared.size(); ++v) {
    for (const ir::Operation *u : uses.users(shared[v])) {
      if (u->opcode() == Opcode::Reshape || u->opcode() == Opcode::ExpandDims ||
          (u->opcode() == Opcode::Broadcast && plan::flag(*u, plan::kInline)))
        shared.push_back(u->result()); // an inlined broadcast's users read the tile too
      u = evaluated_at(u);
      while (u && u->parent() != block)
        u = u->parent()->parent();
      if (!u)
        return false;
      const size_t i = std::find(ops.begin(), ops.end(), u) - ops.begin();
      const bool fused_store = u->opcode() == Opcode::Store && plan::group(*u, plan::kFuse);
      if (i > last || (i == last && !fused_store))
        last_reads_first = fused_store;
      last = std::max(last, i);
    }
  }
  for (size_t i = at + 1; i <= last && i < ops.size(); ++i)
    if (writes_memory(ops[i]) && !(i == last && last_reads_first))
      return false;
  return true;
}

} // namespace

bool plan_views(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kView);
  changed |= plan::clear(kernel, plan::kStreamCopy);
  const ir::UseList uses(*kernel.body());
  const EvaluatedAt evaluated_at(kernel, uses);
  int64_t view = 0;
  ir::walk(kernel.body(), [&](ir::Operation *load) {
    if (load->opcode() != Opcode::Load || plan::deferred(*load) ||
        load->num_operands() != 1 + size_t(load->operand(0)->type().rank()))
      return; // masked loads stay copies
    if (load->attr(plan::kStridedView))
      return; // read by its transpose at the tensor's row stride (plan_transposes.h)
    if (!plan::held_as_stored(load->result()->type().elem())) {
      // Held in another type than stored: the converting copy, fetching ahead as a view does.
      load->set_attr(std::string(plan::kStreamCopy), true);
      changed = true;
      return;
    }
    if (!used_before_writes(load, uses, evaluated_at))
      return;
    load->set_attr(std::string(plan::kView), view++);
    changed = true;
  });
  return changed;
}

} // namespace tl::llvm_cpu
