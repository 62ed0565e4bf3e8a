// Reductions and scans of rank-1 and rank-2 tiles along either axis, on the vector unit.
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

#include "vector_codes.h"

namespace tl::tnpu::detail {
namespace {

using V = isa::Opcode;
using F = isa::VecField;

} // namespace

/// Along the last axis (a row of a rank-2 tile, or a rank-1 tile) the cheaper of two forms, by
/// the vector unit's cycles (sim/model: a command is rows x ceil(n / W) groups; a row reduction
/// adds a log2 W-level tree per row): v.rsum / v.rmax / v.rmin per row, R (ceil(C / W) + log2
/// W) cycles, or a v.scopy transpose and the column fold v.csum / v.cmax / v.cmin, R ceil(C / W)
/// + C ceil(R / W) (its lanes are the rows). Wide rows of few rows (a softmax's 8 x 1024: 176
/// against 1152 cycles) take v.rsum, square tiles (attention's 128 x 128 scores: 1024 against
/// 512) the transpose. Float sums so associate in v.rsum's order (lane-strided partials, then a
/// tree; sim/numerics/SPEC.md) or in ascending order (the transpose), which Tile IR's reduce
/// allows (ir.h: any order; every order is within (n - 1) u sum |x|); max / min and integer
/// sums are exact in any order; argmax is always v.rargmax. Along axis 0 of a rank-2 tile: the
/// column folds, in row order (float sums of more than 128 rows: halves added pairwise down to
/// 128 rows first). A scalar result is read back by the command processor.
void Lowering::lower_reduce(const ir::Operation &op) {
  const ir::Type &in = op.operand(0)->type();
  const std::string kind = *op.attr_as<std::string>("kind");
  const int64_t axis = *op.attr_as<int64_t>("axis");
  if (in.rank() > 2)
    fail(op, "'reduce' of " + in.str() + " is not supported (rank 1 or 2)");
  const ir::ScalarKind e = in.elem();
  const int t = unit_dtype(op, e), es = elem_bytes(op, e);
  const bool u = unsigned_int(e), argmax = kind == "argmax";
  const int oes = argmax ? 4 : es;
  const bool to_scalar = !op.result()->type().is_tile();
  const uint64_t src = tile(op, op.operand(0));
  const uint64_t dst = to_scalar ? vector_scalar_slot(op) : alloc_tile(op);
  const Range r = tile_range(op, op.operand(0));
  const Range w = to_scalar ? Range{dst, dst + 8} : tile_range(op, op.result());
  const int64_t rows = in.rank() == 2 ? in.shape()[0] : 1, cols = in.shape()[in.rank() - 1];
  const bool row_form = axis == in.rank() - 1;
  const int64_t lanes = std::max(1, opts_.vector_lanes);
  int64_t tree = 0;
  while ((int64_t(1) << tree) < lanes)
    ++tree;
  const auto groups = [&](int64_t n) { return (n + lanes - 1) / lanes; };
  const bool transposed = row_form && !argmax && rows > 1 &&
                          rows * groups(cols) + cols * groups(rows) < rows * (groups(cols) + tree);
  const isa::Opcode column_op = argmax          ? V::VCargmax
                                : kind == "sum" ? V::VCsum
                                : kind == "max" ? V::VCmax
                                                : V::VCmin;
  if (row_form && !transposed) {
    vec_setup(cols, rows, t, u);
    veci(F::Sa, cols * es);
    veci(F::Sd, oes);
    vcmd(argmax          ? V::VRargmax
         : kind == "sum" ? V::VRsum
         : kind == "max" ? V::VRmax
                         : V::VRmin,
         {dst, src}, {r}, {w});
  } else if (transposed) {
    const uint64_t bytes = uint64_t(rows * cols * es), from = temp(op, 0, bytes);
    transpose(op, from, src, rows, cols, t, es);
    veci(F::Sa, rows * es);
    vec_setup(rows, cols, t, u);
    vcmd(column_op, {dst, from}, {{from, from + bytes}}, {w});
  } else {
    // Float sums down long columns: the halves added pairwise first (v.add passes of half the
    // rows, the same elements in all as the fold's), then the fold over at most kChain rows.
    // The fold alone is one chain of `rows` additions: npusim's sum of 50000 x 2 values near 11
    // along axis 0 came to 2.5e-6 normwise, over the f32 contract's 1e-6. Skipped (the chain
    // kept) where the temporaries find no room.
    constexpr int64_t kChain = 128;
    uint64_t from = src;
    Range fr = r;
    int64_t left = rows;
    const uint64_t row_bytes = uint64_t(cols * es);
    if (kind == "sum" && ir::is_float(e) && rows > kChain &&
        scalar_slot(kScalarSlots) + uint64_t(rows / 2) * row_bytes <= opts_.sram_bytes) {
      const uint64_t half = temp(op, 0, uint64_t(rows / 2) * row_bytes);
      veci(F::Sa, int64_t(row_bytes));
      veci(F::Sb, int64_t(row_bytes));
      veci(F::Sd, int64_t(row_bytes));
      while (left > kChain) {
        const int64_t h = left / 2;
        const Range out{half, half + uint64_t(h) * row_bytes};
        vec_setup(cols, h, t, u);
        vcmd(V::VAdd, {half, from, from + uint64_t(h) * row_bytes}, {fr}, {out});
        if (left % 2) { // the odd last row into the first
          const uint64_t last = from + uint64_t(2 * h) * row_bytes;
          vec_setup(cols, 1, t, u);
          vcmd(V::VAdd, {half, half, last}, {{half, half + row_bytes}, {last, last + row_bytes}},
               {{half, half + row_bytes}});
        }
        from = half, fr = out, left = h;
      }
    }
    veci(F::Sa, int64_t(row_bytes));
    vec_setup(cols, left, t, u);
    vcmd(column_op, {dst, from}, {fr}, {w});
  }
  if (to_scalar) // read back when the command processor needs it
    vscalars_[op.result()] = dst;
}

/// Inclusive scans along the last axis (v.cumsum / v.cummax / v.cummin per row); along axis 0
/// of a rank-2 tile: a transpose, the row scan, a transpose back.
void Lowering::lower_scan(const ir::Operation &op) {
  const ir::Type &in = op.operand(0)->type();
  const std::string kind = *op.attr_as<std::string>("kind");
  const int64_t axis = *op.attr_as<int64_t>("axis");
  if (in.rank() > 2)
    fail(op, "'scan' of " + in.str() + " is not supported (rank 1 or 2)");
  const ir::ScalarKind e = in.elem();
  const int t = unit_dtype(op, e), es = elem_bytes(op, e);
  const isa::Opcode sop = kind == "sum" ? V::VCumsum : kind == "max" ? V::VCummax : V::VCummin;
  const uint64_t src = tile(op, op.operand(0)), dst = alloc_tile(op);
  const int64_t rows = in.rank() == 2 ? in.shape()[0] : 1, cols = in.shape()[in.rank() - 1];
  const uint64_t bytes = uint64_t(rows * cols * es);
  if (axis == in.rank() - 1) {
    vec_setup(cols, rows, t, unsigned_int(e));
    veci(F::Sa, cols * es);
    veci(F::Sd, cols * es);
    vcmd(sop, {dst, src}, {tile_range(op, op.operand(0))}, {tile_range(op, op.result())});
    return;
  }
  const uint64_t t1 = temp(op, 0, bytes), t2 = temp(op, bytes, bytes);
  transpose(op, t1, src, rows, cols, t, es);
  vec_setup(rows, cols, t, unsigned_int(e));
  veci(F::Sa, rows * es);
  veci(F::Sd, rows * es);
  vcmd(sop, {t2, t1}, {{t1, t1 + bytes}}, {{t2, t2 + bytes}});
  transpose(op, dst, t2, cols, rows, t, es);
}

} // namespace tl::tnpu::detail
