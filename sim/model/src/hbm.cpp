// HBM target (see hbm.h).
// SPDX-License-Identifier: Apache-2.0
#include "hbm.h"

#include <cmath>

namespace tl::npu::model {

Hbm::Hbm(sc_core::sc_module_name name, ChipContext &chip)
    : sc_module(name), socket("socket"), store(chip.cfg.hbm.size), chip_(chip),
      calendars_(chip.cfg.hbm.channels),
      ps_per_byte_(1e12 * chip.cfg.hbm.channels / chip.cfg.hbm.bandwidth),
      latency_ps_(chip.seconds_ps(chip.cfg.hbm.latency)),
      read_bytes_(chip.stats.add("hbm.read_bytes", "bytes", "bytes read from HBM")),
      write_bytes_(chip.stats.add("hbm.write_bytes", "bytes", "bytes written to HBM")) {
  socket.register_b_transport(this, &Hbm::b_transport);
}

int Hbm::channel_of(uint64_t address) const {
  return static_cast<int>((address / chip_.cfg.hbm.interleave) % chip_.cfg.hbm.channels);
}

void Hbm::b_transport(int, tlm::tlm_generic_payload &trans, sc_core::sc_time &delay) {
  const uint64_t addr = trans.get_address(), len = trans.get_data_length();
  const uint64_t gran = chip_.cfg.hbm.interleave;
  sc_assert(len > 0 && addr / gran == (addr + len - 1) / gran);
  if (addr > store.size() || len > store.size() - addr) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  if (trans.is_read()) {
    store.read(addr, trans.get_data_ptr(), len);
    read_bytes_ += static_cast<double>(len);
  } else {
    store.write(addr, trans.get_data_ptr(), len);
    write_bytes_ += static_cast<double>(len);
  }
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
  if (!chip_.timed())
    return;
  const uint64_t now = ChipContext::now_ps();
  const uint64_t arrival = now + delay.value();
  const uint64_t service =
      static_cast<uint64_t>(std::llround(static_cast<double>(len) * ps_per_byte_));
  const uint64_t served = calendars_[channel_of(addr)].reserve(now, arrival, service);
  delay = ChipContext::ps(served + latency_ps_ - now);
}

} // namespace tl::npu::model
