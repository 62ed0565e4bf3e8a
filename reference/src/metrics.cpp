// Error metrics: normwise relative error, ULP distance, tolerance tables and allclose.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/metrics.h"

#include "summation.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

namespace tl::ref {
namespace {

using tl::numerics::FloatFormat;

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Whether actual matches a non-finite expected value (the same infinity, or NaN for NaN).
bool same_non_finite(double actual, double expected) {
  if (std::isnan(expected))
    return std::isnan(actual);
  return actual == expected;
}

/// 2-norm scaled by the largest magnitude, so squares neither overflow nor underflow.
double norm2(const std::vector<double> &v) {
  double scale = 0.0;
  for (double x : v)
    scale = std::max(scale, std::fabs(x));
  if (scale == 0.0 || std::isinf(scale))
    return scale;
  detail::NeumaierSum s;
  for (double x : v) {
    double y = x / scale;
    s.add_exact_pair(y * y, std::fma(y, y, -(y * y)));
  }
  return scale * std::sqrt(s.result());
}

} // namespace

double normwise_relative_error(int64_t n, const double *actual, const double *expected) {
  assert(n >= 0 && (n == 0 || (actual && expected)));
  std::vector<double> diff, ref, act;
  diff.reserve(static_cast<size_t>(n));
  ref.reserve(static_cast<size_t>(n));
  act.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double a = actual[i], e = expected[i];
    if (!std::isfinite(e)) {
      if (!same_non_finite(a, e))
        return kInf;
      continue;
    }
    if (!std::isfinite(a))
      return kInf;
    diff.push_back(a - e);
    ref.push_back(e);
    act.push_back(a);
  }
  double ref_norm = norm2(ref);
  if (ref_norm == 0.0)
    return norm2(act);
  return norm2(diff) / ref_norm;
}

int64_t max_ulp_distance(FloatFormat f, int64_t n, const double *actual, const double *expected) {
  assert(n >= 0 && (n == 0 || (actual && expected)));
  int64_t worst = 0;
  for (int64_t i = 0; i < n; ++i)
    worst = std::max(worst, tl::numerics::ulp_distance(f, actual[i], expected[i]));
  return worst;
}

Tolerance default_tolerance(FloatFormat f) {
  switch (f) {
  case FloatFormat::F64:
    return {1e-12, 1e-15};
  case FloatFormat::F32:
    return {1.3e-6, 1e-5};
  case FloatFormat::F16:
    return {1e-3, 1e-5};
  case FloatFormat::BF16:
    return {1.6e-2, 1e-5};
  case FloatFormat::F8E4M3:
    return {1.25e-1, 1e-3};
  case FloatFormat::F8E5M2:
    return {2.5e-1, 1e-3};
  }
  assert(false && "unknown float format");
  return {0.0, 0.0};
}

AllCloseResult allclose(int64_t n, const double *actual, const double *expected, Tolerance t) {
  assert(n >= 0 && (n == 0 || (actual && expected)));
  AllCloseResult res{true, 0, -1, 0.0, 0.0};
  for (int64_t i = 0; i < n; ++i) {
    double a = actual[i], e = expected[i];
    bool pass;
    double abs_err, rel_err;
    if (!std::isfinite(e) || !std::isfinite(a)) {
      pass = std::isfinite(e) ? false : same_non_finite(a, e);
      abs_err = rel_err = pass ? 0.0 : kInf;
    } else {
      abs_err = std::fabs(a - e);
      rel_err = e != 0.0 ? abs_err / std::fabs(e) : (abs_err == 0.0 ? 0.0 : kInf);
      pass = abs_err <= t.atol + t.rtol * std::fabs(e);
    }
    res.max_abs_error = std::max(res.max_abs_error, abs_err);
    res.max_rel_error = std::max(res.max_rel_error, rel_err);
    if (!pass) {
      ++res.mismatches;
      if (res.first_bad_index < 0)
        res.first_bad_index = i;
    }
  }
  res.ok = res.mismatches == 0;
  return res;
}

} // namespace tl::ref
