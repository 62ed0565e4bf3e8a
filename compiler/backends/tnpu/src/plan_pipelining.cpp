// The tnpu-plan-pipelining pass (see plan_pipelining.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_pipelining.h"

#include "attrs.h"
#include "tl/ir/uses.h"

#include <algorithm>
#include <set>
#include <vector>

namespace tl::tnpu {
namespace {

using ir::Opcode;

bool is_alias(const ir::Operation *op) { // same data, another shape
  return op && (op->opcode() == Opcode::ExpandDims || op->opcode() == Opcode::Reshape);
}
/// v is defined in a region of `loop` (its body argument included, its results not).
bool defined_in(const ir::Value *v, const ir::Operation *loop) {
  for (const ir::Block *b = v->owner(); b && b->parent(); b = b->parent()->parent())
    if (b->parent() == loop)
      return true;
  return false;
}
/// op writes a tile of its own on the vector unit (not a dot, not another view of its operand).
bool computes(const ir::Operation &op) {
  return op.opcode() != Opcode::Dot && op.opcode() != Opcode::Reshape &&
         op.opcode() != Opcode::ExpandDims;
}
/// u is a dot reading v as its a or b (not as its accumulator).
bool dot_operand(const ir::Operation &u, const ir::Value *v) {
  return u.opcode() == Opcode::Dot && (u.operand(0) == v || u.operand(1) == v);
}
/// The stored value behind its reshapes / expand_dims.
const ir::Value *stored_tile(const ir::Operation &store) {
  const ir::Value *v = store.operand(unsigned(store.num_operands() - 1));
  while (is_alias(v->def()))
    v = v->def()->operand(0);
  return v;
}
bool pure_scalar(const ir::Operation &op) {
  switch (op.opcode()) {
  case Opcode::Constant:
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::And:
  case Opcode::Or:
  case Opcode::Xor:
  case Opcode::Min:
  case Opcode::Max:
  case Opcode::Cast:
  case Opcode::Cmp:
  case Opcode::Constexpr:
  case Opcode::TensorDim:
  case Opcode::TensorStride:
  case Opcode::ProgramId:
  case Opcode::NumPrograms:
    // (float scalars are vector-unit commands, which a prefetch does not issue)
    for (const ir::Value *v : op.operands())
      if (ir::is_float(v->type().elem()))
        return false;
    return op.num_results() == 1 && !op.result()->type().is_tile() &&
           (op.opcode() == Opcode::Constant || !ir::is_float(op.result()->type().elem()));
  default:
    return false;
  }
}

class Pipeliner {
public:
  Pipeliner(ir::Kernel &k, const CompileOptions &o)
      : kernel_(k), uses_(*k.body()), depth_(std::clamp(o.pipeline_depth, 2, 4)) {}

  /// Plans body (of `loop`, or the grid loop when null); whether it is pipelined.
  bool plan(ir::Block &body, ir::Operation *loop);

private:
  unsigned param(const ir::Value *v) const {
    const auto &args = kernel_.body()->arguments();
    for (unsigned i = 0; i < args.size(); ++i)
      if (args[i].get() == v)
        return i;
    return ~0u;
  }
  /// v can be computed for the next iteration (of `loop`, or of the grid loop when null)
  /// before this one's body runs; the scalar ops that compute it join `scalars_`.
  bool hoistable(const ir::Value *v, const ir::Block &body, const ir::Operation *loop) {
    if (loop ? v == body.argument(0) || !defined_in(v, loop) : !v->def())
      return true;
    ir::Operation *d = v->def();
    if (!d || d->parent() != &body || !pure_scalar(*d))
      return false;
    for (const ir::Value *o : d->operands())
      if (!hoistable(o, body, loop))
        return false;
    scalars_.insert(d);
    return true;
  }
  bool yielded(const ir::Value *v) const {
    for (const ir::Operation *u : uses_.users(v))
      if (u->opcode() == Opcode::Yield || u->opcode() == Opcode::For ||
          (is_alias(u) && yielded(u->result())))
        return true;
    return false;
  }
  std::vector<ir::Operation *> candidates(ir::Block &body, const ir::Operation *loop,
                                          const std::set<unsigned> &stored);
  bool dma_ordered(const ir::Block &body, const std::set<const ir::Operation *> &mine) const;

  ir::Kernel &kernel_;
  ir::UseList uses_;
  int depth_;
  std::set<ir::Operation *> scalars_; ///< what hoistable found (for the loop being planned)
};

/// The loads and fills the loop can prefetch, then the tiles its body computes and stores.
std::vector<ir::Operation *> Pipeliner::candidates(ir::Block &body, const ir::Operation *loop,
                                                   const std::set<unsigned> &stored) {
  std::vector<ir::Operation *> mine;
  for (const auto &op : body.ops()) {
    if (!attr::prefetchable(*op) || yielded(op->result()) ||
        (op->opcode() == Opcode::Load && stored.count(param(op->operand(0)))))
      continue;
    bool ok = true;
    for (unsigned i = op->opcode() == Opcode::Load ? 1 : 0; i < op->num_operands(); ++i)
      ok = ok && !op->operand(i)->type().is_tile() && hoistable(op->operand(i), body, loop);
    if (ok)
      mine.push_back(op.get());
  }
  if (mine.empty())
    return mine;
  // Tiles the body computes and stores: buffered like the loads, so that the store of one
  // iteration overlaps the compute of the next. So are the tiles the vector unit computes for
  // a dot's a or b, so that the next iteration's vector work does not wait for this one's dot
  // to have read them (attention's p and v^T: bench/README.md npusim s11), and a dot's result
  // (not accumulated), so that the next iteration's dot does not wait for this one's vector
  // work to have read it (a sum as a dot beside the vector unit's work: npusim s25).
  std::set<const ir::Operation *> stored_defs; // behind reshapes (as plan() checks below)
  for (const auto &op : body.ops())
    if (op->opcode() == Opcode::Store)
      stored_defs.insert(stored_tile(*op)->def());
  for (const auto &op : body.ops()) {
    if (op->num_results() != 1 || !op->result()->type().is_tile() || attr::prefetchable(*op) ||
        (op->opcode() == Opcode::Dot && op->num_operands() > 2) || yielded(op->result()))
      continue;
    bool dot_read = false;
    for (const ir::Operation *u : uses_.users(op->result()))
      dot_read = dot_read || (computes(*op) && dot_operand(*u, op->result()));
    if (stored_defs.count(op.get()) || dot_read || op->opcode() == Opcode::Dot)
      mine.push_back(op.get());
  }
  return mine;
}

/// Across iterations the DMA engines must wait for each other when a store reads a prefetched
/// buffer (the prefetch overwrites it), when the body loads without prefetching, or when two
/// stores write one tensor (each store op keeps its engine).
bool Pipeliner::dma_ordered(const ir::Block &body,
                            const std::set<const ir::Operation *> &mine) const {
  std::set<unsigned> store_params;
  for (const auto &op : body.ops()) {
    if (op->opcode() == Opcode::Load && !mine.count(op.get()))
      return true;
    if (op->opcode() == Opcode::Store && (attr::prefetchable(*stored_tile(*op)->def()) ||
                                          !store_params.insert(param(op->operand(0))).second))
      return true;
  }
  return false;
}

bool Pipeliner::plan(ir::Block &body, ir::Operation *loop) {
  std::set<unsigned> stored;
  bool nested = false;
  bool unprefetched = false; // DMA the pipeline cannot prefetch: indexed ops, loads in `if`s
  ir::walk(&body, [&](ir::Operation *op) {
    const bool writes = op->opcode() == Opcode::Store || op->opcode() == Opcode::Scatter ||
                        op->opcode() == Opcode::AtomicAdd;
    if (writes)
      stored.insert(param(op->operand(0)));
    unprefetched = unprefetched || (writes && op->opcode() != Opcode::Store) ||
                   op->opcode() == Opcode::Gather ||
                   (op->opcode() == Opcode::Load && op->parent() != &body);
    // (a store inside an `if` is not a direct child the buffering below can see)
    nested = nested || op->opcode() == Opcode::For ||
             (op->opcode() == Opcode::Store && op->parent() != &body);
  });
  if (nested) // innermost loops only: their eager semaphores must not interleave
    return false;
  scalars_.clear();
  const std::vector<ir::Operation *> mine = candidates(body, loop, stored);
  if (mine.empty())
    return false;
  // A store runs behind the prefetch on its engine, so the next iterations' compute does not
  // wait for it: every stored tile must have its own buffers, else no pipelining.
  for (const auto &op : body.ops())
    if (op->opcode() == Opcode::Store) {
      const ir::Operation *d = stored_tile(*op)->def();
      if (!d || std::find(mine.begin(), mine.end(), d) == mine.end())
        return false;
    }
  for (ir::Operation *op : mine)
    op->set_attr(attr::kBuffers, int64_t(depth_));
  // (every scalar a candidate's indices need, as the prefetch computes them all)
  for (ir::Operation *op : scalars_)
    op->set_attr(attr::kPrefetch, true);
  ir::Operation *at = loop ? loop : body.terminator();
  if (unprefetched || dma_ordered(body, {mine.begin(), mine.end()}))
    at->set_attr(attr::kDmaOrdered, true);
  return true;
}

} // namespace

bool plan_pipelining(ir::Kernel &kernel, const CompileOptions &options) {
  attr::clear(kernel, {attr::kBuffers, attr::kPrefetch, attr::kDmaOrdered, attr::kPersistent});
  Pipeliner p(kernel, options);
  std::vector<ir::Operation *> loops;
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    if (op->opcode() == Opcode::For)
      loops.push_back(op);
  });
  for (ir::Operation *loop : loops)
    p.plan(*loop->region(0), loop);
  // The grid loop around the kernel body: pipelined when the body loads something it can
  // prefetch (a body with loops is not: they are nested in it).
  if (options.persistent && p.plan(*kernel.body(), nullptr))
    kernel.body()->terminator()->set_attr(attr::kPersistent, true);
  return true;
}

} // namespace tl::tnpu
