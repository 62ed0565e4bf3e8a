// Tests tl::numerics against the host's own conversions: _Float16, float and the bf16 bit trick.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/numerics.h"

#include <gtest/gtest.h>

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace tl::numerics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

constexpr Rounding kModes[] = {Rounding::NearestEven, Rounding::TowardZero, Rounding::Down,
                               Rounding::Up};

int host_mode(Rounding r) {
  switch (r) {
  case Rounding::NearestEven:
    return FE_TONEAREST;
  case Rounding::TowardZero:
    return FE_TOWARDZERO;
  case Rounding::Down:
    return FE_DOWNWARD;
  case Rounding::Up:
    return FE_UPWARD;
  }
  return FE_TONEAREST;
}

/// Sets the host rounding mode for one scope.
class ScopedHostRounding {
public:
  explicit ScopedHostRounding(Rounding r) : saved_(std::fegetround()) {
    std::fesetround(host_mode(r));
  }
  ~ScopedHostRounding() { std::fesetround(saved_); }

private:
  int saved_;
};

/// A random double with binary exponent uniform in [lo, hi], random sign and mantissa.
double random_double(std::mt19937_64 &rng, int lo, int hi) {
  std::uniform_int_distribution<int> exp(lo, hi);
  uint64_t field = static_cast<uint64_t>(exp(rng) + 1023);
  return std::bit_cast<double>((rng() & 0x800fffffffffffffu) | (field << 52));
}

/// Doubles that stress a format with `mant` stored bits and exponents in [lo, hi]: random values,
/// exact ties and their neighbours (low mantissa bits cleared except the half bit), and specials.
std::vector<double> stress_inputs(std::mt19937_64 &rng, int lo, int hi, int mant, int count) {
  std::vector<double> xs = {0.0,
                            -0.0,
                            kInf,
                            -kInf,
                            std::numeric_limits<double>::quiet_NaN(),
                            std::numeric_limits<double>::denorm_min(),
                            -0x1p-1074,
                            1.0,
                            -1.0};
  const uint64_t tie_mask = (uint64_t{1} << (52 - mant)) - 1;
  const uint64_t half = uint64_t{1} << (51 - mant);
  while (static_cast<int>(xs.size()) < count) {
    double x = random_double(rng, lo, hi);
    uint64_t bits = std::bit_cast<uint64_t>(x);
    switch (rng() % 4) {
    case 0:
      xs.push_back(x);
      break;
    case 1: // a tie for normal values of the format
      xs.push_back(std::bit_cast<double>((bits & ~tie_mask) | half));
      break;
    case 2: // one double ulp either side of that tie
      xs.push_back(std::nextafter(std::bit_cast<double>((bits & ~tie_mask) | half), 0.0));
      xs.push_back(std::nextafter(std::bit_cast<double>((bits & ~tie_mask) | half), kInf));
      break;
    default: // a random double, any exponent
      xs.push_back(std::bit_cast<double>(rng()));
    }
  }
  return xs;
}

bool same_or_both_nan(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

#if defined(__FLT16_MAX__)
double host_f16(double x) {
  volatile double in = x; // volatile keeps the conversion after the rounding-mode change
  volatile _Float16 out = static_cast<_Float16>(in);
  return static_cast<double>(out);
}
#endif

TEST(NumericsHostTest, F16MatchesFloat16AllModes) {
#if defined(__FLT16_MAX__)
  std::mt19937_64 rng(1);
  // Exponents from below the smallest subnormal (2^-24) to past the overflow threshold.
  std::vector<double> xs = stress_inputs(rng, -27, 17, 10, 2000000);
  for (Rounding r : kModes) {
    ScopedHostRounding host(r);
    size_t n = r == Rounding::NearestEven ? xs.size() : xs.size() / 4;
    for (size_t i = 0; i < n; ++i) {
      double want = host_f16(xs[i]);
      ASSERT_TRUE(same_or_both_nan(round_to(FloatFormat::F16, xs[i], r), want))
          << "x=" << xs[i] << " (" << std::hexfloat << xs[i] << ") mode " << static_cast<int>(r);
    }
  }
#else
  GTEST_SKIP() << "the host compiler has no _Float16";
#endif
}

TEST(NumericsHostTest, F32MatchesFloatAllModes) {
  std::mt19937_64 rng(2);
  std::vector<double> xs = stress_inputs(rng, -152, 129, 23, 1000000);
  for (Rounding r : kModes) {
    ScopedHostRounding host(r);
    size_t n = r == Rounding::NearestEven ? xs.size() : xs.size() / 4;
    for (size_t i = 0; i < n; ++i) {
      volatile double in = xs[i];
      volatile float out = static_cast<float>(in);
      ASSERT_TRUE(same_or_both_nan(round_to(FloatFormat::F32, xs[i], r), out))
          << "x=" << std::hexfloat << xs[i] << " mode " << static_cast<int>(r);
    }
  }
}

TEST(NumericsHostTest, F32DecodeEncodeMatchBitCast) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(decode(FloatFormat::F32, bits)));
      continue;
    }
    ASSERT_EQ(decode(FloatFormat::F32, bits), static_cast<double>(f));
    ASSERT_EQ(encode(FloatFormat::F32, f), bits);
  }
}

TEST(NumericsHostTest, ResultsIgnoreHostRoundingMode) {
  std::mt19937_64 rng(5);
  const std::vector<double> xs = stress_inputs(rng, -30, 17, 10, 20000);
  const FloatFormat formats[] = {FloatFormat::F16, FloatFormat::BF16, FloatFormat::F32,
                                 FloatFormat::F8E4M3, FloatFormat::F8E5M2};
  // Every encode and the bits of every decode, for all formats and modes, in a fixed order.
  auto results = [&] {
    std::vector<uint64_t> out;
    for (FloatFormat f : formats)
      for (double x : xs)
        for (Rounding r : kModes) {
          uint64_t bits = encode(f, x, r);
          out.push_back(bits);
          out.push_back(std::bit_cast<uint64_t>(decode(f, bits)));
        }
    return out;
  };
  const std::vector<uint64_t> want = results();
  for (Rounding host_r : kModes) {
    ScopedHostRounding host(host_r);
    std::vector<uint64_t> got = results();
    EXPECT_TRUE(got == want) << "host mode " << static_cast<int>(host_r);
  }
}

/// The usual f32 -> bf16 round-to-nearest-even: add 0x7fff plus the kept lsb, truncate.
uint16_t bf16_bit_trick(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if (std::isnan(f))
    return 0x7fc0;
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

TEST(NumericsHostTest, BF16MatchesBitTrickOnFloats) {
  std::mt19937_64 rng(4);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t bits = static_cast<uint32_t>(rng());
    switch (i % 4) {
    case 1: // exact ties
      bits = (bits & 0xffff0000u) | 0x8000u;
      break;
    case 2: // subnormal and tiny
      bits &= 0x807fffffu;
      break;
    case 3: // near the top of the range, where rounding overflows to infinity
      bits |= 0x7f7f0000u;
      bits &= 0xff7fffffu;
      break;
    default:
      break;
    }
    float f = std::bit_cast<float>(bits);
    ASSERT_EQ(encode(FloatFormat::BF16, f), bf16_bit_trick(f)) << std::hex << bits;
  }
}

TEST(NumericsHostTest, BF16SpecialsMatchBitTrick) {
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            -1.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::lowest(),
                            std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::denorm_min(),
                            3.0e38f,
                            1.0f / 3.0f};
  for (float f : specials)
    EXPECT_EQ(encode(FloatFormat::BF16, f), bf16_bit_trick(f)) << f;
  EXPECT_EQ(encode(FloatFormat::BF16, std::numeric_limits<float>::max()), 0x7f80u); // to inf
}

} // namespace
} // namespace tl::numerics
