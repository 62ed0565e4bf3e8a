// Soft-float internals (see softfloat.h).
// SPDX-License-Identifier: Apache-2.0
#include "softfloat.h"

#include <cassert>
#include <utility>

namespace tl::npu::num::detail {

Layout layout_of(DType t) {
  switch (t) {
  case DType::BF16:
    return kBF16;
  case DType::F16:
    return kF16;
  default:
    assert(t == DType::F32 && "not a float dtype");
    return kF32;
  }
}

Value unpack_f64(uint64_t bits) {
  const bool neg = (bits >> 63) != 0;
  const uint64_t field = (bits >> 52) & 0x7ff, frac = bits & ((uint64_t{1} << 52) - 1);
  if (field == 0x7ff)
    return {frac != 0 ? Cls::NaN : Cls::Inf, neg, 0, 0};
  if (field == 0)
    return {frac == 0 ? Cls::Zero : Cls::Finite, neg, 1 - 1023 - 52, frac};
  return {Cls::Finite, neg, static_cast<int>(field) - 1023 - 52, frac | (uint64_t{1} << 52)};
}

uint32_t pack(const Value &v, Layout l, Round r) {
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
  return round_pack(v.neg, v.exp, v.mag, l, r);
}

u128 isqrt(u128 n) {
  u128 r = 0, bit = u128{1} << 126;
  while (bit > n)
    bit >>= 2;
  while (bit != 0) {
    if (n >= r + bit) {
      n -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
    bit >>= 2;
  }
  return r;
}

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
uint32_t round_pack(bool neg, int exp, u128 mag, Layout l, Round r) {
  const int m = l.mbits, emin = 1 - l.bias();
  const int e = exp + msb(mag);
  int q = (e > emin ? e : emin) - m; // weight of the last kept bit
  const int shift = q - exp;
  u128 kept;
  if (shift <= 0) {
    kept = mag << -shift;
  } else {
    int vs_half = -1; // the dropped bits against half a quantum: -1 below, 0 equal, 1 above
    if (shift >= 128) {
      kept = 0; // the value is below half the quantum
    } else {
      kept = mag >> shift;
      u128 rem = mag & ((u128{1} << shift) - 1), half = u128{1} << (shift - 1);
      vs_half = rem > half ? 1 : (rem == half ? 0 : -1);
      if (rem == 0)
        vs_half = -2;
    }
    const bool inexact = vs_half != -2;
    bool up = false;
    switch (r) {
    case Round::NearestEven:
      up = vs_half > 0 || (vs_half == 0 && (kept & 1) != 0);
      break;
    case Round::TowardZero:
      break;
    case Round::Down:
      up = neg && inexact;
      break;
    case Round::Up:
      up = !neg && inexact;
      break;
    }
    if (up)
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
  if (biased >= (1 << l.ebits) - 1) {
    const bool to_inf =
        r == Round::NearestEven || (r == Round::Up && !neg) || (r == Round::Down && neg);
    return to_inf ? inf_bits(l, neg) : inf_bits(l, neg) - 1; // or the largest finite value
  }
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
uint32_t fused(const Value &a, const Value &b, const Value &c, Layout l) {
  if (a.cls == Cls::NaN || b.cls == Cls::NaN || c.cls == Cls::NaN)
    return canonical_nan(l);
  const bool pneg = a.neg != b.neg;
  if (a.cls == Cls::Inf || b.cls == Cls::Inf) {
    if (a.cls == Cls::Zero || b.cls == Cls::Zero)
      return canonical_nan(l);
    if (c.cls == Cls::Inf && c.neg != pneg)
      return canonical_nan(l);
    return inf_bits(l, pneg);
  }
  if (c.cls == Cls::Inf)
    return inf_bits(l, c.neg);
  if (a.cls == Cls::Zero || b.cls == Cls::Zero) {
    if (c.cls == Cls::Zero)
      return sign_bit(l, pneg && c.neg);
    return round_pack(c.neg, c.exp, c.mag, l);
  }
  Value p{Cls::Finite, pneg, a.exp + b.exp, a.mag * b.mag};
  if (c.cls == Cls::Zero)
    return round_pack(p.neg, p.exp, p.mag, l);
  Value s = add_exact(p, c);
  if (s.cls == Cls::Zero)
    return 0;
  return round_pack(s.neg, s.exp, s.mag, l);
}

} // namespace tl::npu::num::detail
