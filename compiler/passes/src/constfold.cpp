// The constfold pass: elementwise ops on scalar constants become constants, via the interpreter.
// SPDX-License-Identifier: Apache-2.0
#include "tl/passes/constfold.h"

#include "match.h"
#include "tl/interpreter/fold.h"
#include "tl/ir/builder.h"
#include "tl/passes/rewrite.h"

#include <string>

namespace tl::passes {
namespace {

/// The operands of `op` as attribute values in fold_scalar's convention, or nothing when one of
/// them is not a scalar constant.
std::optional<std::vector<ir::Attr>> constant_operands(const ir::Operation &op) {
  std::vector<ir::Attr> values;
  for (const ir::Value *v : op.operands()) {
    const ir::Attr *a = scalar_constant(v);
    if (!a)
      return std::nullopt;
    const ir::ScalarKind k = v->type().elem();
    if (ir::is_float(k)) {
      std::optional<double> d = attr_float(*a); // the verifier also accepts integers here
      if (!d)
        return std::nullopt;
      values.push_back(*d);
    } else {
      values.push_back(*a);
    }
  }
  return values;
}

/// Folds the op at `it` when it qualifies; returns whether it did.
bool fold_op(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (!(op.flags() & ir::kElementwise) || op.num_results() != 1 || op.num_operands() == 0 ||
      !op.result()->type().is_scalar())
    return false;
  std::optional<std::vector<ir::Attr>> operands = constant_operands(op);
  if (!operands)
    return false;
  std::optional<ir::Attr> value = interp::fold_scalar(op, *operands);
  const ir::Type type = op.result()->type();
  if (!value || !is_canonical_value_attr(*value, type.elem()))
    return false;
  ir::Builder b(rw.kernel(), op.loc());
  b.set_insertion_point(op.parent(), it);
  ir::Value *c = b.create(ir::Opcode::Constant, {}, {type}, {{"value", *value}})->result();
  trace_rewrite("constfold-" + std::string(op.name()), op.loc());
  rw.replace_op(it, {c});
  return true;
}

bool fold_block(Rewriter &rw, ir::Block *block) {
  bool changed = false;
  for (auto it = block->ops().begin(); it != block->ops().end();) {
    auto next = std::next(it);
    ir::Operation *op = it->get();
    rw.remap_operands(*op); // so that chains of constant ops fold in one sweep
    if (fold_op(rw, it)) {
      changed = true;
    } else {
      for (unsigned r = 0; r < op->num_regions(); ++r)
        changed |= fold_block(rw, op->region(r));
    }
    it = next;
  }
  return changed;
}

} // namespace

bool run_constfold(ir::Kernel &kernel) {
  Rewriter rw(kernel);
  return fold_block(rw, kernel.body());
}

} // namespace tl::passes
