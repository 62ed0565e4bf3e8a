// Setting up and checking runs of programs/gemm.s (shared by the GEMM tests, tl-sim's tests and
// the benchmark).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/npu/config.h"
#include "tl/npu/numerics.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tl::npu::test {

struct GemmProblem {
  int M, N, K;
  num::DType mode;
  uint64_t a_addr = 0, b_addr = 0, c_addr = 0;
  /// Assembler defines for gemm.s on `cfg` (tiles = the array's R x C, TM = R rows).
  std::map<std::string, int64_t> defines(const ChipConfig &cfg) const;
  /// Places A, B and C one after another from HBM address 0x1000, 4 KiB aligned.
  void layout();
};

/// Random inputs as raw element bits (uniform in [-1, 1] for floats, [-128, 127] for i8).
std::vector<uint8_t> random_matrix(num::DType t, int rows, int cols, uint32_t seed);

/// The reference in the program's order: K padded with zeros to a multiple of TR (what the DMA
/// feeds the array), one sequential fused chain per output from -0.
std::vector<uint32_t> gemm_in_program_order(const GemmProblem &p, int tr,
                                            const std::vector<uint8_t> &a,
                                            const std::vector<uint8_t> &b);

} // namespace tl::npu::test
