// One TNPU core: the command processor (scalar registers, control flow, unit configuration
// registers) issuing commands to decoupled unit queues: DMA engines, the matrix unit and the
// vector unit. The command processor costs issue_cycles per instruction and only synchronizes
// with simulated time when it touches a queue, a semaphore or a fence (a local time offset, as
// TLM-2.0 loosely-timed initiators keep).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "command.h"
#include "context.h"
#include "dma.h"
#include "matrix.h"
#include "vector.h"

#include <systemc>

#include <functional>
#include <memory>
#include <vector>

namespace tl::npu::model {

/// All cores meet here on `barrier`.
struct Barrier {
  int cores = 0, arrived = 0;
  uint64_t generation = 0;
  sc_core::sc_event released;
};

class Core : public sc_core::sc_module {
public:
  Core(sc_core::sc_module_name name, ChipContext &chip, int id, Barrier &barrier);

  CoreState state;
  std::vector<std::unique_ptr<DmaEngine>> dma;
  std::unique_ptr<Unit> mx; ///< MatrixUnit, or RtlMatrixUnit (core.matrix.kind)
  std::unique_ptr<VectorUnit> vec;
  std::vector<isa::Instr> program;
  uint64_t regs[isa::kNumRegs] = {};
  bool halted = false;
  uint64_t halt_ps = 0;
  /// Set by the chip: called once when this core halts.
  std::function<void()> on_halt;

  /// Where this core is stuck, for hang reports ("" if halted).
  std::string describe() const;

private:
  void run();
  /// Executes one instruction; returns false at halt.
  bool step(const isa::Instr &in);
  void exec_scalar(const isa::Instr &in);
  void exec_config(const isa::Instr &in);
  /// ld / ldw / ldb / st / stw / stb on the core's local memory.
  void exec_memory(const isa::Instr &in);
  void dispatch(const isa::Instr &in);
  void exec_sync(const isa::Instr &in);
  void fence();
  void barrier();
  void sync();
  Unit &queue(int q);
  void set_reg(int r, uint64_t v) {
    if (r != 0)
      regs[r] = v;
  }

  ChipContext &chip_;
  Barrier &barrier_;
  uint64_t pc_ = 0;
  uint64_t local_ps_ = 0; // time the command processor is ahead of the kernel
  const uint64_t issue_ps_;
  std::string waiting_; // what a blocked command processor waits for
  DmaDesc dma_;
  MxCfg mx_;
  VecCfg vec_;
  Stat &instructions_, &stall_;
};

} // namespace tl::npu::model
