// The fast model's matrix-unit timing: the RTL's pipeline (sim/rtl/sv/mx_unit.sv) as closed
// forms per command, so that the model's cycles match the RTL's without clocking it. Plain C++,
// shared by the model (matrix.cpp) and the RTL cross-check (matrix_cross_check.cpp).
// SPDX-License-Identifier: Apache-2.0
//
// Cycles are clock edges. A command offered from cycle `issue` is taken at the first edge after
// it at which the unit is ready, one command per edge, in order:
//  - mx.pre needs the load engine: it writes R weight rows, one per edge, into the shadow bank
//    (an mm may stream meanwhile) and is done one edge after the last;
//  - mx.mm / mx.mma need the stream engine and the load engine (an mm computes with the weights
//    of the last preload): one A row per edge (f32: per P edges) from the edge after it is
//    taken; each C row is written R + C + 1 edges after its row issued; the next mm can be taken
//    at the edge of this one's last slot (f32: P - 1 edges later), so back-to-back commands
//    stream without a bubble and an idle gap costs exactly the gap;
//  - a row read (weights, A, mx.mma's C) waits until no C row still to be written overlaps it
//    (the RTL's read-after-write interlock), so a chained mx.mma waits for the previous rows;
//  - the SRAM banks (MxBanks, core.sram) serve one word per bank per edge: a weight row, or an A
//    row with an mx.mma's C row, whose busiest bank has w words keeps its read port busy for w
//    edges, so the next row on that port issues w edges later at the earliest (a row per edge
//    as long as a row spans no more words than there are banks).
#pragma once

#include "tl/npu/config.h"

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <utility>
#include <vector>

namespace tl::npu::model {

/// One matrix command's timing inputs: addresses and strides in bytes (any one address space).
struct MxTimingCommand {
  bool preload = false, accumulate = false;
  uint64_t m = 0;                   ///< mm rows
  uint64_t k = 0, n = 0;            ///< preload: the tile; mm: the tile it computes with
  uint64_t elem_bytes = 2;          ///< input element size
  int passes = 1;                   ///< edges per A row (fp32_passes in f32 mode)
  uint64_t src = 0, src_stride = 0; ///< weights (preload) or A
  uint64_t dst = 0, dst_stride = 0; ///< C (mm)
};

/// The SRAM banks behind the read ports: `banks` banks of `width` bytes, interleaved by word;
/// addresses from `end` on are not banked (the accumulator). banks = 0: no limit.
struct MxBanks {
  uint64_t banks = 0, width = 0, end = 0;
};

struct MxTimes {
  uint64_t accept = 0; ///< the edge the unit took the command
  uint64_t done = 0;   ///< the edge its last weight row / C row was written
};

class MatrixTiming {
public:
  explicit MatrixTiming(const MatrixConfig &mc, MxBanks banks = {})
      : rows_(mc.rows), cols_(mc.cols), banks_(banks) {}
  /// The banks of a chip's SRAM (core.sram) below `end`, the first address that is not SRAM.
  static MxBanks sram_banks(const SramConfig &sram, uint64_t end) {
    return MxBanks{static_cast<uint64_t>(sram.banks), static_cast<uint64_t>(sram.bank_width), end};
  }

  /// The command offered from cycle `issue` on (no earlier than the previous one's issue).
  MxTimes command(const MxTimingCommand &c, uint64_t issue);
  /// The last done edge so far.
  uint64_t done() const { return done_; }

private:
  /// The edge from which a read of [lo, hi) sees no C write still to come.
  uint64_t clear_after(uint64_t lo, uint64_t hi) const;
  /// Edges the banks need to serve the rows [lo, lo + bytes) read together (at least 1).
  uint64_t bank_edges(std::initializer_list<std::pair<uint64_t, uint64_t>> rows) const;

  struct Flight { // an mm's C rows: row j at dst + j * stride, n bytes, written at edge write[j]
    uint64_t dst, stride, bytes;
    std::vector<uint64_t> write;
  };
  uint64_t rows_, cols_;
  MxBanks banks_;
  uint64_t w_ready_ = 0; // the first edge the weight read port takes a row
  uint64_t a_ready_ = 0; // the same for the A port
  uint64_t last_accept_ = 0;
  uint64_t ld_free_ = 0; // the first edge the load engine can take a command
  uint64_t st_free_ = 0; // the same for the stream engine
  uint64_t done_ = 0;
  std::deque<Flight> flights_; // mm commands whose last C row may still be in flight
};

} // namespace tl::npu::model
