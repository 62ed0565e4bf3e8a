// Test support for the matrix unit RTL: random and edge-case tiles, their placement in the
// scratchpad, and the check of the RTL's C against sim/numerics' gemm_reference, bit for bit.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/npu/numerics.h"
#include "tl/npu/rtl/matrix_rtl.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace tl::npu::rtl::test {

using Rng = std::mt19937_64;

/// How a tile's elements are drawn.
enum class Values {
  Bits,     ///< uniform over all bit patterns (NaN and infinity included)
  Moderate, ///< finite, exponents within +-20 of 1: rounding, cancellation, carries
  Special,  ///< only zeros, infinities, NaNs, subnormals, extremes
  Tiny,     ///< products below the f32 normal range: subnormal results, underflow to zero
  Huge,     ///< products near and beyond the f32 range: overflow to infinity
  Ties,     ///< f32: products exactly halfway between two f32s, starts far below them (only
            ///< the start's sticky bit decides the rounding); other dtypes: Moderate
  Mixed,    ///< each element from any of the above
};

/// One element of dtype t (bits in the low bits).
uint32_t element(num::DType t, Values v, Rng &rng);
/// A starting value for an mx.mma chain (f32 bits, or i32 for i8 tiles).
uint32_t accumulator(num::DType t, Values v, Rng &rng);

/// One weight tile applied to m rows of A: an mx.pre and an mx.mm / mx.mma.
struct Tile {
  num::DType mode = num::DType::BF16;
  int m = 0, k = 0, n = 0;
  bool accumulate = false;
  std::vector<uint32_t> a, w, c; ///< dense element bits: m x k, k x n, and C's start (m x n)
  // Where the RTL finds them (bytes): set by place().
  uint32_t a_addr = 0, w_addr = 0, c_addr = 0, lda = 0, ldw = 0, ldc = 0;
};

/// A random tile: shape, accumulate flag, values. Partial shapes half of the time.
Tile random_tile(num::DType mode, Values v, int rows, int cols, Rng &rng);
/// A tile with the given shape and values.
Tile make_tile(num::DType mode, Values v, int m, int k, int n, bool accumulate, Rng &rng);

/// Lays tiles out from `offset` (row strides padded at random) and writes their A, W and C into
/// memory; the padding is filled with kCanary. Returns the end offset.
constexpr uint8_t kCanary = 0xa5;
size_t place(std::vector<Tile> &tiles, uint8_t *memory, size_t offset, size_t size, Rng &rng);

/// Submits each tile as mx.pre + mx.mm / mx.mma, back to back.
void submit(MatrixRtl &rtl, const std::vector<Tile> &tiles);

/// C as gemm_reference computes it from the tile's start.
std::vector<uint32_t> reference(const Tile &t);

/// Compares the RTL's C (and the untouched padding after each C row) with the reference; returns
/// a description of the first few mismatches, empty if none.
std::string check(const Tile &t, const uint8_t *memory, const std::vector<uint32_t> &expected);

} // namespace tl::npu::rtl::test
