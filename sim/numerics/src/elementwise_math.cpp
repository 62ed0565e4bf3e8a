// The vector unit's later elementwise operations (SPEC.md, "Vector unit"): exact rounding to an
// integral value, minnum / maxnum, fmod, copysign, class tests, popcount / clz, and the math
// functions tan ... erfinv, ndtr and atan2.
// SPDX-License-Identifier: Apache-2.0
#include "softfloat.h"

#include <cassert>
#include <cmath>
#include <initializer_list>

namespace tl::npu::num::detail {
namespace {

/// An f32 pattern rounded to an integral value in the direction of `op` (Rint: nearest, ties to
/// even), by masking fraction bits: exact, no host floating point.
uint32_t f32_integral(UnOp op, uint32_t x) {
  const uint32_t sign = x & 0x80000000u, mag = x & 0x7fffffffu;
  const int exp = static_cast<int>(mag >> 23);
  if (exp >= 150) // integral already (or inf; NaN was handled by the caller)
    return x;
  if (exp < 127) { // |x| < 1: the result is +-0 or +-1
    const bool nonzero = mag != 0;
    const uint32_t one = sign | 0x3f800000u;
    switch (op) {
    case UnOp::Floor:
      return sign != 0 && nonzero ? one : sign;
    case UnOp::Ceil:
      return sign == 0 && nonzero ? one : sign;
    case UnOp::Rint: // above 0.5 rounds to 1; 0.5 ties to the even 0
      return exp == 126 && (mag & 0x7fffffu) != 0 ? one : sign;
    default:
      return sign;
    }
  }
  const int frac_bits = 150 - exp; // 1..23 fraction bits below the units place
  const uint32_t unit = 1u << frac_bits, mask = unit - 1, frac = mag & mask;
  if (frac == 0)
    return x;
  const uint32_t t = x & ~mask; // toward zero; + unit is one step away from zero (carries fine)
  switch (op) {
  case UnOp::Floor:
    return sign != 0 ? t + unit : t;
  case UnOp::Ceil:
    return sign != 0 ? t : t + unit;
  case UnOp::Rint: {
    const uint32_t half = unit >> 1;
    const bool odd = ((t >> frac_bits) & 1) != 0;
    return frac > half || (frac == half && odd) ? t + unit : t;
  }
  default:
    return t;
  }
}

uint32_t to_f32(DType t, uint32_t bits) {
  return t == DType::F32 ? bits : convert(t, DType::F32, bits);
}

/// erf^-1(y) for |y| < 1 in double: Giles' approximation ("Approximating the erfinv function",
/// GPU Computing Gems, 2011; single-precision coefficients) as the start, then two Newton steps
/// on erf, or on erfc where |y| > 0.5 so that 1 - |y| (exact for an f32 y) carries the small
/// residual without cancellation. Two steps leave an error far below 2^-40 relative.
double erfinv_double(double y) {
  const double a = std::fabs(y);
  double w = -std::log((1.0 - a) * (1.0 + a)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = p * w + c;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      p = p * w + c;
  }
  double x = p * a;
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int i = 0; i < 2; ++i) {
    const double slope = two_over_sqrt_pi * std::exp(-x * x);
    if (!(slope > 0) || !std::isfinite(x))
      break;
    const double residual = a > 0.5 ? (1.0 - a) - std::erfc(x) : std::erf(x) - a;
    x -= residual / slope;
  }
  return std::copysign(x, y);
}

uint32_t erfinv(DType t, uint32_t a, Layout l) {
  const Value v = unpack_dtype(t, a);
  if (v.cls == Cls::Zero)
    return a;
  const double y = to_double(t, a);
  if (std::fabs(y) == 1.0)
    return inf_bits(l, y < 0);
  if (std::fabs(y) > 1.0) // +-inf included
    return canonical_nan(l);
  return from_double(erfinv_double(y), l);
}

} // namespace

uint32_t later_float_unary(UnOp op, DType t, uint32_t a) {
  const Layout l = layout_of(t);
  if (unpack_dtype(t, a).cls == Cls::NaN)
    return canonical_nan(l);
  const double x = to_double(t, a);
  switch (op) {
  case UnOp::Rint:
  case UnOp::Floor:
  case UnOp::Ceil:
  case UnOp::Trunc: { // an integral value of t is exact in t again
    const uint32_t r = f32_integral(op, to_f32(t, a));
    return t == DType::F32 ? r : convert(DType::F32, t, r);
  }
  case UnOp::Tan:
    return from_double(std::tan(x), l);
  case UnOp::Asin:
    return from_double(std::asin(x), l);
  case UnOp::Acos:
    return from_double(std::acos(x), l);
  case UnOp::Atan:
    return from_double(std::atan(x), l);
  case UnOp::Sinh:
    return from_double(std::sinh(x), l);
  case UnOp::Cosh:
    return from_double(std::cosh(x), l);
  case UnOp::Log1p:
    return from_double(std::log1p(x), l);
  case UnOp::Expm1:
    return from_double(std::expm1(x), l);
  case UnOp::Erfinv:
    return erfinv(t, a, l);
  case UnOp::Ndtr: // Phi(x); the argument's rounding costs 2 z^2 2^-53 (2e-14 at f32's -14)
    return from_double(0.5 * std::erfc(-x * 0.70710678118654752), l);
  default:
    break;
  }
  assert(false && "not a later float function");
  return 0;
}

uint32_t later_float_binary(BinOp op, DType t, uint32_t a, uint32_t b) {
  const Layout l = layout_of(t);
  const bool a_nan = unpack_dtype(t, a).cls == Cls::NaN, b_nan = unpack_dtype(t, b).cls == Cls::NaN;
  switch (op) {
  case BinOp::MaxNum:
  case BinOp::MinNum: // one NaN operand is ignored; the rest as max / min (-0 < +0)
    if (a_nan && b_nan)
      return canonical_nan(l);
    if (a_nan || b_nan)
      return a_nan ? b : a;
    return binary(op == BinOp::MaxNum ? BinOp::Max : BinOp::Min, t, a, b);
  case BinOp::Copysign: { // |a| with b's sign bit (also a NaN b's); a NaN a gives NaN
    const uint32_t s = sign_bit(l, true);
    return a_nan ? canonical_nan(l) : (a & ~s) | (b & s);
  }
  default:
    break;
  }
  if (a_nan || b_nan)
    return canonical_nan(l);
  const double x = to_double(t, a), y = to_double(t, b);
  switch (op) {
  case BinOp::Fmod: // exact in double, and the remainder of two t values is a t value
    return from_double(std::fmod(x, y), l);
  case BinOp::Atan2:
    return from_double(std::atan2(x, y), l);
  default:
    break;
  }
  assert(false && "not a later float operation");
  return 0;
}

uint32_t bit_count(UnOp op, DType t, uint32_t a) {
  const int w = t == DType::I8 ? 8 : 32;
  const uint32_t v = w == 8 ? a & 0xffu : a;
  if (op == UnOp::Popcount) {
    int n = 0;
    for (uint32_t x = v; x != 0; x &= x - 1)
      ++n;
    return static_cast<uint32_t>(n);
  }
  int n = 0;
  while (n < w && ((v >> (w - 1 - n)) & 1u) == 0)
    ++n;
  return static_cast<uint32_t>(n);
}

} // namespace tl::npu::num::detail

namespace tl::npu::num {

bool classify(ClassOp op, DType t, uint32_t a) {
  assert(is_float(t));
  const detail::Cls c = detail::unpack_dtype(t, a).cls;
  switch (op) {
  case ClassOp::IsNan:
    return c == detail::Cls::NaN;
  case ClassOp::IsInf:
    return c == detail::Cls::Inf;
  default:
    return c == detail::Cls::Zero || c == detail::Cls::Finite;
  }
}

} // namespace tl::npu::num
