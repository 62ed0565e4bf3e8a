// Shape ops on the vector unit: arange, broadcast and slice (strided copies) and transpose.
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

#include "vector_codes.h"

namespace tl::tnpu::detail {
namespace {

using V = isa::Opcode;
using F = isa::VecField;

} // namespace

void Lowering::lower_shape(const ir::Operation &op) {
  const ir::Type &rt = op.result()->type();
  const int es = elem_bytes(op, rt.elem());
  if (op.opcode() == Opcode::Arange) {
    const int64_t start = *op.attr_as<int64_t>("start");
    const uint64_t d = alloc_tile(op);
    vec_setup(rt.num_elements(), 1, unit_dtype(op, rt.elem()));
    li(kT4, uint64_t(start));
    li(kT5, 1);
    vcmd(V::VIota, {d}, {}, {tile_range(op, op.result())}, {kT4, kT5});
    return;
  }
  if (attr::has(&op, attr::kFused)) { // its users read the row in place (tnpu-plan-memory)
    tiles_[op.result()] = tile(op, op.operand(0));
    return;
  }
  const ir::Type &in = op.operand(0)->type();
  if (in.rank() > 2 || rt.rank() > 2)
    fail(op, "'" + std::string(op.name()) + "' of rank-" + std::to_string(rt.rank()) +
                 " tiles is not supported (rank 1 or 2)");
  const uint64_t a = tile(op, op.operand(0)), d = alloc_tile(op);
  const int code = raw_code(es);
  const int64_t rows = rt.rank() == 2 ? rt.shape()[0] : 1, cols = rt.shape()[rt.rank() - 1];
  if (op.opcode() == Opcode::Transpose) {
    const auto &perm = *op.attr_as<std::vector<int64_t>>("perm");
    if (perm.size() == 2 && perm[0] == 1)
      transpose(op, d, a, in.shape()[0], in.shape()[1], code, es);
    else
      copy_tile(op, d, a, rt);
    return;
  }
  if (op.opcode() == Opcode::Slice) {
    // The block from the offsets, one strided copy; a column (or a one-element row per row) as
    // one row with the operand's row stride between elements: ceil(rows / W) cycles, where
    // `rows` rows of one element were `rows`.
    const auto &offsets = *op.attr_as<std::vector<int64_t>>("offsets");
    const int64_t in_cols = in.shape()[in.rank() - 1];
    const int64_t at = (in.rank() == 2 ? offsets[0] * in_cols : 0) + offsets.back();
    const bool column = cols == 1 && rows > 1;
    veci(F::N, column ? rows : cols);
    veci(F::Rows, column ? 1 : rows);
    veci(F::Src, code);
    veci(F::Sa, in_cols * es);
    veci(F::Ea, column ? in_cols * es : es);
    veci(F::Sd, cols * es);
    veci(F::Ed, es);
    vcmd(V::VScopy, {d, a + uint64_t(at * es)}, {tile_range(op, op.operand(0))},
         {tile_range(op, op.result())});
    return;
  }
  if (const int64_t wn = attr::get_int(op, attr::kNarrow)) { // R x Wn, read by column chunks
    veci(F::N, wn);
    veci(F::Rows, rows);
    veci(F::Src, code);
    veci(F::Sa, es);
    veci(F::Ea, 0);
    veci(F::Sd, wn * es);
    veci(F::Ed, es);
    vcmd(V::VScopy, {d, a}, {tile_range(op, op.operand(0))}, {{d, d + uint64_t(rows * wn * es)}});
    return;
  }
  // broadcast: element strides of 0 along the dimensions of extent 1
  const int64_t in_rows = in.rank() == 2 ? in.shape()[0] : 1;
  const int64_t in_cols = in.shape()[in.rank() - 1];
  veci(F::N, cols);
  veci(F::Rows, rows);
  veci(F::Src, code);
  veci(F::Sa, in_rows == 1 ? 0 : in_cols * es);
  veci(F::Ea, in_cols == 1 ? 0 : es);
  veci(F::Sd, cols * es);
  veci(F::Ed, es);
  vcmd(V::VScopy, {d, a}, {tile_range(op, op.operand(0))}, {tile_range(op, op.result())});
}

} // namespace tl::tnpu::detail
