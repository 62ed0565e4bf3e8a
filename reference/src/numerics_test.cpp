// Tests for tl::numerics: exhaustive narrow-format round trips, ties, directed modes, spot values.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/numerics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace tl::numerics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kFar = std::numeric_limits<int64_t>::max();

constexpr FloatFormat kAllFormats[] = {FloatFormat::F16, FloatFormat::BF16,   FloatFormat::F32,
                                       FloatFormat::F64, FloatFormat::F8E4M3, FloatFormat::F8E5M2};

uint64_t sign_bit(FloatFormat f) { return uint64_t{1} << (format_info(f).total_bits - 1); }

/// Bitwise equality of doubles, so that -0 and +0 differ.
bool same_bits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

/// Largest finite positive pattern of a format.
uint64_t max_finite_bits(FloatFormat f) { return encode(f, format_info(f).max_finite); }

TEST(NumericsTest, FormatInfoMatchesDecodedPatterns) {
  for (FloatFormat f : kAllFormats) {
    const FormatInfo &fi = format_info(f);
    SCOPED_TRACE(format_name(f));
    EXPECT_EQ(fi.total_bits, 1 + fi.exponent_bits + fi.mantissa_bits);
    EXPECT_EQ(decode(f, 1), fi.min_subnormal);
    EXPECT_EQ(decode(f, uint64_t{1} << fi.mantissa_bits), fi.min_normal);
    EXPECT_EQ(std::ldexp(1.0, 1 - fi.bias), fi.min_normal);
    EXPECT_EQ(decode(f, max_finite_bits(f)), fi.max_finite);
    EXPECT_EQ(std::isinf(decode(f, max_finite_bits(f) + 1)), fi.has_infinity);
    EXPECT_TRUE(std::isnan(decode(f, max_finite_bits(f) + 2)) || f == FloatFormat::F8E4M3);
  }
  EXPECT_EQ(format_info(FloatFormat::BF16).max_finite, 3.3895313892515355e38);
}

TEST(NumericsTest, RoundToIntegerRoundsByModeThenClamps) {
  const double inf = std::numeric_limits<double>::infinity();
  struct Row {
    double x;
    double rne, rtz, rd, ru;
  };
  // Ties go to even under rne; the i8 range [-128, 127] clamps after rounding.
  for (const Row &r : {Row{33.66, 34, 33, 33, 34}, Row{2.5, 2, 2, 2, 3}, Row{-2.5, -2, -2, -3, -2},
                       Row{3.5, 4, 3, 3, 4}, Row{-0.5, 0, 0, -1, 0}, Row{126.5, 126, 126, 126, 127},
                       Row{127.5, 127, 127, 127, 127}, Row{-128.5, -128, -128, -128, -128},
                       Row{1e300, 127, 127, 127, 127}, Row{-inf, -128, -128, -128, -128}}) {
    EXPECT_EQ(round_to_integer(r.x, Rounding::NearestEven, -128, 127), r.rne) << r.x;
    EXPECT_EQ(round_to_integer(r.x, Rounding::TowardZero, -128, 127), r.rtz) << r.x;
    EXPECT_EQ(round_to_integer(r.x, Rounding::Down, -128, 127), r.rd) << r.x;
    EXPECT_EQ(round_to_integer(r.x, Rounding::Up, -128, 127), r.ru) << r.x;
  }
  EXPECT_EQ(round_to_integer(std::nan(""), Rounding::Up, -128, 127), 0);
  EXPECT_EQ(round_to_integer(2147483647.5, Rounding::NearestEven, -2147483648.0, 2147483647.0),
            2147483647.0);
  EXPECT_EQ(round_to_integer(-2147483648.5, Rounding::NearestEven, -2147483648.0, 2147483647.0),
            -2147483648.0);
}

TEST(NumericsTest, CanonicalNaNEncodings) {
  EXPECT_EQ(encode(FloatFormat::F64, kNaN), 0x7ff8000000000000u);
  EXPECT_EQ(encode(FloatFormat::F32, kNaN), 0x7fc00000u);
  EXPECT_EQ(encode(FloatFormat::F16, kNaN), 0x7e00u);
  EXPECT_EQ(encode(FloatFormat::BF16, -kNaN), 0x7fc0u);
  EXPECT_EQ(encode(FloatFormat::F8E5M2, kNaN), 0x7eu);
  EXPECT_EQ(encode(FloatFormat::F8E4M3, kNaN), 0x7fu);
  for (FloatFormat f : kAllFormats)
    EXPECT_TRUE(std::isnan(round_to(f, kNaN, Rounding::Up))) << format_name(f);
}

/// Every pattern decodes to a value that rounds to itself and encodes back to the same pattern.
void check_exhaustive_round_trip(FloatFormat f) {
  const uint64_t count = uint64_t{1} << format_info(f).total_bits;
  const uint64_t nan_bits = encode(f, kNaN);
  int64_t nans = 0;
  for (uint64_t b = 0; b < count; ++b) {
    double v = decode(f, b);
    if (std::isnan(v)) {
      ++nans;
      ASSERT_EQ(encode(f, v), nan_bits) << b;
      continue;
    }
    ASSERT_EQ(encode(f, v), b) << b;
    for (Rounding r : {Rounding::NearestEven, Rounding::TowardZero, Rounding::Down, Rounding::Up})
      ASSERT_TRUE(same_bits(round_to(f, v, r), v)) << b;
  }
  const FormatInfo &fi = format_info(f);
  int64_t per_sign = fi.has_infinity ? (int64_t{1} << fi.mantissa_bits) - 1 : 1;
  EXPECT_EQ(nans, 2 * per_sign);
}

TEST(NumericsTest, ExhaustiveRoundTripBF16) { check_exhaustive_round_trip(FloatFormat::BF16); }
TEST(NumericsTest, ExhaustiveRoundTripF16) { check_exhaustive_round_trip(FloatFormat::F16); }
TEST(NumericsTest, ExhaustiveRoundTripF8E4M3) { check_exhaustive_round_trip(FloatFormat::F8E4M3); }
TEST(NumericsTest, ExhaustiveRoundTripF8E5M2) { check_exhaustive_round_trip(FloatFormat::F8E5M2); }

/// For every pair of adjacent finite values of one sign: the midpoint ties to the even pattern,
/// points just off it go to the near side, and the directed modes pick the right neighbour.
void check_exhaustive_midpoints(FloatFormat f) {
  const uint64_t top = max_finite_bits(f);
  for (uint64_t sign : {uint64_t{0}, sign_bit(f)}) {
    for (uint64_t b = 0; b < top; ++b) {
      double lo = decode(f, sign | b), hi = decode(f, sign | (b + 1)); // |lo| < |hi|
      double mid = lo + (hi - lo) / 2; // exact: narrow formats have few significant bits
      double even = (b & 1) == 0 ? lo : hi;
      ASSERT_EQ(round_to(f, mid), even) << b;
      ASSERT_EQ(round_to(f, std::nextafter(mid, lo)), lo) << b;
      ASSERT_EQ(round_to(f, std::nextafter(mid, hi)), hi) << b;
      ASSERT_EQ(round_to(f, mid, Rounding::TowardZero), lo) << b;
      ASSERT_EQ(round_to(f, mid, Rounding::Down), std::min(lo, hi)) << b;
      ASSERT_EQ(round_to(f, mid, Rounding::Up), std::max(lo, hi)) << b;
      ASSERT_EQ(ulp_distance(f, lo, hi), 1) << b;
    }
  }
}

TEST(NumericsTest, ExhaustiveMidpointsBF16) { check_exhaustive_midpoints(FloatFormat::BF16); }
TEST(NumericsTest, ExhaustiveMidpointsF16) { check_exhaustive_midpoints(FloatFormat::F16); }
TEST(NumericsTest, ExhaustiveMidpointsF8E4M3) { check_exhaustive_midpoints(FloatFormat::F8E4M3); }
TEST(NumericsTest, ExhaustiveMidpointsF8E5M2) { check_exhaustive_midpoints(FloatFormat::F8E5M2); }

/// A random double whose binary exponent is uniform in [lo, hi], with random sign and mantissa.
double random_double(std::mt19937_64 &rng, int lo, int hi) {
  std::uniform_int_distribution<int> exp(lo, hi);
  uint64_t bits = rng();
  uint64_t field = static_cast<uint64_t>(exp(rng) + 1023);
  return std::bit_cast<double>((bits & 0x800fffffffffffffu) | (field << 52));
}

TEST(NumericsTest, DirectedModesBracketAndAreAdjacent) {
  std::mt19937_64 rng(42);
  for (FloatFormat f : kAllFormats) {
    SCOPED_TRACE(format_name(f));
    const FormatInfo &fi = format_info(f);
    int lo = std::max(std::ilogb(fi.min_subnormal) - 3, -1022), hi = std::ilogb(fi.max_finite);
    for (int i = 0; i < 100000; ++i) {
      double x = random_double(rng, lo, hi);
      if (std::fabs(x) > fi.max_finite)
        continue; // the away side overflows (NaN for F8E4M3); covered by the overflow tests
      double down = round_to(f, x, Rounding::Down), up = round_to(f, x, Rounding::Up);
      ASSERT_LE(down, x) << x;
      ASSERT_GE(up, x) << x;
      ASSERT_EQ(ulp_distance(f, down, up), down == x ? 0 : 1) << x;
      double tz = round_to(f, x, Rounding::TowardZero);
      ASSERT_EQ(tz, x > 0 ? down : up) << x;
      double ne = round_to(f, x);
      ASSERT_TRUE(ne == down || ne == up) << x;
      double other = ne == down ? up : down;
      ASSERT_LE(std::fabs(ne - x), std::fabs(other - x)) << x;
      if (down != up && std::fabs(ne - x) == std::fabs(other - x)) {
        ASSERT_EQ(encode(f, ne) & 1, 0u) << x;
      }
    }
  }
}

TEST(NumericsTest, ZeroSignAndUnderflow) {
  for (FloatFormat f : {FloatFormat::F16, FloatFormat::BF16, FloatFormat::F32, FloatFormat::F8E4M3,
                        FloatFormat::F8E5M2}) {
    SCOPED_TRACE(format_name(f));
    const double tiny = format_info(f).min_subnormal;
    EXPECT_TRUE(same_bits(round_to(f, -0.0), -0.0));
    EXPECT_EQ(encode(f, -0.0), sign_bit(f));
    EXPECT_TRUE(same_bits(round_to(f, -tiny / 2), -0.0)); // tie to even: zero
    EXPECT_EQ(round_to(f, tiny * 0.5000001), tiny);
    EXPECT_TRUE(same_bits(round_to(f, tiny / 4, Rounding::TowardZero), 0.0));
    EXPECT_EQ(round_to(f, tiny / 4, Rounding::Up), tiny);
    EXPECT_TRUE(same_bits(round_to(f, -tiny / 4, Rounding::Up), -0.0));
    EXPECT_EQ(round_to(f, -tiny / 4, Rounding::Down), -tiny);
    EXPECT_EQ(round_to(f, 1.5 * tiny), 2 * tiny);          // subnormal tie to even
    EXPECT_TRUE(same_bits(round_to(f, -0x1p-1074), -0.0)); // double subnormal input
    EXPECT_EQ(round_to(f, 0x1p-1074, Rounding::Up), tiny);
  }
  EXPECT_TRUE(same_bits(round_to(FloatFormat::F64, -0.0), -0.0));
  EXPECT_EQ(round_to(FloatFormat::F64, 0x1.8p-1073), 0x1.8p-1073);
}

TEST(NumericsTest, OverflowWithInfinity) {
  for (FloatFormat f :
       {FloatFormat::F16, FloatFormat::BF16, FloatFormat::F32, FloatFormat::F8E5M2}) {
    SCOPED_TRACE(format_name(f));
    const double max = format_info(f).max_finite;
    const double ulp = max - decode(f, max_finite_bits(f) - 1);
    EXPECT_EQ(round_to(f, max + ulp / 2), kInf); // tie rounds to the even side: infinity
    EXPECT_EQ(round_to(f, max + ulp / 2 * 0.999), max);
    EXPECT_EQ(round_to(f, -1e300), -kInf);
    EXPECT_EQ(round_to(f, 1e300, Rounding::TowardZero), max);
    EXPECT_EQ(round_to(f, -1e300, Rounding::TowardZero), -max);
    EXPECT_EQ(round_to(f, 1e300, Rounding::Down), max);
    EXPECT_EQ(round_to(f, -1e300, Rounding::Down), -kInf);
    EXPECT_EQ(round_to(f, 1e300, Rounding::Up), kInf);
    EXPECT_EQ(round_to(f, -1e300, Rounding::Up), -max);
    EXPECT_EQ(round_to(f, -kInf, Rounding::TowardZero), -kInf); // infinity is exact
  }
  EXPECT_EQ(round_to(FloatFormat::F64, kInf), kInf);
  EXPECT_EQ(round_to(FloatFormat::F64, -1.7e308), -1.7e308);
}

TEST(NumericsTest, F8E4M3KnownValues) {
  const FloatFormat f = FloatFormat::F8E4M3;
  EXPECT_EQ(format_info(f).max_finite, 448.0);
  EXPECT_EQ(format_info(f).min_subnormal, 0x1p-9);
  EXPECT_EQ(format_info(f).min_normal, 0x1p-6);
  EXPECT_EQ(decode(f, 0x7e), 448.0);
  EXPECT_EQ(decode(f, 0xfe), -448.0);
  EXPECT_EQ(decode(f, 0x78), 256.0);
  EXPECT_EQ(decode(f, 0x38), 1.0);
  EXPECT_EQ(decode(f, 0x39), 1.125);
  EXPECT_EQ(decode(f, 0x01), 0x1p-9);
  EXPECT_EQ(decode(f, 0x07), 7 * 0x1p-9);
  EXPECT_EQ(decode(f, 0x08), 0x1p-6);
  EXPECT_TRUE(std::isnan(decode(f, 0x7f)));
  EXPECT_TRUE(std::isnan(decode(f, 0xff)));
  EXPECT_EQ(encode(f, 1.0), 0x38u);
  EXPECT_EQ(encode(f, -2.0), 0xc0u);
  EXPECT_EQ(encode(f, 0.1), 0x1du);     // 0.1015625
  EXPECT_EQ(round_to(f, 464.0), 448.0); // tie between 448 and (missing) 480: even is 448
  EXPECT_TRUE(std::isnan(round_to(f, 464.0001)));
  EXPECT_TRUE(std::isnan(round_to(f, -500.0)));
  EXPECT_TRUE(std::isnan(round_to(f, kInf)));
  EXPECT_TRUE(std::isnan(round_to(f, -kInf, Rounding::TowardZero)));
  EXPECT_EQ(encode(f, kInf), 0x7fu);
  EXPECT_EQ(round_to(f, 1e9, Rounding::TowardZero), 448.0);
  EXPECT_EQ(round_to(f, -1e9, Rounding::TowardZero), -448.0);
  EXPECT_EQ(round_to(f, 1e9, Rounding::Down), 448.0);
  EXPECT_EQ(round_to(f, -1e9, Rounding::Up), -448.0);
  EXPECT_TRUE(std::isnan(round_to(f, 1e9, Rounding::Up)));
  EXPECT_TRUE(std::isnan(round_to(f, -1e9, Rounding::Down)));
  EXPECT_TRUE(std::isnan(round_to(f, 449.0, Rounding::Up)));
  EXPECT_EQ(round_to(f, 449.0, Rounding::Down), 448.0);
  EXPECT_EQ(round_to(f, 0x1p-10), 0.0);
  EXPECT_EQ(round_to(f, 0x1.8p-9), 0x1p-8);
}

TEST(NumericsTest, F8E5M2KnownValues) {
  const FloatFormat f = FloatFormat::F8E5M2;
  EXPECT_EQ(format_info(f).max_finite, 57344.0);
  EXPECT_EQ(format_info(f).min_subnormal, 0x1p-16);
  EXPECT_EQ(format_info(f).min_normal, 0x1p-14);
  EXPECT_EQ(decode(f, 0x7b), 57344.0);
  EXPECT_EQ(decode(f, 0x7c), kInf);
  EXPECT_EQ(decode(f, 0xfc), -kInf);
  for (uint64_t b : {0x7du, 0x7eu, 0x7fu, 0xffu})
    EXPECT_TRUE(std::isnan(decode(f, b))) << b;
  EXPECT_EQ(decode(f, 0x3c), 1.0);
  EXPECT_EQ(decode(f, 0x3d), 1.25);
  EXPECT_EQ(decode(f, 0x01), 0x1p-16);
  EXPECT_EQ(decode(f, 0x04), 0x1p-14);
  EXPECT_EQ(encode(f, -1.5), 0xbeu);
  EXPECT_EQ(encode(f, kInf), 0x7cu);
  EXPECT_EQ(round_to(f, 61440.0), kInf); // tie between 57344 and 65536: even is 65536
  EXPECT_EQ(round_to(f, 61439.0), 57344.0);
  EXPECT_EQ(round_to(f, 1e6, Rounding::TowardZero), 57344.0);
  EXPECT_EQ(round_to(f, 1e6, Rounding::Up), kInf);
  EXPECT_EQ(round_to(f, 3.0 * 0x1p-17), 0x1p-15);
}

TEST(NumericsTest, RoundsOnceNotThroughF32) {
  // Just below a tie of the narrow format but exactly on one after rounding to f32 first: the
  // double rounding (f64 -> f32 -> f8/bf16, as ml_dtypes does) would go up; one rounding goes down.
  const double below_tie = std::nextafter(432.0, 0.0); // 432 is midway between 416 and 448
  EXPECT_EQ(round_to(FloatFormat::F8E4M3, below_tie), 416.0);
  EXPECT_EQ(round_to(FloatFormat::F8E4M3, -below_tie), -416.0);
  const double bf16_tie = 1.0 + 3 * 0x1p-8; // midway between 1 + 2^-7 (odd) and 1 + 2^-6 (even)
  EXPECT_EQ(round_to(FloatFormat::BF16, bf16_tie - 0x1p-40), 1.0 + 0x1p-7);
  EXPECT_EQ(round_to(FloatFormat::BF16, bf16_tie), 1.0 + 0x1p-6);
}

TEST(NumericsTest, F64IsIdentity) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    uint64_t bits = rng();
    double x = std::bit_cast<double>(bits);
    if (std::isnan(x))
      continue;
    ASSERT_TRUE(same_bits(round_to(FloatFormat::F64, x, Rounding::Up), x));
    ASSERT_EQ(encode(FloatFormat::F64, x), bits);
    ASSERT_TRUE(same_bits(decode(FloatFormat::F64, bits), x));
  }
}

TEST(NumericsTest, UlpDistance) {
  const FloatFormat h = FloatFormat::F16;
  EXPECT_EQ(ulp_distance(h, 1.0, 1.0), 0);
  EXPECT_EQ(ulp_distance(h, 0.0, -0.0), 0);
  EXPECT_EQ(ulp_distance(h, 1.0, 1.0 + 0x1p-10), 1);
  EXPECT_EQ(ulp_distance(h, 1.0 + 0x1p-10, 1.0), 1);
  EXPECT_EQ(ulp_distance(h, 1.0, 1.0 + 1e-8), 0); // rounded to f16 first
  EXPECT_EQ(ulp_distance(h, 1.0, 2.0), 1024);
  EXPECT_EQ(ulp_distance(h, 1.0, 1.0 - 0x1p-11), 1); // across a binade boundary
  EXPECT_EQ(ulp_distance(h, 0x1p-24, -0x1p-24), 2);
  EXPECT_EQ(ulp_distance(h, 65504.0, kInf), 1);
  EXPECT_EQ(ulp_distance(h, kNaN, kNaN), 0);
  EXPECT_EQ(ulp_distance(h, kNaN, 1.0), kFar);
  EXPECT_EQ(ulp_distance(h, 1.0, kNaN), kFar);
  EXPECT_EQ(ulp_distance(FloatFormat::F8E4M3, 1.0, 500.0), kFar); // 500 is NaN in e4m3
  EXPECT_EQ(ulp_distance(FloatFormat::F8E4M3, -448.0, 448.0), 2 * 0x7e);
  EXPECT_EQ(ulp_distance(FloatFormat::F64, 1.0, std::nextafter(1.0, 2.0)), 1);
  EXPECT_EQ(ulp_distance(FloatFormat::F64, -kInf, kInf), kFar); // saturates
  EXPECT_EQ(ulp_distance(FloatFormat::F32, 1.0, 1.0 + 0x1p-23), 1);
}

} // namespace
} // namespace tl::numerics
