// Compensated summation and accurate dot products shared by the fp64 references (internal).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cmath>
#include <cstdint>

namespace tl::ref::detail {

/// Neumaier's improved Kahan summation: the running error is kept in `comp`, so the result is as
/// accurate as summing in twice the precision. Non-finite sums are returned as they are.
class NeumaierSum {
public:
  void add(double x) {
    double t = sum_ + x;
    if (std::fabs(sum_) >= std::fabs(x))
      comp_ += (sum_ - t) + x;
    else
      comp_ += (x - t) + sum_;
    sum_ = t;
  }
  /// Adds a + b exactly split: used by Dot2 to fold in a product's rounding error.
  void add_exact_pair(double hi, double lo) {
    add(hi);
    comp_ += lo;
  }
  double result() const { return std::isfinite(sum_) ? sum_ + comp_ : sum_; }

private:
  double sum_ = 0.0;
  double comp_ = 0.0;
};

/// Dot2 (Ogita, Rump, Oishi 2005): sum of x[i*incx] * y[i*incy] with error-free products.
inline double dot2(int64_t n, const double *x, int64_t incx, const double *y, int64_t incy) {
  NeumaierSum s;
  for (int64_t i = 0; i < n; ++i) {
    double a = x[i * incx], b = y[i * incy];
    double p = a * b;
    s.add_exact_pair(p, std::fma(a, b, -p));
  }
  return s.result();
}

/// Compensated sum of x[i*inc].
inline double sum(int64_t n, const double *x, int64_t inc) {
  NeumaierSum s;
  for (int64_t i = 0; i < n; ++i)
    s.add(x[i * inc]);
  return s.result();
}

} // namespace tl::ref::detail
