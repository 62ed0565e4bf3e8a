// Test tiles for the matrix unit RTL (see tiles.h).
// SPDX-License-Identifier: Apache-2.0
#include "tiles.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <sstream>

namespace tl::npu::rtl::test {

using num::DType;

namespace {

int rand_int(Rng &rng, int lo, int hi) { // inclusive
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

template <size_t N> uint32_t pick(Rng &rng, const uint32_t (&table)[N]) {
  return table[static_cast<size_t>(rand_int(rng, 0, static_cast<int>(N) - 1))];
}

struct Format {
  int ebits, mbits;
};
Format format_of(DType t) {
  return t == DType::F16 ? Format{5, 10} : t == DType::BF16 ? Format{8, 7} : Format{8, 23};
}

// A float of format f with a random sign and fraction and a biased exponent in [lo, hi].
uint32_t with_exponent(Format f, int lo, int hi, Rng &rng) {
  const uint32_t sign = static_cast<uint32_t>(rng() & 1);
  const uint32_t exp = static_cast<uint32_t>(rand_int(rng, lo, hi));
  const uint32_t frac = static_cast<uint32_t>(rng()) & ((1u << f.mbits) - 1);
  return sign << (f.ebits + f.mbits) | exp << f.mbits | frac;
}

uint32_t special(DType t, Rng &rng) {
  static const uint32_t bf16[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x7f81, 0xffff, 0x0001,
                                  0x807f, 0x0080, 0x7f7f, 0xff7f, 0x3f80, 0xbf80, 0x0040, 0x3f81};
  static const uint32_t f16[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x7c01, 0xfe01, 0x0001,
                                 0x83ff, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x0200, 0x3c01};
  static const uint32_t f32[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
                                 0x7f800001, 0xffc12345, 0x00000001, 0x807fffff, 0x00800000,
                                 0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000, 0x00400000,
                                 0x5f800000, 0x1f800000, 0x3f800001};
  static const uint32_t i8[] = {0x80, 0x7f, 0x00, 0xff, 0x01};
  if (t == DType::I8)
    return pick(rng, i8);
  const Format f = format_of(t);
  if (rand_int(rng, 0, 3) == 0) // a random subnormal
    return with_exponent(f, 0, 0, rng) | 1u << rand_int(rng, 0, f.mbits - 1);
  return t == DType::BF16 ? pick(rng, bf16) : t == DType::F16 ? pick(rng, f16) : pick(rng, f32);
}

Values any_values(Rng &rng) { return static_cast<Values>(rand_int(rng, 0, 5)); }

} // namespace

uint32_t element(DType t, Values v, Rng &rng) {
  if (v == Values::Mixed)
    v = any_values(rng);
  if (t == DType::I8)
    return v == Values::Special ? special(t, rng) : static_cast<uint32_t>(rng() & 0xff);
  const Format f = format_of(t);
  const int bias = (1 << (f.ebits - 1)) - 1, max_exp = (1 << f.ebits) - 2;
  switch (v) {
  case Values::Bits:
    return static_cast<uint32_t>(rng()) & ((1u << (1 + f.ebits + f.mbits)) - 1);
  case Values::Moderate:
    return with_exponent(f, bias - std::min(20, bias - 1), bias + std::min(20, bias), rng);
  case Values::Special:
    return special(t, rng);
  case Values::Tiny: // f16 cannot reach below f32's normals: its own subnormals then
    return t == DType::F16 ? with_exponent(f, 0, 6, rng) : with_exponent(f, 0, 70, rng);
  case Values::Huge:
    return with_exponent(f, max_exp - (t == DType::F16 ? 5 : 64), max_exp, rng);
  case Values::Ties:
    if (t != DType::F32)
      return element(t, Values::Moderate, rng);
    // 13 significant bits, the last one set: the product of two has 24 or 25 bits, and with 25
    // its last bit is a rounding tie.
    return (with_exponent(f, bias - 3, bias + 3, rng) & ~0x7ffu) | 0x400u;
  case Values::Mixed:
    break;
  }
  return 0;
}

uint32_t accumulator(DType t, Values v, Rng &rng) {
  if (v == Values::Mixed)
    v = any_values(rng);
  if (t == DType::I8) {
    static const uint32_t edges[] = {0x7fffffff, 0x80000000, 0xffffffff, 0, 0x7fff0000};
    return v == Values::Special ? pick(rng, edges) - static_cast<uint32_t>(rand_int(rng, 0, 3))
                                : static_cast<uint32_t>(rng());
  }
  switch (v) {
  case Values::Tiny:
    return with_exponent(format_of(DType::F32), 0, 40, rng);
  case Values::Huge:
    return with_exponent(format_of(DType::F32), 220, 254, rng);
  case Values::Ties: // zero, or from just below the products' rounding bits to far below them
    return rand_int(rng, 0, 7) == 0 ? 0u : with_exponent(format_of(DType::F32), 30, 110, rng);
  default:
    return element(DType::F32, v, rng);
  }
}

Tile make_tile(DType mode, Values v, int m, int k, int n, bool accumulate, Rng &rng) {
  Tile t;
  t.mode = mode;
  t.m = m;
  t.k = k;
  t.n = n;
  t.accumulate = accumulate;
  t.a.resize(static_cast<size_t>(m * k));
  t.w.resize(static_cast<size_t>(k * n));
  t.c.resize(static_cast<size_t>(m * n));
  for (auto &x : t.a)
    x = element(mode, v, rng);
  for (auto &x : t.w)
    x = element(mode, v, rng);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      uint32_t &c = t.c[static_cast<size_t>(i * n + j)];
      if (!accumulate) { // mx.mm must ignore what C holds
        c = static_cast<uint32_t>(rng());
        continue;
      }
      c = accumulator(mode, v, rng);
      // A start that cancels the chain's first terms: a near-total cancellation at that step.
      if (mode != DType::I8 && v != Values::Special && rand_int(rng, 0, 3) == 0) {
        uint32_t s = num::kF32NegZero;
        for (int q = 0, stop = rand_int(rng, 1, k); q < stop; ++q)
          s = num::mac_f32(mode, t.a[static_cast<size_t>(i * k + q)],
                           t.w[static_cast<size_t>(q * n + j)], s);
        c = s ^ 0x80000000u;
      }
    }
  return t;
}

Tile random_tile(DType mode, Values v, int rows, int cols, Rng &rng) {
  const bool full = rand_int(rng, 0, 1) == 0;
  const int k = full ? rows : rand_int(rng, 1, rows);
  const int n = full ? cols : rand_int(rng, 1, cols);
  const int m = rand_int(rng, 0, 15) == 0 ? rand_int(rng, 0, 2) : rand_int(rng, 1, 2 * rows);
  return make_tile(mode, v, m, k, n, rand_int(rng, 0, 1) == 0, rng);
}

size_t place(std::vector<Tile> &tiles, uint8_t *memory, size_t offset, size_t size, Rng &rng) {
  auto region = [&](size_t rows, uint32_t stride) {
    offset = (offset + 15) & ~size_t{15};
    const size_t at = offset;
    offset += rows * stride;
    if (offset > size)
      throw std::runtime_error("test tiles do not fit the scratchpad");
    std::memset(memory + at, kCanary, rows * stride);
    return static_cast<uint32_t>(at);
  };
  for (Tile &t : tiles) {
    const uint32_t es = static_cast<uint32_t>(num::dtype_size(t.mode));
    t.ldw = static_cast<uint32_t>(t.n) * es + es * static_cast<uint32_t>(rand_int(rng, 0, 2));
    t.lda = static_cast<uint32_t>(t.k) * es + es * static_cast<uint32_t>(rand_int(rng, 0, 2));
    t.ldc = static_cast<uint32_t>(t.n) * 4 + 4 * static_cast<uint32_t>(rand_int(rng, 0, 2));
    t.w_addr = region(static_cast<size_t>(t.k), t.ldw);
    t.a_addr = region(static_cast<size_t>(t.m), t.lda);
    t.c_addr = region(static_cast<size_t>(t.m), t.ldc);
    for (int r = 0; r < t.k; ++r)
      for (int j = 0; j < t.n; ++j)
        num::store_bits(t.mode, memory + t.w_addr + r * t.ldw, static_cast<size_t>(j),
                        t.w[static_cast<size_t>(r * t.n + j)]);
    for (int i = 0; i < t.m; ++i) {
      for (int q = 0; q < t.k; ++q)
        num::store_bits(t.mode, memory + t.a_addr + i * t.lda, static_cast<size_t>(q),
                        t.a[static_cast<size_t>(i * t.k + q)]);
      for (int j = 0; j < t.n; ++j)
        num::store_bits(DType::F32, memory + t.c_addr + i * t.ldc, static_cast<size_t>(j),
                        t.c[static_cast<size_t>(i * t.n + j)]);
    }
  }
  return offset;
}

void submit(MatrixRtl &rtl, const std::vector<Tile> &tiles) {
  for (const Tile &t : tiles) {
    MxCommand pre;
    pre.op = MxOp::Preload;
    pre.mode = t.mode;
    pre.k = static_cast<uint32_t>(t.k);
    pre.n = static_cast<uint32_t>(t.n);
    pre.src = t.w_addr;
    pre.src_stride = t.ldw;
    rtl.submit(pre);
    MxCommand mm;
    mm.op = t.accumulate ? MxOp::MultiplyAccumulate : MxOp::Multiply;
    mm.mode = t.mode;
    mm.m = static_cast<uint32_t>(t.m);
    mm.src = t.a_addr;
    mm.src_stride = t.lda;
    mm.dst = t.c_addr;
    mm.dst_stride = t.ldc;
    rtl.submit(mm);
  }
}

std::vector<uint32_t> reference(const Tile &t) {
  const size_t es = static_cast<size_t>(num::dtype_size(t.mode));
  std::vector<uint8_t> a(t.a.size() * es), w(t.w.size() * es);
  for (size_t i = 0; i < t.a.size(); ++i)
    num::store_bits(t.mode, a.data(), i, t.a[i]);
  for (size_t i = 0; i < t.w.size(); ++i)
    num::store_bits(t.mode, w.data(), i, t.w[i]);
  std::vector<uint32_t> c = t.c;
  num::gemm_reference(t.mode, t.m, t.n, t.k, a.data(), static_cast<size_t>(t.k), w.data(),
                      static_cast<size_t>(t.n), c.data(), static_cast<size_t>(t.n), t.accumulate);
  return c;
}

std::string check(const Tile &t, const uint8_t *memory, const std::vector<uint32_t> &expected) {
  std::ostringstream s;
  int shown = 0;
  for (int i = 0; i < t.m && shown < 3; ++i) {
    const uint8_t *row = memory + t.c_addr + static_cast<size_t>(i) * t.ldc;
    for (int j = 0; j < t.n && shown < 3; ++j) {
      const uint32_t got = num::load_bits(DType::F32, row, static_cast<size_t>(j));
      const uint32_t want = expected[static_cast<size_t>(i * t.n + j)];
      if (got == want)
        continue;
      ++shown;
      s << std::hex << num::dtype_name(t.mode) << " tile m=" << std::dec << t.m << " k=" << t.k
        << " n=" << t.n << (t.accumulate ? " mx.mma" : " mx.mm") << ": C[" << i << "][" << j
        << "] = 0x" << std::hex << got << ", expected 0x" << want << "; start 0x"
        << t.c[static_cast<size_t>(i * t.n + j)] << ", a*w:";
      for (int q = 0; q < t.k; ++q)
        s << " 0x" << t.a[static_cast<size_t>(i * t.k + q)] << "*0x"
          << t.w[static_cast<size_t>(q * t.n + j)];
      s << std::dec << "\n";
    }
    for (uint32_t b = static_cast<uint32_t>(t.n) * 4; b < t.ldc && shown < 3; ++b)
      if (row[b] != kCanary) {
        ++shown;
        s << "C row " << i << ": padding byte " << b << " overwritten\n";
      }
  }
  return s.str();
}

} // namespace tl::npu::rtl::test
