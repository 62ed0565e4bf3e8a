// The chip (see chip.h).
// SPDX-License-Identifier: Apache-2.0
#include "chip.h"

#include <algorithm>

namespace tl::npu::model {

Chip::Chip(sc_core::sc_module_name name, ChipContext &chip)
    : sc_module(name), hbm("hbm", chip), chip_(chip),
      flips_(chip.stats.add("faults.bit_flips", "flips", "injected bit flips applied")) {
  barrier_.cores = chip.cfg.cores;
  for (int i = 0; i < chip.cfg.cores; ++i) {
    cores.push_back(
        std::make_unique<Core>(("core" + std::to_string(i)).c_str(), chip, i, barrier_));
    cores.back()->on_halt = [this] { core_halted(); };
    for (auto &d : cores.back()->dma)
      d->socket.bind(hbm.socket);
  }
  SC_HAS_PROCESS(Chip);
  SC_METHOD(watchdog);
  SC_THREAD(inject_flips);
}

void Chip::core_halted() {
  if (++halted_ == static_cast<int>(cores.size())) {
    end_ps = ChipContext::now_ps();
    sc_core::sc_stop();
  }
}

void Chip::watchdog() {
  if (halted_ == static_cast<int>(cores.size()) || chip_.failed())
    return;
  const uint64_t timeout = static_cast<uint64_t>(
      static_cast<double>(chip_.opts.hang_timeout_cycles) * chip_.ps_per_cycle);
  const uint64_t now = ChipContext::now_ps();
  if (now >= chip_.last_progress_ps + timeout && now > 0) {
    std::string what;
    for (const auto &c : cores)
      if (!c->describe().empty())
        what += (what.empty() ? "" : " | ") + c->describe();
    end_ps = now;
    chip_.fail(SimStatus::Hang, "no progress for " +
                                    std::to_string(chip_.opts.hang_timeout_cycles) +
                                    " cycles: " + what);
    return;
  }
  next_trigger(ChipContext::ps(chip_.last_progress_ps + timeout - now));
}

void Chip::inject_flips() {
  std::vector<Fault> flips;
  for (const Fault &f : chip_.opts.faults)
    if (f.kind == Fault::Kind::SramFlip || f.kind == Fault::Kind::HbmFlip)
      flips.push_back(f);
  std::stable_sort(flips.begin(), flips.end(),
                   [](const Fault &a, const Fault &b) { return a.cycle < b.cycle; });
  for (const Fault &f : flips) {
    const uint64_t at = static_cast<uint64_t>(static_cast<double>(f.cycle) * chip_.ps_per_cycle);
    if (at > ChipContext::now_ps())
      sc_core::wait(ChipContext::ps(at - ChipContext::now_ps()));
    const uint8_t mask = static_cast<uint8_t>(1u << f.bit);
    try {
      if (f.kind == Fault::Kind::SramFlip) {
        cores.at(f.core)->state.mem.span(f.address, 1, "sram-flip")[0] ^= mask;
      } else {
        uint8_t b;
        hbm.store.read(f.address, &b, 1);
        b ^= mask;
        hbm.store.write(f.address, &b, 1);
      }
      flips_ += 1;
    } catch (const std::exception &e) {
      chip_.fail(SimStatus::ProgramError, std::string("fault injection: ") + e.what());
    }
  }
}

} // namespace tl::npu::model
