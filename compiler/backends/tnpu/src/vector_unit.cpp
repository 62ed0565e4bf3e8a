// Vector-unit commands shared by every vector lowering: configuration, issue, fills,
// transposes, dtype conversions, rounded copies, and the temporary space above the tiles.
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

#include "vector_codes.h"

namespace tl::tnpu::detail {
namespace {

using V = isa::Opcode;
using F = isa::VecField;

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
  // v.cvt rounds float -> integer by `rm` too (the caller passes rtz, the cast's default, unless
  // the cast names a mode); the integer side's signedness is `u`.
  veci(F::Rm, rm);
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

} // namespace tl::tnpu::detail
