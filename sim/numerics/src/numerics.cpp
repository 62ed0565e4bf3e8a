// Integer soft-float for the TNPU units: unpack, exact product and sum, one rounding to the target.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/numerics.h"

#include <cassert>
#include <cstring>
#include <utility>

namespace tl::npu::num {
namespace {

using u128 = unsigned __int128;

/// Layout of a binary floating-point format.
struct Layout {
  int ebits;
  int mbits;
  int bias() const { return (1 << (ebits - 1)) - 1; }
};
constexpr Layout kF32{8, 23};
constexpr Layout kBF16{8, 7};
constexpr Layout kF16{5, 10};

enum class Cls { Zero, Finite, Inf, NaN };

/// A decoded value: (-1)^neg * mag * 2^exp for Finite; mag is exact and never normalized.
struct Value {
  Cls cls;
  bool neg;
  int exp;
  u128 mag;
};

int msb(u128 v) {
  assert(v != 0);
  uint64_t hi = static_cast<uint64_t>(v >> 64);
  if (hi != 0)
    return 127 - __builtin_clzll(hi);
  return 63 - __builtin_clzll(static_cast<uint64_t>(v));
}

Value unpack(uint32_t bits, Layout l) {
  const uint32_t emask = (1u << l.ebits) - 1, fmask = (1u << l.mbits) - 1;
  bool neg = ((bits >> (l.ebits + l.mbits)) & 1) != 0;
  uint32_t field = (bits >> l.mbits) & emask, frac = bits & fmask;
  if (field == emask)
    return {frac != 0 ? Cls::NaN : Cls::Inf, neg, 0, 0};
  if (field == 0)
    return {frac == 0 ? Cls::Zero : Cls::Finite, neg, 1 - l.bias() - l.mbits, frac};
  return {Cls::Finite, neg, static_cast<int>(field) - l.bias() - l.mbits, frac | (1u << l.mbits)};
}

Value unpack_dtype(DType t, uint32_t bits) {
  switch (t) {
  case DType::BF16:
    return unpack(bits & 0xffff, kBF16);
  case DType::F16:
    return unpack(bits & 0xffff, kF16);
  case DType::F32:
    return unpack(bits, kF32);
  default:
    assert(false && "not a float dtype");
    return {Cls::NaN, false, 0, 0};
  }
}

uint32_t canonical_nan(Layout l) {
  return (((1u << l.ebits) - 1) << l.mbits) | (1u << (l.mbits - 1));
}
uint32_t sign_bit(Layout l, bool neg) { return neg ? 1u << (l.ebits + l.mbits) : 0; }
uint32_t inf_bits(Layout l, bool neg) {
  return sign_bit(l, neg) | (((1u << l.ebits) - 1) << l.mbits);
}

/// Rounds (-1)^neg * mag * 2^exp (mag != 0) to `l`, nearest even, subnormals kept, overflow to inf.
uint32_t round_pack(bool neg, int exp, u128 mag, Layout l) {
  const int m = l.mbits, emin = 1 - l.bias();
  const int e = exp + msb(mag);
  int q = (e > emin ? e : emin) - m; // weight of the last kept bit
  const int shift = q - exp;
  u128 kept;
  if (shift <= 0) {
    kept = mag << -shift;
  } else if (shift >= 128) {
    kept = 0; // the value is below half the quantum
  } else {
    kept = mag >> shift;
    u128 rem = mag & ((u128{1} << shift) - 1), half = u128{1} << (shift - 1);
    if (rem > half || (rem == half && (kept & 1) != 0))
      ++kept;
  }
  if (kept == 0)
    return sign_bit(l, neg);
  if (kept >> (m + 1) != 0) { // the rounding carried into a new binade
    kept >>= 1;
    ++q;
  }
  if (kept >> m == 0) // subnormal
    return sign_bit(l, neg) | static_cast<uint32_t>(kept);
  int biased = q + m + l.bias();
  if (biased >= (1 << l.ebits) - 1)
    return inf_bits(l, neg);
  uint32_t frac = static_cast<uint32_t>(kept) & ((1u << m) - 1);
  return sign_bit(l, neg) | (static_cast<uint32_t>(biased) << m) | frac;
}

/// Exact sum of two nonzero finite values; a zero result is +0 (the caller handles zero inputs).
Value add_exact(Value x, Value y) {
  auto top = [](const Value &v) { return v.exp + msb(v.mag); };
  if (top(x) < top(y))
    std::swap(x, y);
  const int sx = 125 - msb(x.mag); // x's leading one at bit 125: room for a carry and y's bits
  x.mag <<= sx;
  x.exp -= sx;
  const int d = y.exp - x.exp;
  if (d >= 0) {
    y.mag <<= d; // y's top is at most x's, so this fits
  } else if (-d >= 128) {
    y.mag = 1; // far below every kept bit: a sticky one
  } else {
    bool sticky = (y.mag & ((u128{1} << -d) - 1)) != 0;
    y.mag = (y.mag >> -d) | (sticky ? 1 : 0);
  }
  if (x.neg == y.neg)
    return {Cls::Finite, x.neg, x.exp, x.mag + y.mag};
  if (x.mag == y.mag)
    return {Cls::Zero, false, 0, 0};
  if (x.mag > y.mag)
    return {Cls::Finite, x.neg, x.exp, x.mag - y.mag};
  return {Cls::Finite, y.neg, x.exp, y.mag - x.mag};
}

/// a * b + c with one rounding to f32 (see the header for the special cases).
uint32_t fused(const Value &a, const Value &b, const Value &c) {
  if (a.cls == Cls::NaN || b.cls == Cls::NaN || c.cls == Cls::NaN)
    return kF32CanonicalNaN;
  const bool pneg = a.neg != b.neg;
  if (a.cls == Cls::Inf || b.cls == Cls::Inf) {
    if (a.cls == Cls::Zero || b.cls == Cls::Zero)
      return kF32CanonicalNaN;
    if (c.cls == Cls::Inf && c.neg != pneg)
      return kF32CanonicalNaN;
    return inf_bits(kF32, pneg);
  }
  if (c.cls == Cls::Inf)
    return inf_bits(kF32, c.neg);
  if (a.cls == Cls::Zero || b.cls == Cls::Zero) {
    if (c.cls == Cls::Zero)
      return sign_bit(kF32, pneg && c.neg);
    return round_pack(c.neg, c.exp, c.mag, kF32);
  }
  Value p{Cls::Finite, pneg, a.exp + b.exp, a.mag * b.mag};
  if (c.cls == Cls::Zero)
    return round_pack(p.neg, p.exp, p.mag, kF32);
  Value s = add_exact(p, c);
  if (s.cls == Cls::Zero)
    return 0;
  return round_pack(s.neg, s.exp, s.mag, kF32);
}

/// Rounds a float value to an integer (nearest even) and clamps it to [lo, hi]; NaN gives 0.
int64_t round_to_int(const Value &v, int64_t lo, int64_t hi) {
  if (v.cls == Cls::NaN || v.cls == Cls::Zero)
    return 0;
  if (v.cls == Cls::Inf)
    return v.neg ? lo : hi;
  u128 mag;
  if (v.exp >= 0) {
    if (v.exp > 40)
      return v.neg ? lo : hi;
    mag = v.mag << v.exp;
  } else if (-v.exp >= 100) {
    mag = 0;
  } else {
    int s = -v.exp;
    mag = v.mag >> s;
    u128 rem = v.mag & ((u128{1} << s) - 1), half = u128{1} << (s - 1);
    if (rem > half || (rem == half && (mag & 1) != 0))
      ++mag;
  }
  if (mag > static_cast<u128>(hi) + 1)
    return v.neg ? lo : hi;
  int64_t r = v.neg ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
  return r < lo ? lo : (r > hi ? hi : r);
}

uint32_t narrow(uint32_t x, Layout l) {
  Value v = unpack(x, kF32);
  switch (v.cls) {
  case Cls::NaN:
    return canonical_nan(l);
  case Cls::Inf:
    return inf_bits(l, v.neg);
  case Cls::Zero:
    return sign_bit(l, v.neg);
  case Cls::Finite:
    break;
  }
  return round_pack(v.neg, v.exp, v.mag, l);
}

uint32_t widen(uint32_t x, Layout l) {
  Value v = unpack(x, l);
  switch (v.cls) {
  case Cls::NaN:
    return kF32CanonicalNaN;
  case Cls::Inf:
    return inf_bits(kF32, v.neg);
  case Cls::Zero:
    return sign_bit(kF32, v.neg);
  case Cls::Finite:
    break;
  }
  return round_pack(v.neg, v.exp, v.mag, kF32);
}

/// Order key: monotone in the value, -0 just below +0.
int64_t order_key(uint32_t x) {
  int64_t mag = x & 0x7fffffff;
  return (x >> 31) != 0 ? -mag - 1 : mag;
}

bool is_nan(uint32_t x) { return (x & 0x7fffffff) > 0x7f800000; }

} // namespace

int dtype_size(DType t) {
  switch (t) {
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::I8:
    return 1;
  }
  assert(false && "unknown dtype");
  return 1;
}

const char *dtype_name(DType t) {
  static const char *const kNames[] = {"bf16", "f16", "f32", "i8", "i32"};
  return kNames[static_cast<int>(t)];
}

uint32_t bf16_to_f32(uint16_t x) { return widen(x, kBF16); }
uint32_t f16_to_f32(uint16_t x) { return widen(x, kF16); }
uint16_t f32_to_bf16(uint32_t x) { return static_cast<uint16_t>(narrow(x, kBF16)); }
uint16_t f32_to_f16(uint32_t x) { return static_cast<uint16_t>(narrow(x, kF16)); }
int8_t f32_to_i8(uint32_t x) { return static_cast<int8_t>(round_to_int(unpack(x, kF32), -128, 127)); }
int32_t f32_to_i32(uint32_t x) {
  return static_cast<int32_t>(round_to_int(unpack(x, kF32), INT32_MIN, INT32_MAX));
}
uint32_t i32_to_f32(int32_t x) {
  if (x == 0)
    return 0;
  bool neg = x < 0;
  uint64_t mag = neg ? uint64_t{0} - static_cast<uint64_t>(static_cast<int64_t>(x))
                     : static_cast<uint64_t>(x);
  return round_pack(neg, 0, mag, kF32);
}

uint32_t f32_fma(uint32_t a, uint32_t b, uint32_t c) {
  return fused(unpack(a, kF32), unpack(b, kF32), unpack(c, kF32));
}
uint32_t f32_add(uint32_t a, uint32_t b) { return f32_fma(a, 0x3f800000u, b); }
uint32_t f32_sub(uint32_t a, uint32_t b) { return f32_add(a, b ^ 0x80000000u); }
uint32_t f32_mul(uint32_t a, uint32_t b) { return f32_fma(a, b, kF32NegZero); }

uint32_t f32_max(uint32_t a, uint32_t b) {
  if (is_nan(a) || is_nan(b))
    return kF32CanonicalNaN;
  return order_key(a) >= order_key(b) ? a : b;
}
uint32_t f32_min(uint32_t a, uint32_t b) {
  if (is_nan(a) || is_nan(b))
    return kF32CanonicalNaN;
  return order_key(a) <= order_key(b) ? a : b;
}

uint32_t f32_exp(uint32_t x) {
  if (is_nan(x))
    return kF32CanonicalNaN;
  // Beyond these bounds the result is inf or 0 anyway; clamping keeps n within [-151, 129].
  constexpr uint32_t kHi = 0x42b20000u /* 89 */, kLo = 0xc2d00000u /* -104 */;
  if ((x >> 31) == 0 && x > kHi)
    x = kHi;
  if ((x >> 31) != 0 && x > kLo)
    x = kLo;
  constexpr uint32_t kLog2e = 0x3fb8aa3bu, kMagic = 0x4b400000u /* 1.5 * 2^23 */;
  constexpr uint32_t kLn2Hi = 0x3f317200u, kLn2Lo = 0x35bfbe8eu;
  const uint32_t t = f32_fma(x, kLog2e, kMagic);   // 1.5 * 2^23 + round(x / ln 2)
  const int n = static_cast<int>(t) - static_cast<int>(kMagic);
  const uint32_t neg_n = f32_sub(t, kMagic) ^ 0x80000000u; // -n, exactly
  uint32_t r = f32_fma(neg_n, kLn2Hi, x);
  r = f32_fma(neg_n, kLn2Lo, r); // r = x - n ln 2, |r| <= ln2 / 2 (+ a rounding)
  // Taylor coefficients 1/7! ... 1/0!, Horner with fused steps.
  static const uint32_t kCoef[] = {0x39500d01u, 0x3ab60b61u, 0x3c088889u, 0x3d2aaaabu,
                                   0x3e2aaaabu, 0x3f000000u, 0x3f800000u, 0x3f800000u};
  uint32_t p = kCoef[0];
  for (size_t i = 1; i < sizeof(kCoef) / sizeof(kCoef[0]); ++i)
    p = f32_fma(p, r, kCoef[i]);
  // p * 2^n in two exact-then-rounded steps, so a subnormal result is rounded once.
  const int n1 = n / 2, n2 = n - n1;
  auto pow2 = [](int k) { return static_cast<uint32_t>(k + 127) << 23; };
  return f32_mul(f32_mul(p, pow2(n1)), pow2(n2));
}

uint32_t mac_f32(DType in, uint32_t a, uint32_t b, uint32_t acc) {
  return fused(unpack_dtype(in, a), unpack_dtype(in, b), unpack(acc, kF32));
}

int32_t mac_i8(int8_t a, int8_t b, int32_t acc) {
  uint32_t prod = static_cast<uint32_t>(static_cast<int32_t>(a) * static_cast<int32_t>(b));
  return static_cast<int32_t>(static_cast<uint32_t>(acc) + prod);
}

uint32_t load_bits(DType t, const uint8_t *base, size_t i) {
  switch (dtype_size(t)) {
  case 1:
    return base[i];
  case 2: {
    uint16_t v;
    std::memcpy(&v, base + 2 * i, 2);
    return v;
  }
  default: {
    uint32_t v;
    std::memcpy(&v, base + 4 * i, 4);
    return v;
  }
  }
}

void store_bits(DType t, uint8_t *base, size_t i, uint32_t bits) {
  switch (dtype_size(t)) {
  case 1:
    base[i] = static_cast<uint8_t>(bits);
    break;
  case 2: {
    uint16_t v = static_cast<uint16_t>(bits);
    std::memcpy(base + 2 * i, &v, 2);
    break;
  }
  default:
    std::memcpy(base + 4 * i, &bits, 4);
  }
}

void gemm_reference(DType in, int M, int N, int K, const uint8_t *A, size_t lda, const uint8_t *B,
                    size_t ldb, uint32_t *C, size_t ldc, bool accumulate) {
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      uint32_t &c = C[i * ldc + j];
      if (in == DType::I8) {
        int32_t acc = accumulate ? static_cast<int32_t>(c) : 0;
        for (int k = 0; k < K; ++k)
          acc = mac_i8(static_cast<int8_t>(A[i * lda + k]), static_cast<int8_t>(B[k * ldb + j]),
                       acc);
        c = static_cast<uint32_t>(acc);
        continue;
      }
      uint32_t acc = accumulate ? c : kF32NegZero;
      for (int k = 0; k < K; ++k)
        acc = mac_f32(in, load_bits(in, A, i * lda + k), load_bits(in, B, k * ldb + j), acc);
      c = acc;
    }
  }
}

} // namespace tl::npu::num
