// nvptx-plan-layouts: the layout of every tile an op defines (`nvptx.layout`), for shape changes
// whether the elements move between threads (`nvptx.convert` = "none" or "shared"), for loops
// the layouts of their carried tiles (`nvptx.carried`), and the loads of a K loop issued one
// iteration ahead (`nvptx.prefetch`).
// SPDX-License-Identifier: Apache-2.0
#include "plan_layouts.h"

#include "layout.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace tl::nvptx {
namespace {

/// The mma layout of a dot the tensor cores compute: bf16/f16 inputs into f32 in any order
/// (ir.h), whole 16 x 8 x 16 instruction tiles on every warp. The most warps that fit (the rest
/// replicate), and of those grids the one whose warp block is squarest (fewest fragment loads
/// per mma), more warps along M on ties.
std::optional<Layout> mma_for(const ir::Operation &dot, int num_warps) {
  const ir::Type &a = dot.operand(0)->type(), &r = dot.result()->type();
  const std::string *order = dot.attr_as<std::string>("order");
  if ((a.elem() != ir::ScalarKind::BF16 && a.elem() != ir::ScalarKind::F16) ||
      r.elem() != ir::ScalarKind::F32 || (order && *order == "exact"))
    return std::nullopt;
  const int64_t M = r.shape()[0], N = r.shape()[1], K = a.shape()[1];
  if (K % 16)
    return std::nullopt;
  std::optional<Layout> best;
  int64_t best_score = 0;
  for (int64_t warps = num_warps; warps >= 1 && !best; warps /= 2)
    for (int64_t wm = warps; wm >= 1; wm /= 2) {
      const int64_t wn = warps / wm;
      if (M % (16 * wm) || N % (8 * wn))
        continue;
      int64_t score = 0; // |log2(rows) - log2(cols)| of a warp's block
      for (int64_t rows = M / wm, cols = N / wn; rows != cols; score++)
        rows > cols ? rows /= 2 : cols /= 2;
      if (!best || score < best_score) {
        best = mma_layout(wm, wn);
        best_score = score;
      }
    }
  return best;
}

/// Whether a dot is computed on CUDA cores as one fma chain per element in f32 (f32 inputs, f32
/// accumulator), in fma_layout.
bool fma_dot(const ir::Operation &dot) {
  return dot.operand(0)->type().elem() == ir::ScalarKind::F32 &&
         dot.operand(1)->type().elem() == ir::ScalarKind::F32 &&
         dot.result()->type().elem() == ir::ScalarKind::F32;
}

/// The layout planned for tile `v`: a loop result's from its loop's nvptx.carried, else its
/// op's nvptx.layout; null when none was planned.
std::optional<Layout> planned_layout(const ir::Value *v) {
  const ir::Operation *def = v->def();
  if (!def)
    return std::nullopt;
  std::string text;
  if (def->opcode() == ir::Opcode::For) {
    const std::string *all = def->attr_as<std::string>("nvptx.carried");
    if (!all)
      return std::nullopt;
    size_t start = 0;
    for (unsigned i = 0; i < v->index() && start != std::string::npos; ++i)
      start = all->find(';', start) == std::string::npos ? std::string::npos
                                                         : all->find(';', start) + 1;
    if (start == std::string::npos)
      return std::nullopt;
    text = all->substr(start, all->find(';', start) - start);
  } else if (const std::string *l = def->attr_as<std::string>("nvptx.layout")) {
    text = *l;
  }
  Layout layout;
  return Layout::parse(text, layout) ? std::optional<Layout>(layout) : std::nullopt;
}

/// A for op's carried tile stays in a dot's layout (no conversion per iteration) when the body
/// yields
/// - a dot accumulating into the carried argument, in the dot's mma or fma layout (the K loop);
/// - an elementwise op of the carried argument and a tile in a dot's layout (the result of an
///   inner K loop: a K loop in chunks adds each chunk's sum to a total), in that layout, which
///   the op then takes too: one conversion of the total after the loop, none per chunk.
/// Loops are planned inner first (plan_layouts), so an inner loop's carried layout is known.
void plan_carried(ir::Operation &loop, int num_warps) {
  const ir::Block &body = *loop.region(0);
  const ir::Operation *yield = body.terminator();
  if (!yield)
    return;
  std::string carried;
  bool any = false;
  for (unsigned i = 0; i < yield->num_operands(); ++i) {
    const ir::Value *arg = body.argument(i + 1);
    ir::Operation *def = yield->operand(i)->def();
    std::optional<std::string> keep;
    if (def && def->opcode() == ir::Opcode::Dot && def->num_operands() == 3 &&
        def->operand(2) == arg) {
      Layout layout;
      const std::string *l = def->attr_as<std::string>("nvptx.layout");
      if (l && Layout::parse(*l, layout) && (layout.mma || fma_dot(*def)))
        keep = *l;
    } else if (def && (def->flags() & ir::kElementwise) && !def->num_regions() &&
               def->num_results() == 1 && def->parent() == &body &&
               std::find(def->operands().begin(), def->operands().end(), arg) !=
                   def->operands().end()) {
      const ir::Type &t = def->result()->type();
      for (const ir::Value *x : def->operands()) {
        const ir::Operation *from = x->def();
        std::optional<Layout> l = x != arg && x->type().is_tile() && x->type() == t && from &&
                                          from->opcode() == ir::Opcode::For
                                      ? planned_layout(x)
                                      : std::nullopt;
        if (l && (l->mma || l->str() != default_layout(t.shape(), num_warps).str())) {
          keep = l->str();
          def->set_attr("nvptx.layout", *keep);
          break;
        }
      }
    }
    any |= keep.has_value();
    carried += (i ? ";" : "") + keep.value_or("default");
    if (keep && loop.num_results() == 1)
      loop.set_attr("nvptx.layout", *keep);
  }
  if (any)
    loop.set_attr("nvptx.carried", carried);
}

/// Whether op (in `body`) is computable one iteration ahead: a pure scalar op without regions
/// whose operands are the induction variable, values from outside the loop or such ops.
bool ahead(const ir::Operation &op, const ir::Block &body) {
  for (const ir::Value *v : op.operands()) {
    if (v == body.argument(0) || v->owner() != &body)
      continue;
    const ir::Operation *def = v->def();
    if (!def || !(def->flags() & ir::kPure) || def->num_regions() || !v->type().is_scalar() ||
        !ahead(*def, body))
      return false;
  }
  return true;
}

/// The K loop's software pipeline: a load feeding a dot operand whose indices are known one
/// iteration ahead gets nvptx.prefetch = "next"; the emitter issues the next iteration's load
/// before this iteration's dot, so the global load's latency overlaps the mma. Only in loops
/// that write no memory (the load must read what it would have read a step later).
void plan_prefetch(ir::Operation &loop) {
  ir::Block &body = *loop.region(0);
  bool writes = false;
  ir::walk(&body, [&](ir::Operation *op) { writes |= (op->flags() & ir::kWritesMemory) != 0; });
  if (writes)
    return;
  for (auto &op : body.ops()) {
    if (op->opcode() != ir::Opcode::Dot)
      continue;
    for (unsigned i = 0; i < 2; ++i) {
      ir::Operation *load = op->operand(i)->def();
      if (load && load->opcode() == ir::Opcode::Load && load->parent() == &body &&
          ahead(*load, body) && !load->attr("nvptx.prefetch"))
        load->set_attr("nvptx.prefetch", std::string("next"));
    }
  }
}

/// The shared-memory ring of a pipelined K loop (plan_pipeline): at most this many bytes (of
/// 163 KiB a block on sm_80, 227 on sm_90; a 128 x 128 accumulator's registers keep one block
/// per SM anyway), and at most 4 stages.
constexpr int64_t kRingBudget = 160 * 1024;
/// A CUDA-core dot's ring: two blocks share an SM (227 KiB) with room for a spill.
constexpr int64_t kFmaRingBudget = 100 * 1024;

/// Whether `load` reads a 2-D tile (16-bit for a tensor-core dot, f32 for a CUDA-core one) of
/// whole 16-byte rows whose only use is an operand of `dot`, with zero padding (what a cp.async
/// zero fill gives past the tensor's end).
bool async_operand(const ir::Operation &load, const ir::Operation &dot, const ir::Block &body) {
  const ir::Type &t = load.result()->type();
  const int bits = ir::bit_width(t.elem());
  if (t.rank() != 2 || !(bits == 16 || (bits == 32 && fma_dot(dot))) || t.shape()[1] * bits % 128)
    return false;
  if (const ir::Attr *pad = load.attr("padding")) { // +0 only: a zero fill's bits
    const int64_t *i = std::get_if<int64_t>(pad);
    const double *d = std::get_if<double>(pad);
    if (!(i && *i == 0) && !(d && *d == 0.0 && !std::signbit(*d)))
      return false;
  }
  int uses = 0;
  ir::walk(const_cast<ir::Block *>(&body), [&](ir::Operation *op) {
    for (const ir::Value *v : op->operands())
      uses += v == load.result();
  });
  return uses == 1 && dot.operand(0) != dot.operand(1);
}

/// The ring depth of `dot` when its K loop can be pipelined (see plan_pipeline), else 0: it is
/// in a for body that writes no memory, both operands are loads there whose indices are known
/// ahead and whose tiles cp.async can copy, and two slots at least fit the ring budget.
int64_t pipeline_stages(const ir::Operation &dot) {
  const ir::Block &body = *dot.parent();
  if (!body.parent() || body.parent()->opcode() != ir::Opcode::For)
    return 0;
  bool writes = false;
  ir::walk(const_cast<ir::Block *>(&body),
           [&](ir::Operation *op) { writes |= (op->flags() & ir::kWritesMemory) != 0; });
  if (writes)
    return 0;
  for (unsigned i = 0; i < 2; ++i) {
    const ir::Operation *load = dot.operand(i)->def();
    if (!load || load->opcode() != ir::Opcode::Load || load->parent() != &body ||
        !ahead(*load, body) || !async_operand(*load, dot, body))
      return 0;
  }
  const int64_t M = dot.result()->type().shape()[0], N = dot.result()->type().shape()[1],
                K = dot.operand(0)->type().shape()[1];
  if (fma_dot(dot)) {
    // From 64 x 64 up: a smaller tile's few fmas per iteration do not pay for the copies'
    // addressing (H200, the library's 32 x 32: 13.8 TFLOP/s on the ring, 16.4 without).
    const int64_t stages = std::min<int64_t>(4, kFmaRingBudget / ((M * K + K * N) * 4));
    return stages >= 2 && M * N >= 64 * 64 ? stages : 0;
  }
  const int64_t stages = std::min<int64_t>(4, kRingBudget / ((M * K + K * N) * 2));
  return stages >= 2 && K % 16 == 0 ? stages : 0;
}

/// Whether a pipelined dot's result fits wgmma's fragment on `num_warps` warps: M = 16 x
/// num_warps (a warpgroup of 4 warps per 64 rows), N a multiple of 16 up to 256.
bool wgmma_shaped(const ir::Operation &dot, int num_warps) {
  const int64_t M = dot.result()->type().shape()[0], N = dot.result()->type().shape()[1];
  return num_warps % 4 == 0 && M == 16 * num_warps && N % 16 == 0 && N <= 256;
}

/// The K loop (`for k: acc = dot(load a_k, load b_k, acc)`, no memory written in the loop), on
/// the tensor cores or an f32 one on CUDA cores: both operand loads are copied by cp.async
/// straight into a ring of `nvptx.stages` shared-memory slots, the slot of iteration
/// k + stages - 1 filling while the dot of iteration k runs, so that global latency hides behind
/// the math and the operands take no registers. A tensor-core dot's result gets the warps-along-M
/// mma layout when its shape allows (M = 16 x num_warps, a multiple of 4 warps, N a multiple of 16
/// up to 256): the fragment of Hopper's wgmma (m64nNk16 per group of 4 warps), which sm_90a uses.
void plan_pipeline(ir::Operation &loop, int num_warps) {
  for (auto &op : loop.region(0)->ops()) {
    Layout l;
    const std::string *layout = op->attr_as<std::string>("nvptx.layout");
    if (op->opcode() != ir::Opcode::Dot || !layout || !Layout::parse(*layout, l) ||
        !(l.mma || fma_dot(*op)))
      continue;
    const int64_t stages = pipeline_stages(*op);
    if (!stages)
      continue;
    for (unsigned i = 0; i < 2; ++i)
      op->operand(i)->def()->set_attr("nvptx.prefetch", std::string("async"));
    op->set_attr("nvptx.stages", stages);
    if (l.mma && wgmma_shaped(*op, num_warps))
      op->set_attr("nvptx.layout", mma_layout(num_warps, 1).str());
    return; // one ring per loop: another dot in it keeps the register prefetch
  }
}

/// `num_warps`, doubled (up to 16) while a tensor-core dot's accumulator would put more than 64
/// elements on each thread (an f32 CUDA-core dot's: 32) (a 128 x 128 f32 accumulator on 4 warps
/// takes 128 registers a thread and spills with mma.sync's fragments beside it); a pipelined dot
/// stops at the first count wgmma's fragment fits with up to 128 (wgmma reads its operands from
/// shared memory: a 128 x 256 tile on 8 warps, as peers run it).
int mma_warps(const ir::Kernel &kernel, int num_warps) {
  int warps = num_warps;
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    if (op->opcode() != ir::Opcode::Dot)
      return;
    const int64_t elements = op->result()->type().num_elements();
    if (!mma_for(*op, warps)) {
      // 32 accumulators a thread: its K loop unrolled whole beside them fits 128 registers
      // (H200, 4096^3: 128 x 128 on 16 warps 1.07x the speed of 8 warps with 64).
      while (fma_dot(*op) && warps < 16 && elements > 32 * 32 * warps)
        warps *= 2;
      return;
    }
    const bool pipelined = pipeline_stages(*op) > 0;
    while (warps < 16 && elements > 64 * 32 * warps &&
           !(pipelined && wgmma_shaped(*op, warps) && elements <= 128 * 32 * warps))
      warps *= 2;
  });
  return warps;
}

/// Without a num_warps option: every element of a tile is a register of its thread, so a
/// whole-row tile of 8192 f32 over 4 warps is 64 registers per tile value, ~190 in all, and 2
/// programs per SM, too few loads in flight to stream memory. At most 16 elements per thread
/// keep registers low and occupancy up. Kernels with a dot start from 4 (mma_warps may raise it).
int auto_warps(const ir::Kernel &kernel) {
  constexpr int64_t kElementsPerThread = 16;
  constexpr int kMinWarps = 4, kMaxWarps = 16;
  int64_t largest = 0;
  bool has_dot = false;
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    has_dot |= op->opcode() == ir::Opcode::Dot;
    for (unsigned i = 0; i < op->num_results(); ++i)
      if (op->result(i)->type().is_tile())
        largest = std::max(largest, op->result(i)->type().num_elements());
  });
  if (has_dot)
    return kMinWarps;
  int warps = kMinWarps;
  while (warps < kMaxWarps && largest > 32 * warps * kElementsPerThread)
    warps *= 2;
  return warps;
}

} // namespace

int choose_num_warps(const ir::Kernel &kernel, int requested) {
  return mma_warps(kernel, requested > 0 ? requested : auto_warps(kernel));
}

bool plan_layouts(ir::Kernel &kernel, int num_warps) {
  bool changed = false;
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    if (op->num_results() != 1 || !op->result()->type().is_tile())
      return;
    const ir::Type &t = op->result()->type();
    Layout l = default_layout(t.shape(), num_warps);
    const ir::Opcode code = op->opcode();
    if (code == ir::Opcode::Dot) {
      if (std::optional<Layout> m = mma_for(*op, num_warps))
        l = *m;
      else if (fma_dot(*op) && t.rank() == 2)
        l = fma_layout(t.shape()[0], t.shape()[1], num_warps);
    }
    op->set_attr("nvptx.layout", l.str());
    changed = true;
    if (code == ir::Opcode::Reshape || code == ir::Opcode::ExpandDims) {
      const ir::Type &in = op->operand(0)->type();
      bool same = false;
      if (in.is_tile()) {
        const ElementMap a = element_map(default_layout(in.shape(), num_warps), in.shape());
        const ElementMap b = element_map(l, t.shape());
        same = a.registers == b.registers && a.linear == b.linear;
      }
      op->set_attr("nvptx.convert", std::string(same || in.is_scalar() ? "none" : "shared"));
    } else if (code == ir::Opcode::Broadcast || code == ir::Opcode::Transpose ||
               code == ir::Opcode::Slice || code == ir::Opcode::Reduce ||
               code == ir::Opcode::Scan || code == ir::Opcode::Dot) {
      op->set_attr("nvptx.convert", std::string("shared"));
    }
  });
  std::vector<ir::Operation *> loops; // parents before the loops they hold
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    if (op->opcode() == ir::Opcode::For)
      loops.push_back(op);
  });
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) { // inner loops first
    plan_pipeline(**it, num_warps);
    plan_carried(**it, num_warps);
    plan_prefetch(**it);
  }
  return changed;
}

} // namespace tl::nvptx
