// The matrix unit as RTL (core.matrix.kind "rtl" or "cross-check"): a SystemC transactor that
// hands the queue's commands to the verilated unit (sim/rtl's MatrixRtl), clocked in step with
// simulated time, over the core's own SRAM and accumulator.
// SPDX-License-Identifier: Apache-2.0
//
// Timing is the RTL's: a command occupies the queue until the unit takes it (cmd_ready), so the
// next command is offered at once and overlaps this one's drain as in hardware. Its C rows are
// still being written after that; the RTL holds back its own reads of them, and the queue holds
// back everyone else: a sem.sig, and the unit going idle (fences, halt), wait until every result
// is in memory (Unit::results_pending). An idle unit is not clocked (MatrixRtl::advance_to).
#pragma once

#include "matrix_cross_check.h"
#include "unit.h"

#include "tl/npu/rtl/matrix_rtl.h"

#include <memory>
#include <string>

namespace tl::npu::model {

class RtlMatrixUnit : public Unit {
public:
  /// Throws ConfigError if this build has no RTL of the configured array size.
  RtlMatrixUnit(sc_core::sc_module_name name, CoreState &core, int track);
  ~RtlMatrixUnit() override;

  /// The cross-check report as JSON ("" unless core.matrix.kind is "cross-check").
  std::string cross_check_json() const;

private:
  /// The core's memory in the RTL's 32-bit addresses: SRAM at 0, the accumulator at 2^31.
  class CoreMemory final : public rtl::Memory {
  public:
    explicit CoreMemory(LocalMemory &mem) : mem_(mem) {}
    uint8_t *span(uint32_t addr, size_t bytes, bool write, const char *what) override;

  private:
    LocalMemory &mem_;
  };

  uint64_t execute(const Command &c) override;
  double flops(const Command &c) const override;
  bool results_pending() const override;
  uint64_t advance_results() override;
  bool busy_is_duration() const override { return false; }
  void count_busy();
  rtl::MxCommand translate(const Command &c) const;
  /// Clocks the RTL up to now (an idle stretch costs nothing); returns the current cycle.
  uint64_t catch_up();
  /// Picoseconds from now to the RTL's current cycle.
  uint64_t ps_until_rtl() const;

  CoreMemory memory_;
  std::unique_ptr<rtl::MatrixRtl> rtl_;
  uint64_t base_ = 0; // the RTL's cycle at simulated cycle 0
  std::unique_ptr<MatrixCrossCheck> check_;
  uint64_t wk_ = 0, wn_ = 0; // the last preload's tile, for flops
  uint64_t counted_ = 0;     // MatrixRtl::active_edges() already added to busy_cycles
};

} // namespace tl::npu::model
