// The systolic matrix unit (R x C, weight-stationary). mx.pre latches a k x n weight tile
// (k <= R, n <= C); mx.mm / mx.mma stream m rows of A (m x k) through it into C (m x n, f32 or
// i32) in the accumulator, with the MAC of sim/numerics in k order. Timing is the RTL's pipeline
// (matrix_timing.h): a command holds the queue until the unit takes it, so the next one overlaps
// its drain; its results are computed at once but count as in memory only when the RTL would
// have written them: a sem.sig and the unit going idle wait for that (Unit::results_pending).
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
  bool results_pending() const override;
  uint64_t advance_results() override;
  bool busy_is_duration() const override { return false; }
  uint64_t ps_until(uint64_t cycle) const; ///< from now to that edge, 0 if past
  uint64_t trace_duration(uint64_t duration) const override;
  double flops(const Command &c) const override;
  void preload(const Command &c);
  void multiply(const Command &c, bool accumulate);

  num::TileWeights weights_; // decoded at mx.pre (arithmetic on)
  uint64_t wk_ = 0, wn_ = 0, wmode_ = 0;
  bool loaded_ = false;
  MatrixTiming timing_;
  uint64_t busy_until_ = 0; // cycles with work in flight are counted up to here
  uint64_t last_done_ = 0;  // the last command's done edge
};

} // namespace tl::npu::model
