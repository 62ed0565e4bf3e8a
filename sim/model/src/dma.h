// A DMA engine: strided 2-D/3-D boxes between HBM and local memory. Loads read only the valid
// part of each row from HBM (elements at or beyond the valid extents are filled with the pad
// pattern); stores write only valid elements. Timing: setup, then requests issued at the engine's
// bandwidth, each split at HBM interleave boundaries and timed by the HBM; the command ends when
// the last request completes, or when the busiest SRAM bank is done if that is later. Indexed
// commands move one row per index of a local index tile: gather, scatter, and atomic add (a read
// and a write request per row, with no other access in between: atomic against every engine).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "hbm.h"
#include "unit.h"

#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

namespace tl::npu::model {

class DmaEngine : public Unit {
public:
  DmaEngine(sc_core::sc_module_name name, CoreState &core, int index, int track);
  tlm_utils::simple_initiator_socket<DmaEngine> socket;

private:
  uint64_t execute(const Command &c) override;
  /// dma.gather / dma.scatter / dma.atadd: one row of n0 elements per index.
  uint64_t execute_indexed(const Command &c);
  /// The element-wise read-modify-write of dma.atadd on the first n elements of one row.
  void atomic_add_row(const DmaDesc &d, uint64_t hbm, uint8_t *local, uint64_t n);
  /// One row: `bytes` between HBM `hbm` and local pointer `local`; advances the issue clock and
  /// the completion time.
  void transfer_row(bool load, uint64_t hbm, uint8_t *local, uint64_t bytes);
  /// Arithmetic off: a moved row carries its source's staleness (LocalMemory::track_stale) to
  /// the destination; `local_bytes` of the local side, `valid` of HBM.
  void carry_stale(bool load, uint64_t hbm, uint64_t local, uint64_t local_bytes, uint64_t valid);

  tlm::tlm_generic_payload trans_;
  double ps_per_byte_;
  uint64_t issue_ps_ = 0, done_ps_ = 0; // offsets from the command's start
  Stat &hbm_bytes_, &sram_bytes_, &acc_bytes_;
};

} // namespace tl::npu::model
