// The Simulator facade: elaborates the chip, runs it, and builds the report (see simulator.h).
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/simulator.h"

#include "chip.h"
#include "context.h"
#include "matrix_rtl_unit.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstring>

namespace tl::npu {

using model::Chip;
using model::ChipContext;

const char *status_name(SimStatus s) {
  switch (s) {
  case SimStatus::Ok:
    return "ok";
  case SimStatus::ProgramError:
    return "program-error";
  case SimStatus::DmaError:
    return "dma-error";
  case SimStatus::Hang:
    return "hang";
  case SimStatus::InstructionLimit:
    return "instruction-limit";
  }
  return "?";
}

struct Simulator::Impl {
  Impl(const ChipConfig &cfg, const SimOptions &opts) : ctx(cfg, opts), chip("tnpu", ctx) {}
  ChipContext ctx;
  Chip chip;
  bool ran = false;

  std::string stats_json(uint64_t cycles) const;
};

Simulator::Simulator(const ChipConfig &config, const SimOptions &options)
    : impl_(std::make_unique<Impl>(config, options)) {
  // SystemC's own messages for an sc_stop() after the end are not errors here.
  sc_core::sc_report_handler::set_actions(sc_core::SC_ID_SIMULATION_STOP_CALLED_TWICE_,
                                          sc_core::SC_DO_NOTHING);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
}

Simulator::~Simulator() = default;

void Simulator::load_program(int core, const std::vector<isa::Instr> &code) {
  for (auto &c : impl_->chip.cores)
    if (core < 0 || c->state.id == core)
      c->program = code;
}

void Simulator::write_hbm(uint64_t address, const void *data, size_t bytes) {
  impl_->chip.hbm.store.write(address, data, bytes);
}

void Simulator::read_hbm(uint64_t address, void *data, size_t bytes) const {
  impl_->chip.hbm.store.read(address, data, bytes);
}

void Simulator::write_local(int core, uint64_t address, const void *data, size_t bytes) {
  std::memcpy(impl_->chip.cores.at(core)->state.mem.span(address, bytes, "write_local"), data,
              bytes);
}

void Simulator::read_local(int core, uint64_t address, void *data, size_t bytes) const {
  std::memcpy(data, impl_->chip.cores.at(core)->state.mem.span(address, bytes, "read_local"),
              bytes);
}

uint64_t Simulator::reg(int core, int index) const {
  return impl_->chip.cores.at(core)->regs[index];
}

void Simulator::set_compute_data(bool on) {
  sc_assert(!impl_->ran && "set_compute_data comes before run()");
  impl_->ctx.opts.compute_data = on;
  for (auto &c : impl_->chip.cores)
    if (!on && !c->state.mem.tracking())
      c->state.mem.track_stale();
}

SimReport Simulator::run() {
  sc_assert(!impl_->ran && "a Simulator runs once per process");
  impl_->ran = true;
  const auto t0 = std::chrono::steady_clock::now();
  sc_core::sc_start();
  SimReport r;
  r.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ChipContext &ctx = impl_->ctx;
  uint64_t end = impl_->chip.end_ps;
  if (!ctx.failed() && end == 0 && ChipContext::now_ps() > 0)
    end = ChipContext::now_ps();
  bool all_halted = true;
  for (const auto &c : impl_->chip.cores)
    all_halted = all_halted && c->halted;
  if (!ctx.failed() && !all_halted) // the kernel ran out of events: a deadlock
    ctx.status = SimStatus::Hang, ctx.message = "deadlock: every process is blocked";
  if (ctx.failed() && end == 0)
    end = ChipContext::now_ps();
  r.status = ctx.status;
  r.message = ctx.message;
  r.cycles = static_cast<uint64_t>(std::llround(static_cast<double>(end) / ctx.ps_per_cycle));
  r.stats_json = impl_->stats_json(r.cycles);
  if (ctx.opts.trace)
    r.trace_json = ctx.trace.to_json();
  return r;
}

std::string Simulator::Impl::stats_json(uint64_t cycles) const {
  using json = nlohmann::ordered_json;
  const ChipConfig &cfg = ctx.cfg;
  const double seconds = static_cast<double>(cycles) / cfg.clock;
  json j;
  j["chip"] = cfg.name;
  j["fidelity"] = ctx.timed() ? "cycle-approximate" : "functional";
  j["matrix_unit"] = matrix_kind_name(cfg.core.matrix.kind);
  j["status"] = status_name(ctx.status);
  j["total_cycles"] = cycles;
  j["simulated_seconds"] = seconds;
  json units = json::object();
  for (const model::Stat &s : ctx.stats.all()) {
    const std::string suffix = ".busy_cycles";
    if (s.name.size() > suffix.size() &&
        s.name.compare(s.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      const std::string unit = s.name.substr(0, s.name.size() - suffix.size());
      units[unit] = {{"busy_cycles", s.value},
                     {"busy_fraction", cycles > 0 ? s.value / static_cast<double>(cycles) : 0.0},
                     {"commands", ctx.stats.find(unit + ".commands")->value}};
    }
  }
  j["units"] = units;
  const double hr = ctx.stats.sum("hbm.read_bytes"), hw = ctx.stats.sum("hbm.write_bytes");
  j["bytes"] = {{"hbm_read", hr},
                {"hbm_write", hw},
                {"sram", ctx.stats.sum(".sram_bytes")},
                {"accumulator", ctx.stats.sum(".acc_bytes")}};
  j["hbm_bandwidth_bytes_per_s"] = seconds > 0 ? (hr + hw) / seconds : 0.0;
  j["hbm_peak_bytes_per_s"] = cfg.hbm.bandwidth;
  const double flop = ctx.stats.sum(".flop");
  j["flop"] = flop;
  j["flop_per_s"] = seconds > 0 ? flop / seconds : 0.0;
  if (cfg.core.matrix.kind == MatrixKind::CrossCheck) {
    json check = json::object();
    for (const auto &c : chip.cores)
      if (const auto *u = dynamic_cast<const model::RtlMatrixUnit *>(c->mx.get()))
        check[c->state.prefix()] = json::parse(u->cross_check_json());
    j["cross_check"] = check;
  }
  j["stats"] = json::parse(ctx.stats.to_json_items());
  return j.dump(2);
}

} // namespace tl::npu
