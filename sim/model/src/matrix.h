// The systolic matrix unit (R x C, weight-stationary). mx.pre latches a k x n weight tile
// (k <= R, n <= C); mx.mm / mx.mma stream m rows of A (m x k) through it into C (m x n, f32 or
// i32) in the accumulator, with the MAC of sim/numerics in k order. Timing: preload R cycles;
// compute R (fill) + m * passes (stream) + C (drain) cycles, passes = fp32_passes in f32 mode,
// else 1. Commands that follow each other back to back pipeline: an mx.mm / mx.mma queued when the
// previous mm ended costs only its m * passes (its fill overlapped that one's drain), and an
// mx.pre queued behind an mm loads the shadow weight buffer while that one streamed
// (max(0, R - streamed rows) cycles; the next mm then stays warm).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "matrix_timing.h"
#include "unit.h"

#include "tl/npu/matrix_tile.h"

namespace tl::npu::model {

class MatrixUnit : public Unit {
public:
  MatrixUnit(sc_core::sc_module_name name, CoreState &core, int track);

private:
  uint64_t execute(const Command &c) override;
  double flops(const Command &c) const override;
  void preload(const Command &c);
  void multiply(const Command &c, bool accumulate);

  num::TileWeights weights_; // decoded at mx.pre (arithmetic on)
  uint64_t wk_ = 0, wn_ = 0, wmode_ = 0;
  bool loaded_ = false;
  MatrixTiming timing_;
  uint64_t end_ps_ = 0; // when the last command ended (pipelining, matrix_timing.h)
};

} // namespace tl::npu::model
