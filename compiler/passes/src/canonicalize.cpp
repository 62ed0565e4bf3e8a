// The canonicalize pass: a table of named local patterns, applied in sweeps until none matches.
// SPDX-License-Identifier: Apache-2.0
#include "tl/passes/canonicalize.h"

#include "match.h"
#include "tl/ir/builder.h"
#include "tl/passes/rewrite.h"

namespace tl::passes {
namespace {

using ir::Opcode;

/// A pattern looks at the op at `it` and, when it matches, rewrites it through `rw`. It may only
/// erase that op and insert ops before it, so the iterator after it stays valid.
using PatternFn = bool (*)(Rewriter &rw, OpIterator it);

struct Pattern {
  std::string_view name;
  PatternFn apply;
};

/// Replaces the single result of the op at `it` by `v`.
bool replace_with(Rewriter &rw, OpIterator it, ir::Value *v) {
  rw.replace_op(it, {v});
  return true;
}

ir::Builder builder_before(Rewriter &rw, OpIterator it) {
  ir::Builder b(rw.kernel(), (*it)->loc());
  b.set_insertion_point((*it)->parent(), it);
  return b;
}

bool constexpr_to_constant(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Constexpr)
    return false;
  const std::string *name = op.attr_as<std::string>("name");
  const ir::ConstexprParam *p = name ? rw.kernel().find_constexpr(*name) : nullptr;
  if (!p || op.result()->type() != ir::Type::scalar(p->type))
    return false;
  ir::Attr value;
  const int64_t *i = std::get_if<int64_t>(&p->value);
  const double *d = std::get_if<double>(&p->value);
  if (p->type == ir::ScalarKind::I1 && i && (*i == 0 || *i == 1))
    value = *i == 1;
  else if (ir::is_integer(p->type) && p->type != ir::ScalarKind::I1 && i)
    value = *i;
  else if (ir::is_float(p->type) && (d || i))
    value = d ? *d : static_cast<double>(*i);
  else
    return false;
  ir::Builder b = builder_before(rw, it);
  ir::Value *c =
      b.create(Opcode::Constant, {}, {op.result()->type()}, {{"value", value}})->result();
  return replace_with(rw, it, c);
}

/// x + 0 -> x for integers; x + (-0.0) -> x for floats (x + 0.0 is not x when x is -0.0).
bool add_zero(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Add)
    return false;
  for (unsigned i = 0; i < 2; ++i) {
    ir::Value *c = op.operand(i), *x = op.operand(1 - i);
    if (is_int_constant(c, 0) || is_float_constant(c, -0.0))
      return replace_with(rw, it, x);
  }
  return false;
}

/// x - 0 -> x for integers and x - (+0.0) -> x for floats.
bool sub_zero(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Sub)
    return false;
  ir::Value *c = op.operand(1);
  if (is_int_constant(c, 0) || is_float_constant(c, 0.0))
    return replace_with(rw, it, op.operand(0));
  return false;
}

/// x * 1 -> x (exact for floats too, -0.0 and NaN included).
bool mul_one(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Mul)
    return false;
  for (unsigned i = 0; i < 2; ++i) {
    ir::Value *c = op.operand(i), *x = op.operand(1 - i);
    if (is_int_constant(c, 1) || is_float_constant(c, 1.0))
      return replace_with(rw, it, x);
  }
  return false;
}

/// x * 0 -> 0 for integers only (for floats, NaN * 0 and -x * 0 differ).
bool mul_zero(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Mul)
    return false;
  for (unsigned i = 0; i < 2; ++i)
    if (is_int_constant(op.operand(i), 0))
      return replace_with(rw, it, op.operand(i));
  return false;
}

/// x / 1 -> x (integer division by one and float division by 1.0 are exact).
bool div_one(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Div)
    return false;
  ir::Value *c = op.operand(1);
  if (is_int_constant(c, 1) || is_float_constant(c, 1.0))
    return replace_with(rw, it, op.operand(0));
  return false;
}

/// cast/bitcast to the operand's own type -> the operand.
bool noop_cast(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Cast && op.opcode() != Opcode::Bitcast)
    return false;
  if (op.operand(0)->type() != op.result()->type())
    return false;
  return replace_with(rw, it, op.operand(0));
}

/// broadcast/reshape to the operand's own type -> the operand.
bool noop_shape(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Broadcast && op.opcode() != Opcode::Reshape)
    return false;
  if (op.operand(0)->type() != op.result()->type())
    return false;
  return replace_with(rw, it, op.operand(0));
}

bool transpose_identity(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Transpose || op.operand(0)->type() != op.result()->type())
    return false;
  const auto *perm = op.attr_as<std::vector<int64_t>>("perm");
  if (!perm)
    return false;
  for (size_t i = 0; i < perm->size(); ++i)
    if ((*perm)[i] != static_cast<int64_t>(i))
      return false;
  return replace_with(rw, it, op.operand(0));
}

/// select c, a, b with a constant (scalar or uniform tile) condition -> a or b.
bool select_const_cond(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Select)
    return false;
  std::optional<bool> c = bool_constant(op.operand(0));
  if (!c)
    return false;
  return replace_with(rw, it, op.operand(*c ? 1 : 2));
}

/// select c, x, x -> x.
bool select_same_value(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Select || op.operand(1) != op.operand(2))
    return false;
  return replace_with(rw, it, op.operand(1));
}

/// Moves the ops of `region` (which ends with a yield) before `it`; returns the yielded values.
std::vector<ir::Value *> inline_region(ir::Block *region, OpIterator it) {
  ir::Block *dest = (*it)->parent();
  std::vector<ir::Value *> yielded = region->terminator()->operands();
  auto end = std::prev(region->ops().end());
  for (auto op = region->ops().begin(); op != end; ++op)
    (*op)->set_parent(dest);
  dest->ops().splice(it, region->ops(), region->ops().begin(), end);
  return yielded;
}

/// if with a constant condition -> the chosen region's ops inlined (or nothing without else).
bool if_const_cond(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::If)
    return false;
  std::optional<bool> c = bool_constant(op.operand(0));
  if (!c)
    return false;
  const unsigned r = *c ? 0 : 1;
  if (r >= op.num_regions()) { // false and no else: the if has no results
    rw.erase(it);
    return true;
  }
  ir::Operation *yield = op.region(r)->terminator();
  if (!yield || yield->num_operands() != op.num_results())
    return false; // malformed: left for the verifier to report
  rw.replace_op(it, inline_region(op.region(r), it));
  return true;
}

/// An integer constant whose attribute lies in the range of its type (so no wrapping applies).
std::optional<int64_t> in_range_int(const ir::Value *v) {
  const ir::Attr *a = scalar_constant(v);
  std::optional<int64_t> i = a ? attr_int(*a) : std::nullopt;
  const ir::ScalarKind k = v->type().elem();
  if (!i || !ir::is_integer(k) || ir::bit_width(k) >= 64)
    return i;
  const int bits = ir::bit_width(k);
  const int64_t lo = ir::is_signed(k) ? -(int64_t(1) << (bits - 1)) : 0;
  const int64_t hi = ir::is_signed(k) ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  if (*i < lo || *i > hi)
    return std::nullopt;
  return i;
}

/// for with constant bounds lb >= ub and a constant positive step runs zero times -> its inits.
bool for_zero_trip(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::For || op.num_operands() < 3)
    return false;
  std::optional<int64_t> lb = in_range_int(op.operand(0)), ub = in_range_int(op.operand(1)),
                         step = in_range_int(op.operand(2));
  if (!lb || !ub || !step || *step <= 0 || *lb < *ub)
    return false;
  std::vector<ir::Value *> inits(op.operands().begin() + 3, op.operands().end());
  if (inits.size() != op.num_results())
    return false;
  rw.replace_op(it, inits);
  return true;
}

/// splat of a scalar constant -> full with the constant's value.
bool splat_const_to_full(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Splat)
    return false;
  const ir::Attr *value = scalar_constant(op.operand(0));
  if (!value || op.operand(0)->type().elem() != op.result()->type().elem())
    return false;
  ir::Builder b = builder_before(rw, it);
  return replace_with(rw, it, b.full(op.result()->type(), *value));
}

/// reshape of a scalar (to a tile of one element) -> splat: the same value, in the form every
/// backend lowers (the tnpu had no reshape of a scalar: "operand is not a tile in the
/// scratchpad" for `tl.reshape(tl.sum(v), (1, 1))`).
bool reshape_scalar_to_splat(Rewriter &rw, OpIterator it) {
  ir::Operation &op = **it;
  if (op.opcode() != Opcode::Reshape || !op.operand(0)->type().is_scalar() ||
      !op.result()->type().is_tile())
    return false;
  ir::Builder b = builder_before(rw, it);
  return replace_with(rw, it, b.splat(op.operand(0), op.result()->type().shape()));
}

/// The patterns, tried in order on every op; the first that matches rewrites it.
constexpr Pattern kPatterns[] = {
    {"constexpr-to-constant", constexpr_to_constant},
    {"add-zero", add_zero},
    {"sub-zero", sub_zero},
    {"mul-one", mul_one},
    {"mul-zero", mul_zero},
    {"div-one", div_one},
    {"noop-cast", noop_cast},
    {"noop-shape", noop_shape},
    {"transpose-identity", transpose_identity},
    {"select-const-cond", select_const_cond},
    {"select-same-value", select_same_value},
    {"if-const-cond", if_const_cond},
    {"for-zero-trip", for_zero_trip},
    {"splat-const-to-full", splat_const_to_full},
    {"reshape-scalar-to-splat", reshape_scalar_to_splat},
};

/// One sweep over `block` and its nested regions; returns whether a pattern matched.
bool sweep_block(Rewriter &rw, ir::Block *block) {
  bool changed = false;
  for (auto it = block->ops().begin(); it != block->ops().end();) {
    auto next = std::next(it);
    ir::Operation *op = it->get();
    rw.remap_operands(*op);
    const ir::Location loc = op->loc();
    bool matched = false;
    for (const Pattern &p : kPatterns)
      if (p.apply(rw, it)) {
        trace_rewrite(p.name, loc);
        matched = true;
        break;
      }
    if (!matched)
      for (unsigned r = 0; r < op->num_regions(); ++r)
        changed |= sweep_block(rw, op->region(r));
    changed |= matched;
    it = next;
  }
  return changed;
}

} // namespace

bool run_canonicalize(ir::Kernel &kernel) {
  // Every pattern removes an op or replaces it by a smaller one, so sweeps terminate; the cap
  // only guards against a pattern bug.
  constexpr int kMaxSweeps = 64;
  bool changed = false;
  for (int i = 0; i < kMaxSweeps; ++i) {
    Rewriter rw(kernel);
    if (!sweep_block(rw, kernel.body()))
      break;
    changed = true;
  }
  return changed;
}

} // namespace tl::passes
