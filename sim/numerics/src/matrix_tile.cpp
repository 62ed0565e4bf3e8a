// The matrix unit's whole tile (matrix_tile.h): the integer model, libm's fma, and an AVX2 + FMA
// kernel, chosen at run time; all give gemm_reference's bits (matrix_tile.h says why).
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/matrix_tile.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define TL_NPU_X86_64 1
#include <immintrin.h>
#endif

namespace tl::npu::num {
namespace {

// The native kernel's block: 6 rows x 16 columns keep 12 accumulators, 2 weight vectors and a
// broadcast in the 16 vector registers of AVX2. Weights are zero-padded to whole column blocks so
// the k loop never masks.
constexpr int kBlockCols = 16;
constexpr int kBlockRows = 6;

/// f16 -> f32 bits of the integer model, as a table (built once; the tile decodes every element).
const uint32_t *f16_widen_table() {
  static const std::vector<uint32_t> table = [] {
    std::vector<uint32_t> t(0x10000);
    for (uint32_t h = 0; h < 0x10000; ++h)
      t[h] = f16_to_f32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}

/// Element i of a float-mode buffer as its exact f32 bits. bf16 widens by a shift: the integer
/// model's bf16_to_f32 except that a NaN keeps its payload, which no result can show
/// (matrix_tile.h).
uint32_t widen_bits(DType in, const uint8_t *base, size_t i) {
  const uint32_t bits = load_bits(in, base, i);
  switch (in) {
  case DType::BF16:
    return bits << 16;
  case DType::F16:
    return f16_widen_table()[bits];
  default:
    return bits;
  }
}

float as_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint32_t as_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

/// A rows widened to f32, K per row (the native paths' operand; reused across calls).
const float *widen_rows(DType in, int M, int K, const uint8_t *A, size_t lda) {
  thread_local std::vector<float> rows;
  rows.resize(static_cast<size_t>(M) * static_cast<size_t>(K));
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k)
      rows[static_cast<size_t>(i) * K + k] = as_float(widen_bits(in, A, i * lda + k));
  return rows.data();
}

void integer_tile(const TileWeights &w, const std::vector<float> &wf,
                  const std::vector<int32_t> &wi, int ld, int M, const uint8_t *A, size_t lda,
                  uint8_t *C, size_t ldc, bool accumulate) {
  const DType in = w.dtype();
  const int K = w.k(), N = w.n();
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      const size_t at = i * ldc + j;
      if (in == DType::I8) {
        int32_t acc = accumulate ? static_cast<int32_t>(load_bits(DType::I32, C, at)) : 0;
        for (int k = 0; k < K; ++k)
          acc = mac_i8(static_cast<int8_t>(load_bits(in, A, i * lda + k)),
                       static_cast<int8_t>(wi[static_cast<size_t>(k) * ld + j]), acc);
        store_bits(DType::I32, C, at, static_cast<uint32_t>(acc));
        continue;
      }
      // f32 MACs on the exactly widened inputs: mac_f32 of the input dtype, bit for bit.
      uint32_t acc = accumulate ? load_bits(DType::F32, C, at) : kF32NegZero;
      for (int k = 0; k < K; ++k)
        acc = mac_f32(DType::F32, widen_bits(in, A, i * lda + k),
                      as_bits(wf[static_cast<size_t>(k) * ld + j]), acc);
      store_bits(DType::F32, C, at, acc);
    }
  }
}

// i8: 32-bit unsigned MACs wrap exactly as mac_i8 (and in any order); rows of ld accumulators
// vectorize. The body is compiled twice, for AVX2 and for the baseline ISA.
inline __attribute__((always_inline)) void i8_tile_body(const int32_t *w, int ld, int K, int N,
                                                        int M, const uint8_t *A, size_t lda,
                                                        uint8_t *C, size_t ldc, bool accumulate,
                                                        uint32_t *acc) {
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < ld; ++j)
      acc[j] = accumulate && j < N ? load_bits(DType::I32, C, i * ldc + j) : 0;
    for (int k = 0; k < K; ++k) {
      const uint32_t a = static_cast<uint32_t>(static_cast<int8_t>(A[i * lda + k]));
      const int32_t *wk = w + static_cast<size_t>(k) * ld;
      for (int j = 0; j < ld; ++j)
        acc[j] += a * static_cast<uint32_t>(wk[j]);
    }
    std::memcpy(C + i * ldc * 4, acc, static_cast<size_t>(N) * 4);
  }
}

void i8_tile_baseline(const int32_t *w, int ld, int K, int N, int M, const uint8_t *A, size_t lda,
                      uint8_t *C, size_t ldc, bool accumulate, uint32_t *acc) {
  i8_tile_body(w, ld, K, N, M, A, lda, C, ldc, accumulate, acc);
}

#ifdef TL_NPU_X86_64
__attribute__((target("avx2"))) void i8_tile_avx2(const int32_t *w, int ld, int K, int N, int M,
                                                  const uint8_t *A, size_t lda, uint8_t *C,
                                                  size_t ldc, bool accumulate, uint32_t *acc) {
  i8_tile_body(w, ld, K, N, M, A, lda, C, ldc, accumulate, acc);
}

bool has_avx2_fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

/// Round to nearest even, no flush-to-zero or denormals-are-zero, exceptions masked, for the
/// native float path's duration; the caller's MXCSR (flags included) comes back afterwards, as
/// the integer model raises no flags.
class SpecRounding {
public:
  SpecRounding() : saved_(_mm_getcsr()) { _mm_setcsr(0x1f80u); }
  ~SpecRounding() { _mm_setcsr(saved_); }
  SpecRounding(const SpecRounding &) = delete;
  SpecRounding &operator=(const SpecRounding &) = delete;

private:
  unsigned saved_;
};

/// R rows x 16 columns of C: one fused chain per element over k ascending, from C or -0; NaN
/// results canonical. Masks m0 / m1 select the valid columns of a partial block for C's loads and
/// stores (the weights are zero-padded).
template <int R>
__attribute__((target("avx2,fma"), always_inline)) inline void
float_block(const float *a, int K, const float *w, int ld, uint8_t *c, size_t ldc_bytes,
            bool accumulate, __m256i m0, __m256i m1) {
  __m256 acc[R][2];
  const __m256 neg_zero = _mm256_set1_ps(-0.0f);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    const float *cr = reinterpret_cast<const float *>(c + r * ldc_bytes);
    acc[r][0] = accumulate ? _mm256_maskload_ps(cr, m0) : neg_zero;
    acc[r][1] = accumulate ? _mm256_maskload_ps(cr + 8, m1) : neg_zero;
  }
  for (int k = 0; k < K; ++k) {
    const __m256 w0 = _mm256_loadu_ps(w + static_cast<size_t>(k) * ld);
    const __m256 w1 = _mm256_loadu_ps(w + static_cast<size_t>(k) * ld + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + static_cast<size_t>(r) * K + k);
      acc[r][0] = _mm256_fmadd_ps(ar, w0, acc[r][0]); // round(a * w + acc), once
      acc[r][1] = _mm256_fmadd_ps(ar, w1, acc[r][1]);
    }
  }
  const __m256 canonical_nan = _mm256_castsi256_ps(_mm256_set1_epi32(int{kF32CanonicalNaN}));
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    float *cr = reinterpret_cast<float *>(c + r * ldc_bytes);
    for (int h = 0; h < 2; ++h) {
      const __m256 nan = _mm256_cmp_ps(acc[r][h], acc[r][h], _CMP_UNORD_Q);
      _mm256_maskstore_ps(cr + 8 * h, h == 0 ? m0 : m1,
                          _mm256_blendv_ps(acc[r][h], canonical_nan, nan));
    }
  }
}

__attribute__((target("avx2,fma"))) void float_tile_avx2(const float *w, int ld, int K, int N,
                                                         int M, const float *a, uint8_t *C,
                                                         size_t ldc, bool accumulate) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const size_t ldc_bytes = ldc * 4;
  for (int j0 = 0; j0 < N; j0 += kBlockCols) { // a weight panel stays in L1 across the rows
    const int valid = std::min(kBlockCols, N - j0);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), lane);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid - 8), lane);
    for (int i0 = 0; i0 < M; i0 += kBlockRows) {
      const float *ai = a + static_cast<size_t>(i0) * K;
      uint8_t *ci = C + i0 * ldc_bytes + j0 * 4;
      const float *wj = w + j0;
      switch (std::min(kBlockRows, M - i0)) {
      case 6:
        float_block<6>(ai, K, wj, ld, ci, ldc_bytes, accumulate, m0, m1);
        break;
      case 5:
        float_block<5>(ai, K, wj, ld, ci, ldc_bytes, accumulate, m0, m1);
        break;
      case 4:
        float_block<4>(ai, K, wj, ld, ci, ldc_bytes, accumulate, m0, m1);
        break;
      case 3:
        float_block<3>(ai, K, wj, ld, ci, ldc_bytes, accumulate, m0, m1);
        break;
      case 2:
        float_block<2>(ai, K, wj, ld, ci, ldc_bytes, accumulate, m0, m1);
        break;
      default:
        float_block<1>(ai, K, wj, ld, ci, ldc_bytes, accumulate, m0, m1);
      }
    }
  }
}

/// Without AVX2 + FMA: libm's fma (correctly rounded in nearest-even mode), k outer and the
/// columns inner, each column still one chain in k order.
void float_tile_scalar(const float *w, int ld, int K, int N, int M, const float *a, uint8_t *C,
                       size_t ldc, bool accumulate) {
  std::vector<float> acc(static_cast<size_t>(N));
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j)
      acc[j] = accumulate ? as_float(load_bits(DType::F32, C, i * ldc + j)) : -0.0f;
    for (int k = 0; k < K; ++k) {
      const float ak = a[static_cast<size_t>(i) * K + k];
      const float *wk = w + static_cast<size_t>(k) * ld;
      for (int j = 0; j < N; ++j)
        acc[j] = std::fma(ak, wk[j], acc[j]);
    }
    for (int j = 0; j < N; ++j)
      store_bits(DType::F32, C, i * ldc + j,
                 std::isnan(acc[j]) ? kF32CanonicalNaN : as_bits(acc[j]));
  }
}
#endif

} // namespace

const char *native_tile_path() {
#ifdef TL_NPU_X86_64
  return has_avx2_fma() ? "avx2-fma" : "scalar-fma";
#else
  return "integer";
#endif
}

TileWeights::TileWeights(DType in, int K, int N, const uint8_t *B, size_t ldb)
    : in_(in), k_(K), n_(N), ld_((N + kBlockCols - 1) / kBlockCols * kBlockCols) {
  const size_t size = static_cast<size_t>(K) * static_cast<size_t>(ld_);
  if (in == DType::I8) {
    i32_.assign(size, 0);
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j)
        i32_[static_cast<size_t>(k) * ld_ + j] = static_cast<int8_t>(B[k * ldb + j]);
    return;
  }
  f32_.assign(size, 0.0f);
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j)
      f32_[static_cast<size_t>(k) * ld_ + j] = as_float(widen_bits(in, B, k * ldb + j));
}

void matmul_tile(const TileWeights &w, int M, const uint8_t *A, size_t lda, uint8_t *C, size_t ldc,
                 bool accumulate, TilePath path) {
  const DType in = w.in_;
  const int K = w.k_, N = w.n_;
  if (M <= 0 || N <= 0)
    return;
  if (K == 0) { // no MAC: C keeps its bits, or the chains' start
    if (!accumulate)
      for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j)
          store_bits(DType::F32, C, i * ldc + j, in == DType::I8 ? 0 : kF32NegZero);
    return;
  }
  if (path == TilePath::Integer) {
    integer_tile(w, w.f32_, w.i32_, w.ld_, M, A, lda, C, ldc, accumulate);
    return;
  }
  if (in == DType::I8) {
    thread_local std::vector<uint32_t> acc;
    acc.resize(static_cast<size_t>(w.ld_));
#ifdef TL_NPU_X86_64
    if (__builtin_cpu_supports("avx2")) {
      i8_tile_avx2(w.i32_.data(), w.ld_, K, N, M, A, lda, C, ldc, accumulate, acc.data());
      return;
    }
#endif
    i8_tile_baseline(w.i32_.data(), w.ld_, K, N, M, A, lda, C, ldc, accumulate, acc.data());
    return;
  }
#ifdef TL_NPU_X86_64
  const float *a = widen_rows(in, M, K, A, lda);
  SpecRounding rounding;
  if (has_avx2_fma())
    float_tile_avx2(w.f32_.data(), w.ld_, K, N, M, a, C, ldc, accumulate);
  else
    float_tile_scalar(w.f32_.data(), w.ld_, K, N, M, a, C, ldc, accumulate);
#else
  integer_tile(w, w.f32_, w.i32_, w.ld_, M, A, lda, C, ldc, accumulate);
#endif
}

} // namespace tl::npu::num
