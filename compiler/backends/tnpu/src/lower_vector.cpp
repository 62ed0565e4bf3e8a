// Tiles on the TNPU vector unit: elementwise arithmetic, math, compares, select, casts and
// bitcasts of every unit dtype; arange, broadcast, transpose; reductions and scans along any
// axis. Float scalars run as 1-element vector commands that the command processor reads back.
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

namespace tl::tnpu::detail {
namespace {

using V = isa::Opcode;
using F = isa::VecField;

/// The vector opcode of an elementwise Tile IR op, or Nop.
isa::Opcode vector_opcode(Opcode op) {
  switch (op) {
  case Opcode::Add:
    return V::VAdd;
  case Opcode::Sub:
    return V::VSub;
  case Opcode::Mul:
    return V::VMul;
  case Opcode::Div:
    return V::VDiv;
  case Opcode::Rem:
    return V::VRem;
  case Opcode::And:
    return V::VAnd;
  case Opcode::Or:
    return V::VOr;
  case Opcode::Xor:
    return V::VXor;
  case Opcode::Shl:
    return V::VShl;
  case Opcode::Shr:
    return V::VShr;
  case Opcode::Min:
    return V::VMin;
  case Opcode::Max:
    return V::VMax;
  case Opcode::Pow:
    return V::VPow;
  case Opcode::Neg:
    return V::VNeg;
  case Opcode::Not:
    return V::VNot;
  case Opcode::Abs:
    return V::VAbs;
  case Opcode::Exp:
    return V::VExp;
  case Opcode::Exp2:
    return V::VExp2;
  case Opcode::Log:
    return V::VLog;
  case Opcode::Log2:
    return V::VLog2;
  case Opcode::Sqrt:
    return V::VSqrt;
  case Opcode::Rsqrt:
    return V::VRsqrt;
  case Opcode::Tanh:
    return V::VTanh;
  case Opcode::Erf:
    return V::VErf;
  case Opcode::Sigmoid:
    return V::VSigmoid;
  case Opcode::Sin:
    return V::VSin;
  case Opcode::Cos:
    return V::VCos;
  case Opcode::Fma:
    return V::VFma;
  case Opcode::Select:
    return V::VSel;
  default:
    return V::Nop;
  }
}

isa::Opcode compare_opcode(const std::string &pred) {
  if (pred == "eq")
    return V::VCeq;
  if (pred == "ne")
    return V::VCne;
  if (pred == "lt")
    return V::VClt;
  if (pred == "le")
    return V::VCle;
  if (pred == "gt")
    return V::VCgt;
  return V::VCge;
}

int rounding_code(const ir::Operation &op) {
  const std::string *r = op.attr_as<std::string>("rounding");
  if (!r || *r == "rne")
    return 0;
  return *r == "rtz" ? 1 : *r == "rd" ? 2 : 3;
}

/// The unit dtype that copies elements of `bytes` bytes unchanged.
int raw_code(int bytes) { return bytes == 1 ? 3 : bytes == 2 ? 0 : 4; }

bool unsigned_int(ir::ScalarKind e) { return ir::is_integer(e) && !ir::is_signed(e); }

} // namespace

int Lowering::unit_dtype(const ir::Operation &op, ir::ScalarKind e) {
  int c = dtype_code(e);
  if (e == ir::ScalarKind::I1 || e == ir::ScalarKind::U8)
    c = 3; // masks are bytes 0 / 1
  else if (e == ir::ScalarKind::U32)
    c = 4;
  if (c < 0)
    fail(op, "tiles of " + std::string(ir::scalar_name(e)) +
                 " are not supported by the vector unit (bf16, f16, f32, i8, i32)");
  return c;
}

void Lowering::vec_setup(int64_t n, int64_t rows, int t, bool is_unsigned) {
  veci(F::N, n);
  veci(F::Rows, rows);
  veci(F::T, t);
  veci(F::U, is_unsigned ? 1 : 0);
}

void Lowering::vcmd(isa::Opcode o, std::initializer_list<uint64_t> addrs,
                    const std::vector<Range> &reads, const std::vector<Range> &writes,
                    std::initializer_list<uint8_t> regs) {
  uint8_t slot[4] = {0, 0, 0, 0};
  int i = 0;
  for (uint64_t a : addrs) {
    slot[i] = uint8_t(kT0 + i);
    li(slot[i++], a);
  }
  for (uint8_t r : regs)
    slot[i++] = r;
  sync_.issue(sync_.vec(), reads, writes);
  emit(o, slot[0], slot[1], slot[2], 0, slot[3]);
}

void Lowering::cp_wait_vec() {
  constexpr uint8_t kSem = isa::kNumSemaphores - 1; // above QueueSync's semaphores
  emit(V::SemSig, QueueSync::isa_queue(sync_.vec(), sync_.num_dma()), kSem, 0, 1);
  emit(V::SemWait, uint8_t(isa::Queue::Cp), kSem, 0, 1);
}

uint64_t Lowering::temp(const ir::Operation &op, uint64_t at, uint64_t bytes) {
  const uint64_t lo = scalar_slot(kScalarSlots) + at;
  if (lo + bytes > opts_.sram_bytes)
    fail(op, "no room for " + std::to_string(at + bytes) +
                 " bytes of temporaries above the kernel's tiles (" + std::to_string(temp_base_) +
                 " of " + std::to_string(opts_.sram_bytes) + " bytes in use)");
  return lo;
}

void Lowering::read_scalar(uint8_t rd, uint64_t at, ir::ScalarKind e) {
  const int bytes = e == ir::ScalarKind::I1 ? 1 : ir::bit_width(e) / 8;
  if (bytes == 1)
    emit(V::Ldb, rd, 0, 0, int64_t(at));
  else if (bytes == 8)
    emit(V::Ld, rd, 0, 0, int64_t(at));
  else
    emit(V::Ldw, rd, 0, 0, int64_t(at));
  if (bytes == 2)
    emit(V::Andi, rd, rd, 0, 0xffff);
  else if (unsigned_int(e))
    wrap_scalar(rd, e); // zero-extended
}

uint64_t Lowering::readback_slot(const ir::Operation &op) {
  temp(op, 0, 0); // the slots fit below the temporaries
  return scalar_slot(3);
}

uint64_t Lowering::vector_scalar_slot(const ir::Operation &op) {
  if (next_vslot_ >= kScalarSlots)
    fail(op, "the kernel computes more than " + std::to_string(kScalarSlots - 4) +
                 " scalars on the vector unit");
  temp(op, 0, 0);
  return scalar_slot(next_vslot_++);
}

uint64_t Lowering::vector_operand(const ir::Operation &op, const ir::Value *v) {
  if (auto it = vscalars_.find(v); it != vscalars_.end())
    return it->second;
  const uint64_t at = vector_scalar_slot(op);
  fill(op, at, 1, unit_dtype(op, v->type().elem()), scalar(op, v)); // the register at issue
  return at;
}

uint8_t Lowering::materialize(const ir::Operation &op, const ir::Value *v, uint64_t at) {
  cp_wait_vec();
  const uint8_t r = regs_[v] = new_reg(op);
  read_scalar(r, at, v->type().elem());
  return r;
}

void Lowering::broadcast_scalar(const ir::Operation &op, uint64_t at) {
  const ir::Type &t = op.result()->type();
  const int es = elem_bytes(op, t.elem());
  const uint64_t d = alloc_tile(op);
  veci(F::N, t.num_elements());
  veci(F::Rows, 1);
  veci(F::Src, raw_code(es));
  veci(F::Ea, 0);
  veci(F::Ed, es);
  vcmd(V::VScopy, {d, at}, {{at, at + 8}}, {tile_range(op, op.result())});
}

void Lowering::fill(const ir::Operation &op, uint64_t dst, int64_t n, int t, uint8_t r) {
  vec_setup(n, 1, t);
  veci(F::Dst, t);
  const int es = t == 3 ? 1 : t == 4 || t == 2 ? 4 : 2;
  (void)op;
  vcmd(V::VFill, {dst}, {}, {{dst, dst + uint64_t(n * es)}}, {r});
}

void Lowering::transpose(const ir::Operation &op, uint64_t dst, uint64_t src, int64_t rows,
                         int64_t cols, int t, int es) {
  (void)op;
  veci(F::N, cols);
  veci(F::Rows, rows);
  veci(F::Src, t);
  veci(F::Sa, cols * es);
  veci(F::Ea, es);
  veci(F::Sd, es);
  veci(F::Ed, rows * es);
  const uint64_t bytes = uint64_t(rows * cols * es);
  vcmd(V::VScopy, {dst, src}, {{src, src + bytes}}, {{dst, dst + bytes}});
}

void Lowering::convert(const ir::Operation &op, uint64_t dst, uint64_t src, ir::ScalarKind from,
                       ir::ScalarKind to, int64_t n, int rm) {
  const bool ints = !ir::is_float(from) && !ir::is_float(to);
  veci(F::N, n);
  veci(F::Rows, 1);
  veci(F::Src, unit_dtype(op, from));
  veci(F::Dst, unit_dtype(op, to));
  // Float -> integer truncates, as Tile IR's cast does; the integer side's signedness is `u`.
  veci(F::Rm, ir::is_float(from) && !ir::is_float(to) ? 1 : rm);
  veci(F::U, unsigned_int(ints || !ir::is_float(from) ? from : to) ? 1 : 0);
  const uint64_t sb = uint64_t(n * elem_bytes(op, from)), db = uint64_t(n * elem_bytes(op, to));
  vcmd(ints ? V::VIcvt : V::VCvt, {dst, src}, {{src, src + sb}}, {{dst, dst + db}});
}

Range Lowering::rounded_input(const ir::Operation &op, const ir::Value *v,
                              const std::string &precision, uint64_t at) {
  const int64_t n = v->type().num_elements();
  const uint64_t bytes = uint64_t(n) * 4, x = tile(op, v);
  const uint64_t r = temp(op, at, bytes), c = temp(op, at + bytes, bytes);
  const Range xr = tile_range(op, v), rr{r, r + bytes}, cr{c, c + bytes};
  if (precision == "bf16") {
    convert(op, c, x, ir::ScalarKind::F32, ir::ScalarKind::BF16, n, 0);
    convert(op, r, c, ir::ScalarKind::BF16, ir::ScalarKind::F32, n, 0);
    return rr;
  }
  // tf32, as the interpreter: bits + 0xfff + ((bits >> 13) & 1), the low 13 bits cleared
  auto constant = [&](uint64_t v) {
    li(kT4, v);
    fill(op, c, n, 4, kT4);
    vec_setup(n, 1, 4, true);
  };
  constant(13);
  vcmd(V::VShr, {r, x, c}, {xr, cr}, {rr});
  constant(1);
  vcmd(V::VAnd, {r, r, c}, {rr, cr}, {rr});
  vcmd(V::VAdd, {r, r, x}, {rr, xr}, {rr});
  li(kT4, 0xfff);
  vcmd(V::VAdds, {r, r}, {rr}, {rr}, {kT4});
  constant(0xffffe000u);
  vcmd(V::VAnd, {r, r, c}, {rr, cr}, {rr});
  return rr;
}

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
  const ir::ScalarKind e = op.result()->type().elem();
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
  vec_setup(n, 1, t, unsigned_int(e));
  switch (op.num_operands()) {
  case 1:
    vcmd(vop, {d, a}, reads, {w});
    return;
  case 2:
    vcmd(vop, {d, a, tile(op, op.operand(1))}, reads, {w});
    return;
  default: // fma: d = a * b + c; select: d = mask ? b : c
    vcmd(vop, {d, a, tile(op, op.operand(1)), tile(op, op.operand(2))}, reads, {w});
    return;
  }
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

/// Along the last axis (a row of a rank-2 tile, or a rank-1 tile): v.rmax / v.rmin / v.rargmax;
/// sums in ascending order as the interpreter (a transpose, then the column fold v.csum); along
/// axis 0 of a rank-2 tile: the column folds. A scalar result is read back by the command
/// processor.
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
  if (row_form && kind != "sum") {
    vec_setup(cols, rows, t, u);
    veci(F::Sa, cols * es);
    veci(F::Sd, oes);
    vcmd(argmax ? V::VRargmax : kind == "max" ? V::VRmax : V::VRmin, {dst, src}, {r}, {w});
  } else {
    uint64_t from = src;
    int64_t n = cols, m = rows;  // fold m rows of n columns
    if (row_form && rows == 1) { // a row is a column of 1-element rows
      n = 1, m = cols;
      veci(F::Sa, es);
    } else if (row_form) {
      from = temp(op, 0, uint64_t(rows * cols * es));
      transpose(op, from, src, rows, cols, t, es);
      n = rows, m = cols;
      veci(F::Sa, rows * es);
    } else {
      veci(F::Sa, cols * es);
    }
    vec_setup(n, m, t, u);
    const Range fr = from == src ? r : Range{from, from + uint64_t(rows * cols * es)};
    vcmd(argmax          ? V::VCargmax
         : kind == "sum" ? V::VCsum
         : kind == "max" ? V::VCmax
                         : V::VCmin,
         {dst, from}, {fr}, {w});
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

/// A float scalar op (or a cast / compare involving one) as a 1-element vector command on scalar
/// slots: operands the vector unit computed are in theirs, register operands are filled into
/// one (v.fill takes the register's value at issue, so no wait); the result stays in its slot
/// until the command processor needs it (vscalars_).
void Lowering::lower_scalar_on_vec(const ir::Operation &op) {
  const ir::ScalarKind re = op.result()->type().elem(), oe = op.operand(0)->type().elem();
  for (const ir::Value *v : op.operands())
    if (v->type().elem() != ir::ScalarKind::F32 &&
        !(op.opcode() == Opcode::Cast && ir::is_integer(v->type().elem()) &&
          ir::bit_width(v->type().elem()) <= 32))
      fail(op, "scalar '" + std::string(op.name()) + "' on " + v->type().str() +
                   " is not supported (f32 scalars, integers of at most 32 bits)");
  if (ir::is_float(re) ? re != ir::ScalarKind::F32
                       : re != ir::ScalarKind::I1 && ir::bit_width(re) > 32)
    fail(op, "scalar '" + std::string(op.name()) + "' into " + op.result()->type().str() +
                 " is not supported");
  uint64_t a[3] = {0, 0, 0};
  std::vector<Range> reads;
  for (unsigned i = 0; i < op.num_operands(); ++i) {
    a[i] = vector_operand(op, op.operand(i));
    reads.push_back({a[i], a[i] + 8});
  }
  const uint64_t d = vector_scalar_slot(op);
  const Range w{d, d + 8};
  if (op.opcode() == Opcode::Cast) {
    convert(op, d, a[0], oe, re, 1, rounding_code(op));
  } else if (op.opcode() == Opcode::Cmp) {
    vec_setup(1, 1, 2);
    vcmd(compare_opcode(*op.attr_as<std::string>("pred")), {d, a[0], a[1]}, reads, {w});
  } else {
    vec_setup(1, 1, 2);
    const isa::Opcode vop = vector_opcode(op.opcode());
    if (op.num_operands() == 1)
      vcmd(vop, {d, a[0]}, reads, {w});
    else if (op.num_operands() == 2)
      vcmd(vop, {d, a[0], a[1]}, reads, {w});
    else
      vcmd(vop, {d, a[0], a[1], a[2]}, reads, {w});
  }
  vscalars_[op.result()] = d;
}

} // namespace tl::tnpu::detail
