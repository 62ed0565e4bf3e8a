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

// The native kernels' block: 6 rows x 16 columns keep 12 accumulators, 2 weight vectors and a
// broadcast in the 16 vector registers of AVX2. Weights are zero-padded to whole column blocks so
// the k loop never masks.
constexpr int kBlockCols = 16;
constexpr int kBlockRows = 6;

/// f16 -> f32 bits of the integer model, as a table (built once).
const uint32_t *f16_widen_table() {
  static const std::vector<uint32_t> table = [] {
    std::vector<uint32_t> t(0x10000);
    for (uint32_t h = 0; h < 0x10000; ++h)
      t[h] = f16_to_f32(static_cast<uint16_t>(h));
    return t;
  }();
  return table.data();
}

/// Two i16 values in one 32-bit word, `lo` in the low half (vpmaddwd's operand layout).
int32_t i16_pair(int32_t lo, int32_t hi) {
  return static_cast<int32_t>((static_cast<uint32_t>(lo) & 0xffffu) |
                              (static_cast<uint32_t>(hi) << 16));
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

/// n elements of a float-mode row as exact f32 values. bf16 widens by a shift: the integer
/// model's bf16_to_f32 except that a NaN keeps its payload, which no result can show
/// (matrix_tile.h); f16 by the integer model's table.
void widen_row_portable(DType in, const uint8_t *src, int n, float *dst) {
  if (in == DType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
    return;
  }
  const uint32_t *f16 = f16_widen_table();
  for (int j = 0; j < n; ++j) {
    uint16_t h;
    std::memcpy(&h, src + 2 * j, 2);
    dst[j] = as_float(in == DType::BF16 ? uint32_t{h} << 16 : f16[h]);
  }
}

void integer_tile(DType in, const float *wf, const int32_t *wi, int ld, int K, int N, int M,
                  const uint8_t *A, size_t lda, uint8_t *C, size_t ldc, bool accumulate) {
  std::vector<float> a(static_cast<size_t>(K));
  for (int i = 0; i < M; ++i) {
    if (in != DType::I8)
      widen_row_portable(in, A + i * lda * dtype_size(in), K, a.data());
    for (int j = 0; j < N; ++j) {
      const size_t at = i * ldc + j;
      if (in == DType::I8) {
        int32_t acc = accumulate ? static_cast<int32_t>(load_bits(DType::I32, C, at)) : 0;
        for (int k = 0; k < K; ++k)
          acc = mac_i8(static_cast<int8_t>(A[i * lda + k]),
                       static_cast<int8_t>(wi[static_cast<size_t>(k) * ld + j]), acc);
        store_bits(DType::I32, C, at, static_cast<uint32_t>(acc));
        continue;
      }
      // f32 MACs on the exactly widened inputs: mac_f32 of the input dtype, bit for bit.
      uint32_t acc = accumulate ? load_bits(DType::F32, C, at) : kF32NegZero;
      for (int k = 0; k < K; ++k)
        acc = mac_f32(DType::F32, as_bits(a[k]), as_bits(wf[static_cast<size_t>(k) * ld + j]), acc);
      store_bits(DType::F32, C, at, acc);
    }
  }
}

/// i8 without AVX2: 32-bit unsigned MACs wrap exactly as mac_i8 (and in any order).
void i8_tile_portable(const int32_t *w, int ld, int K, int N, int M, const uint8_t *A, size_t lda,
                      uint8_t *C, size_t ldc, bool accumulate) {
  std::vector<uint32_t> acc(static_cast<size_t>(ld));
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < ld; ++j)
      acc[j] = accumulate && j < N ? load_bits(DType::I32, C, i * ldc + j) : 0;
    for (int k = 0; k < K; ++k) {
      const uint32_t a = static_cast<uint32_t>(static_cast<int8_t>(A[i * lda + k]));
      const int32_t *wk = w + static_cast<size_t>(k) * ld;
      for (int j = 0; j < ld; ++j)
        acc[j] += a * static_cast<uint32_t>(wk[j]);
    }
    std::memcpy(C + i * ldc * 4, acc.data(), static_cast<size_t>(N) * 4);
  }
}

#ifdef TL_NPU_X86_64
bool has_native_kernels() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                          __builtin_cpu_supports("f16c");
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

/// widen_row_portable with 8 elements per instruction (vcvtph2ps is exact, subnormals included).
__attribute__((target("avx2,f16c"))) void widen_row_avx2(DType in, const uint8_t *src, int n,
                                                         float *dst) {
  int j = 0;
  if (in == DType::BF16)
    for (; j + 8 <= n; j += 8) {
      const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + 2 * j));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + j),
                          _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
  else if (in == DType::F16)
    for (; j + 8 <= n; j += 8)
      _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(_mm_loadu_si128(
                                    reinterpret_cast<const __m128i *>(src + 2 * j))));
  widen_row_portable(in, src + static_cast<size_t>(j) * dtype_size(in), n - j, dst + j);
}

/// R rows x 16 columns of C in f32: one fused chain per element over k ascending, from C or -0;
/// NaN results canonical. m0 / m1 select a partial block's valid columns for C's loads and stores
/// (masked moves are slow: a `full` block uses plain ones).
struct FloatBlock {
  using Elem = float;
  template <int R>
  __attribute__((target("avx2,fma"), always_inline)) static inline void
  run(const float *a, int K, const float *w, int ld, uint8_t *c, size_t ldc_bytes, bool accumulate,
      bool full, __m256i m0, __m256i m1) {
    __m256 acc[R][2];
    const __m256 neg_zero = _mm256_set1_ps(-0.0f);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const float *cr = reinterpret_cast<const float *>(c + r * ldc_bytes);
      acc[r][0] = !accumulate ? neg_zero : full ? _mm256_loadu_ps(cr) : _mm256_maskload_ps(cr, m0);
      acc[r][1] = !accumulate ? neg_zero
                  : full      ? _mm256_loadu_ps(cr + 8)
                              : _mm256_maskload_ps(cr + 8, m1);
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
        const __m256 out = _mm256_blendv_ps(acc[r][h], canonical_nan, nan);
        if (full)
          _mm256_storeu_ps(cr + 8 * h, out);
        else
          _mm256_maskstore_ps(cr + 8 * h, h == 0 ? m0 : m1, out);
      }
    }
  }
};

/// The same block in i32 over pairs of k: each 32-bit word of `a` and `w` holds the i16 values of
/// k = 2p and 2p + 1, and vpmaddwd adds their two products exactly (|sum| <= 2^15) before the
/// wrapping 32-bit accumulation: any order gives mac_i8's bits. K here counts the pairs.
struct I8Block {
  using Elem = int32_t;
  template <int R>
  __attribute__((target("avx2,fma"), always_inline)) static inline void
  run(const int32_t *a, int K, const int32_t *w, int ld, uint8_t *c, size_t ldc_bytes,
      bool accumulate, bool full, __m256i m0, __m256i m1) {
    __m256i acc[R][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const int *cr = reinterpret_cast<const int *>(c + r * ldc_bytes);
      const auto *cv = reinterpret_cast<const __m256i *>(cr);
      acc[r][0] = !accumulate ? _mm256_setzero_si256()
                  : full      ? _mm256_loadu_si256(cv)
                              : _mm256_maskload_epi32(cr, m0);
      acc[r][1] = !accumulate ? _mm256_setzero_si256()
                  : full      ? _mm256_loadu_si256(cv + 1)
                              : _mm256_maskload_epi32(cr + 8, m1);
    }
    for (int k = 0; k < K; ++k) {
      const int32_t *wk = w + static_cast<size_t>(k) * ld;
      const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(wk));
      const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(wk + 8));
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m256i ar = _mm256_set1_epi32(a[static_cast<size_t>(r) * K + k]);
        acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(ar, w0));
        acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(ar, w1));
      }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      int *cr = reinterpret_cast<int *>(c + r * ldc_bytes);
      if (full) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(cr), acc[r][0]);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(cr + 8), acc[r][1]);
      } else {
        _mm256_maskstore_epi32(cr, m0, acc[r][0]);
        _mm256_maskstore_epi32(cr + 8, m1, acc[r][1]);
      }
    }
  }
};

/// C's column blocks outer (a weight panel stays in L1 across the rows), row blocks inner.
template <class Block>
__attribute__((target("avx2,fma"))) void tile_avx2(const typename Block::Elem *w, int ld, int K,
                                                   int N, int M, const typename Block::Elem *a,
                                                   uint8_t *C, size_t ldc, bool accumulate) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const size_t ldc_bytes = ldc * 4;
  for (int j0 = 0; j0 < N; j0 += kBlockCols) {
    const int valid = std::min(kBlockCols, N - j0);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), lane);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid - 8), lane);
    for (int i0 = 0; i0 < M; i0 += kBlockRows) {
      const auto *ai = a + static_cast<size_t>(i0) * K;
      uint8_t *ci = C + i0 * ldc_bytes + j0 * 4;
      const auto *wj = w + j0;
      switch (std::min(kBlockRows, M - i0)) {
      case 6:
        Block::template run<6>(ai, K, wj, ld, ci, ldc_bytes, accumulate, valid == kBlockCols, m0,
                               m1);
        break;
      case 5:
        Block::template run<5>(ai, K, wj, ld, ci, ldc_bytes, accumulate, valid == kBlockCols, m0,
                               m1);
        break;
      case 4:
        Block::template run<4>(ai, K, wj, ld, ci, ldc_bytes, accumulate, valid == kBlockCols, m0,
                               m1);
        break;
      case 3:
        Block::template run<3>(ai, K, wj, ld, ci, ldc_bytes, accumulate, valid == kBlockCols, m0,
                               m1);
        break;
      case 2:
        Block::template run<2>(ai, K, wj, ld, ci, ldc_bytes, accumulate, valid == kBlockCols, m0,
                               m1);
        break;
      default:
        Block::template run<1>(ai, K, wj, ld, ci, ldc_bytes, accumulate, valid == kBlockCols, m0,
                               m1);
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

void widen_row(DType in, const uint8_t *src, int n, float *dst) {
#ifdef TL_NPU_X86_64
  if (has_native_kernels()) {
    widen_row_avx2(in, src, n, dst);
    return;
  }
#endif
  widen_row_portable(in, src, n, dst);
}

} // namespace

const char *native_tile_path() {
#ifdef TL_NPU_X86_64
  return has_native_kernels() ? "avx2-fma" : "scalar-fma";
#else
  return "integer";
#endif
}

TileWeights::TileWeights(DType in, int K, int N, const uint8_t *B, size_t ldb) {
  load(in, K, N, B, ldb);
}

void TileWeights::load(DType in, int K, int N, const uint8_t *B, size_t ldb) {
  in_ = in;
  k_ = K;
  n_ = N;
  ld_ = (N + kBlockCols - 1) / kBlockCols * kBlockCols;
  const size_t size = static_cast<size_t>(K) * static_cast<size_t>(ld_);
  if (in == DType::I8) {
    i32_.resize(size);
    for (int k = 0; k < K; ++k) {
      int32_t *row = &i32_[static_cast<size_t>(k) * ld_];
      for (int j = 0; j < N; ++j)
        row[j] = static_cast<int8_t>(B[k * ldb + j]);
      std::fill(row + N, row + ld_, 0);
    }
    const int pairs = (K + 1) / 2;
    pairs_.resize(static_cast<size_t>(pairs) * ld_);
    for (int p = 0; p < pairs; ++p)
      for (int j = 0; j < ld_; ++j)
        pairs_[static_cast<size_t>(p) * ld_ + j] =
            i16_pair(i32_[static_cast<size_t>(2 * p) * ld_ + j],
                     2 * p + 1 < K ? i32_[static_cast<size_t>(2 * p + 1) * ld_ + j] : 0);
    return;
  }
  f32_.resize(size);
#ifdef TL_NPU_X86_64
  SpecRounding rounding; // the widening too (vcvtph2ps ignores DAZ today; cheap insurance)
#endif
  for (int k = 0; k < K; ++k) {
    float *row = &f32_[static_cast<size_t>(k) * ld_];
    widen_row(in, B + k * ldb * dtype_size(in), N, row);
    std::fill(row + N, row + ld_, 0.0f);
  }
}

void matmul_tile(const TileWeights &w, int M, const uint8_t *A, size_t lda, uint8_t *C, size_t ldc,
                 bool accumulate, TilePath path) {
  const DType in = w.in_;
  const int K = w.k_, N = w.n_, ld = w.ld_;
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
    integer_tile(in, w.f32_.data(), w.i32_.data(), ld, K, N, M, A, lda, C, ldc, accumulate);
    return;
  }
#ifdef TL_NPU_X86_64
  if (path == TilePath::Vector && has_native_kernels()) {
    if (in == DType::I8) {
      const int pairs = (K + 1) / 2;
      thread_local std::vector<int32_t> a;
      a.resize(static_cast<size_t>(M) * pairs);
      for (int i = 0; i < M; ++i)
        for (int p = 0; p < pairs; ++p)
          a[static_cast<size_t>(i) * pairs + p] =
              i16_pair(static_cast<int8_t>(A[i * lda + 2 * p]),
                       2 * p + 1 < K ? static_cast<int8_t>(A[i * lda + 2 * p + 1]) : 0);
      tile_avx2<I8Block>(w.pairs_.data(), ld, pairs, N, M, a.data(), C, ldc, accumulate);
      return;
    }
    SpecRounding rounding;
    thread_local std::vector<float> a;
    a.resize(static_cast<size_t>(M) * K);
    for (int i = 0; i < M; ++i)
      widen_row_avx2(in, A + i * lda * dtype_size(in), K, &a[static_cast<size_t>(i) * K]);
    tile_avx2<FloatBlock>(w.f32_.data(), ld, K, N, M, a.data(), C, ldc, accumulate);
    return;
  }
#endif
  if (in == DType::I8) {
    i8_tile_portable(w.i32_.data(), ld, K, N, M, A, lda, C, ldc, accumulate);
    return;
  }
#ifdef TL_NPU_X86_64
  thread_local std::vector<float> a;
  a.resize(static_cast<size_t>(M) * K);
  for (int i = 0; i < M; ++i)
    widen_row_portable(in, A + i * lda * dtype_size(in), K, &a[static_cast<size_t>(i) * K]);
  SpecRounding rounding;
  float_tile_scalar(w.f32_.data(), ld, K, N, M, a.data(), C, ldc, accumulate);
#else
  integer_tile(in, w.f32_.data(), w.i32_.data(), ld, K, N, M, A, lda, C, ldc, accumulate);
#endif
}

} // namespace tl::npu::num
