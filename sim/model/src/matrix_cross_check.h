// The matrix unit's cross-check: the fast model (sim/numerics' matmul_tile and matrix_timing.h)
// run on the command stream the RTL runs. Every C row the RTL sends to the accumulator is
// compared bit for bit with the model's, and each command's cycles side by side; the report
// gives mismatches, the per-command cycle error histogram, MAPE and the largest error.
// Plain C++ (no SystemC): the RTL unit drives it, tl-sim and the tests read its report.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "matrix_timing.h"

#include "tl/npu/config.h"
#include "tl/npu/matrix_tile.h"
#include "tl/npu/rtl/matrix_rtl.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tl::npu::model {

class MatrixCrossCheck {
public:
  /// `memory`: the memory the RTL runs on (the model reads A and the old C there).
  /// `banks`: the SRAM banks in the RTL's addresses (as given to MatrixRtl::set_sram_banks).
  MatrixCrossCheck(const MatrixConfig &mc, rtl::Memory &memory, MxBanks banks = {});

  /// Command `index` (the RTL's index) was offered to the unit from cycle `issue` on.
  void command(size_t index, const rtl::MxCommand &c, uint64_t issue);
  /// A C row on its way to memory (rtl::MatrixRtl::on_c_row).
  void c_row(const rtl::CRow &row);

  uint64_t mismatches() const { return mismatches_; }
  uint64_t rows_compared() const { return rows_; }
  /// The report as JSON; `done[i]` is the cycle the RTL finished command i (same clock as
  /// issue). Cycles of a command: from the later of its issue and the previous commands' end to
  /// its own end, in each model.
  std::string report_json(const std::vector<uint64_t> &done) const;

private:
  struct Record {
    rtl::MxCommand c;
    uint64_t issue = 0, model_end = 0;
    std::shared_ptr<const num::TileWeights> weights; // mm: the model's weights
  };
  rtl::Memory &memory_;
  int fp32_passes_;
  MatrixTiming timing_;
  uint64_t wk_ = 0, wn_ = 0; // the last preload's tile
  std::shared_ptr<const num::TileWeights> weights_;
  std::vector<Record> records_;
  uint64_t rows_ = 0, mismatches_ = 0;
  std::vector<std::string> first_mismatches_; // described, at most 8
};

} // namespace tl::npu::model
