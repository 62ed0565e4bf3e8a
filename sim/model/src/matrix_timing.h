// The fast model's matrix-unit timing as a plain function of the command stream, shared by the
// model (matrix.cpp) and the RTL cross-check (matrix_rtl_unit.cpp), so that the cycles the
// cross-check compares with the RTL are the model's own.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/npu/config.h"

#include <algorithm>
#include <cstdint>

namespace tl::npu::model {

class MatrixTiming {
public:
  explicit MatrixTiming(const MatrixConfig &mc) : rows_(mc.rows), cols_(mc.cols) {}

  /// Cycles of one command that starts now; `warm`: it was queued when the previous command
  /// ended (then the array is still streaming and this command's fill overlaps that one's
  /// drain, or a preload went into the shadow weights while that one streamed).
  /// `passes`: streaming passes per row (fp32_passes in f32 mode, else 1).
  uint64_t command(bool preload, uint64_t m, int passes, bool warm) {
    warm = warm && chained_;
    uint64_t cycles = 0;
    if (preload) {
      cycles =
          warm
              ? static_cast<uint64_t>(std::max<int64_t>(0, rows_ - static_cast<int64_t>(streamed_)))
              : static_cast<uint64_t>(rows_);
      chained_ = warm; // a cold preload leaves nothing streaming
      streamed_ = 0;
    } else {
      streamed_ = m * static_cast<uint64_t>(passes);
      cycles = warm ? streamed_ : static_cast<uint64_t>(rows_) + streamed_ + cols_;
      chained_ = true;
    }
    return cycles;
  }

private:
  int64_t rows_, cols_;
  bool chained_ = false;  // the last command left the array streaming
  uint64_t streamed_ = 0; // rows * passes the last mm streamed
};

} // namespace tl::npu::model
