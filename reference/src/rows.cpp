// fp64 references for row-wise ops (softmax, layernorm, rmsnorm) and axis reductions.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/ops.h"

#include "summation.h"

#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

namespace tl::ref {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Reduces n elements x[i*inc] with one ReduceKind.
double reduce_strided(ReduceKind kind, int64_t n, const double *x, int64_t inc) {
  switch (kind) {
  case ReduceKind::Sum:
    return detail::sum(n, x, inc);
  case ReduceKind::Max:
  case ReduceKind::Min: {
    BinaryMath op = kind == ReduceKind::Max ? BinaryMath::Max : BinaryMath::Min;
    double acc = kind == ReduceKind::Max ? -kInf : kInf;
    for (int64_t i = 0; i < n; ++i)
      acc = binary(op, acc, x[i * inc]);
    return acc;
  }
  case ReduceKind::ArgMax: {
    int64_t best = n > 0 ? 0 : -1;
    for (int64_t i = 1; i < n && !std::isnan(x[best * inc]); ++i) {
      double xi = x[i * inc];
      if (std::isnan(xi) || xi > x[best * inc])
        best = i;
    }
    return static_cast<double>(best);
  }
  }
  assert(false && "unknown reduce kind");
  return 0.0;
}

} // namespace

void softmax_rows(int64_t rows, int64_t cols, const double *x, double *y) {
  assert(rows >= 0 && cols >= 0 && (rows * cols == 0 || (x && y)));
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = x + r * cols;
    double *yr = y + r * cols;
    double m = reduce_strided(ReduceKind::Max, cols, xr, 1);
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = std::exp(xr[c] - m); // x may alias y: each element is read before it is written
    double denom = detail::sum(cols, yr, 1);
    for (int64_t c = 0; c < cols; ++c)
      yr[c] /= denom;
  }
}

void layernorm_rows(int64_t rows, int64_t cols, const double *x, const double *gamma,
                    const double *beta, double eps, double *y) {
  assert(rows >= 0 && cols > 0 && (rows == 0 || (x && y)));
  std::vector<double> centered(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = x + r * cols;
    double mean = detail::sum(cols, xr, 1) / static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c)
      centered[c] = xr[c] - mean;
    // Two passes (mean, then centred squares) avoid the cancellation of E[x^2] - E[x]^2.
    double var = detail::dot2(cols, centered.data(), 1, centered.data(), 1) / cols;
    double rstd = 1.0 / std::sqrt(var + eps);
    double *yr = y + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = centered[c] * rstd * (gamma ? gamma[c] : 1.0) + (beta ? beta[c] : 0.0);
  }
}

void rmsnorm_rows(int64_t rows, int64_t cols, const double *x, const double *gamma, double eps,
                  double *y) {
  assert(rows >= 0 && cols > 0 && (rows == 0 || (x && y)));
  for (int64_t r = 0; r < rows; ++r) {
    const double *xr = x + r * cols;
    double mean_sq = detail::dot2(cols, xr, 1, xr, 1) / static_cast<double>(cols);
    double rrms = 1.0 / std::sqrt(mean_sq + eps);
    double *yr = y + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      yr[c] = xr[c] * rrms * (gamma ? gamma[c] : 1.0);
  }
}

void reduce(ReduceKind kind, int64_t rows, int64_t cols, const double *x, int axis, double *out) {
  assert(rows >= 0 && cols >= 0 && (axis == 0 || axis == 1) && out);
  assert(rows * cols == 0 || x);
  if (axis == 1) {
    for (int64_t r = 0; r < rows; ++r)
      out[r] = reduce_strided(kind, cols, x + r * cols, 1);
    return;
  }
  // With no rows x may be null, and null + c is undefined even when nothing is read.
  for (int64_t c = 0; c < cols; ++c)
    out[c] = reduce_strided(kind, rows, rows == 0 ? x : x + c, cols);
}

} // namespace tl::ref
