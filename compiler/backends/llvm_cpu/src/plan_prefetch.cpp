// llvm-cpu planning pass cpu-prefetch-stores: stores fetched for ownership (see plan_prefetch.h).
// SPDX-License-Identifier: Apache-2.0
//
// Measured on the development machine: one-thread softmax 0.72 -> 0.77 of the triad, two threads
// 0.72 -> 0.83 (the output block fetched during the max and exp passes).
#include "plan_prefetch.h"

#include "plan_attrs.h"

#include <unordered_map>

namespace tl::llvm_cpu {
namespace {

using ir::Opcode;

/// The emitter lowers ops in program order (parents before their regions' ops), except those
/// lowered elsewhere (plan::lowered_elsewhere): a value is computed when the view is read if its
/// op comes before the view in that order, is not one of the view's ancestors (still being
/// lowered) and is lowered in place.
class ComputedBefore {
public:
  explicit ComputedBefore(ir::Kernel &kernel) {
    ir::walk(kernel.body(), [&](ir::Operation *op) { order_.emplace(op, order_.size()); });
  }
  bool operator()(const ir::Value *v, const ir::Operation &view) const {
    const ir::Operation *def = v->def();
    if (!def) // a block argument
      return true;
    if (plan::lowered_elsewhere(*def) || order_.at(def) >= order_.at(&view))
      return false;
    for (const ir::Operation *p = view.parent()->parent(); p; p = p->parent()->parent())
      if (p == def)
        return false;
    return true;
  }

private:
  std::unordered_map<const ir::Operation *, size_t> order_;
};

} // namespace

bool plan_prefetch(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kPrefetchAfter);
  const ComputedBefore computed(kernel);
  ir::walk(kernel.body(), [&](ir::Operation *load) {
    const std::optional<int64_t> view = plan::group(*load, plan::kView);
    if (load->opcode() != Opcode::Load || !view)
      return;
    bool after = false;
    for (auto &op : load->parent()->ops()) {
      after |= op.get() == load;
      if (!after || op->opcode() != Opcode::Store || op->attr(plan::kPrefetchAfter))
        continue;
      bool known = true;
      for (int d = 0; d < op->operand(0)->type().rank() && known; ++d)
        known = computed(op->operand(1 + d), *load);
      if (!known)
        continue;
      op->set_attr(std::string(plan::kPrefetchAfter), *view);
      changed = true;
    }
  });
  return changed;
}

} // namespace tl::llvm_cpu
