// The llvm-cpu planning attributes (see plan_attrs.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_attrs.h"

namespace tl::llvm_cpu::plan {

std::optional<int64_t> group(const ir::Operation &op, std::string_view name) {
  const int64_t *g = op.attr_as<int64_t>(name);
  return g ? std::optional<int64_t>(*g) : std::nullopt;
}

bool flag(const ir::Operation &op, std::string_view name) {
  const bool *f = op.attr_as<bool>(name);
  return f && *f;
}

bool deferred(const ir::Operation &op) {
  return op.opcode() != ir::Opcode::Store && op.attr(kFuse);
}

bool held_as_stored(ir::ScalarKind k) {
  return k != ir::ScalarKind::F16 && k != ir::ScalarKind::BF16 && k != ir::ScalarKind::F8E4M3 &&
         k != ir::ScalarKind::F8E5M2 && k != ir::ScalarKind::I1;
}

bool lowered_elsewhere(const ir::Operation &op) {
  return deferred(op) || flag(op, kInline) || flag(op, kInProducer) || op.attr(kTransposeAt) ||
         op.attr(kFuseWith);
}

bool clear(ir::Kernel &kernel, std::string_view name) {
  bool any = false;
  ir::walk(kernel.body(), [&](ir::Operation *op) { any |= op->remove_attr(name); });
  return any;
}

} // namespace tl::llvm_cpu::plan
