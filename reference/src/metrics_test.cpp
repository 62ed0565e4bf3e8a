// Tests for the error metrics: normwise relative error, max ULP distance, tolerances, allclose.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace tl::ref {
namespace {

using tl::numerics::FloatFormat;

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double nre(const std::vector<double> &a, const std::vector<double> &e) {
  return normwise_relative_error(static_cast<int64_t>(a.size()), a.data(), e.data());
}

AllCloseResult close(const std::vector<double> &a, const std::vector<double> &e, Tolerance t) {
  return allclose(static_cast<int64_t>(a.size()), a.data(), e.data(), t);
}

TEST(NormwiseRelativeErrorTest, HandComputed) {
  EXPECT_EQ(nre({1, 2, 3}, {1, 2, 3}), 0.0);
  EXPECT_DOUBLE_EQ(nre({1, 2}, {1, 1}), 1.0 / std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nre({3, 4}, {0, 0}), 5.0); // zero reference: ||actual||
  EXPECT_EQ(nre({}, {}), 0.0);
  EXPECT_DOUBLE_EQ(nre({1e300, 1e300}, {2e300, 2e300}), 0.5); // no overflow in the squares
  EXPECT_DOUBLE_EQ(nre({1e-300, 0}, {2e-300, 0}), 0.5);       // nor underflow
}

TEST(NormwiseRelativeErrorTest, NonFiniteRules) {
  EXPECT_EQ(nre({1, kNaN}, {1, 2}), kInf);
  EXPECT_EQ(nre({1, kInf}, {1, 2}), kInf);
  EXPECT_EQ(nre({1, -kInf}, {1, kInf}), kInf);
  EXPECT_EQ(nre({1, 2}, {1, kNaN}), kInf);
  EXPECT_EQ(nre({1, kNaN, kInf}, {1, kNaN, kInf}), 0.0); // matching non-finite values are skipped
  EXPECT_DOUBLE_EQ(nre({2, kNaN}, {1, kNaN}), 1.0);
}

TEST(MaxUlpDistanceTest, WorstElementWins) {
  const std::vector<double> e = {1.0, 2.0, -3.0, 0.0};
  const std::vector<double> a = {1.0, 2.0 + 2 * 0x1p-9, -3.0, -0.0};
  EXPECT_EQ(max_ulp_distance(FloatFormat::F16, 4, a.data(), e.data()), 2);
  EXPECT_EQ(max_ulp_distance(FloatFormat::BF16, 4, a.data(), e.data()), 0); // below a bf16 ulp
  EXPECT_EQ(max_ulp_distance(FloatFormat::F16, 0, nullptr, nullptr), 0);
  const double nan_a[] = {kNaN}, one[] = {1.0};
  EXPECT_EQ(max_ulp_distance(FloatFormat::F32, 1, nan_a, one), std::numeric_limits<int64_t>::max());
}

TEST(DefaultToleranceTest, Table) {
  auto expect = [](FloatFormat f, double rtol, double atol) {
    Tolerance t = default_tolerance(f);
    EXPECT_EQ(t.rtol, rtol) << tl::numerics::format_name(f);
    EXPECT_EQ(t.atol, atol) << tl::numerics::format_name(f);
  };
  expect(FloatFormat::F32, 1.3e-6, 1e-5);
  expect(FloatFormat::BF16, 1.6e-2, 1e-5);
  expect(FloatFormat::F16, 1e-3, 1e-5);
  expect(FloatFormat::F64, 1e-12, 1e-15);
  expect(FloatFormat::F8E4M3, 1.25e-1, 1e-3);
  expect(FloatFormat::F8E5M2, 2.5e-1, 1e-3);
}

TEST(AllCloseTest, PassAndFail) {
  const Tolerance t{1e-3, 1e-6};
  AllCloseResult ok = close({1.0005, 0.0, -2.0}, {1.0, 5e-7, -2.001}, t);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.mismatches, 0);
  EXPECT_EQ(ok.first_bad_index, -1);
  EXPECT_NEAR(ok.max_abs_error, 1e-3, 1e-12);
  EXPECT_EQ(ok.max_rel_error, 1.0); // 0 vs 5e-7: |a - e| / |e| == 1, within atol
  AllCloseResult bad = close({1.0, 1.01, 3.0, 4.1}, {1.0, 1.0, 3.0, 4.0}, t);
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.mismatches, 2);
  EXPECT_EQ(bad.first_bad_index, 1);
  EXPECT_NEAR(bad.max_abs_error, 0.1, 1e-12);
  EXPECT_NEAR(bad.max_rel_error, 0.025, 1e-12);
  AllCloseResult edge = close({1.0 + 1e-3 + 1e-6}, {1.0}, t); // |a-e| == atol + rtol*|e|
  EXPECT_TRUE(edge.ok || edge.max_abs_error > 1e-3 + 1e-6);
}

TEST(AllCloseTest, NaNAndInfinityRules) {
  const Tolerance t{1e-3, 1e-6};
  AllCloseResult nan_vs_finite = close({kNaN, 1.0}, {1.0, 1.0}, t);
  EXPECT_FALSE(nan_vs_finite.ok);
  EXPECT_EQ(nan_vs_finite.first_bad_index, 0);
  EXPECT_EQ(nan_vs_finite.max_abs_error, kInf);
  EXPECT_TRUE(close({kNaN, kInf, -kInf}, {kNaN, kInf, -kInf}, t).ok);
  EXPECT_FALSE(close({1.0}, {kNaN}, t).ok);
  EXPECT_FALSE(close({kInf}, {1e300}, t).ok);
  EXPECT_FALSE(close({kInf}, {-kInf}, t).ok);
  EXPECT_FALSE(close({1e300}, {kInf}, t).ok);
  AllCloseResult empty = close({}, {}, t);
  EXPECT_TRUE(empty.ok);
  EXPECT_EQ(empty.first_bad_index, -1);
}

} // namespace
} // namespace tl::ref
