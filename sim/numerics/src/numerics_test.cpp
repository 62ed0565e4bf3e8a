// Tests of the TNPU numerics: exhaustive bf16/f16 conversions, bf16 products against the host's
// fused multiply-add, f32 arithmetic, integer conversions and the exp algorithm's error bound.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/numerics.h"

#include "tl/reference/numerics.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdlib>
#include <random>

namespace tl::npu::num {
namespace {

namespace ref = tl::numerics;

float as_float(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t as_bits(float f) { return std::bit_cast<uint32_t>(f); }
bool exhaustive() { return std::getenv("TL_NPU_EXHAUSTIVE") != nullptr; }

/// The host result with NaN canonicalized, as the model promises.
uint32_t canon(float f) { return std::isnan(f) ? kF32CanonicalNaN : as_bits(f); }

TEST(NumericsConversions, Bf16ToF32Exhaustive) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    uint32_t got = bf16_to_f32(static_cast<uint16_t>(b));
    double want = ref::decode(ref::FloatFormat::BF16, b);
    if (std::isnan(want))
      ASSERT_EQ(got, kF32CanonicalNaN) << std::hex << b;
    else
      ASSERT_EQ(got, b << 16) << std::hex << b; // widening is a shift, NaN aside
  }
}

TEST(NumericsConversions, F16ToF32Exhaustive) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    double want = ref::decode(ref::FloatFormat::F16, b);
    uint32_t got = f16_to_f32(static_cast<uint16_t>(b));
    ASSERT_EQ(got, canon(static_cast<float>(want))) << std::hex << b;
  }
}

/// Every bf16 upper half with a set of low halves covering ties, near-ties and sticky bits; with
/// TL_NPU_EXHAUSTIVE set, every f32 pattern.
TEST(NumericsConversions, F32ToBf16AndF16) {
  static const uint32_t kLows[] = {0,      1,      0x7fff, 0x8000, 0x8001, 0xffff, 0x4000,
                                   0xc000, 0x0100, 0x7ffe, 0x8002, 0x1234, 0xfedc};
  auto check = [](uint32_t x) {
    double v = ref::decode(ref::FloatFormat::F32, x);
    uint16_t want_bf = static_cast<uint16_t>(ref::encode(ref::FloatFormat::BF16, v));
    uint16_t want_h = static_cast<uint16_t>(ref::encode(ref::FloatFormat::F16, v));
    ASSERT_EQ(f32_to_bf16(x), want_bf) << std::hex << x;
    ASSERT_EQ(f32_to_f16(x), want_h) << std::hex << x;
  };
  if (exhaustive()) {
    for (uint64_t x = 0; x <= 0xffffffffu; ++x)
      check(static_cast<uint32_t>(x));
    return;
  }
  for (uint32_t hi = 0; hi < 0x10000; ++hi)
    for (uint32_t lo : kLows)
      check(hi << 16 | lo);
}

/// bf16 x bf16 + f32 against the host's fmaf (IEEE fused, one rounding). Every bf16 `a` against
/// 1024 `b` patterns (all mantissas of 8 exponents, both signs), with accumulators from a
/// generator; with TL_NPU_EXHAUSTIVE set, every (a, b) pair.
TEST(NumericsMac, Bf16ProductsAgainstHostFma) {
  std::mt19937 gen(1);
  std::vector<uint32_t> bs;
  if (exhaustive()) {
    for (uint32_t b = 0; b < 0x10000; ++b)
      bs.push_back(b);
  } else {
    static const uint32_t kExps[] = {0, 1, 60, 126, 127, 128, 200, 255};
    for (uint32_t s = 0; s < 2; ++s)
      for (uint32_t e : kExps)
        for (uint32_t m = 0; m < 128; ++m)
          bs.push_back(s << 15 | e << 7 | m);
  }
  for (uint32_t a = 0; a < 0x10000; ++a) {
    float fa = as_float(a << 16);
    for (uint32_t b : bs) {
      float fb = as_float(b << 16);
      uint32_t acc = (gen() & 3) == 0 ? (gen() & 0x80000000u) : gen();
      uint32_t got = mac_f32(DType::BF16, a, b, acc);
      uint32_t want = canon(std::fma(fa, fb, as_float(acc)));
      if (got != want)
        FAIL() << std::hex << "a=" << a << " b=" << b << " acc=" << acc << " got=" << got
               << " want=" << want;
    }
  }
}

TEST(NumericsMac, F16AndF32AgainstHostFma) {
  std::mt19937 gen(2);
  for (int i = 0; i < 2000000; ++i) {
    uint32_t a = gen(), b = gen(), c = gen();
    if (i % 4 == 1)
      b = (a ^ 0x80000000u) + (gen() & 7); // near-cancellation
    ASSERT_EQ(f32_fma(a, b, c), canon(std::fma(as_float(a), as_float(b), as_float(c))))
        << std::hex << a << " " << b << " " << c;
    uint16_t ha = gen() & 0xffff, hb = gen() & 0xffff;
    float fa = as_float(f16_to_f32(ha)), fb = as_float(f16_to_f32(hb));
    ASSERT_EQ(mac_f32(DType::F16, ha, hb, c), canon(std::fma(fa, fb, as_float(c))));
  }
}

TEST(NumericsArith, AddSubMulMinMaxAgainstHost) {
  std::mt19937 gen(3);
  for (int i = 0; i < 1000000; ++i) {
    uint32_t a = gen(), b = (i % 3 == 0) ? (a ^ 0x80000000u) + (gen() & 3) : gen();
    float fa = as_float(a), fb = as_float(b);
    ASSERT_EQ(f32_add(a, b), canon(fa + fb)) << std::hex << a << " " << b;
    ASSERT_EQ(f32_sub(a, b), canon(fa - fb));
    ASSERT_EQ(f32_mul(a, b), canon(fa * fb));
  }
  EXPECT_EQ(f32_add(0x80000000u, 0x80000000u), 0x80000000u); // -0 + -0
  EXPECT_EQ(f32_add(0x3f800000u, 0xbf800000u), 0u);          // 1 - 1 = +0
  EXPECT_EQ(f32_mul(0x80000000u, 0x3f800000u), 0x80000000u); // -0 * 1
  EXPECT_EQ(f32_max(0x80000000u, 0u), 0u);
  EXPECT_EQ(f32_min(0x80000000u, 0u), 0x80000000u);
  EXPECT_EQ(f32_max(0x7f800001u, 0u), kF32CanonicalNaN);
  EXPECT_EQ(f32_max(0xbf800000u, 0x3f000000u), 0x3f000000u);
  EXPECT_EQ(f32_fma(0x7f800000u, 0u, 0u), kF32CanonicalNaN);                   // inf * 0
  EXPECT_EQ(f32_fma(0x7f800000u, 0x3f800000u, 0xff800000u), kF32CanonicalNaN); // inf - inf
}

TEST(NumericsConversions, Integers) {
  EXPECT_EQ(f32_to_i8(as_bits(2.5f)), 2);
  EXPECT_EQ(f32_to_i8(as_bits(3.5f)), 4);
  EXPECT_EQ(f32_to_i8(as_bits(-2.5f)), -2);
  EXPECT_EQ(f32_to_i8(as_bits(1000.f)), 127);
  EXPECT_EQ(f32_to_i8(as_bits(-1e30f)), -128);
  EXPECT_EQ(f32_to_i8(kF32CanonicalNaN), 0);
  EXPECT_EQ(f32_to_i8(0xff800000u), -128);
  EXPECT_EQ(f32_to_i32(as_bits(3e9f)), INT32_MAX);
  EXPECT_EQ(f32_to_i32(as_bits(-2147483648.f)), INT32_MIN);
  EXPECT_EQ(f32_to_i32(as_bits(0.49999997f)), 0);
  std::mt19937 gen(4);
  for (int i = 0; i < 1000000; ++i) {
    int32_t v = static_cast<int32_t>(gen());
    if (i % 2)
      v >>= gen() % 31;
    ASSERT_EQ(i32_to_f32(v), as_bits(static_cast<float>(v))) << v;
  }
  EXPECT_EQ(mac_i8(-128, -128, INT32_MAX), static_cast<int32_t>(0x80003fffu)); // wraps
}

TEST(NumericsExp, WithinTwoUlpAndSpecialCases) {
  int64_t worst = 0;
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-104.f, 89.f);
  for (int i = 0; i < 400000; ++i) {
    float x = i < 200000 ? dist(gen) : -20.f + 40.f * static_cast<float>(i - 200000) / 200000.f;
    double want = std::exp(static_cast<double>(x));
    int64_t d = ref::ulp_distance(ref::FloatFormat::F32, as_float(f32_exp(as_bits(x))), want);
    worst = std::max(worst, d);
  }
  EXPECT_LE(worst, 2);
  EXPECT_EQ(f32_exp(0u), 0x3f800000u);
  EXPECT_EQ(f32_exp(0x80000000u), 0x3f800000u);
  EXPECT_EQ(f32_exp(0x7f800000u), 0x7f800000u); // +inf
  EXPECT_EQ(f32_exp(0xff800000u), 0u);          // -inf
  EXPECT_EQ(f32_exp(as_bits(100.f)), 0x7f800000u);
  EXPECT_EQ(f32_exp(as_bits(-200.f)), 0u);
  EXPECT_EQ(f32_exp(0x7fc00001u), kF32CanonicalNaN);
}

TEST(NumericsGemm, ReferenceOrderIsSequentialK) {
  // 1 + 2^-30 - 1 in f32 depends on the order: sequential fused steps keep 2^-30 only if the
  // large terms cancel first.
  uint16_t A[3] = {0x3f80, 0x3f80, 0x3080}; // bf16: 1, 1, 2^-30
  uint16_t B[3] = {0x3f80, 0xbf80, 0x3f80}; // 1, -1, 1
  uint32_t C = 0;
  gemm_reference(DType::BF16, 1, 1, 3, reinterpret_cast<uint8_t *>(A), 3,
                 reinterpret_cast<uint8_t *>(B), 1, &C, 1, false);
  EXPECT_EQ(C, 0x30800000u);
}

} // namespace
} // namespace tl::npu::num
