// matmul_tile against gemm_reference, bit for bit: every pair of edge values over short chains,
// random partial tiles, and a hostile host rounding environment, per input dtype and per path.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/matrix_tile.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cfenv>
#include <immintrin.h>
#endif

namespace tl::npu::num {
namespace {

constexpr DType kFloatModes[] = {DType::BF16, DType::F16, DType::F32};
constexpr TilePath kPaths[] = {TilePath::Vector, TilePath::Scalar, TilePath::Integer};

const char *path_name(TilePath p) {
  return p == TilePath::Vector ? "vector" : (p == TilePath::Scalar ? "scalar" : "integer");
}

/// Edge values of each input dtype, as bit patterns: signed zeros, the smallest and largest
/// subnormals, the smallest normal, 1 and its neighbours, the largest finite value (whose square
/// overflows f32 in bf16 and f32), infinities, quiet and signalling NaNs with payloads and both
/// signs, and values whose products land in f32's subnormal range or below it.
std::vector<uint32_t> edges(DType t) {
  switch (t) {
  case DType::BF16:
    return {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x8080, 0x3f80, 0xbf80,
            0x3f81, 0x3f7f, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81,
            0x7fa5, 0xffff, 0x1f80, 0x2000, 0x5f80, 0x4000, 0xc040, 0x0c01};
  case DType::F16:
    return {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x8400, 0x3c00,
            0xbc00, 0x3c01, 0x3bff, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00,
            0xfe00, 0x7c01, 0x7d55, 0xffff, 0x4000, 0xc200, 0x1400, 0x5bff};
  case DType::F32:
    return {0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x80800000,
            0x3f800000, 0xbf800000, 0x3f800001, 0x3f7fffff, 0x7f7fffff, 0xff7fffff, 0x7f800000,
            0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0x7fa5a5a5, 0xffffffff, 0x1f800000,
            0x20000000, 0x5f800000, 0x33800000, 0x4b800001, 0xcb000000};
  default: // i8 (with accumulators near the i32 limits, so the chains wrap)
    return {0x00, 0x01, 0xff, 0x7f, 0x80, 0x81, 0x40, 0xc0};
  }
}

std::vector<uint8_t> to_bytes(DType t, const std::vector<uint32_t> &bits) {
  std::vector<uint8_t> out(bits.size() * dtype_size(t));
  for (size_t i = 0; i < bits.size(); ++i)
    store_bits(t, out.data(), i, bits[i]);
  return out;
}

/// Runs gemm_reference and matmul_tile (every path) on the same operands and C, asserting equal
/// bits. A: M x K (stride lda), B: K x N (stride ldb), C: M x ldc initial values.
void expect_same(DType t, int M, int N, int K, const std::vector<uint8_t> &A, size_t lda,
                 const std::vector<uint8_t> &B, size_t ldb, const std::vector<uint32_t> &C0,
                 size_t ldc, bool accumulate, const std::string &what) {
  std::vector<uint32_t> want = C0;
  gemm_reference(t, M, N, K, A.data(), lda, B.data(), ldb, want.data(), ldc, accumulate);
  const TileWeights w(t, K, N, B.data(), ldb);
  for (TilePath p : kPaths) {
    std::vector<uint32_t> got = C0;
    matmul_tile(w, M, A.data(), lda, reinterpret_cast<uint8_t *>(got.data()), ldc, accumulate, p);
    for (size_t e = 0; e < got.size(); ++e) // padding columns too: they must stay untouched
      ASSERT_EQ(got[e], want[e]) << what << " " << dtype_name(t) << " path " << path_name(p)
                                 << " M " << M << " N " << N << " K " << K << " element " << e
                                 << std::hex << " (" << e / ldc << ", " << e % ldc << ")";
  }
}

// Every ordered pair of edge values as a single MAC from -0 (the product passes through: catches a
// product rounded or overflowed before the add, e.g. a path that multiplies and then adds, or a
// flushed subnormal), and as K = 2 chains (a0 * w0 + a1 * w1) over all four-tuples, from -0 and
// from every edge value in C: catches inf - inf or NaN not canonical (0xffc00000 and payload NaNs
// differ from 0x7fc00000), a wrong exact-zero sign (x + -x must be +0, -0 + -0 = -0), double
// rounding, and an i32 chain that does not wrap.
TEST(MatrixTile, EdgePairs) {
  for (DType t : {DType::BF16, DType::F16, DType::F32, DType::I8}) {
    const std::vector<uint32_t> e = edges(t);
    const int n = static_cast<int>(e.size());
    const std::vector<uint8_t> col = to_bytes(t, e); // n x 1 and 1 x n
    std::vector<uint32_t> c0(static_cast<size_t>(n) * n, 0);
    expect_same(t, n, n, 1, col, 1, col, n, c0, n, false, "pairs");
    // K = 2: A row r = (e[r / n], e[r % n]); W column c = (e[c / n], e[c % n]).
    std::vector<uint32_t> a2, w2(2 * static_cast<size_t>(n) * n);
    for (int r = 0; r < n * n; ++r) {
      a2.push_back(e[r / n]);
      a2.push_back(e[r % n]);
      w2[r] = e[r / n];
      w2[static_cast<size_t>(n) * n + r] = e[r % n];
    }
    const std::vector<uint8_t> A = to_bytes(t, a2), W = to_bytes(t, w2);
    const size_t nn = static_cast<size_t>(n) * n;
    const std::vector<uint32_t> starts =
        t == DType::I8 ? std::vector<uint32_t>{0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0x7fffc000}
                       : edges(DType::F32);
    std::vector<uint32_t> c(nn * nn);
    for (size_t i = 0; i < c.size(); ++i) // accumulators: f32 edge values, i32 near the limits
      c[i] = starts[i % starts.size()];
    expect_same(t, n * n, n * n, 2, A, 2, W, n * n, c, n * n, false, "quads");
    expect_same(t, n * n, n * n, 2, A, 2, W, n * n, c, n * n, true, "quads accumulating");
  }
}

// Every bf16 and f16 pattern through A (8192 rows of 8, times the 8 x 8 identity: each result
// is its A element, or NaN for inf * 0) and through the weights (1 times a row of all of them):
// catches a wrong widening (a subnormal flushed or misplaced, an exponent rebiased wrongly, a NaN
// decoded as a number) in the vectorized decoders and in their scalar tails.
TEST(MatrixTile, EveryHalfPatternWidens) {
  for (DType t : {DType::BF16, DType::F16}) {
    const uint32_t one_bits = t == DType::BF16 ? 0x3f80u : 0x3c00u;
    std::vector<uint32_t> all(0x10000), identity(64, 0);
    for (uint32_t x = 0; x < 0x10000; ++x)
      all[x] = x;
    for (int k = 0; k < 8; ++k)
      identity[k * 8 + k] = one_bits;
    const std::vector<uint8_t> every = to_bytes(t, all), one = to_bytes(t, {one_bits});
    std::vector<uint32_t> c(0x10000, 0);
    expect_same(t, 0x2000, 8, 8, every, 8, to_bytes(t, identity), 8, c, 8, false, "A widening");
    expect_same(t, 1, 0x10000, 1, one, 1, every, 0x10000, c, 0x10000, false, "weight widening");
  }
}

/// A random element: mostly moderate values (long chains round and cancel), some uniform bit
/// patterns (overflow, inf, NaN, subnormals) and some edge values.
uint32_t random_element(DType t, std::mt19937_64 &rng) {
  const uint64_t r = rng();
  const std::vector<uint32_t> e = edges(t);
  switch (r % 10) {
  case 0:
    return e[(r >> 8) % e.size()];
  case 1:
  case 2:
    return static_cast<uint32_t>(r >> 16) &
           (t == DType::F32 ? ~0u : (t == DType::I8 ? 0xffu : 0xffffu));
  default:
    break;
  }
  const uint32_t sign = (r >> 4) & 1, jitter = (r >> 5) % 12, frac = static_cast<uint32_t>(r >> 16);
  switch (t) {
  case DType::BF16:
    return sign << 15 | (121 + jitter) << 7 | (frac & 0x7f);
  case DType::F16:
    return sign << 15 | (9 + jitter) << 10 | (frac & 0x3ff);
  case DType::F32:
    return sign << 31 | (121 + jitter) << 23 | (frac & 0x7fffff);
  default:
    return frac & 0xff;
  }
}

// Random tiles of every shape class (partial column blocks, partial row blocks, K from 1 to 300,
// padded strides, overwrite and accumulate): catches a wrong mask or tail (a column beyond N
// written, a row skipped), a k order other than ascending (f32 sums are not associative, so a
// reordered chain differs in the last bits), and a wrong accumulator start.
TEST(MatrixTile, RandomTiles) {
  std::mt19937_64 rng(17);
  for (DType t : {DType::BF16, DType::F16, DType::F32, DType::I8}) {
    for (int rep = 0; rep < 60; ++rep) {
      const int M = 1 + static_cast<int>(rng() % 20), N = 1 + static_cast<int>(rng() % 40);
      const int K = 1 + static_cast<int>(rng() % 300);
      const size_t lda = K + rng() % 3, ldb = N + rng() % 3, ldc = N + rng() % 3;
      std::vector<uint32_t> a(M * lda), b(K * ldb), c(M * ldc);
      for (auto &x : a)
        x = random_element(t, rng);
      for (auto &x : b)
        x = random_element(t, rng);
      for (auto &x : c)
        x = t == DType::I8 ? static_cast<uint32_t>(rng()) : random_element(DType::F32, rng);
      expect_same(t, M, N, K, to_bytes(t, a), lda, to_bytes(t, b), ldb, c, ldc, rep % 2 == 1,
                  "random");
    }
  }
}

// The matrix unit's own shape: a full 128 x 128 x 128 tile per float mode.
TEST(MatrixTile, FullArrayTile) {
  std::mt19937_64 rng(5);
  for (DType t : kFloatModes) {
    std::vector<uint32_t> a(128 * 128), b(128 * 128), c(128 * 128);
    for (auto &x : a)
      x = random_element(t, rng);
    for (auto &x : b)
      x = random_element(t, rng);
    for (auto &x : c)
      x = random_element(DType::F32, rng);
    expect_same(t, 128, 128, 128, to_bytes(t, a), 128, to_bytes(t, b), 128, c, 128, true, "full");
  }
}

#if defined(__x86_64__)
/// Magnitudes near 2^-63 (bf16, f32: products around f32's smallest normal, half of them
/// subnormal) or f16 subnormals (their products are normal in f32, but the accumulators below
/// are subnormal): what flush-to-zero would change.
uint32_t tiny(DType t, std::mt19937_64 &rng) {
  const uint64_t r = rng();
  const uint32_t sign = r & 1, e = 60 + static_cast<uint32_t>(r >> 1) % 8;
  const uint32_t frac = static_cast<uint32_t>(r >> 8);
  switch (t) {
  case DType::BF16:
    return sign << 15 | e << 7 | (frac & 0x7f);
  case DType::F16:
    return sign << 15 | (frac & 0x3ff);
  default:
    return sign << 31 | e << 23 | (frac & 0x7fffff);
  }
}

// A host that flushes subnormals (FTZ, DAZ) and rounds toward zero, as a -ffast-math library in
// the same process might leave it: the native path must set its own rounding and restore the
// caller's. Fails if the path ran in the host's mode (flushed subnormal products and truncated
// sums differ from the reference) or left MXCSR changed.
TEST(MatrixTile, HostRoundingModeIgnoredAndRestored) {
  std::mt19937_64 rng(9);
  for (DType t : kFloatModes) {
    const int M = 9, N = 21, K = 40;
    std::vector<uint32_t> a(M * K), b(K * N), c(M * N);
    for (auto &x : a)
      x = tiny(t, rng);
    for (auto &x : b)
      x = tiny(t, rng);
    for (auto &x : c)
      x = (random_element(DType::F32, rng) & 0x807fffff) | 0x00000001; // subnormal f32
    std::vector<uint32_t> want = c;
    const std::vector<uint8_t> A = to_bytes(t, a), B = to_bytes(t, b);
    gemm_reference(t, M, N, K, A.data(), K, B.data(), N, want.data(), N, true);
    for (TilePath path : kPaths) {
      std::vector<uint32_t> got = c;
      const unsigned saved = _mm_getcsr();
      const unsigned hostile = (saved | 0x8040u /* FTZ, DAZ */ | 0x6000u /* toward zero */);
      _mm_setcsr(hostile); // the weights are decoded in it too (mx.pre)
      const TileWeights w(t, K, N, B.data(), N);
      matmul_tile(w, M, A.data(), K, reinterpret_cast<uint8_t *>(got.data()), N, true, path);
      const unsigned after = _mm_getcsr();
      _mm_setcsr(saved);
      EXPECT_EQ(after, hostile) << "MXCSR not restored";
      for (size_t i = 0; i < c.size(); ++i)
        ASSERT_EQ(got[i], want[i])
            << dtype_name(t) << " path " << path_name(path) << " element " << i;
    }
  }
}

TEST(MatrixTile, NativePathOnX86) {
  EXPECT_NE(std::string(native_tile_path()), "integer");
  std::printf("native tile path: %s\n", native_tile_path());
}
#endif

} // namespace
} // namespace tl::npu::num
