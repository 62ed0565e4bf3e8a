// Tiles on the TNPU vector unit: the dispatch of vector-unit ops, and elementwise arithmetic,
// math, compares, select, casts and bitcasts of every unit dtype.
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

#include "vector_codes.h"

namespace tl::tnpu::detail {
namespace {

using V = isa::Opcode;
using F = isa::VecField;

} // namespace

/// The op on tiles (or float scalars) when the vector unit computes it; false otherwise.
bool Lowering::lower_vector(const ir::Operation &op) {
  const bool tile_result = op.num_results() == 1 && op.result()->type().is_tile();
  const bool float_scalar =
      op.num_results() == 1 && !tile_result && op.num_operands() > 0 &&
      (ir::is_float(op.result()->type().elem()) || ir::is_float(op.operand(0)->type().elem()));
  switch (op.opcode()) {
  case Opcode::Reduce:
    lower_reduce(op);
    return true;
  case Opcode::Scan:
    lower_scan(op);
    return true;
  case Opcode::Arange:
  case Opcode::Broadcast:
  case Opcode::Transpose:
  case Opcode::Slice:
    lower_shape(op);
    return true;
  case Opcode::Cmp:
    if (tile_result)
      lower_tile_cmp(op);
    else if (float_scalar)
      lower_scalar_on_vec(op);
    else
      return false;
    return true;
  case Opcode::Cast:
  case Opcode::Bitcast:
    if (tile_result)
      lower_tile_cast(op);
    else if (float_scalar && op.opcode() == Opcode::Cast)
      lower_scalar_on_vec(op);
    else if (op.opcode() == Opcode::Bitcast) // registers hold the bits
      regs_[op.result()] = scalar(op, op.operand(0));
    else
      return false;
    return true;
  default:
    if (vector_opcode(op.opcode()) == V::Nop)
      return false;
    if (tile_result)
      lower_elementwise(op);
    else if (float_scalar && op.opcode() != Opcode::Select)
      lower_scalar_on_vec(op);
    else
      return false;
    return true;
  }
}

void Lowering::lower_elementwise(const ir::Operation &op) {
  const isa::Opcode vop = vector_opcode(op.opcode());
  // A class test computes on its float operand's dtype and writes a byte mask.
  const ir::ScalarKind e =
      is_class_test(op.opcode()) ? op.operand(0)->type().elem() : op.result()->type().elem();
  const int t = unit_dtype(op, e);
  const int64_t n = op.result()->type().num_elements();
  std::vector<Range> reads;
  for (const ir::Value *v : op.operands())
    reads.push_back(tile_range(op, v));
  const uint64_t a = tile(op, op.operand(0));
  const uint64_t d = alloc_tile(op);
  const Range w = tile_range(op, op.result());
  if (op.opcode() == Opcode::Not && e == ir::ScalarKind::I1) { // !mask = mask ^ 1
    const uint64_t ones = temp(op, 0, uint64_t(n));
    li(kT4, 1);
    fill(op, ones, n, 3, kT4);
    vec_setup(n, 1, 3);
    vcmd(V::VXor, {d, a, ones}, {reads[0], {ones, ones + uint64_t(n)}}, {w});
    return;
  }
  if (op.opcode() != Opcode::Clamp && lower_strided(op, vop, t, unsigned_int(e), d))
    return;
  vec_setup(n, 1, t, unsigned_int(e));
  switch (op.num_operands()) {
  case 1:
    vcmd(vop, {d, a}, reads, {w});
    return;
  case 2:
    vcmd(vop, {d, a, tile(op, op.operand(1))}, reads, {w});
    return;
  default: // fma: d = a * b + c; select: d = mask ? b : c; clamp: d = min(max(a, lo), hi)
    if (op.opcode() == Opcode::Clamp) { // NaN-propagating max and min, as the IR defines
      vcmd(V::VMax, {d, a, tile(op, op.operand(1))}, {reads[0], reads[1]}, {w});
      vcmd(V::VMin, {d, d, tile(op, op.operand(2))}, {w, reads[2]}, {w});
      return;
    }
    vcmd(vop, {d, a, tile(op, op.operand(1)), tile(op, op.operand(2))}, reads, {w});
    return;
  }
}

bool Lowering::lower_strided(const ir::Operation &op, isa::Opcode vop, int t, bool is_unsigned,
                             uint64_t d) {
  enum class Kind { Tile, Row, Column };
  const ir::Type &rt = op.result()->type();
  if (rt.rank() != 2)
    return false;
  const int64_t rows = rt.shape()[0], cols = rt.shape()[1];
  int64_t chunk = cols;
  bool any = false;
  std::vector<Kind> kinds;
  for (const ir::Value *v : op.operands()) {
    const ir::Operation *def = v->def();
    Kind k = Kind::Tile;
    if (def && attr::has(def, attr::kFused))
      k = Kind::Row;
    else if (def && attr::has(def, attr::kNarrow))
      k = Kind::Column, chunk = std::min(chunk, attr::get_int(*def, attr::kNarrow));
    any = any || k != Kind::Tile;
    kinds.push_back(k);
  }
  if (!any)
    return false;
  // Every command reads each operand's whole range (QueueSync orders by tiles): a fused row's
  // row, a narrowed column broadcast's R x Wn copy.
  std::vector<Range> reads;
  std::vector<uint64_t> base;
  std::vector<int64_t> es;
  const F strides[] = {F::Sa, F::Sb, F::Sc};
  const int ed = elem_bytes(op, rt.elem());
  veci(F::Sd, cols * ed);
  for (unsigned i = 0; i < op.num_operands(); ++i) {
    const ir::Value *v = op.operand(i);
    base.push_back(tile(op, v));
    es.push_back(elem_bytes(op, v->type().elem()));
    int64_t stride = cols * es[i];
    if (kinds[i] == Kind::Row) {
      stride = 0;
      reads.push_back(range(op, base[i], v->def()->operand(0)->type()));
    } else if (kinds[i] == Kind::Column) {
      stride = attr::get_int(*v->def(), attr::kNarrow) * es[i];
      reads.push_back({base[i], base[i] + uint64_t(rows * stride)});
    } else {
      reads.push_back(tile_range(op, v));
    }
    veci(strides[i], stride);
  }
  const Range w = tile_range(op, op.result());
  vec_setup(chunk, rows, t, is_unsigned);
  // Column chunks: a narrowed column broadcast is read from its first column in each.
  for (int64_t c0 = 0; c0 < cols; c0 += chunk) {
    uint64_t at[3] = {0, 0, 0};
    for (unsigned i = 0; i < op.num_operands(); ++i)
      at[i] = base[i] + (kinds[i] == Kind::Column ? 0 : uint64_t(c0 * es[i]));
    const uint64_t out = d + uint64_t(c0 * ed);
    if (op.num_operands() == 2)
      vcmd(vop, {out, at[0], at[1]}, reads, {w});
    else
      vcmd(vop, {out, at[0], at[1], at[2]}, reads, {w});
  }
  return true;
}

void Lowering::lower_tile_cmp(const ir::Operation &op) {
  const ir::ScalarKind e = op.operand(0)->type().elem();
  const int64_t n = op.result()->type().num_elements();
  const uint64_t a = tile(op, op.operand(0)), b = tile(op, op.operand(1));
  const uint64_t d = alloc_tile(op);
  vec_setup(n, 1, unit_dtype(op, e), unsigned_int(e));
  vcmd(compare_opcode(*op.attr_as<std::string>("pred")), {d, a, b},
       {tile_range(op, op.operand(0)), tile_range(op, op.operand(1))},
       {tile_range(op, op.result())});
}

void Lowering::lower_tile_cast(const ir::Operation &op) {
  ir::ScalarKind from = op.operand(0)->type().elem();
  const ir::ScalarKind to = op.result()->type().elem();
  const int64_t n = op.result()->type().num_elements();
  const uint64_t a = tile(op, op.operand(0)), d = alloc_tile(op);
  const Range r = tile_range(op, op.operand(0)), w = tile_range(op, op.result());
  if (op.opcode() == Opcode::Bitcast || from == to) { // the same bits
    const int code = raw_code(elem_bytes(op, to));
    veci(F::N, n), veci(F::Rows, 1), veci(F::Src, code), veci(F::Dst, code);
    vcmd(V::VCopy, {d, a}, {r}, {w});
    return;
  }
  if (to == ir::ScalarKind::I1) { // x != 0; a NaN is false (x < 0 | x > 0 for floats)
    const int t = unit_dtype(op, from);
    const uint64_t zb = uint64_t(n) * uint64_t(elem_bytes(op, from));
    const uint64_t zero = temp(op, 0, zb), lt = temp(op, zb, uint64_t(n));
    const Range zr{zero, zero + zb}, ltr{lt, lt + uint64_t(n)};
    fill(op, zero, n, t, 0);
    vec_setup(n, 1, t, unsigned_int(from));
    if (!ir::is_float(from)) {
      vcmd(V::VCne, {d, a, zero}, {r, zr}, {w});
      return;
    }
    vcmd(V::VClt, {lt, a, zero}, {r, zr}, {ltr});
    vcmd(V::VCgt, {d, a, zero}, {r, zr}, {w});
    vec_setup(n, 1, 3);
    vcmd(V::VOr, {d, d, lt}, {w, ltr}, {w});
    return;
  }
  if (from == ir::ScalarKind::I1)
    from = ir::ScalarKind::U8; // 0 / 1
  if (from == ir::ScalarKind::U8 && to == ir::ScalarKind::I8) {
    const int code = raw_code(1);
    veci(F::N, n), veci(F::Rows, 1), veci(F::Src, code), veci(F::Dst, code);
    vcmd(V::VCopy, {d, a}, {r}, {w});
    return;
  }
  convert(op, d, a, from, to, n, rounding_code(op));
}

} // namespace tl::tnpu::detail
