// Tests of the vector unit's typed elementwise numerics: correctly rounded div / sqrt / rsqrt, the
// math functions' measured ulp error against long double, f16/bf16 rounding once to the element
// type, integer wrap-around and signedness, comparisons and directed-rounding conversions.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/numerics.h"

#include "tl/reference/numerics.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace tl::npu::num {
namespace {

namespace ref = tl::numerics;

float as_float(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t as_bits(float f) { return std::bit_cast<uint32_t>(f); }
uint32_t canon(float f) { return std::isnan(f) ? kF32CanonicalNaN : as_bits(f); }
bool exhaustive() { return std::getenv("TL_NPU_EXHAUSTIVE") != nullptr; }

/// Error of an f32 result in units of the last place of the exact value `want` (long double).
long double ulp_error(uint32_t got, long double want) {
  const float g = as_float(got);
  if (std::isnan(want) || std::isnan(g))
    return std::isnan(want) && std::isnan(g) ? 0 : 1e9L;
  const long double overflow = std::ldexp(1.0L, 128) * (1 - std::ldexp(1.0L, -25));
  if (std::isinf(g)) // correct iff the exact value rounds to inf; else measure from 2^128
    return std::fabs(want) >= overflow && (want > 0) == (g > 0)
               ? 0
               : std::fabs(std::copysign(std::ldexp(1.0L, 128), g) - want) / std::ldexp(1.0L, 104);
  if (std::isinf(want) || std::fabs(want) >= overflow)
    return 1e9L;
  int e;
  std::frexp(want, &e); // want = m * 2^e, m in [0.5, 1)
  const int exp = std::max(e - 1, -126);
  return std::fabs(static_cast<long double>(g) - want) / std::ldexp(1.0L, exp - 23);
}

/// Random f32 patterns: half uniform over all bits, half uniform in [lo, hi).
std::vector<uint32_t> samples(uint32_t seed, int n, float lo, float hi) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<uint32_t> out;
  for (int i = 0; i < n; ++i)
    out.push_back(i % 2 ? static_cast<uint32_t>(gen()) : as_bits(dist(gen)));
  return out;
}

TEST(NumericsDiv, F32CorrectlyRoundedAgainstHost) {
  std::mt19937 gen(11);
  for (int i = 0; i < 3000000; ++i) {
    uint32_t a = gen(), b = gen();
    if (i % 5 == 1)
      b = (a & 0x807fffffu) | (gen() & 0x7f800000u); // same fraction: exact quotients
    if (i % 5 == 2)
      a &= 0x807fffffu; // subnormal dividends
    ASSERT_EQ(f32_div(a, b), canon(as_float(a) / as_float(b))) << std::hex << a << " / " << b;
  }
  EXPECT_EQ(f32_div(0, 0), kF32CanonicalNaN);
  EXPECT_EQ(f32_div(0x3f800000u, 0x80000000u), 0xff800000u); // 1 / -0
  EXPECT_EQ(f32_div(0x7f800000u, 0x7f800000u), kF32CanonicalNaN);
  EXPECT_EQ(f32_div(0x3f800000u, 0xff800000u), 0x80000000u); // 1 / -inf
}

TEST(NumericsSqrt, F32CorrectlyRoundedAgainstHost) {
  auto check = [](uint32_t x) {
    ASSERT_EQ(f32_sqrt(x), canon(std::sqrt(as_float(x)))) << std::hex << x;
    // 1/sqrt(x) rounded once from long double: wrong only within 2^-64 of a midpoint.
    const float f = as_float(x);
    const uint32_t want =
        std::isnan(f) || f < 0 ? kF32CanonicalNaN
        : f == 0               ? as_bits(std::copysign(INFINITY, f))
                 : as_bits(static_cast<float>(1.0L / std::sqrt(static_cast<long double>(f))));
    ASSERT_EQ(f32_rsqrt(x), want) << std::hex << x;
  };
  if (exhaustive()) { // every 3rd pattern: minutes (u128 division and root per value)
    for (uint64_t x = 0; x <= 0xffffffffu; x += 3)
      check(static_cast<uint32_t>(x));
    return;
  }
  for (uint32_t x = 0; x < 0x800000u; x += 7) // subnormals
    check(x);
  for (uint32_t x = 0x3f000000u; x < 0x40000000u; x += 5) // a fifth of the f32 in [0.5, 2)
    check(x);
  for (uint32_t x : samples(12, 2000000, 0, 1e6f))
    check(x);
  EXPECT_EQ(f32_sqrt(0x80000000u), 0x80000000u); // sqrt(-0) = -0
  EXPECT_EQ(f32_rsqrt(0x7f800000u), 0u);
}

struct MathCase {
  UnOp op;
  const char *name;
  long double (*exact)(long double);
  float lo, hi;
};

/// Measured max ulp error (printed) of each math function over 1M samples (every 31st of the 2^32
/// patterns with TL_NPU_EXHAUSTIVE) against long double; SPEC.md quotes the bound.
TEST(NumericsMath, UlpErrorAgainstLongDouble) {
  const MathCase cases[] = {
      {UnOp::Log, "log", [](long double x) { return std::log(x); }, 0, 100},
      {UnOp::Log2, "log2", [](long double x) { return std::log2(x); }, 0, 100},
      {UnOp::Exp2, "exp2", [](long double x) { return std::exp2(x); }, -150, 128},
      {UnOp::Tanh, "tanh", [](long double x) { return std::tanh(x); }, -10, 10},
      {UnOp::Erf, "erf", [](long double x) { return std::erf(x); }, -5, 5},
      {UnOp::Sigmoid, "sigmoid", [](long double x) { return 1 / (1 + std::exp(-x)); }, -90, 90},
      {UnOp::Sin, "sin", [](long double x) { return std::sin(x); }, -100, 100},
      {UnOp::Cos, "cos", [](long double x) { return std::cos(x); }, -100, 100},
      {UnOp::Exp, "exp", [](long double x) { return std::exp(x); }, -104, 89},
  };
  for (const MathCase &c : cases) {
    long double worst = 0;
    uint32_t worst_x = 0;
    auto one = [&](uint32_t x) {
      const long double want = c.exact(as_float(x));
      const long double e = ulp_error(unary(c.op, DType::F32, x), want);
      if (e > worst) {
        worst = e;
        worst_x = x;
      }
    };
    if (exhaustive()) // every 31st pattern: 1.4e8 per function
      for (uint64_t x = 0; x <= 0xffffffffu; x += 31)
        one(static_cast<uint32_t>(x));
    else
      for (uint32_t x : samples(13, 1000000, c.lo, c.hi))
        one(x);
    std::printf("%-8s max error %.4Lf ulp (at 0x%08x)\n", c.name, worst, worst_x);
    EXPECT_LE(worst, c.op == UnOp::Exp ? 2.0L : 0.5001L) << c.name;
  }
  // pow over (x, y) pairs.
  std::mt19937 gen(14);
  std::uniform_real_distribution<float> base(0, 20), expo(-30, 30);
  long double worst = 0;
  for (int i = 0; i < 1000000; ++i) {
    const float x = base(gen), y = expo(gen);
    const long double want = std::pow(static_cast<long double>(x), static_cast<long double>(y));
    worst =
        std::max(worst, ulp_error(binary(BinOp::Pow, DType::F32, as_bits(x), as_bits(y)), want));
  }
  std::printf("%-8s max error %.4Lf ulp\n", "pow", worst);
  EXPECT_LE(worst, 0.5001L);
}

/// f16 / bf16 arithmetic equals the exact result rounded once to the element type (what the
/// reference interpreter computes in double), for every op including fma.
TEST(NumericsNarrow, F16AndBf16RoundOnce) {
  std::mt19937 gen(15);
  for (DType t : {DType::F16, DType::BF16}) {
    const ref::FloatFormat f = t == DType::F16 ? ref::FloatFormat::F16 : ref::FloatFormat::BF16;
    for (int i = 0; i < 500000; ++i) {
      const uint32_t a = gen() & 0xffff, b = gen() & 0xffff, c = gen() & 0xffff;
      const double x = ref::decode(f, a), y = ref::decode(f, b), z = ref::decode(f, c);
      ASSERT_EQ(binary(BinOp::Add, t, a, b), ref::encode(f, x + y)) << std::hex << a << " " << b;
      ASSERT_EQ(binary(BinOp::Mul, t, a, b), ref::encode(f, x * y));
      ASSERT_EQ(binary(BinOp::Div, t, a, b), ref::encode(f, x / y));
      ASSERT_EQ(unary(UnOp::Sqrt, t, a), ref::encode(f, std::sqrt(x)));
      ASSERT_EQ(unary(UnOp::Tanh, t, a), ref::encode(f, std::tanh(x)));
      // fma: exact (x*y is exact in double; x*y + z rounded twice is checked via long double).
      // Checked where x*y + z is exact in long double (two-sum error 0) and in double.
      const long double p = static_cast<long double>(x) * y, e = p + z, bp = e - p;
      const bool exact = (p - (e - bp)) + (z - bp) == 0;
      if (exact && std::isfinite(static_cast<double>(e)) &&
          static_cast<long double>(static_cast<double>(e)) == e)
        ASSERT_EQ(fma(t, a, b, c), ref::encode(f, static_cast<double>(e)))
            << std::hex << a << " " << b << " " << c << " " << static_cast<int>(t);
    }
  }
}

/// Integer ops against a direct 64-bit model, for i8 and i32, signed and unsigned.
TEST(NumericsInt, WrapAndSignedness) {
  std::mt19937 gen(16);
  for (DType t : {DType::I8, DType::I32}) {
    const int w = t == DType::I8 ? 8 : 32;
    const uint64_t mask = (uint64_t{1} << w) - 1;
    for (bool u : {false, true}) {
      auto ext = [&](uint32_t v) -> int64_t {
        const uint64_t m = v & mask;
        return u ? static_cast<int64_t>(m) : static_cast<int64_t>(m << (64 - w)) >> (64 - w);
      };
      for (int i = 0; i < 200000; ++i) {
        uint32_t a = gen(), b = gen();
        if (i % 7 == 0)
          b = gen() % 5 - 2;
        if (i % 11 == 0)
          a = u ? static_cast<uint32_t>(mask) : static_cast<uint32_t>(1) << (w - 1); // INT_MIN
        const int64_t x = ext(a), y = ext(b);
        auto want = [&](int64_t v) {
          return static_cast<uint32_t>(static_cast<uint64_t>(v) & mask);
        };
        ASSERT_EQ(binary(BinOp::Add, t, a, b, u), want(x + y));
        // In 64 bits the product of two unsigned 32-bit values overflows int64_t: multiply modulo
        // 2^64.
        ASSERT_EQ(binary(BinOp::Mul, t, a, b, u),
                  want(static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y))));
        ASSERT_EQ(binary(BinOp::Shl, t, a, b, u), want(x << (b % w)));
        ASSERT_EQ(binary(BinOp::Shr, t, a, b, u), want(x >> (b % w))); // arithmetic iff signed
        ASSERT_EQ(binary(BinOp::Min, t, a, b, u), want(std::min(x, y)));
        ASSERT_EQ(compare(CmpOp::Lt, t, a, b, u), x < y);
        if (y != 0) {
          ASSERT_EQ(binary(BinOp::Div, t, a, b, u), want(x / y)) << x << " / " << y;
          ASSERT_EQ(binary(BinOp::Rem, t, a, b, u), want(x % y));
        }
        ASSERT_EQ(unary(UnOp::Neg, t, a, u), want(-x));
        ASSERT_EQ(unary(UnOp::Not, t, a, u), want(~x));
      }
    }
  }
  EXPECT_EQ(binary(BinOp::Div, DType::I32, 0x80000000u, 0xffffffffu), 0x80000000u); // INT_MIN/-1
  EXPECT_EQ(binary(BinOp::Rem, DType::I32, 0x80000000u, 0xffffffffu), 0u);
  EXPECT_EQ(binary(BinOp::Shr, DType::I32, 0x80000000u, 31, true), 1u);
  EXPECT_EQ(binary(BinOp::Shr, DType::I32, 0x80000000u, 31, false), 0xffffffffu);
  EXPECT_EQ(unary(UnOp::Abs, DType::I8, 0x80), 0x80u);
}

TEST(NumericsCompare, FloatOrderedExceptNe) {
  const uint32_t nan = kF32CanonicalNaN, one = 0x3f800000u;
  for (CmpOp op : {CmpOp::Eq, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge})
    EXPECT_FALSE(compare(op, DType::F32, nan, one));
  EXPECT_TRUE(compare(CmpOp::Ne, DType::F32, nan, nan));
  EXPECT_TRUE(compare(CmpOp::Eq, DType::F32, 0x80000000u, 0));
  EXPECT_FALSE(compare(CmpOp::Lt, DType::F32, 0x80000000u, 0));
  EXPECT_TRUE(compare(CmpOp::Lt, DType::BF16, 0xbf80, 0x3f80));
  std::mt19937 gen(17);
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t a = gen(), b = i % 3 ? gen() : a;
    const float x = as_float(a), y = as_float(b);
    ASSERT_EQ(compare(CmpOp::Le, DType::F32, a, b), x <= y);
    ASSERT_EQ(compare(CmpOp::Ne, DType::F32, a, b), x != y);
  }
}

TEST(NumericsConvert, DirectedRounding) {
  std::mt19937 gen(18);
  const ref::Rounding modes[] = {ref::Rounding::NearestEven, ref::Rounding::TowardZero,
                                 ref::Rounding::Down, ref::Rounding::Up};
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t x = gen();
    const double v = ref::decode(ref::FloatFormat::F32, x);
    for (int m = 0; m < 4; ++m) {
      const Round r = static_cast<Round>(m);
      ASSERT_EQ(convert(DType::F32, DType::F16, x, r),
                ref::encode(ref::FloatFormat::F16, v, modes[m]))
          << std::hex << x << " mode " << m;
      ASSERT_EQ(convert(DType::F32, DType::BF16, x, r),
                ref::encode(ref::FloatFormat::BF16, v, modes[m]));
      if (std::isnan(v))
        continue;
      double iv = m == 0   ? std::nearbyint(v)
                  : m == 1 ? std::trunc(v)
                  : m == 2 ? std::floor(v)
                           : std::ceil(v);
      iv = std::max(-2147483648.0, std::min(2147483647.0, iv));
      ASSERT_EQ(static_cast<int32_t>(convert(DType::F32, DType::I32, x, r)),
                static_cast<int32_t>(iv))
          << std::hex << x << " mode " << m;
    }
  }
  EXPECT_EQ(convert(DType::F32, DType::I32, as_bits(-1.f), Round::TowardZero, true), 0u);
  EXPECT_EQ(convert(DType::F32, DType::I32, as_bits(4e9f), Round::TowardZero, true), 4000000000u);
  EXPECT_EQ(convert(DType::I32, DType::F32, 0xffffffffu, Round::NearestEven, true),
            as_bits(4294967296.f));
  EXPECT_EQ(convert(DType::I32, DType::I8, 300, Round::NearestEven), 127u); // saturates
  EXPECT_EQ(int_resize(DType::I32, DType::I8, 300, false), 44u);            // wraps
  EXPECT_EQ(int_resize(DType::I8, DType::I32, 0xff, false), 0xffffffffu);
  EXPECT_EQ(int_resize(DType::I8, DType::I32, 0xff, true), 0xffu);
}

} // namespace
} // namespace tl::npu::num
