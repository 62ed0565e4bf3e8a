// The matrix unit's whole tile: gemm_reference's bits, computed with the host's native arithmetic
// where that is provably the same (SPEC.md, "Matrix unit multiply-accumulate"; README.md, "Fast
// tiles").
// SPDX-License-Identifier: Apache-2.0
//
// Why native is exact: a MAC of the spec is acc' = round_f32(acc + a * b) with the product exact,
// which is IEEE 754's fusedMultiplyAdd on the exactly widened inputs: same rounding (nearest even),
// same subnormals (kept), same overflow (inf), same signed zeros. The two differ only in which NaN
// comes out, and a NaN anywhere in a chain stays a NaN, so canonicalizing NaN results at the end
// of the chain gives the spec's bits. The host must round to nearest without flush-to-zero: the
// native path sets that (x86 MXCSR) for its duration. i8 MACs wrap modulo 2^32 in any order.
#pragma once

#include "tl/npu/numerics.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tl::npu::num {

/// How matmul_tile computes; all three give the same bits.
enum class TilePath : uint8_t {
  Vector,  ///< x86-64 with AVX2, FMA and F16C: blocked vector kernels (f32 FMA, i32 MACs);
           ///< elsewhere as Scalar
  Scalar,  ///< float modes: the host's fma per element (libm) on x86-64, Integer elsewhere;
           ///< i8: plain 32-bit integer MACs
  Integer, ///< mac_f32 / mac_i8, one element at a time (gemm_reference's loop)
};

/// What TilePath::Vector runs on this host for the float modes, for reports and tests:
/// "avx2-fma", "scalar-fma" or "integer".
const char *native_tile_path();

/// A K x N weight tile, the matrix unit's stationary operand (mx.pre), decoded once for any number
/// of matmul_tile calls. B holds K rows of N elements of dtype `in` (row stride ldb elements).
class TileWeights {
public:
  TileWeights() = default;
  TileWeights(DType in, int K, int N, const uint8_t *B, size_t ldb);
  /// Replaces the tile, reusing the storage.
  void load(DType in, int K, int N, const uint8_t *B, size_t ldb);
  DType dtype() const { return in_; }
  int k() const { return k_; }
  int n() const { return n_; }

private:
  friend void matmul_tile(const TileWeights &, int, const uint8_t *, size_t, uint8_t *, size_t,
                          bool, TilePath);
  DType in_ = DType::BF16;
  int k_ = 0, n_ = 0, ld_ = 0; // ld_: N rounded up to the native kernel's column block, 0-padded
  std::vector<float> f32_;     // float modes: K x ld_ exact f32 values
  std::vector<int32_t> i32_;   // i8: K x ld_ sign-extended values
  std::vector<int32_t> pairs_; // i8: ceil(K / 2) x ld_ words of two i16 (k = 2p, 2p + 1)
};

/// C[M x N] = init + A[M x K] * W with init = C (`accumulate`) or -0 / 0, every C[i][j] one
/// chain of MACs over k = 0 .. K-1: bit for bit gemm_reference(w.dtype(), M, N, K, A, lda, B, ldb,
/// C, ldc, accumulate). A: M rows of K elements of W's dtype (stride lda elements); C: M rows of N
/// f32 / i32 patterns (stride ldc elements), any alignment. C's rows must overlap neither each
/// other nor A (the caller goes row by row, M = 1, where they might).
void matmul_tile(const TileWeights &w, int M, const uint8_t *A, size_t lda, uint8_t *C, size_t ldc,
                 bool accumulate, TilePath path = TilePath::Vector);

} // namespace tl::npu::num
