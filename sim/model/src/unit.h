// A unit of a core: a bounded command queue (filled by the command processor) and one thread that
// runs the queue in order. Subclasses supply execute(): the functional effect and the duration.
// Semaphore commands (sem.sig / sem.wait) are handled here for every unit.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "command.h"
#include "context.h"

#include <systemc>

#include <string>

namespace tl::npu::model {

class Unit : public sc_core::sc_module {
public:
  /// `label` names the queue ("mx", "vec", "dma0"); `track` is its row in the trace;
  /// `stack_bytes` (0: SystemC's default) the stack of the thread that runs the commands.
  Unit(sc_core::sc_module_name name, CoreState &core, const std::string &label, int track,
       size_t stack_bytes = 0);

  /// Called by the command processor thread; blocks while the queue is full.
  void push(const Command &c);
  /// No command queued or running, and no result still on its way to memory.
  bool idle() const { return outstanding_ == 0 && !results_pending(); }
  const std::string &label() const { return label_; }
  /// "core0 mx: command #3 (mx.mm at pc 12) running since cycle 100", or "" if idle.
  std::string describe() const;

protected:
  /// Performs `c`'s effect and returns its duration in ps (0 in functional mode). Throws
  /// ProgramError for a misconfigured command.
  virtual uint64_t execute(const Command &c) = 0;
  /// Floating-point/integer operations `c` performed (for FLOP/s).
  virtual double flops(const Command &c) const { return 0; }
  /// A unit whose execute() returns before its results count as written (the matrix unit: its
  /// array drains while the next command fills) says so here; advance_results() moves them on
  /// (the RTL by one edge, the model to the last one), returning the ps to wait. The queue calls
  /// it while nothing else is queued and before a sem.sig, so that neither an idle unit nor a
  /// signal runs ahead of the results.
  virtual bool results_pending() const { return false; }
  virtual uint64_t advance_results() { return 0; }
  /// Whether busy_cycles is the sum of execute()'s durations; a pipelined unit (the matrix unit)
  /// counts its own cycles with work in flight through add_busy() instead.
  virtual bool busy_is_duration() const { return true; }
  void add_busy(double cycles) { busy_ += cycles; }
  /// How long the trace shows the command that just ran, from its start; execute()'s duration
  /// unless the unit knows when the command's work ends (the matrix model: its last C row).
  virtual uint64_t trace_duration(uint64_t duration) const { return duration; }
  std::string where(const Command &c) const;

  CoreState &core_;
  ChipContext &chip_;

private:
  void run();
  void run_sem(const Command &c);
  /// Advances pending results while the queue stays empty (all of them if `all`).
  void settle_results(bool all);
  uint64_t fault_index(Fault::Kind kind) const;

  std::string label_;
  int track_;
  sc_core::sc_fifo<Command> queue_;
  int outstanding_ = 0;
  uint64_t executed_ = 0;
  uint64_t hang_at_, error_at_;
  const Command *current_ = nullptr;
  uint64_t current_start_ps_ = 0;
  sc_core::sc_event never_;
  Stat &busy_, &commands_, &flop_;
};

} // namespace tl::npu::model
