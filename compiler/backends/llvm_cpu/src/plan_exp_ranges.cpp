// llvm-cpu planning pass cpu-exp-ranges: exps of a value minus its maximum (see
// plan_exp_ranges.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_exp_ranges.h"

#include "plan_attrs.h"

namespace tl::llvm_cpu {
namespace {

using ir::Opcode;

/// Axis marker for bounds_reduced: m holds one value for every lane of a.
constexpr int64_t kWhole = -1;

/// True when m is at least the maximum of a along `axis` (kWhole: over every element).
bool bounds_reduced(const ir::Value *m, const ir::Value *a, int64_t axis) {
  const ir::Operation *d = m->def();
  if (!d)
    return false;
  if (d->opcode() == Opcode::Max)
    return bounds_reduced(d->operand(0), a, axis) || bounds_reduced(d->operand(1), a, axis);
  if (d->opcode() != Opcode::Reduce || d->operand(0) != a ||
      *d->attr_as<std::string>("kind") != "max")
    return false;
  return axis == kWhole ? m->type().is_scalar() || m->type().num_elements() == 1
                        : *d->attr_as<int64_t>("axis") == axis;
}

/// True when m is at least a in every lane (both of a's shape).
bool bounds_lanes(const ir::Value *m, const ir::Value *a) {
  const ir::Operation *d = m->def();
  if (m == a)
    return true;
  if (!d)
    return false;
  switch (d->opcode()) {
  case Opcode::Max:
    return bounds_lanes(d->operand(0), a) || bounds_lanes(d->operand(1), a);
  case Opcode::Splat:
    return bounds_reduced(d->operand(0), a, kWhole);
  case Opcode::Broadcast: {
    const ir::Value *s = d->operand(0);
    const ir::Operation *e = s->def();
    if (e && e->opcode() == Opcode::ExpandDims) // m[:, None] of a row maximum
      return bounds_reduced(e->operand(0), a, *e->attr_as<int64_t>("axis"));
    return s->type().num_elements() == 1 && bounds_reduced(s, a, kWhole);
  }
  default:
    return false;
  }
}

} // namespace

bool plan_exp_ranges(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kExpNonpositive);
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    if (op->opcode() != Opcode::Exp || op->result()->type().elem() != ir::ScalarKind::F32)
      return;
    const ir::Operation *s = op->operand(0)->def();
    if (!s || s->opcode() != Opcode::Sub || !bounds_lanes(s->operand(1), s->operand(0)))
      return;
    op->set_attr(std::string(plan::kExpNonpositive), true);
    changed = true;
  });
  return changed;
}

} // namespace tl::llvm_cpu
