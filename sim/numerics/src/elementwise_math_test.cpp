// Tests of the vector unit's later elementwise operations against the host's long double
// (x87 extended, at least fp64) <cmath>: the ulp error of tan ... erfinv and atan2 in f32 (1 M
// samples + specials; every 31st pattern with TL_NPU_EXHAUSTIVE) and f16 / bf16 (all 65 536
// inputs), the exact ops (rint floor ceil trunc fmod copysign minnum maxnum, class tests,
// popcount, clz) bit for bit, and the C99 Annex F special values.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/numerics.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

namespace tl::npu::num {
namespace {

constexpr DType kFloats[] = {DType::F32, DType::F16, DType::BF16};

bool exhaustive() { return std::getenv("TL_NPU_EXHAUSTIVE") != nullptr; }

struct Format {
  int mbits, emin, emax;
};
Format format(DType t) {
  return t == DType::F16 ? Format{10, -14, 15} : Format{t == DType::F32 ? 23 : 7, -126, 127};
}

long double value(DType t, uint32_t bits) {
  const uint32_t f = t == DType::F32 ? bits : convert(t, DType::F32, bits);
  return std::bit_cast<float>(f);
}

uint32_t from_f32(DType t, float f) {
  return t == DType::F32 ? std::bit_cast<uint32_t>(f)
                         : convert(DType::F32, t, std::bit_cast<uint32_t>(f));
}

bool is_nan(DType t, uint32_t bits) { return classify(ClassOp::IsNan, t, bits); }

/// Error of a t result in units of the last place (of t) of the exact value `want`.
long double ulp_error(DType t, uint32_t got, long double want) {
  const Format f = format(t);
  const long double g = value(t, got);
  if (std::isnan(want) || std::isnan(g))
    return std::isnan(want) && std::isnan(g) ? 0 : 1e9L;
  const long double top = std::ldexp(1.0L, f.emax + 1);
  const long double overflow = top * (1 - std::ldexp(1.0L, -f.mbits - 2));
  if (std::isinf(g)) // right iff the exact value rounds to inf
    return std::fabs(want) >= overflow && (want > 0) == (g > 0)
               ? 0
               : std::fabs(std::copysign(top, g) - want) / std::ldexp(1.0L, f.emax - f.mbits);
  if (std::isinf(want) || std::fabs(want) >= overflow)
    return 1e9L;
  if (want == 0)
    return g == 0 ? 0 : 1e9L;
  int e;
  std::frexp(want, &e);
  return std::fabs(g - want) / std::ldexp(1.0L, std::max(e - 1, f.emin) - f.mbits);
}

/// erf^-1 in long double: Newton from a start near the root (on erfc where |y| > 0.5).
long double erfinv_ref(long double y) {
  if (std::fabs(y) > 1)
    return NAN;
  if (std::fabs(y) == 1)
    return std::copysign(INFINITY, y);
  const long double a = std::fabs(y);
  long double x = a < 0.5L ? a * 0.886226925452758L : std::sqrt(-std::log((1 - a) * (1 + a)));
  for (int i = 0; i < 100; ++i) {
    const long double slope = 1.128379167095512573896L * std::exp(-x * x);
    const long double r = a > 0.5L ? (1 - a) - std::erfc(x) : std::erf(x) - a;
    const long double step = r / slope;
    x -= step;
    if (std::fabs(step) <= std::fabs(x) * 1e-19L)
      break;
  }
  return std::copysign(x, y);
}

struct MathCase {
  UnOp op;
  const char *name;
  long double (*exact)(long double);
  float lo, hi;
  double f32_bound; // tl-conform's bound (issue 19); f16 / bf16: 2
};

const MathCase kCases[] = {
    {UnOp::Tan, "tan", [](long double x) { return std::tan(x); }, -10, 10, 5},
    {UnOp::Asin, "asin", [](long double x) { return std::asin(x); }, -1, 1, 4},
    {UnOp::Acos, "acos", [](long double x) { return std::acos(x); }, -1, 1, 4},
    {UnOp::Atan, "atan", [](long double x) { return std::atan(x); }, -20, 20, 5},
    {UnOp::Sinh, "sinh", [](long double x) { return std::sinh(x); }, -90, 90, 4},
    {UnOp::Cosh, "cosh", [](long double x) { return std::cosh(x); }, -90, 90, 4},
    {UnOp::Log1p, "log1p", [](long double x) { return std::log1p(x); }, -1, 10, 2},
    {UnOp::Expm1, "expm1", [](long double x) { return std::expm1(x); }, -20, 89, 3},
    {UnOp::Erfinv, "erfinv", erfinv_ref, -1, 1, 8},
    {UnOp::Ndtr, "ndtr", [](long double x) { return erfcl(-x / sqrtl(2.0L)) / 2; }, -15, 9, 8},
};

/// Special inputs every function sees: zeros, ones, halves, the extremes, subnormals, inf, NaN.
std::vector<uint32_t> f32_specials() {
  std::vector<uint32_t> v;
  for (uint32_t mag : {0u, 1u, 0x7fffffu, 0x800000u, 0x3f000000u, 0x3f800000u, 0x3f7fffffu,
                       0x3f800001u, 0x40000000u, 0x7f7fffffu, 0x7f800000u, 0x7fc00000u, 0x42b17218u,
                       0x42b2d4fcu, 0x4b000000u, 0x4b000001u, 0x3fc90fdbu})
    for (uint32_t sign : {0u, 0x80000000u})
      v.push_back(mag | sign);
  return v;
}

long double worst_unary(const MathCase &c, DType t, const std::vector<uint32_t> &xs,
                        uint32_t &worst_x) {
  long double worst = 0;
  for (uint32_t x : xs) {
    const long double e = ulp_error(t, unary(c.op, t, x), c.exact(value(t, x)));
    if (e > worst) {
      worst = e;
      worst_x = x;
    }
  }
  return worst;
}

/// f32: 1 M samples (half all bit patterns, half the function's interesting range) + specials.
/// The host-double functions round once, so the measured error is the half ulp of correct
/// rounding (SPEC.md); the assertion is that, which is far inside tl-conform's bound.
TEST(NumericsLaterMath, F32UlpError) {
  for (const MathCase &c : kCases) {
    std::vector<uint32_t> xs = f32_specials();
    if (exhaustive()) {
      for (uint64_t x = 0; x <= 0xffffffffu; x += 31)
        xs.push_back(static_cast<uint32_t>(x));
    } else {
      std::mt19937 gen(21);
      std::uniform_real_distribution<float> dist(c.lo, c.hi);
      for (int i = 0; i < 1000000; ++i)
        xs.push_back(i % 2 ? static_cast<uint32_t>(gen()) : std::bit_cast<uint32_t>(dist(gen)));
    }
    uint32_t at = 0;
    const long double worst = worst_unary(c, DType::F32, xs, at);
    std::printf("f32  %-7s max error %.4Lf ulp (at 0x%08x; bound %g)\n", c.name, worst, at,
                c.f32_bound);
    EXPECT_LE(worst, 0.5001L) << c.name;
  }
}

/// f16 and bf16: every one of the 65 536 inputs.
TEST(NumericsLaterMath, F16AndBf16Exhaustive) {
  std::vector<uint32_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i)
    all[i] = i;
  for (DType t : {DType::F16, DType::BF16})
    for (const MathCase &c : kCases) {
      uint32_t at = 0;
      const long double worst = worst_unary(c, t, all, at);
      std::printf("%-4s %-7s max error %.4Lf ulp (at 0x%04x; bound 2)\n", dtype_name(t), c.name,
                  worst, at);
      EXPECT_LE(worst, 0.5001L) << dtype_name(t) << " " << c.name;
    }
}

TEST(NumericsLaterMath, Atan2UlpError) {
  std::mt19937 gen(22);
  std::uniform_real_distribution<float> dist(-100, 100);
  const std::vector<uint32_t> sp = f32_specials();
  for (DType t : kFloats) {
    long double worst = 0;
    auto one = [&](uint32_t y, uint32_t x) {
      worst = std::max(
          worst, ulp_error(t, binary(BinOp::Atan2, t, y, x), std::atan2(value(t, y), value(t, x))));
    };
    for (uint32_t y : sp)
      for (uint32_t x : sp)
        one(from_f32(t, std::bit_cast<float>(y)), from_f32(t, std::bit_cast<float>(x)));
    for (int i = 0; i < 1000000; ++i) {
      const uint32_t y = i % 2 ? gen() : std::bit_cast<uint32_t>(dist(gen));
      const uint32_t x = i % 2 ? gen() : std::bit_cast<uint32_t>(dist(gen));
      one(t == DType::F32 ? y : y & 0xffff, t == DType::F32 ? x : x & 0xffff);
    }
    std::printf("%-4s atan2   max error %.4Lf ulp (bound %s)\n", dtype_name(t), worst,
                t == DType::F32 ? "6" : "2");
    EXPECT_LE(worst, 0.5001L) << dtype_name(t);
  }
}

/// The exact unary ops of a value against the host's long double functions, bit for bit.
void check_exact_unary(DType t, uint32_t x) {
  const long double v = value(t, x);
  if (std::isnan(v)) {
    for (UnOp op : {UnOp::Rint, UnOp::Floor, UnOp::Ceil, UnOp::Trunc})
      ASSERT_TRUE(is_nan(t, unary(op, t, x)));
  } else {
    // fesetround is never changed here: nearbyint rounds to nearest even.
    const std::pair<UnOp, long double> want[] = {{UnOp::Rint, std::nearbyint(v)},
                                                 {UnOp::Floor, std::floor(v)},
                                                 {UnOp::Ceil, std::ceil(v)},
                                                 {UnOp::Trunc, std::trunc(v)}};
    for (const auto &[op, w] : want)
      ASSERT_EQ(unary(op, t, x), from_f32(t, static_cast<float>(w)))
          << dtype_name(t) << " op " << int(op) << " of " << std::hex << x;
  }
  ASSERT_EQ(classify(ClassOp::IsNan, t, x), std::isnan(v)) << std::hex << x;
  ASSERT_EQ(classify(ClassOp::IsInf, t, x), std::isinf(v)) << std::hex << x;
  ASSERT_EQ(classify(ClassOp::IsFinite, t, x), std::isfinite(v)) << std::hex << x;
}

/// The exact binary ops of a pair, bit for bit (a NaN result: any NaN).
void check_exact_binary(DType t, uint32_t a, uint32_t b) {
  const long double x = value(t, a), y = value(t, b);
  auto eq = [&](BinOp op, long double w, const char *name) {
    const uint32_t got = binary(op, t, a, b);
    if (std::isnan(w))
      ASSERT_TRUE(is_nan(t, got)) << name << std::hex << " " << a << " " << b;
    else
      ASSERT_EQ(got, from_f32(t, static_cast<float>(w)))
          << dtype_name(t) << " " << name << std::hex << " " << a << " " << b;
  };
  eq(BinOp::Fmod, std::fmod(x, y), "fmod");
  const bool b_neg = (b >> (t == DType::F32 ? 31 : 15)) != 0; // a NaN's sign bit too
  if (!std::isnan(x))
    eq(BinOp::Copysign, std::copysign(x, b_neg ? -1.0L : 1.0L), "copysign");
  // fmax / fmin do not order the zeros: -0 < +0 is checked on its own.
  if (!(x == 0 && y == 0)) {
    eq(BinOp::MaxNum, std::fmax(x, y), "maxnum");
    eq(BinOp::MinNum, std::fmin(x, y), "minnum");
  }
}

TEST(NumericsLaterExact, F16AndBf16AllInputs) {
  std::mt19937 gen(23);
  for (DType t : {DType::F16, DType::BF16})
    for (uint32_t x = 0; x < 65536; ++x) {
      check_exact_unary(t, x);
      for (int k = 0; k < 8; ++k)
        check_exact_binary(t, x, gen() & 0xffff);
    }
}

TEST(NumericsLaterExact, F32Sampled) {
  std::mt19937 gen(24);
  const std::vector<uint32_t> sp = f32_specials();
  for (uint32_t a : sp) {
    check_exact_unary(DType::F32, a);
    for (uint32_t b : sp)
      check_exact_binary(DType::F32, a, b);
  }
  for (int i = 0; i < 1000000; ++i) {
    uint32_t a = gen(), b = gen();
    if (i % 4 == 1) // near the units place: |a| in [0.25, 2^24)
      a = (a & 0x807fffffu) | ((125 + gen() % 26) << 23);
    if (i % 4 == 2) // close exponents: long fmod quotients and small ones
      b = (b & 0x807fffffu) | (((a >> 23 & 0xff) - gen() % 30) & 0xff) << 23;
    check_exact_unary(DType::F32, a);
    check_exact_binary(DType::F32, a, b);
  }
  if (exhaustive())
    for (uint64_t x = 0; x <= 0xffffffffu; x += 7)
      check_exact_unary(DType::F32, static_cast<uint32_t>(x));
}

/// C99 Annex F and the IR's definitions at the special values, for each float dtype.
TEST(NumericsLaterExact, SpecialValues) {
  for (DType t : kFloats) {
    const uint32_t nan = t == DType::F32   ? kF32CanonicalNaN
                         : t == DType::F16 ? kF16CanonicalNaN
                                           : kBF16CanonicalNaN;
    auto f = [&](float v) { return from_f32(t, v); };
    const uint32_t inf = f(INFINITY), ninf = f(-INFINITY), z = f(0.0f), nz = f(-0.0f);
    auto un = [&](UnOp op, float x) { return unary(op, t, f(x)); };
    auto bin = [&](BinOp op, float x, float y) { return binary(op, t, f(x), f(y)); };
    const char *n = dtype_name(t);
    EXPECT_EQ(un(UnOp::Log1p, -1), ninf) << n;
    EXPECT_EQ(un(UnOp::Log1p, -2), nan) << n;
    EXPECT_EQ(un(UnOp::Log1p, -0.0f), nz) << n;
    EXPECT_EQ(un(UnOp::Log1p, INFINITY), inf) << n;
    EXPECT_EQ(un(UnOp::Expm1, -INFINITY), f(-1)) << n;
    EXPECT_EQ(un(UnOp::Expm1, -0.0f), nz) << n;
    EXPECT_EQ(un(UnOp::Expm1, 100), inf) << n; // overflow
    EXPECT_EQ(un(UnOp::Erfinv, 1), inf) << n;
    EXPECT_EQ(un(UnOp::Erfinv, -1), ninf) << n;
    EXPECT_EQ(un(UnOp::Erfinv, 1.5f), nan) << n;
    EXPECT_EQ(un(UnOp::Erfinv, -INFINITY), nan) << n;
    EXPECT_EQ(un(UnOp::Erfinv, -0.0f), nz) << n;
    EXPECT_EQ(un(UnOp::Asin, 2), nan) << n;
    EXPECT_EQ(un(UnOp::Acos, -2), nan) << n;
    EXPECT_EQ(un(UnOp::Acos, 1), z) << n;
    EXPECT_EQ(un(UnOp::Asin, -0.0f), nz) << n;
    EXPECT_EQ(un(UnOp::Tan, -0.0f), nz) << n;
    EXPECT_EQ(un(UnOp::Tan, INFINITY), nan) << n;
    EXPECT_EQ(un(UnOp::Atan, -0.0f), nz) << n;
    EXPECT_EQ(un(UnOp::Sinh, -INFINITY), ninf) << n;
    EXPECT_EQ(un(UnOp::Cosh, -INFINITY), inf) << n;
    EXPECT_EQ(un(UnOp::Cosh, -0.0f), f(1)) << n;
    const float pi = static_cast<float>(M_PI);
    EXPECT_EQ(bin(BinOp::Atan2, 0.0f, 0.0f), z) << n;
    EXPECT_EQ(bin(BinOp::Atan2, -0.0f, 0.0f), nz) << n;
    EXPECT_LE(ulp_error(t, bin(BinOp::Atan2, 0.0f, -0.0f), M_PI), 0.5L) << n;
    EXPECT_LE(ulp_error(t, bin(BinOp::Atan2, -0.0f, -0.0f), -M_PI), 0.5L) << n;
    EXPECT_LE(ulp_error(t, bin(BinOp::Atan2, -INFINITY, -INFINITY), -0.75L * M_PI), 0.5L) << n;
    EXPECT_LE(ulp_error(t, bin(BinOp::Atan2, 1, 0), M_PI / 2), 0.5L) << n;
    EXPECT_EQ(bin(BinOp::Atan2, -1, INFINITY), nz) << n;
    EXPECT_EQ(bin(BinOp::Fmod, 1, 0), nan) << n;
    EXPECT_EQ(bin(BinOp::Fmod, INFINITY, 1), nan) << n;
    EXPECT_EQ(bin(BinOp::Fmod, 1.5f, INFINITY), f(1.5f)) << n;
    EXPECT_EQ(bin(BinOp::Fmod, -4, 2), nz) << n;
    EXPECT_EQ(bin(BinOp::Fmod, -7, 4), f(-3)) << n; // C fmod: the sign of x
    EXPECT_EQ(bin(BinOp::Fmod, pi, -1), f(static_cast<float>(value(t, f(pi)) - 3))) << n;
    EXPECT_EQ(un(UnOp::Rint, -0.5f), nz) << n;
    EXPECT_EQ(un(UnOp::Rint, 2.5f), f(2)) << n;
    EXPECT_EQ(un(UnOp::Rint, 3.5f), f(4)) << n;
    EXPECT_EQ(un(UnOp::Floor, -0.5f), f(-1)) << n;
    EXPECT_EQ(un(UnOp::Ceil, -0.5f), nz) << n;
    EXPECT_EQ(un(UnOp::Trunc, -1.5f), f(-1)) << n;
    EXPECT_EQ(un(UnOp::Floor, -INFINITY), ninf) << n;
    EXPECT_EQ(bin(BinOp::MaxNum, NAN, 1), f(1)) << n;
    EXPECT_EQ(bin(BinOp::MinNum, 1, NAN), f(1)) << n;
    EXPECT_EQ(bin(BinOp::MinNum, NAN, NAN), nan) << n;
    EXPECT_EQ(bin(BinOp::MaxNum, -0.0f, 0.0f), z) << n;
    EXPECT_EQ(bin(BinOp::MinNum, 0.0f, -0.0f), nz) << n;
    EXPECT_EQ(bin(BinOp::MaxNum, 0.0f, -0.0f), z) << n;
    EXPECT_EQ(bin(BinOp::Copysign, 1, -0.0f), f(-1)) << n;
    EXPECT_EQ(bin(BinOp::Copysign, -INFINITY, 2), inf) << n;
    EXPECT_EQ(bin(BinOp::Copysign, NAN, -1), nan) << n;
    EXPECT_TRUE(classify(ClassOp::IsFinite, t, f(1e-40f))) << n;
    EXPECT_FALSE(classify(ClassOp::IsFinite, t, inf)) << n;
    EXPECT_FALSE(classify(ClassOp::IsFinite, t, nan)) << n;
    EXPECT_TRUE(classify(ClassOp::IsInf, t, ninf)) << n;
  }
}

TEST(NumericsLaterInt, PopcountAndClz) {
  for (uint32_t x = 0; x < 256; ++x) {
    EXPECT_EQ(unary(UnOp::Popcount, DType::I8, x), uint32_t(std::popcount(uint8_t(x)))) << x;
    EXPECT_EQ(unary(UnOp::Clz, DType::I8, x), uint32_t(std::countl_zero(uint8_t(x)))) << x;
    // Unsigned reads the same bits.
    EXPECT_EQ(unary(UnOp::Clz, DType::I8, x, true), uint32_t(std::countl_zero(uint8_t(x)))) << x;
  }
  std::mt19937 gen(25);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t x = gen() >> (gen() % 32);
    ASSERT_EQ(unary(UnOp::Popcount, DType::I32, x), uint32_t(std::popcount(x))) << x;
    ASSERT_EQ(unary(UnOp::Clz, DType::I32, x), uint32_t(std::countl_zero(x))) << x;
  }
  EXPECT_EQ(unary(UnOp::Clz, DType::I32, 0), 32u);
  EXPECT_EQ(unary(UnOp::Clz, DType::I8, 0), 8u);
  EXPECT_EQ(unary(UnOp::Popcount, DType::I32, 0xffffffffu), 32u);
  EXPECT_EQ(unary(UnOp::Popcount, DType::I8, 0xff), 8u);
  EXPECT_FALSE(defined_on(UnOp::Popcount, DType::F32));
  EXPECT_FALSE(defined_on(UnOp::Floor, DType::I32));
  EXPECT_FALSE(defined_on(BinOp::MaxNum, DType::I8));
}

} // namespace
} // namespace tl::npu::num
