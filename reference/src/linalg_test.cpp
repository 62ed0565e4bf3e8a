// Tests for the gemm and attention fp64 references.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace tl::ref {
namespace {

/// Small integers make every product and sum exact, so results compare with ==.
std::vector<double> random_ints(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-9, 9);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

std::vector<double> random_reals(size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

TEST(GemmTest, HandComputed) {
  const double A[] = {1, 2, 3, 4}, B[] = {5, 6, 7, 8};
  double C[] = {1, 1, 1, 1};
  gemm(false, false, 2, 2, 2, 1.0, A, 2, B, 2, 0.0, C, 2);
  EXPECT_EQ((std::vector<double>(C, C + 4)), (std::vector<double>{19, 22, 43, 50}));
  gemm(false, false, 2, 2, 2, 2.0, A, 2, B, 2, -1.0, C, 2); // 2*AB - C = AB
  EXPECT_EQ((std::vector<double>(C, C + 4)), (std::vector<double>{19, 22, 43, 50}));
}

TEST(GemmTest, TransposesAndLeadingDimsMatchNaive) {
  const int64_t M = 5, N = 7, K = 6, pad = 3;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
      std::vector<double> A = random_ints((ta ? K : M) * lda, 1);
      std::vector<double> B = random_ints((tb ? N : K) * ldb, 2);
      std::vector<double> C = random_ints(M * ldc, 3), C0 = C;
      gemm(ta, tb, M, N, K, 2.0, A.data(), lda, B.data(), ldb, -3.0, C.data(), ldc);
      for (int64_t i = 0; i < M; ++i) {
        for (int64_t j = 0; j < ldc; ++j) {
          if (j >= N) { // padding is untouched
            EXPECT_EQ(C[i * ldc + j], C0[i * ldc + j]);
            continue;
          }
          double acc = 0;
          for (int64_t p = 0; p < K; ++p)
            acc += (ta ? A[p * lda + i] : A[i * lda + p]) * (tb ? B[j * ldb + p] : B[p * ldb + j]);
          EXPECT_EQ(C[i * ldc + j], 2.0 * acc - 3.0 * C0[i * ldc + j]) << ta << tb << i << j;
        }
      }
    }
  }
}

TEST(GemmTest, BetaZeroDoesNotReadC) {
  const double A[] = {1, 2}, B[] = {3, 4};
  double C[] = {std::numeric_limits<double>::quiet_NaN()};
  gemm(false, false, 1, 1, 2, 1.0, A, 2, B, 1, 0.0, C, 1);
  EXPECT_EQ(C[0], 11.0);
}

TEST(GemmTest, EmptyKScalesC) {
  double C[] = {2.0, 4.0};
  gemm(false, false, 1, 2, 0, 1.0, nullptr, 0, nullptr, 2, 0.5, C, 2);
  EXPECT_EQ(C[0], 1.0);
  EXPECT_EQ(C[1], 2.0);
}

TEST(GemmTest, DotProductsAreAccurate) {
  // Naive fp64 summation returns 0 here; the exact answer is 2 + 1e-16 * 1e-16 rounded.
  const double A[] = {1e16, 1.0, -1e16, 1.0}, B[] = {1.0, 1.0, 1.0, 1.0};
  double C[1];
  gemm(false, false, 1, 1, 4, 1.0, A, 4, B, 1, 0.0, C, 1);
  EXPECT_EQ(C[0], 2.0);
  // An error-free product matters too: (1 + 2^-30)^2 - 1 - 2^-29 = 2^-60 exactly.
  const double x[] = {1.0 + 0x1p-30, -1.0, -0x1p-29}, y[] = {1.0 + 0x1p-30, 1.0, 1.0};
  gemm(false, true, 1, 1, 3, 1.0, x, 3, y, 3, 0.0, C, 1);
  EXPECT_EQ(C[0], 0x1p-60);
}

/// attention as the composition softmax(scale * Q K^T + mask) V built from gemm and softmax_rows.
std::vector<double> composed_attention(int64_t bh, int64_t sq, int64_t sk, int64_t d,
                                       const std::vector<double> &q, const std::vector<double> &k,
                                       const std::vector<double> &v, double scale, bool causal) {
  std::vector<double> out(bh * sq * d), s(sq * sk);
  for (int64_t b = 0; b < bh; ++b) {
    gemm(false, true, sq, sk, d, scale, q.data() + b * sq * d, d, k.data() + b * sk * d, d, 0.0,
         s.data(), sk);
    for (int64_t i = 0; i < sq && causal; ++i)
      for (int64_t j = i + 1; j < sk; ++j)
        s[i * sk + j] = -std::numeric_limits<double>::infinity();
    softmax_rows(sq, sk, s.data(), s.data());
    gemm(false, false, sq, d, sk, 1.0, s.data(), sk, v.data() + b * sk * d, d, 0.0,
         out.data() + b * sq * d, d);
  }
  return out;
}

TEST(AttentionTest, MatchesGemmSoftmaxComposition) {
  const int64_t bh = 3, d = 8;
  for (bool causal : {false, true}) {
    for (auto [sq, sk] : {std::pair<int64_t, int64_t>{5, 5}, {4, 9}, {9, 4}}) {
      std::vector<double> q = random_reals(bh * sq * d, 1), k = random_reals(bh * sk * d, 2),
                          v = random_reals(bh * sk * d, 3), out(bh * sq * d);
      const double scale = 1.0 / std::sqrt(static_cast<double>(d));
      attention(bh, sq, sk, d, q.data(), k.data(), v.data(), scale, causal, out.data());
      std::vector<double> want = composed_attention(bh, sq, sk, d, q, k, v, scale, causal);
      for (size_t i = 0; i < out.size(); ++i)
        ASSERT_NEAR(out[i], want[i], 1e-14) << causal << " " << sq << "x" << sk << " @" << i;
    }
  }
}

TEST(AttentionTest, HandComputedCases) {
  // Equal keys: uniform weights, output is the mean of V's rows.
  const double q[] = {1.0, 2.0, -1.0, 0.5}, k[] = {1.0, 1.0, 1.0, 1.0}, v[] = {2.0, 4.0, 6.0, 8.0};
  double out[4];
  attention(1, 2, 2, 2, q, k, v, 0.7, false, out);
  EXPECT_NEAR(out[0], 4.0, 1e-15);
  EXPECT_NEAR(out[1], 6.0, 1e-15);
  EXPECT_NEAR(out[2], 4.0, 1e-15);
  // Causal: query 0 sees key 0 only, so its output is V's first row.
  attention(1, 2, 2, 2, q, k, v, 0.7, true, out);
  EXPECT_EQ(out[0], 2.0);
  EXPECT_EQ(out[1], 4.0);
  EXPECT_NEAR(out[2], 4.0, 1e-15);
  // Two keys with scores 0 and ln 3 (scale 1): weights 1/4 and 3/4.
  const double q1[] = {std::log(3.0)}, k1[] = {0.0, 1.0}, v1[] = {4.0, 8.0};
  attention(1, 1, 2, 1, q1, k1, v1, 1.0, false, out);
  EXPECT_NEAR(out[0], 7.0, 1e-14);
}

TEST(AttentionTest, CausalIgnoresMaskedValues) {
  const double inf = std::numeric_limits<double>::infinity();
  const double q[] = {1.0, 1.0}, k[] = {1.0, 1.0}, v[] = {3.0, inf};
  double out[2];
  attention(1, 2, 2, 1, q, k, v, 1.0, true, out);
  EXPECT_EQ(out[0], 3.0); // the masked inf in V must not leak in as 0 * inf
  EXPECT_EQ(out[1], inf);
}

} // namespace
} // namespace tl::ref
