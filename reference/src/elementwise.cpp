// fp64 references for elementwise unary and binary math.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/ops.h"

#include <cassert>
#include <cmath>
#include <initializer_list>
#include <limits>

namespace tl::ref {
namespace {

double sigmoid(double x) {
  // Both branches take exp of a non-positive argument, so neither overflows.
  if (x >= 0)
    return 1.0 / (1.0 + std::exp(-x));
  double e = std::exp(x);
  return e / (1.0 + e);
}

/// IEEE 754-2019 minimum/maximum: NaN propagates, -0 < +0.
double ieee_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

double ieee_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

/// IEEE 754-2019 minimumNumber/maximumNumber: a NaN operand is ignored, -0 < +0.
double min_num(double a, double b) {
  if (std::isnan(a))
    return b;
  return std::isnan(b) ? a : ieee_min(a, b);
}

double max_num(double a, double b) {
  if (std::isnan(a))
    return b;
  return std::isnan(b) ? a : ieee_max(a, b);
}

/// erfinv(a) for 0 < a < 1: Giles' single-precision approximation ("Approximating the erfinv
/// function", GPU Computing Gems, 2011; relative error ~1e-7 where f32 reaches, rougher beyond)
/// refined by Newton steps. Near 0 on erf(y) = a; past 0.5 on log(erfc(y)) = log(1 - a), where
/// 1 - a is exact and the function is close to -y^2, so the steps converge from the rough start
/// of the far tail (1 - a down to 2^-53) and keep full relative accuracy there.
double erfinv_positive(double a) {
  double w = -std::log((1.0 - a) * (1.0 + a)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    for (double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682})
      p = c + p * w;
  }
  double y = p * a;
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int i = 0; i < 8; ++i) {
    const double d = two_over_sqrt_pi * std::exp(-y * y); // erf'(y)
    double step;
    if (a <= 0.5) {
      step = (std::erf(y) - a) / d;
    } else {
      const double c = std::erfc(y);
      step = (std::log(c) - std::log1p(-a)) / (-d / c);
    }
    y -= step;
    if (std::fabs(step) <= 1e-17 * y)
      break;
  }
  return y;
}

/// Nearest integral value, ties to even, whatever the host's rounding mode (floor is exact, and
/// so is x - floor(x)).
double rint_even(double x) {
  const double f = std::floor(x), frac = x - f;
  const double r = frac > 0.5 || (frac == 0.5 && std::fmod(f, 2.0) != 0) ? f + 1 : f;
  return r == 0 ? std::copysign(0.0, x) : r; // -0.3 rounds to -0
}

double erfinv(double x) {
  if (std::isnan(x) || std::fabs(x) > 1)
    return std::numeric_limits<double>::quiet_NaN();
  if (std::fabs(x) == 1)
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  if (x == 0)
    return x; // keeps the sign of zero
  return std::copysign(erfinv_positive(std::fabs(x)), x);
}

/// Phi(x) = erfc(z) / 2, z = -x / sqrt 2 = zh + zl (zh the rounded product, zl its error and
/// that of 1 / sqrt 2 in double): erfc(zh + zl) = erfc(zh) - zl 2 / sqrt(pi) e^(-zh^2) to first
/// order. Without zl the rounding of z costs 2 z^2 ulp (1400 ulp at x = -37; 1.5e-6 in f32 at
/// x = -5, where Phi is 3e-7: why GELU is not 1/2 + erf / 2 in the tail). Past |x| = 40 Phi is 0
/// or 1 in double (clamped first, so that inf gives 0 or 1 and not the NaN of inf - inf).
double ndtr(double x) {
  constexpr double kC = 0.70710678118654757;         // 1 / sqrt 2 rounded
  constexpr double kCLow = -4.8336466567264567e-17;  // 1 / sqrt 2 - kC
  constexpr double kInvSqrtPi = 0.56418958354775628; // 1 / sqrt(pi)
  if (std::isnan(x))
    return x;
  x = std::fmin(std::fmax(x, -40.0), 40.0);
  const double zh = -x * kC;
  const double zl = std::fma(-x, kC, -zh) - x * kCLow;
  return 0.5 * std::erfc(zh) - zl * kInvSqrtPi * std::exp(-zh * zh);
}

} // namespace

double clamp(double x, double lo, double hi) { return ieee_min(ieee_max(x, lo), hi); }

double unary(UnaryMath op, double x) {
  switch (op) {
  case UnaryMath::Exp:
    return std::exp(x);
  case UnaryMath::Exp2:
    return std::exp2(x);
  case UnaryMath::Log:
    return std::log(x);
  case UnaryMath::Log2:
    return std::log2(x);
  case UnaryMath::Sqrt:
    return std::sqrt(x);
  case UnaryMath::Rsqrt:
    return 1.0 / std::sqrt(x);
  case UnaryMath::Tanh:
    return std::tanh(x);
  case UnaryMath::Erf:
    return std::erf(x);
  case UnaryMath::Sigmoid:
    return sigmoid(x);
  case UnaryMath::Sin:
    return std::sin(x);
  case UnaryMath::Cos:
    return std::cos(x);
  case UnaryMath::Abs:
    return std::fabs(x);
  case UnaryMath::Neg:
    return -x;
  case UnaryMath::Tan:
    return std::tan(x);
  case UnaryMath::Asin:
    return std::asin(x);
  case UnaryMath::Acos:
    return std::acos(x);
  case UnaryMath::Atan:
    return std::atan(x);
  case UnaryMath::Sinh:
    return std::sinh(x);
  case UnaryMath::Cosh:
    return std::cosh(x);
  case UnaryMath::Log1p:
    return std::log1p(x);
  case UnaryMath::Expm1:
    return std::expm1(x);
  case UnaryMath::Erfinv:
    return erfinv(x);
  case UnaryMath::Rint:
    return rint_even(x);
  case UnaryMath::Floor:
    return std::floor(x);
  case UnaryMath::Ceil:
    return std::ceil(x);
  case UnaryMath::Trunc:
    return std::trunc(x);
  case UnaryMath::Ndtr:
    return ndtr(x);
  }
  assert(false && "unknown unary op");
  return 0.0;
}

void unary(UnaryMath op, int64_t n, const double *x, double *y) {
  assert(n >= 0 && (n == 0 || (x && y)));
  for (int64_t i = 0; i < n; ++i)
    y[i] = unary(op, x[i]);
}

double binary(BinaryMath op, double a, double b) {
  switch (op) {
  case BinaryMath::Add:
    return a + b;
  case BinaryMath::Sub:
    return a - b;
  case BinaryMath::Mul:
    return a * b;
  case BinaryMath::Div:
    return a / b;
  case BinaryMath::Pow:
    return std::pow(a, b);
  case BinaryMath::Min:
    return ieee_min(a, b);
  case BinaryMath::Max:
    return ieee_max(a, b);
  case BinaryMath::MinNum:
    return min_num(a, b);
  case BinaryMath::MaxNum:
    return max_num(a, b);
  case BinaryMath::Atan2:
    return std::atan2(a, b);
  case BinaryMath::Fmod:
    return std::fmod(a, b);
  case BinaryMath::Copysign:
    return std::copysign(a, b);
  }
  assert(false && "unknown binary op");
  return 0.0;
}

void binary(BinaryMath op, int64_t n, const double *a, const double *b, double *y) {
  assert(n >= 0 && (n == 0 || (a && b && y)));
  for (int64_t i = 0; i < n; ++i)
    y[i] = binary(op, a[i], b[i]);
}

} // namespace tl::ref
