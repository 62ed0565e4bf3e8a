// HBM shared by all cores: a TLM-2.0 target (one socket per DMA engine) that stores data and times
// each request on its channel: service = bytes / (bandwidth / channels) in the earliest free gap of
// the channel's calendar at or after the request's arrival, then + latency.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "context.h"
#include "memory.h"

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <vector>

namespace tl::npu::model {

class Hbm : public sc_core::sc_module {
public:
  Hbm(sc_core::sc_module_name name, ChipContext &chip);

  tlm_utils::multi_passthrough_target_socket<Hbm> socket;
  HbmStore store;

  /// Channel of an address (addresses interleave over channels every `interleave` bytes).
  int channel_of(uint64_t address) const;

private:
  /// A request must not cross an interleave boundary (the DMA engines split at them). On entry
  /// `delay` is the request's arrival offset from now; on return, its completion offset.
  void b_transport(int id, tlm::tlm_generic_payload &trans, sc_core::sc_time &delay);

  ChipContext &chip_;
  std::vector<ChannelCalendar> calendars_;
  double ps_per_byte_; ///< per channel
  uint64_t latency_ps_;
  Stat &read_bytes_, &write_bytes_;
};

} // namespace tl::npu::model
