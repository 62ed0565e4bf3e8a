// Random Tile IR programs whose every op is exact, for differential tests of a backend against
// the interpreter (llvm-cpu's and npusim's tests, tl-conform's compiler suite on any device): a
// backend must not change one bit of them.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/interpreter/host_tensor.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace tl::interp {

/// Kernel @rand(%x, %y: (rows, cols) of e; %v: (cols); %o0, %o1: (rows, cols); %r0: (rows);
/// %c0: (3 C); %s0: (3, any, any); %q0: (3) i32, the xor of program p's scalars at p; %a0: (64)
/// i32, where every program's atomic adds of tiles go) over (R, C)
/// blocks, program p at rows p R (launch 3 programs; tensors of rows < 3 R and cols <= C cut
/// the last block's rows and every block's columns). e is f32, bf16, f16 or i32. Exact ops only:
/// arithmetic, min / max both ways, fma, roundings, bit ops and shifts, popcount / clz, casts there
/// and back through f32, f16, bf16, i32, i8, compares and selects, fmod, copysign, clamp, isnan /
/// isinf / isfinite, bitcasts, integer division and remainder by constants, gathers (reversed
/// columns, masked past the edges), atomic adds of integer tiles from every program, row and column
/// broadcasts, slices (a column or a row broadcast back, half the rows), max / min / argmax and
/// integer sum reductions along either axis, running sums (floats' in exact order), maxima and
/// minima along the rows, transposes and dots in order of square tiles, loops carrying tiles,
/// branches on the program, blocks shifted past the tensor's edges (padding), i32 scalar
/// arithmetic (wrapping) and blocks at offsets computed from it, and a last store into program
/// p's plane of %s0 at an offset from -3 to 4 along both axes.
std::string random_program(std::mt19937_64 &rng, int64_t R, int64_t C, const std::string &e);

/// A program of random_program over a random block of kRandomProgramBlocks and element type
/// (f32 twice as often as bf16, f16, i32), with its ten arguments: inputs random (floats in
/// [-2, 2], integers in [-100, 100]) with one element of 16 a special value, outputs of 0x5a bytes
/// (a lane never written shows), tensors whose edges cut the last block's rows and every
/// block's columns, and a grid of 3 programs.
struct RandomProgramCase {
  std::string text; ///< kernel @rand
  std::vector<HostTensor> tensors;
  std::array<int64_t, 3> grid{3, 1, 1};
};
RandomProgramCase random_program_case(std::mt19937_64 &rng);

/// A test's batch: `programs` from seed 2026, or N from SEED where TL_RANDOM_PROGRAMS=N[:SEED]
/// (a long run, by hand).
struct RandomProgramBatch {
  int programs;
  uint64_t seed;
};
RandomProgramBatch random_program_batch(int programs);

/// The (R, C) blocks the tests draw, and the special values they put in one input element of 16.
inline const std::vector<std::pair<int64_t, int64_t>> kRandomProgramBlocks = {
    {1, 64}, {4, 32}, {16, 64}, {8, 256}, {2, 1024}, {16, 16}, {32, 32}};
inline const double kFloatSpecials[9] = {0.0,  -0.0,   INFINITY, -INFINITY, NAN,
                                         1e38, -3e-39, 0.5,      2.5};
inline const double kIntSpecials[5] = {0, -1, 2147483647.0, -2147483648.0, 65536};

} // namespace tl::interp
