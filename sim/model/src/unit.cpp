// Unit queue and thread (see unit.h).
// SPDX-License-Identifier: Apache-2.0
#include "unit.h"

#include <sstream>

namespace tl::npu::model {

Unit::Unit(sc_core::sc_module_name name, CoreState &core, const std::string &label, int track,
           size_t stack_bytes)
    : sc_module(name), core_(core), chip_(core.chip), label_(label), track_(track),
      queue_(core.chip.cfg.core.queue_depth),
      busy_(chip_.stats.add(core.prefix() + "." + label + ".busy_cycles", "cycles",
                            "cycles spent executing commands")),
      commands_(chip_.stats.add(core.prefix() + "." + label + ".commands", "commands",
                                "commands executed, semaphore commands included")),
      flop_(chip_.stats.add(core.prefix() + "." + label + ".flop", "flop",
                            "arithmetic operations (a multiply-add is 2)")) {
  hang_at_ = fault_index(Fault::Kind::Hang);
  error_at_ = fault_index(Fault::Kind::DmaError);
  chip_.trace.name_track(core.id, track, label);
  SC_HAS_PROCESS(Unit);
  SC_THREAD(run);
  if (stack_bytes)
    set_stack_size(stack_bytes);
}

uint64_t Unit::fault_index(Fault::Kind kind) const {
  for (const Fault &f : chip_.opts.faults)
    if (f.kind == kind && f.core == core_.id && f.unit == label_)
      return f.command;
  return UINT64_MAX;
}

void Unit::push(const Command &c) {
  ++outstanding_;
  queue_.write(c);
}

std::string Unit::where(const Command &c) const {
  std::ostringstream s;
  s << core_.prefix() << " " << label_ << ": command #" << executed_ << " ("
    << isa::op_info(c.op).mnemonic << " at pc " << c.pc << ")";
  return s.str();
}

std::string Unit::describe() const {
  if (outstanding_ == 0)
    return "";
  std::ostringstream s;
  if (current_ != nullptr)
    s << where(*current_) << " running since cycle "
      << static_cast<uint64_t>(current_start_ps_ / chip_.ps_per_cycle);
  else
    s << core_.prefix() << " " << label_ << ": " << outstanding_ << " command(s) queued";
  return s.str();
}

void Unit::settle_results(bool all) {
  bool advanced = false;
  while (results_pending() && (all || queue_.num_available() == 0)) {
    advanced = true;
    uint64_t dur = 0;
    try {
      dur = advance_results();
    } catch (const ProgramError &e) {
      chip_.fail(SimStatus::ProgramError, core_.prefix() + " " + label_ + ": " + e.what());
      sc_core::wait(never_);
    }
    if (busy_is_duration())
      busy_ += static_cast<double>(dur) / chip_.ps_per_cycle;
    if (dur > 0 && !all)
      sc_core::wait(ChipContext::ps(dur), queue_.data_written_event());
    else if (dur > 0)
      sc_core::wait(ChipContext::ps(dur));
  }
  if (advanced && !results_pending()) { // now idle: a fence may be waiting for it
    chip_.progress();
    core_.unit_done.notify(sc_core::SC_ZERO_TIME);
  }
}

void Unit::run_sem(const Command &c) {
  if (c.op == isa::Opcode::SemSig) {
    settle_results(true); // the signal says this queue's earlier commands are done
    core_.sem[c.sem] += c.count;
    core_.sem_changed.notify(sc_core::SC_ZERO_TIME);
    return;
  }
  while (core_.sem[c.sem] < c.count)
    sc_core::wait(core_.sem_changed);
  core_.sem[c.sem] -= c.count;
}

void Unit::run() {
  for (;;) {
    settle_results(false);
    Command c = queue_.read();
    current_ = &c;
    current_start_ps_ = ChipContext::now_ps();
    if (c.op == isa::Opcode::SemSig || c.op == isa::Opcode::SemWait) {
      run_sem(c);
    } else {
      if (executed_ == hang_at_)
        sc_core::wait(never_); // the injected hang: the watchdog reports it
      if (executed_ == error_at_) {
        chip_.fail(SimStatus::DmaError, where(c) + " failed: injected DMA error");
        sc_core::wait(never_);
      }
      uint64_t dur = 0;
      try {
        dur = execute(c);
      } catch (const ProgramError &e) {
        chip_.fail(SimStatus::ProgramError, where(c) + ": " + e.what());
        sc_core::wait(never_);
      }
      if (dur > 0)
        sc_core::wait(ChipContext::ps(dur));
      if (busy_is_duration())
        busy_ += static_cast<double>(dur) / chip_.ps_per_cycle;
      flop_ += flops(c);
      if (chip_.trace.enabled())
        chip_.trace.complete(core_.id, track_, isa::op_info(c.op).mnemonic, current_start_ps_,
                             trace_duration(dur), "pc " + std::to_string(c.pc));
      ++executed_;
    }
    commands_ += 1;
    current_ = nullptr;
    --outstanding_;
    chip_.progress();
    core_.unit_done.notify(sc_core::SC_ZERO_TIME);
  }
}

} // namespace tl::npu::model
