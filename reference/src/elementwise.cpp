// fp64 references for elementwise unary and binary math.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/ops.h"

#include <cassert>
#include <cmath>
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

} // namespace

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
