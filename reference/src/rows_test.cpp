// Tests for the row-wise fp64 references (softmax, layernorm, rmsnorm) and axis reductions.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace tl::ref {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<double> random_vector(size_t n, double scale, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-scale, scale);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

TEST(SoftmaxTest, HandComputed) {
  const double x[] = {0.0, std::log(2.0), std::log(3.0)};
  double y[3];
  softmax_rows(1, 3, x, y);
  EXPECT_NEAR(y[0], 1.0 / 6, 1e-16);
  EXPECT_NEAR(y[1], 1.0 / 3, 1e-16);
  EXPECT_NEAR(y[2], 1.0 / 2, 1e-16);
}

TEST(SoftmaxTest, RowsSumToOneAndShiftInvariant) {
  const int64_t rows = 7, cols = 33;
  std::vector<double> x = random_vector(rows * cols, 20.0, 1), y(x.size()), z(x.size());
  softmax_rows(rows, cols, x.data(), y.data());
  std::vector<double> shifted = x;
  for (double &v : shifted)
    v += 1000.0; // would overflow exp without the max subtraction
  softmax_rows(rows, cols, shifted.data(), z.data());
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) {
      EXPECT_GE(y[r * cols + c], 0.0);
      EXPECT_NEAR(z[r * cols + c], y[r * cols + c], 1e-13);
      s += y[r * cols + c];
    }
    EXPECT_NEAR(s, 1.0, 1e-14);
  }
}

TEST(SoftmaxTest, InPlaceAndMaskedEntries) {
  std::vector<double> x = {1.0, -kInf, 1.0, -kInf};
  softmax_rows(1, 4, x.data(), x.data());
  EXPECT_EQ(x, (std::vector<double>{0.5, 0.0, 0.5, 0.0}));
  std::vector<double> nan_row = {1.0, kNaN}, out(2);
  softmax_rows(1, 2, nan_row.data(), out.data());
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]));
}

TEST(LayerNormTest, HandComputed) {
  const double x[] = {1.0, 2.0, 3.0, 4.0};
  const double gamma[] = {1.0, 2.0, 1.0, 1.0}, beta[] = {0.0, 0.0, 0.0, 10.0};
  double y[4];
  layernorm_rows(1, 4, x, nullptr, nullptr, 0.0, y); // mean 2.5, var 1.25
  const double s = std::sqrt(1.25);
  EXPECT_NEAR(y[0], -1.5 / s, 1e-15);
  EXPECT_NEAR(y[3], 1.5 / s, 1e-15);
  layernorm_rows(1, 4, x, gamma, beta, 0.75, y); // var + eps = 2
  EXPECT_NEAR(y[1], 2.0 * -0.5 / std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(y[3], 1.5 / std::sqrt(2.0) + 10.0, 1e-14);
}

TEST(LayerNormTest, RowsHaveMeanZeroVarianceOne) {
  const int64_t rows = 5, cols = 64;
  std::vector<double> x = random_vector(rows * cols, 3.0, 2), y(x.size());
  for (double &v : x)
    v += 1e6; // a large common offset must not cost accuracy (two-pass variance)
  layernorm_rows(rows, cols, x.data(), nullptr, nullptr, 0.0, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, sq = 0;
    for (int64_t c = 0; c < cols; ++c)
      mean += y[r * cols + c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c)
      sq += (y[r * cols + c] - mean) * (y[r * cols + c] - mean);
    EXPECT_NEAR(mean, 0.0, 1e-10);
    EXPECT_NEAR(sq / cols, 1.0, 1e-9);
  }
}

TEST(RmsNormTest, HandComputedAndUnitRms) {
  const double x[] = {3.0, 4.0}, gamma[] = {2.0, 0.5};
  double y[2];
  rmsnorm_rows(1, 2, x, nullptr, 0.0, y); // mean square 12.5
  EXPECT_NEAR(y[0], 3.0 / std::sqrt(12.5), 1e-15);
  EXPECT_NEAR(y[1], 4.0 / std::sqrt(12.5), 1e-15);
  rmsnorm_rows(1, 2, x, gamma, 3.5, y); // mean square + eps = 16
  EXPECT_EQ(y[0], 1.5);
  EXPECT_EQ(y[1], 0.5);
  std::vector<double> v = random_vector(3 * 40, 5.0, 3), w(v.size());
  rmsnorm_rows(3, 40, v.data(), nullptr, 0.0, w.data());
  for (int r = 0; r < 3; ++r) {
    double ms = 0;
    for (int c = 0; c < 40; ++c)
      ms += w[r * 40 + c] * w[r * 40 + c];
    EXPECT_NEAR(ms / 40, 1.0, 1e-14);
  }
}

TEST(ReduceTest, BothAxesAllKinds) {
  const double x[] = {1.0, 5.0, -2.0, // 2 x 3
                      4.0, 5.0, -7.0};
  double out[3];
  reduce(ReduceKind::Sum, 2, 3, x, 1, out);
  EXPECT_EQ(out[0], 4.0);
  EXPECT_EQ(out[1], 2.0);
  reduce(ReduceKind::Sum, 2, 3, x, 0, out);
  EXPECT_EQ((std::vector<double>(out, out + 3)), (std::vector<double>{5.0, 10.0, -9.0}));
  reduce(ReduceKind::Max, 2, 3, x, 0, out);
  EXPECT_EQ((std::vector<double>(out, out + 3)), (std::vector<double>{4.0, 5.0, -2.0}));
  reduce(ReduceKind::Min, 2, 3, x, 1, out);
  EXPECT_EQ(out[0], -2.0);
  EXPECT_EQ(out[1], -7.0);
  reduce(ReduceKind::ArgMax, 2, 3, x, 1, out);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], 1.0);
  reduce(ReduceKind::ArgMax, 2, 3, x, 0, out);
  EXPECT_EQ((std::vector<double>(out, out + 3)), (std::vector<double>{1.0, 0.0, 0.0}));
}

TEST(ReduceTest, ArgMaxFirstOfTiesAndNaN) {
  const double ties[] = {2.0, 7.0, 7.0, 1.0};
  double out;
  reduce(ReduceKind::ArgMax, 1, 4, ties, 1, &out);
  EXPECT_EQ(out, 1.0);
  const double nans[] = {2.0, kNaN, 9.0, kNaN};
  reduce(ReduceKind::ArgMax, 1, 4, nans, 1, &out);
  EXPECT_EQ(out, 1.0);
  reduce(ReduceKind::Max, 1, 4, nans, 1, &out);
  EXPECT_TRUE(std::isnan(out));
  reduce(ReduceKind::Min, 1, 4, nans, 1, &out);
  EXPECT_TRUE(std::isnan(out));
}

TEST(ReduceTest, SumIsCompensated) {
  const double x[] = {1e16, 1.0, -1e16, 1.0}; // naive left-to-right gives 1 (first 1 is lost)
  double out;
  reduce(ReduceKind::Sum, 1, 4, x, 1, &out);
  EXPECT_EQ(out, 2.0);
  std::vector<double> many(100000, 0.1);
  reduce(ReduceKind::Sum, 1, static_cast<int64_t>(many.size()), many.data(), 1, &out);
  EXPECT_EQ(out, 10000.0);
}

TEST(ReduceTest, EmptyReductionsGiveIdentities) {
  double out[2];
  reduce(ReduceKind::Sum, 2, 0, nullptr, 1, out);
  EXPECT_EQ(out[0], 0.0);
  reduce(ReduceKind::Max, 2, 0, nullptr, 1, out);
  EXPECT_EQ(out[1], -kInf);
  reduce(ReduceKind::Min, 0, 2, nullptr, 0, out);
  EXPECT_EQ(out[0], kInf);
  reduce(ReduceKind::ArgMax, 0, 2, nullptr, 0, out);
  EXPECT_EQ(out[1], -1.0);
}

} // namespace
} // namespace tl::ref
