// Tests for the elementwise unary and binary fp64 references.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace tl::ref {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(ElementwiseTest, UnaryKnownValues) {
  EXPECT_EQ(unary(UnaryMath::Exp, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(unary(UnaryMath::Exp, 1.0), M_E);
  EXPECT_EQ(unary(UnaryMath::Exp2, 3.0), 8.0);
  EXPECT_EQ(unary(UnaryMath::Exp2, -1.0), 0.5);
  EXPECT_DOUBLE_EQ(unary(UnaryMath::Log, M_E), 1.0);
  EXPECT_EQ(unary(UnaryMath::Log, 0.0), -kInf);
  EXPECT_TRUE(std::isnan(unary(UnaryMath::Log, -1.0)));
  EXPECT_EQ(unary(UnaryMath::Log2, 8.0), 3.0);
  EXPECT_EQ(unary(UnaryMath::Sqrt, 4.0), 2.0);
  EXPECT_EQ(unary(UnaryMath::Rsqrt, 4.0), 0.5);
  EXPECT_EQ(unary(UnaryMath::Rsqrt, 0.0), kInf);
  EXPECT_EQ(unary(UnaryMath::Tanh, 0.0), 0.0);
  EXPECT_EQ(unary(UnaryMath::Tanh, 100.0), 1.0);
  EXPECT_EQ(unary(UnaryMath::Erf, 0.0), 0.0);
  EXPECT_EQ(unary(UnaryMath::Erf, kInf), 1.0);
  EXPECT_NEAR(unary(UnaryMath::Erf, 1.0), 0.8427007929497149, 1e-16);
  EXPECT_EQ(unary(UnaryMath::Sin, 0.0), 0.0);
  EXPECT_EQ(unary(UnaryMath::Cos, 0.0), 1.0);
  EXPECT_NEAR(unary(UnaryMath::Sin, M_PI / 6), 0.5, 1e-16);
  EXPECT_EQ(unary(UnaryMath::Abs, -3.0), 3.0);
  EXPECT_EQ(unary(UnaryMath::Neg, 2.0), -2.0);
  EXPECT_TRUE(std::signbit(unary(UnaryMath::Neg, 0.0)));
}

TEST(ElementwiseTest, SigmoidIsStableAndSymmetric) {
  EXPECT_EQ(unary(UnaryMath::Sigmoid, 0.0), 0.5);
  EXPECT_EQ(unary(UnaryMath::Sigmoid, 1000.0), 1.0);
  EXPECT_EQ(unary(UnaryMath::Sigmoid, -1000.0), 0.0);
  EXPECT_EQ(unary(UnaryMath::Sigmoid, -kInf), 0.0);
  EXPECT_GT(unary(UnaryMath::Sigmoid, -700.0), 0.0); // exp(-700) is still a normal double
  EXPECT_DOUBLE_EQ(unary(UnaryMath::Sigmoid, 1.0), 1.0 / (1.0 + std::exp(-1.0)));
  for (double x = -30; x <= 30; x += 0.37)
    EXPECT_NEAR(unary(UnaryMath::Sigmoid, x) + unary(UnaryMath::Sigmoid, -x), 1.0, 1e-15) << x;
}

TEST(ElementwiseTest, ArrayFormsMatchScalarForms) {
  const std::vector<double> x = {-2.5, -1.0, -0.0, 0.25, 1.0, 3.0, 7.5};
  const std::vector<double> b = {1.5, -2.0, 0.0, 4.0, -1.0, 0.5, 2.0};
  std::vector<double> y(x.size());
  for (int op = 0; op <= static_cast<int>(UnaryMath::Neg); ++op) {
    unary(static_cast<UnaryMath>(op), static_cast<int64_t>(x.size()), x.data(), y.data());
    for (size_t i = 0; i < x.size(); ++i) {
      double want = unary(static_cast<UnaryMath>(op), x[i]);
      EXPECT_TRUE(y[i] == want || (std::isnan(y[i]) && std::isnan(want))) << op << " " << i;
    }
  }
  for (int op = 0; op <= static_cast<int>(BinaryMath::Max); ++op) {
    binary(static_cast<BinaryMath>(op), static_cast<int64_t>(x.size()), x.data(), b.data(),
           y.data());
    for (size_t i = 0; i < x.size(); ++i) {
      double want = binary(static_cast<BinaryMath>(op), x[i], b[i]);
      EXPECT_TRUE(y[i] == want || (std::isnan(y[i]) && std::isnan(want))) << op << " " << i;
    }
  }
}

TEST(ElementwiseTest, BinaryKnownValues) {
  EXPECT_EQ(binary(BinaryMath::Add, 1.5, 2.25), 3.75);
  EXPECT_EQ(binary(BinaryMath::Sub, 1.5, 2.25), -0.75);
  EXPECT_EQ(binary(BinaryMath::Mul, 1.5, -2.0), -3.0);
  EXPECT_EQ(binary(BinaryMath::Div, 1.0, 4.0), 0.25);
  EXPECT_EQ(binary(BinaryMath::Div, 1.0, -0.0), -kInf);
  EXPECT_EQ(binary(BinaryMath::Pow, 2.0, 10.0), 1024.0);
  EXPECT_EQ(binary(BinaryMath::Pow, 4.0, 0.5), 2.0);
  EXPECT_EQ(binary(BinaryMath::Pow, kNaN, 0.0), 1.0); // std::pow convention
  EXPECT_EQ(binary(BinaryMath::Min, 1.0, -3.0), -3.0);
  EXPECT_EQ(binary(BinaryMath::Max, 1.0, -3.0), 1.0);
  EXPECT_EQ(binary(BinaryMath::Max, -kInf, 2.0), 2.0);
}

TEST(ElementwiseTest, MinMaxPropagateNaNAndOrderZeros) {
  for (BinaryMath op : {BinaryMath::Min, BinaryMath::Max}) {
    EXPECT_TRUE(std::isnan(binary(op, kNaN, 1.0)));
    EXPECT_TRUE(std::isnan(binary(op, 1.0, kNaN)));
    EXPECT_TRUE(std::isnan(binary(op, kNaN, kNaN)));
  }
  EXPECT_TRUE(std::signbit(binary(BinaryMath::Min, 0.0, -0.0)));
  EXPECT_TRUE(std::signbit(binary(BinaryMath::Min, -0.0, 0.0)));
  EXPECT_FALSE(std::signbit(binary(BinaryMath::Max, 0.0, -0.0)));
  EXPECT_FALSE(std::signbit(binary(BinaryMath::Max, -0.0, 0.0)));
}

TEST(ElementwiseTest, RoundingToIntegralValues) {
  EXPECT_EQ(unary(UnaryMath::Rint, 2.5), 2.0); // ties to even
  EXPECT_EQ(unary(UnaryMath::Rint, 3.5), 4.0);
  EXPECT_EQ(unary(UnaryMath::Rint, -2.5), -2.0);
  EXPECT_EQ(unary(UnaryMath::Rint, 2.5000000000000004), 3.0);
  EXPECT_TRUE(std::signbit(unary(UnaryMath::Rint, -0.3)));
  EXPECT_TRUE(std::signbit(unary(UnaryMath::Rint, -0.5)));
  EXPECT_EQ(unary(UnaryMath::Rint, 0x1p52 + 1), 0x1p52 + 1);
  EXPECT_EQ(unary(UnaryMath::Floor, -1.5), -2.0);
  EXPECT_EQ(unary(UnaryMath::Ceil, -1.5), -1.0);
  EXPECT_EQ(unary(UnaryMath::Trunc, -1.5), -1.0);
  EXPECT_EQ(unary(UnaryMath::Rint, kInf), kInf);
  EXPECT_TRUE(std::isnan(unary(UnaryMath::Rint, kNaN)));
}

TEST(ElementwiseTest, ErfinvInvertsErfToFullPrecision) {
  EXPECT_EQ(unary(UnaryMath::Erfinv, 1.0), kInf);
  EXPECT_EQ(unary(UnaryMath::Erfinv, -1.0), -kInf);
  EXPECT_TRUE(std::isnan(unary(UnaryMath::Erfinv, 1.0000001)));
  EXPECT_TRUE(std::isnan(unary(UnaryMath::Erfinv, -kInf)));
  EXPECT_TRUE(std::isnan(unary(UnaryMath::Erfinv, kNaN)));
  EXPECT_TRUE(std::signbit(unary(UnaryMath::Erfinv, -0.0)));
  EXPECT_NEAR(unary(UnaryMath::Erfinv, 0.5), 0.4769362762044699, 1e-16);
  EXPECT_NEAR(unary(UnaryMath::Erfinv, -0.9), -1.1630871536766741, 4e-16);
  // erf(erfinv(a)) = a near 0; in the tail erfc(erfinv(a)) = 1 - a (relative), down to 1 - a =
  // 2^-53 where the initial approximation is far outside its range.
  for (double a = 1e-300; a < 0.5; a *= 1.7)
    EXPECT_NEAR(std::erf(unary(UnaryMath::Erfinv, a)) / a, 1.0, 4e-16) << a;
  for (double step = 0.5; step >= 0x1p-53; step /= 1.37) {
    const double a = 1.0 - step, t = 1.0 - a; // t exact
    const double y = unary(UnaryMath::Erfinv, a);
    // erfc's slope is -2y relative per unit y, so 1 ulp of y moves erfc by ~2y^2 ulp.
    EXPECT_NEAR(std::erfc(y) / t, 1.0, 8e-16 * (1 + 2 * y * y)) << t;
  }
}

TEST(ElementwiseTest, NdtrIsRelativelyAccurateInBothTails) {
  // Phi(x) from mpmath at 40 digits. Relative error of a few ulp everywhere; erfc(-x / sqrt 2) / 2
  // with the argument rounded is 2 z^2 ulp off (1400 ulp at -37.5, caught by that case; 1 / 2 +
  // erf / 2 cancels below -1).
  const std::pair<double, double> kPhi[] = {
      {-37.5, 4.6053530095819548438e-308}, {-20.25, 1.7761998649495700309e-91},
      {-5.5, 1.8989562465887719384e-8},    {-3.375, 0.00036907845427506730867},
      {-1.0, 0.15865525393145705141},      {-0.0001, 0.49996010577202634711},
      {0.5, 0.69146246127401310364},       {3.0, 0.99865010196836990547},
      {8.25, 0.9999999999999999208}};
  for (auto [x, phi] : kPhi)
    EXPECT_NEAR(unary(UnaryMath::Ndtr, x) / phi, 1.0, 4e-16) << x;
  EXPECT_EQ(unary(UnaryMath::Ndtr, 0.0), 0.5);
  EXPECT_EQ(unary(UnaryMath::Ndtr, -kInf), 0.0);
  EXPECT_EQ(unary(UnaryMath::Ndtr, kInf), 1.0);
  EXPECT_EQ(unary(UnaryMath::Ndtr, -40.5), 0.0);
  EXPECT_TRUE(std::isnan(unary(UnaryMath::Ndtr, kNaN)));
}

TEST(ElementwiseTest, NumberMinMaxIgnoreNaNAndTheRestFollowLibm) {
  EXPECT_EQ(binary(BinaryMath::MinNum, kNaN, 2.0), 2.0);
  EXPECT_EQ(binary(BinaryMath::MaxNum, 2.0, kNaN), 2.0);
  EXPECT_TRUE(std::isnan(binary(BinaryMath::MinNum, kNaN, kNaN)));
  EXPECT_TRUE(std::signbit(binary(BinaryMath::MinNum, 0.0, -0.0)));
  EXPECT_FALSE(std::signbit(binary(BinaryMath::MaxNum, -0.0, 0.0)));
  EXPECT_EQ(binary(BinaryMath::MaxNum, 1.0, 3.0), 3.0);
  EXPECT_EQ(binary(BinaryMath::Atan2, 0.0, -1.0), M_PI);
  EXPECT_EQ(binary(BinaryMath::Atan2, -0.0, -1.0), -M_PI);
  EXPECT_EQ(binary(BinaryMath::Fmod, -7.0, 2.0), -1.0);
  EXPECT_TRUE(std::isnan(binary(BinaryMath::Fmod, 1.0, 0.0)));
  EXPECT_EQ(binary(BinaryMath::Copysign, 3.0, -0.0), -3.0);
  EXPECT_TRUE(std::isnan(clamp(kNaN, 0.0, 1.0)));
  EXPECT_TRUE(std::isnan(clamp(0.5, kNaN, 1.0)));
  EXPECT_EQ(clamp(5.0, 0.0, 1.0), 1.0);
  EXPECT_TRUE(std::signbit(clamp(-0.0, -0.0, 0.0)));
}

} // namespace
} // namespace tl::ref
