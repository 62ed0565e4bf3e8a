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

/// Collects the tree feeding a store: single-use elementwise ops, reshapes and loads of `block`.
/// False if `v` is not such an op (then it is a leaf, read from its slot).
bool collect(const ir::Value *v, const ir::Block &block, const ir::UseList &uses, Tree &t) {
  ir::Operation *def = v->def();
  if (!def || def->parent() != &block || uses.count(v) != 1)
    return false;
  if (def->opcode() == Opcode::Load) {
    t.loads.push_back(def);
    return true;
  }
  const bool reshape = def->opcode() == Opcode::Reshape || def->opcode() == Opcode::ExpandDims;
  if (!reshape && !(def->flags() & ir::kElementwise))
    return false;
  for (const ir::Value *in : def->operands())
    collect(in, block, uses, t);
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
    if (store->opcode() != Opcode::Store)
      return;
    Tree t;
    if (!collect(store->operand(store->num_operands() - 1), *store->parent(), uses, t) ||
        !can_defer(*store, t))
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
