// State shared by the modules of one chip: config, options, time conversion, statistics, trace,
// and the run's outcome; and per core: local memory and semaphores. SystemC-side header.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "memory.h"
#include "stats.h"
#include "trace.h"

#include "tl/npu/simulator.h"

#include <systemc>

#include <cmath>
#include <string>
#include <vector>

namespace tl::npu::model {

class ChipContext {
public:
  ChipContext(const ChipConfig &config, const SimOptions &options)
      : cfg(config), opts(options), trace(options.trace), ps_per_cycle(1e12 / config.clock) {}

  const ChipConfig cfg;
  SimOptions opts; ///< fixed once run() starts (Simulator::set_compute_data changes it before)
  StatRegistry stats;
  Trace trace;
  const double ps_per_cycle;

  bool timed() const { return opts.fidelity == Fidelity::CycleApprox; }
  /// Picoseconds of `cycles` (fractional cycles allowed), 0 in functional mode.
  uint64_t cycles_ps(double cycles) const {
    return timed() ? static_cast<uint64_t>(std::llround(cycles * ps_per_cycle)) : 0;
  }
  uint64_t seconds_ps(double s) const {
    return timed() ? static_cast<uint64_t>(std::llround(s * 1e12)) : 0;
  }
  static sc_core::sc_time ps(uint64_t v) { return sc_core::sc_time::from_value(v); }
  /// The first clock edge at or after `t` ps. Edge times are rounded to whole ps (cycles_ps), so
  /// a time within half a ps after an edge is that edge (666.67 ps cycles: edge 1 is at 667 ps).
  uint64_t edge_at_or_after(uint64_t t) const {
    const double c = std::ceil((static_cast<double>(t) - 0.5) / ps_per_cycle);
    return c > 0 ? static_cast<uint64_t>(c) : 0;
  }
  static uint64_t now_ps() { return sc_core::sc_time_stamp().value(); }

  /// Ends the run with `status` (the first failure wins) and stops the kernel.
  void fail(SimStatus status, const std::string &message) {
    if (this->status == SimStatus::Ok) {
      this->status = status;
      this->message = message;
    }
    sc_core::sc_stop();
  }
  bool failed() const { return status != SimStatus::Ok; }

  /// Arithmetic-off mode: which 64-byte HBM granules may hold stale bytes (LocalMemory's
  /// track_stale says why). A clean write clears only the granules it covers whole.
  static constexpr uint64_t kStaleGranule = 64;
  void set_hbm_stale(uint64_t address, uint64_t bytes, bool stale) {
    if (opts.compute_data || bytes == 0)
      return;
    if (stale && hbm_stale.empty())
      hbm_stale.assign(cfg.hbm.size / kStaleGranule + 1, false);
    if (hbm_stale.empty())
      return;
    const uint64_t first = address / kStaleGranule, last = (address + bytes - 1) / kStaleGranule;
    for (uint64_t g = first; g <= last && g < hbm_stale.size(); ++g)
      if (stale || (g * kStaleGranule >= address && (g + 1) * kStaleGranule <= address + bytes))
        hbm_stale[g] = stale;
  }
  bool hbm_any_stale(uint64_t address, uint64_t bytes) const {
    if (hbm_stale.empty() || bytes == 0)
      return false;
    const uint64_t first = address / kStaleGranule, last = (address + bytes - 1) / kStaleGranule;
    for (uint64_t g = first; g <= last && g < hbm_stale.size(); ++g)
      if (hbm_stale[g])
        return true;
    return false;
  }
  /// A unit finished a command or the command processor dispatched one.
  void progress() { last_progress_ps = now_ps(); }

  SimStatus status = SimStatus::Ok;
  std::string message;
  uint64_t last_progress_ps = 0;
  std::vector<bool> hbm_stale;
};

struct CoreState {
  CoreState(ChipContext &chip, int id)
      : chip(chip), id(id), mem(chip.cfg.core.sram.size, chip.cfg.core.accumulator) {
    if (!chip.opts.compute_data)
      mem.track_stale();
  }
  ChipContext &chip;
  const int id;
  LocalMemory mem;
  int64_t sem[isa::kNumSemaphores] = {};
  sc_core::sc_event sem_changed;
  sc_core::sc_event unit_done; ///< a unit's outstanding count dropped
  std::string prefix() const { return "core" + std::to_string(id); }
};

} // namespace tl::npu::model
