// Random Tile IR programs whose every op is exact, for differential tests of a backend against
// the interpreter (llvm-cpu's and npusim's tests): a backend must not change one bit of them.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace tl::interp {

struct RandomProgramOptions {
  /// Dots of square f32 tiles in order (`order = "exact"`, one fma a step). Off for a target
  /// whose matrix unit sums in its own order (the tnpu).
  bool dots = true;
};

/// Kernel @rand(%x, %y: (rows, cols) of e; %v: (cols); %o0, %o1: (rows, cols); %r0: (rows);
/// %c0: (3 C); %s0: (3, any, any); %q0: (3) i32, the xor of program p's scalars at p) over (R, C)
/// blocks, program p at rows p R (launch 3
/// programs; tensors of rows < 3 R and cols <= C cut the last block's rows and every block's
/// columns). e is f32, bf16, f16 or i32. Exact ops only: arithmetic, min / max both ways, fma,
/// roundings, bit ops and shifts, popcount / clz, casts there and back through f32, f16, bf16,
/// i32, i8, compares and selects, row and column broadcasts, max / min / argmax and integer sum
/// reductions along either axis, running sums along the rows, transposes and dots in order of
/// square tiles, loops carrying tiles, branches on the program, blocks shifted past the tensor's
/// edges (padding), i32 scalar arithmetic (wrapping) and blocks at offsets computed from it, and
/// a last store into program p's plane of %s0 at an offset from -3 to 4 along both axes.
std::string random_program(std::mt19937_64 &rng, int64_t R, int64_t C, const std::string &e,
                           const RandomProgramOptions &options = {});

} // namespace tl::interp
