// Soft-float internals shared by the numerics sources: unpacked values, exact sums and products,
// and the one rounding step. Private to tl_npu_numerics.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/npu/numerics.h"

#include <cstdint>

namespace tl::npu::num::detail {

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
/// The layout of a float dtype (BF16, F16, F32).
Layout layout_of(DType t);

enum class Cls { Zero, Finite, Inf, NaN };

/// A decoded value: (-1)^neg * mag * 2^exp for Finite; mag is exact and never normalized.
struct Value {
  Cls cls;
  bool neg;
  int exp;
  u128 mag;
};

int msb(u128 v);
Value unpack(uint32_t bits, Layout l);
Value unpack_dtype(DType t, uint32_t bits);
/// An IEEE binary64 pattern, exactly.
Value unpack_f64(uint64_t bits);
uint32_t canonical_nan(Layout l);
uint32_t sign_bit(Layout l, bool neg);
uint32_t inf_bits(Layout l, bool neg);
/// Rounds (-1)^neg * mag * 2^exp (mag != 0) to `l` in mode `r`, subnormals kept; overflow gives
/// inf or the largest finite value as IEEE 754 prescribes for the mode.
uint32_t round_pack(bool neg, int exp, u128 mag, Layout l, Round r = Round::NearestEven);
/// Any class of value rounded to `l` (NaN canonical).
uint32_t pack(const Value &v, Layout l, Round r = Round::NearestEven);
/// Exact sum of two nonzero finite values; a zero result is +0 (the caller handles zero inputs).
Value add_exact(Value x, Value y);
/// a * b + c with one rounding to `l` (IEEE special cases, canonical NaN).
uint32_t fused(const Value &a, const Value &b, const Value &c, Layout l = kF32);
/// floor(sqrt(n)).
u128 isqrt(u128 n);

/// A float t value as a host double (exact).
double to_double(DType t, uint32_t bits);
/// One rounding of a host double to `l` (integer rounding step, no host rounding).
uint32_t from_double(double v, Layout l);

// The later operations (elementwise_math.cpp); NaN operands handled there.
uint32_t later_float_unary(UnOp op, DType t, uint32_t a);
uint32_t later_float_binary(BinOp op, DType t, uint32_t a, uint32_t b);
/// Popcount / Clz of an integer t's bits.
uint32_t bit_count(UnOp op, DType t, uint32_t a);

} // namespace tl::npu::num::detail
