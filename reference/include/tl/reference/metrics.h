// Error metrics that compare a device's results with the fp64 reference.
// SPDX-License-Identifier: Apache-2.0
//
// NaN/inf rules shared by every metric here: an element whose expected value is finite fails if
// its actual value is NaN or infinite; an element whose expected value is not finite passes only if
// the actual value is the same (NaN and NaN, or the same infinity).
#pragma once

#include "tl/reference/numerics.h"

#include <cstdint>

namespace tl::ref {

/// ||actual - expected||_2 / ||expected||_2, or ||actual||_2 when ||expected||_2 == 0. +inf when an
/// element fails the NaN/inf rules; matching non-finite elements are left out of both norms.
/// Norms are scaled and compensated, so they neither overflow nor lose small terms.
double normwise_relative_error(int64_t n, const double *actual, const double *expected);

/// Largest tl::numerics::ulp_distance over the elements (0 when n == 0).
int64_t max_ulp_distance(tl::numerics::FloatFormat f, int64_t n, const double *actual,
                         const double *expected);

struct Tolerance {
  double rtol;
  double atol;
};

/// The per-format default tolerance of TL's precision suite.
Tolerance default_tolerance(tl::numerics::FloatFormat f);

struct AllCloseResult {
  bool ok;
  int64_t mismatches;
  int64_t first_bad_index; ///< -1 when ok
  double max_abs_error;    ///< over all elements; +inf for an element failing the NaN/inf rules
  double max_rel_error;    ///< |a - e| / |e|; +inf where e == 0 and a != e
};

/// Element i passes when |a - e| <= atol + rtol * |e| or under the NaN/inf rules above.
AllCloseResult allclose(int64_t n, const double *actual, const double *expected, Tolerance t);

} // namespace tl::ref
