// The TNPU simulator's public interface: load programs and memory, run, read results and reports.
// SPDX-License-Identifier: Apache-2.0
//
// Plain C++17: SystemC stays behind this interface (sim/model/src). A SystemC design elaborates
// once per process, so a process constructs and runs at most one Simulator.
//
// Semantics promised:
//  - Deterministic: the same config, programs, memory and options give the same results, cycles,
//    stats and trace.
//  - Fidelity::Functional runs every command in zero time (results only); CycleApprox times every
//    unit from the config (sim/model/README.md gives the formulas).
//  - A run never hangs the host: a program error (bad address, unknown pc), an injected fault, a
//    deadlock or a unit that makes no progress for hang_timeout cycles ends the run with a status
//    and a message naming the core, unit, command and pc.
#pragma once

#include "tl/npu/config.h"
#include "tl/npu/isa.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tl::npu {

enum class Fidelity { Functional, CycleApprox };

/// An injected fault (see sim/model/README.md, "Fault injection").
struct Fault {
  enum class Kind { SramFlip, HbmFlip, DmaError, Hang } kind = Kind::SramFlip;
  int core = 0;
  uint64_t address = 0; ///< SramFlip: local address (ACC + offset for the accumulator); HbmFlip
  int bit = 0;          ///< bit 0..7 of the byte at `address`
  uint64_t cycle = 0;   ///< flips happen at this cycle
  std::string unit;     ///< DmaError / Hang: "dma0".., "mx", "vec"
  uint64_t command = 0; ///< DmaError / Hang: 0-based index of the unit's command that fails
};

/// Parses "sram-flip:core=0,addr=0x40,bit=3,cycle=100", "hbm-flip:addr=..,bit=..,cycle=..",
/// "dma-error:core=0,unit=dma1,command=2", "hang:core=0,unit=mx,command=0". Throws
/// std::invalid_argument naming the problem.
Fault parse_fault(const std::string &spec);

struct SimOptions {
  Fidelity fidelity = Fidelity::CycleApprox;
  bool trace = false;                      ///< collect the Chrome/Perfetto trace
  uint64_t hang_timeout_cycles = 10000000; ///< no unit progress for this long is a hang
  uint64_t max_instructions = 1000000000;  ///< per core; beyond it the run stops
  /// false (arithmetic off) skips the matrix unit's multiply-accumulate, the cost that grows as
  /// m·k·n; data moves and vector commands still happen, and every bounds check is kept. Timing
  /// depends on data only through addresses (index tiles, scalar loads); reading a value the
  /// skipped arithmetic should have produced there ends the run with a program error instead of
  /// a wrong time. Otherwise cycles are identical: for performance studies of large problems.
  bool compute_data = true;
  std::vector<Fault> faults;
  /// An RTL matrix unit (core.matrix.kind "rtl" / "cross-check") writes a VCD of its signals for
  /// the cycles [vcd_from, vcd_to) here (core N > 0: "<stem>.coreN<ext>"); needs a build with
  /// TL_NPU_RTL_TRACE=ON (otherwise the run fails saying so). Empty: none.
  std::string rtl_vcd;
  uint64_t vcd_from = 0, vcd_to = 100000;
};

enum class SimStatus { Ok, ProgramError, DmaError, Hang, InstructionLimit };
const char *status_name(SimStatus s);

struct SimReport {
  SimStatus status = SimStatus::Ok;
  std::string message;     ///< empty when Ok
  uint64_t cycles = 0;     ///< simulated cycles until the last core halted (or the run stopped)
  double host_seconds = 0; ///< wall time of run()
  std::string stats_json;  ///< every registered statistic plus the summary (README lists them)
  std::string trace_json;  ///< Chrome trace event format; empty unless SimOptions::trace
};

class Simulator {
public:
  Simulator(const ChipConfig &config, const SimOptions &options);
  ~Simulator();
  Simulator(const Simulator &) = delete;
  Simulator &operator=(const Simulator &) = delete;

  /// The program core `core` runs; -1 loads it on every core (they tell themselves apart with
  /// `coreid`). A core without a program halts at once.
  void load_program(int core, const std::vector<isa::Instr> &code);
  /// Host access to HBM (throws std::out_of_range beyond hbm.size).
  void write_hbm(uint64_t address, const void *data, size_t bytes);
  void read_hbm(uint64_t address, void *data, size_t bytes) const;
  /// Host access to a core's local memory (SRAM, or the accumulator at isa::kAccBase + offset).
  void write_local(int core, uint64_t address, const void *data, size_t bytes);
  void read_local(int core, uint64_t address, void *data, size_t bytes) const;
  /// Scalar register of a core after the run.
  uint64_t reg(int core, int index) const;

  /// Before run(): switches SimOptions::compute_data (tests run one loaded simulation forked
  /// into both modes and compare them).
  void set_compute_data(bool on);

  /// Runs to completion once; a second call is a bug.
  SimReport run();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace tl::npu
