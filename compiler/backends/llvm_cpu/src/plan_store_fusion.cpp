// llvm-cpu planning pass cpu-fuse-stores: store fusion (see plan_store_fusion.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_store_fusion.h"

#include "plan_attrs.h"
#include "tl/ir/uses.h"

#include <algorithm>
#include <vector>

namespace tl::llvm_cpu {
namespace {

using ir::Opcode;

struct Tree {
  std::vector<ir::Operation *> loads;
  std::vector<ir::Operation *> ops; // operands before users
};

/// A broadcast along the last axis only, of several rows, to the stored tile's shape (x / s[:,
/// None] with s a statistic of each of BM rows): one value per row of the fused loop. One-row
/// broadcasts are splats, inlined (plan_inlining.h).
bool row_broadcast(const ir::Operation &op, const ir::Type &stored) {
  if (op.opcode() != Opcode::Broadcast || op.result()->type().shape() != stored.shape())
    return false;
  const std::vector<int64_t> &in = op.operand(0)->type().shape(), &out = stored.shape();
  if (out.empty() || in.size() != out.size() || in.back() != 1 || out.back() == 1 ||
      op.operand(0)->type().num_elements() == 1)
    return false;
  return std::equal(in.begin(), in.end() - 1, out.begin());
}

/// Collects the tree feeding a store of `stored`: single-use elementwise ops, reshapes, row
/// broadcasts (their operand a leaf) and loads of `block`. False if `v` is not such an op (then
/// it is a leaf, read from its slot).
bool collect(const ir::Value *v, const ir::Block &block, const ir::UseList &uses,
             const ir::Type &stored, Tree &t) {
  ir::Operation *def = v->def();
  if (!def || def->parent() != &block || uses.count(v) != 1)
    return false;
  if (def->opcode() == Opcode::Load) {
    t.loads.push_back(def);
    return true;
  }
  if (row_broadcast(*def, stored)) {
    t.ops.push_back(def);
    return true;
  }
  const bool reshape = def->opcode() == Opcode::Reshape || def->opcode() == Opcode::ExpandDims;
  if (!reshape && !(def->flags() & ir::kElementwise))
    return false;
  for (const ir::Value *in : def->operands())
    collect(in, block, uses, stored, t);
  t.ops.push_back(def);
  return true;
}

/// No write to memory (nor a region that may hold one) between the tree's first op and the
/// store: deferring the loads to the store's position must not change what they read.
bool can_defer(const ir::Operation &store, const Tree &t) {
  bool seen = false;
  for (auto &op : store.parent()->ops()) {
    if (op.get() == &store)
      return true;
    seen |= std::find(t.loads.begin(), t.loads.end(), op.get()) != t.loads.end() ||
            std::find(t.ops.begin(), t.ops.end(), op.get()) != t.ops.end();
    if (seen && (op->flags() & (ir::kWritesMemory | ir::kHasRegions)))
      return false;
  }
  return true;
}

} // namespace

bool plan_store_fusion(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kFuse);
  const ir::UseList uses(*kernel.body());
  int64_t group = 0;
  ir::walk(kernel.body(), [&](ir::Operation *store) {
    if (store->opcode() != Opcode::Store || store->attr(plan::kTransposeStore))
      return; // a transpose's store writes from its load (plan_transposes.h)
    Tree t;
    const ir::Value *stored = store->operand(store->num_operands() - 1);
    if (!collect(stored, *store->parent(), uses, stored->type(), t) || !can_defer(*store, t))
      return;
    for (ir::Operation *op : t.loads)
      op->set_attr(std::string(plan::kFuse), group);
    for (ir::Operation *op : t.ops)
      op->set_attr(std::string(plan::kFuse), group);
    store->set_attr(std::string(plan::kFuse), group++);
    changed = true;
  });
  return changed;
}

} // namespace tl::llvm_cpu
