// The chip: cores, the shared HBM (every DMA engine's TLM socket bound to it), the barrier, the
// watchdog that turns a lack of progress into a hang report, and the bit-flip fault injector.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "context.h"
#include "core.h"
#include "hbm.h"

#include <systemc>

#include <memory>
#include <vector>

namespace tl::npu::model {

class Chip : public sc_core::sc_module {
public:
  Chip(sc_core::sc_module_name name, ChipContext &chip);

  Hbm hbm;
  std::vector<std::unique_ptr<Core>> cores;
  /// Time the last core halted, or the stop time of a failed run.
  uint64_t end_ps = 0;

private:
  void core_halted();
  /// Wakes hang_timeout after the last progress; reports a hang if nothing happened since.
  void watchdog();
  void inject_flips();

  ChipContext &chip_;
  Barrier barrier_;
  int halted_ = 0;
  Stat &flips_;
};

} // namespace tl::npu::model
