// Comparing device results with fp64 references: the tolerance table (data/tolerances.json),
// OpenCL-CTS-style ULP errors, normwise relative errors and the error histogram the report charts.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include "tl/ir/types.h"

#include <optional>
#include <string>
#include <vector>

namespace tl::conform {

/// One tolerance-table entry. Every bound that is set must hold; none set means exact.
/// - ulp: the largest error in ULPs of the result format, measured against the unrounded fp64
///   reference (OpenCL CTS style: |actual - ref| / ulp(ref), so 2.5 is a real bound).
/// - normwise: ||actual - ref||_2 / ||ref||_2.
/// - gamma: normwise bound c * n * u * cond for sums and dot products of n terms, u the unit
///   roundoff of the accumulation format, cond = || |terms| sum || / || sum || (the condition of
///   the sum, computed by the reference on absolute values): the classical error bound.
/// - exact: bit-for-bit (NaN matches any NaN).
/// - combine: how normwise and gamma combine when both are set: "max" (the default: the looser
///   holds), "min" (the tighter: the fp32 contract where the classical bound is above it) or
///   "sum" (both errors at once: one rounding to the result format after an f32 computation).
/// - accumulate: the format whose u the gamma bound takes (default: the result's): "f32" for an
///   op that sums in f32 and rounds once to a 16-bit result.
/// - bound: the wording the README quotes for the rule (reported with the metrics).
struct Tolerance {
  enum class Combine { Max, Min, Sum };
  std::optional<double> ulp, normwise, gamma;
  std::optional<ir::ScalarKind> accumulate;
  bool exact = false;
  Combine combine = Combine::Max;
  std::string bound;  // wording of the rule, may be empty
  std::string source; // which table entry it came from, for messages
  json to_json() const;
};

class ToleranceTable {
public:
  /// Loads the table; throws std::runtime_error naming the file and the problem.
  static ToleranceTable load(const std::string &path);
  /// The entry for `op` at `dtype` ("f32", ...): entries[op][dtype], entries[op]["*"], then
  /// default[dtype].
  Tolerance lookup(const std::string &op, const std::string &dtype) const;

private:
  json table_;
};

/// Real-valued error of `actual` against `ref` in ULPs of format `dtype` (0 for exact, +inf for
/// a NaN/infinity mismatch). A finite reference beyond the format's range expects the infinity
/// of its sign.
double ulp_error(ir::ScalarKind dtype, double actual, double ref);

/// The terms a check needs: results and fp64 reference, plus the reference of the absolute
/// terms for gamma bounds (may be empty) and the number of terms summed per result.
struct CompareInput {
  ir::ScalarKind dtype = ir::ScalarKind::F32;
  const std::vector<double> *actual = nullptr;
  const std::vector<double> *ref = nullptr;
  const std::vector<double> *ref_abs = nullptr;
  int64_t terms = 1;
};

struct CompareResult {
  bool ok = true;
  std::string message; // the first violated rule, with the worst element
  json metrics;        // normwise, max_ulp, bound, histogram, worst element
};

/// Applies `tol` to the results. NaN where the reference is finite always fails.
CompareResult compare(const CompareInput &in, const Tolerance &tol);

/// The histogram buckets of per-element ULP errors (upper bounds; the last is +inf).
const std::vector<double> &ulp_buckets();

} // namespace tl::conform
