// The TNPU matrix unit's RTL (sim/rtl/sv, verilated) run cycle by cycle: the fast model's matrix
// commands in, a byte-addressed scratchpad for weights, A and C, and the cycles of each command.
// SPDX-License-Identifier: Apache-2.0
//
// What this driver promises:
//  - Results are whatever the RTL writes through its C-row port (the array -> accumulator
//    interface); the driver only moves bytes between that port, the read ports and memory.
//  - Commands mean what they mean in the fast model (sim/model/src/matrix.cpp): mx.pre latches a
//    k x n weight tile (k <= rows, n <= cols); mx.mm / mx.mma stream m rows of A through the last
//    preloaded tile into C, each C[i][j] one MAC chain over k in order, from -0 (i8: 0) or from
//    the C in memory. Commands run in submission order; later commands overlap earlier ones the
//    way the hardware does (a preload fills the shadow bank while an mm streams).
//  - Cycles are counted from the reset, one per rising edge; a command's `accepted` is the edge
//    the unit took it, `done` the edge its last weight row / C row was written.
//  - A command the unit rejects (tile larger than the array, unknown mode, no weights, mode
//    differing from the preloaded weights') and an access outside the scratchpad stop run() with
//    an RtlError naming the command; fields too wide for the unit's ports are rejected at submit.
// No Verilator or SystemC header is included here.
#pragma once

#include "tl/npu/numerics.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace tl::npu::rtl {

enum class MxOp : uint8_t { Preload = 0, Multiply = 1, MultiplyAccumulate = 2 };

/// One matrix-unit command; addresses and strides are scratchpad byte offsets.
struct MxCommand {
  MxOp op = MxOp::Preload;
  num::DType mode = num::DType::BF16; ///< BF16, F16, F32 or I8
  uint32_t k = 0, n = 0;              ///< Preload: the weight tile's shape
  uint32_t m = 0;                     ///< Multiply*: rows of A
  uint32_t src = 0, src_stride = 0;   ///< Preload: the weights W (k x n); Multiply*: A (m x k)
  uint32_t dst = 0, dst_stride = 0;   ///< Multiply*: C (m x n, f32 / i32)
};

/// When the unit took a command and when it finished (rising edges since reset).
struct CommandCycles {
  uint64_t accepted = 0;
  uint64_t done = 0;
};

/// A command the RTL rejected, a scratchpad access out of range, or a unit that stopped moving.
class RtlError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The port-level view of one verilated configuration (see sim/rtl/src/verilated_model.h).
class Model {
public:
  enum class ReadPort { Weights, A, Accumulator };
  struct Read {
    bool valid = false;
    uint32_t addr = 0, count = 0; ///< bytes from addr: count elements of dtype
    num::DType dtype = num::DType::F32;
  };
  /// The registered outputs after a rising edge.
  struct Edge {
    Read weights, a, accumulator;
    bool c_write = false;
    uint32_t c_addr = 0, c_count = 0;
    const uint32_t *c_data = nullptr; ///< cols() f32 / i32 lanes, valid until the next edge
    bool pre_done = false, mm_done = false, error = false;
    uint8_t pre_tag = 0, mm_tag = 0, error_tag = 0, error_code = 0;
  };
  struct Command {
    MxOp op;
    uint8_t mode;
    uint16_t k, n;
    uint32_t m, src, src_stride, dst, dst_stride;
    uint8_t tag;
  };

  virtual ~Model() = default;
  virtual int rows() const = 0;
  virtual int cols() const = 0;
  virtual int fp32_passes() const = 0;
  virtual void set_reset(bool active) = 0;
  virtual void set_command(const Command *c) = 0; ///< nullptr: no command this cycle
  /// The elements a read asked for at the previous edge (rows() lanes for A, else cols()).
  virtual void set_read_data(ReadPort port, const uint32_t *lanes) = 0;
  /// Whether the memory takes a weight / A row request at the next edge (w_rd_ready, a_rd_ready).
  virtual void set_read_ready(bool weights, bool a) = 0;
  /// Settles the inputs; returns whether the unit takes the command at the next edge.
  virtual bool settle() = 0;
  virtual void rising_edge(Edge &out) = 0;
  /// Writes a VCD of every signal to `path` while *cycle (the driver's cycle count, read at each
  /// half cycle; VCD time = 2 x cycle) is in [from, to); throws RtlError unless this build
  /// verilated the unit with waveforms (TL_NPU_RTL_TRACE=ON).
  virtual void open_trace(const std::string &path, uint64_t from, uint64_t to,
                          const uint64_t *cycle) = 0;
};

/// The memory behind the unit's ports, in the unit's 32-bit byte addresses. A simulator maps its
/// core's SRAM and accumulator here, so that the unit reads and writes them in place.
class Memory {
public:
  virtual ~Memory() = default;
  /// [addr, addr + bytes) for reading (`write` false) or writing; throws (any std::exception)
  /// naming `what` if the range is not memory.
  virtual uint8_t *span(uint32_t addr, size_t bytes, bool write, const char *what) = 0;
};

/// The SRAM banks behind the unit's read ports: each of `banks` banks serves one `width`-byte word
/// (address / width, interleaved over the banks) per edge, so a row read takes as many edges as
/// its busiest bank has words; addresses from `end` on (the accumulator) are not banked. A weight
/// row is one request; an A row and an mx.mma's C row, read at the same edge, are one together.
/// banks = 0: unlimited (every row in one edge).
struct SramBanks {
  uint32_t banks = 0, width = 0;
  uint32_t end = 0;
};

/// One C row as it leaves the array for the accumulator, before it is written (so that an
/// mx.mma's old C row is still in memory): which command, which row, its lanes.
struct CRow {
  size_t command = 0;
  uint32_t row = 0;
  uint32_t addr = 0, count = 0;
  const uint32_t *data = nullptr;
};

/// Drives one Model: a command queue, the scratchpad and the cycle count.
class MatrixRtl {
public:
  /// With its own zeroed scratchpad of `memory_bytes` (memory()).
  MatrixRtl(std::unique_ptr<Model> model, size_t memory_bytes);
  /// Over `memory`, which must outlive this driver.
  MatrixRtl(std::unique_ptr<Model> model, Memory &memory);
  ~MatrixRtl();
  MatrixRtl(const MatrixRtl &) = delete;
  MatrixRtl &operator=(const MatrixRtl &) = delete;

  int rows() const;
  int cols() const;
  int fp32_passes() const;
  /// The driver's own scratchpad (the first constructor; empty otherwise).
  uint8_t *memory() { return owned_.data(); }
  size_t memory_size() const { return owned_.size(); }

  /// Queues a command; returns its index into cycles(). Throws std::invalid_argument for a
  /// field the unit's ports cannot carry (k or n above 65535, a mode code above 7).
  size_t submit(const MxCommand &c);
  /// One rising edge: the next queued command is offered, memory answers the unit.
  void step();
  /// Steps until every submitted command is done; RtlError if the unit rejects one, reads or
  /// writes outside the scratchpad, or makes no progress for `stall_limit` cycles.
  void run(uint64_t stall_limit = 1'000'000);
  /// Whether a submitted command is not done yet.
  bool busy() const { return done_count_ < commands_.size(); }
  /// Whether a submitted command is not accepted yet.
  bool pending() const { return next_ < commands_.size(); }
  /// Whether the next queued command would be taken at the next edge (nothing changes).
  bool would_accept();
  /// Steps to cycle `target` (no earlier than cycle()). Once the unit is idle (every command
  /// done, no bank wait left) the rest of an idle
  /// stretch is skipped: an idle unit's state no longer changes, so this is exact and a long gap
  /// costs nothing.
  void advance_to(uint64_t target);
  /// A VCD of the unit's signals for the cycles [from, to) of cycle() (Model::open_trace).
  void trace(const std::string &path, uint64_t from, uint64_t to) {
    model_->open_trace(path, from, to, &cycle_);
  }
  /// The banks that limit the read ports from now on (SramBanks; none by default). Throws
  /// std::invalid_argument for a width of 0 with banks.
  void set_sram_banks(const SramBanks &b);
  /// Called with every C row before it is written (the cross-check compares them there).
  std::function<void(const CRow &)> on_c_row;

  uint64_t cycle() const { return cycle_; }
  /// Edges after which a command was taken and not yet done (the unit's busy cycles).
  uint64_t active_edges() const { return active_edges_; }
  const std::vector<CommandCycles> &cycles() const { return cycles_; }

private:
  void answer(Model::ReadPort port, const Model::Read &r, size_t lanes);
  void complete(uint8_t tag, uint64_t edge);
  void write_c_row(const Model::Edge &e);
  std::string describe(size_t index) const;

  struct OwnedMemory final : Memory {
    explicit OwnedMemory(std::vector<uint8_t> &bytes) : bytes_(bytes) {}
    uint8_t *span(uint32_t addr, size_t bytes, bool write, const char *what) override;
    std::vector<uint8_t> &bytes_;
  };
  void reset();
  uint8_t *span(uint32_t addr, size_t bytes, bool write, const char *what);

  std::unique_ptr<Model> model_;
  std::vector<uint8_t> owned_;
  OwnedMemory own_memory_{owned_};
  Memory *memory_;
  std::vector<MxCommand> commands_;
  std::vector<CommandCycles> cycles_;
  std::vector<uint8_t> finished_;
  size_t next_ = 0;       // the next command to offer
  size_t done_count_ = 0; // commands finished
  uint64_t cycle_ = 0;
  int64_t in_flight_[256]; // tag -> command index, -1 if free
  std::vector<uint32_t> lanes_;
  Model::Edge edge_;
  // The mx.mm / mx.mma commands whose C rows are still to come, oldest first, and the next row
  // of the oldest: each C write is checked against its command's address and counted.
  std::vector<size_t> c_owed_;
  size_t c_head_ = 0;
  uint32_t c_row_ = 0;
  /// Edges the banks need for the rows [addr, addr + bytes) read together (at least 1).
  uint32_t bank_edges(std::initializer_list<std::pair<uint32_t, uint32_t>> rows);
  SramBanks banks_;
  std::vector<uint32_t> bank_words_; // per bank, for bank_edges
  uint32_t w_wait_ = 0, a_wait_ = 0; // edges the weight / A port stays busy
  uint64_t active_edges_ = 0;
};

} // namespace tl::npu::rtl
