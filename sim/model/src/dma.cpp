// DMA engine (see dma.h).
// SPDX-License-Identifier: Apache-2.0
#include "dma.h"

#include <algorithm>
#include <cstring>

namespace tl::npu::model {

DmaEngine::DmaEngine(sc_core::sc_module_name name, CoreState &core, int index, int track)
    : Unit(name, core, "dma" + std::to_string(index), track), socket("socket"),
      ps_per_byte_(1e12 / core.chip.cfg.core.dma.bandwidth),
      hbm_bytes_(chip_.stats.add(core.prefix() + ".dma" + std::to_string(index) + ".hbm_bytes",
                                 "bytes", "bytes moved to or from HBM")),
      sram_bytes_(chip_.stats.add(core.prefix() + ".dma" + std::to_string(index) + ".sram_bytes",
                                  "bytes", "bytes moved to or from the scratchpad")),
      acc_bytes_(chip_.stats.add(core.prefix() + ".dma" + std::to_string(index) + ".acc_bytes",
                                 "bytes", "bytes moved to or from the accumulator")) {}

void DmaEngine::transfer_row(bool load, uint64_t hbm, uint8_t *local, uint64_t bytes) {
  const uint64_t gran = chip_.cfg.hbm.interleave;
  while (bytes > 0) {
    const uint64_t n = std::min(bytes, gran - hbm % gran);
    trans_.set_command(load ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
    trans_.set_address(hbm);
    trans_.set_data_ptr(local);
    trans_.set_data_length(static_cast<unsigned>(n));
    trans_.set_streaming_width(static_cast<unsigned>(n));
    trans_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = ChipContext::ps(issue_ps_);
    socket->b_transport(trans_, delay);
    if (trans_.get_response_status() != tlm::TLM_OK_RESPONSE)
      throw ProgramError("HBM address 0x" + [&] {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(hbm));
        return std::string(buf);
      }() + " (+" + std::to_string(n) + " bytes) is outside HBM");
    done_ps_ = std::max(done_ps_, static_cast<uint64_t>(delay.value()));
    if (chip_.timed())
      issue_ps_ += static_cast<uint64_t>(std::llround(static_cast<double>(n) * ps_per_byte_));
    hbm += n;
    local += n;
    bytes -= n;
  }
}

uint64_t DmaEngine::execute(const Command &c) {
  const DmaDesc &d = c.dma;
  const bool load = c.op == isa::Opcode::DmaLd;
  const uint64_t local_base = load ? c.a : c.b, hbm_base = load ? c.b : c.a;
  if (d.esize == 0 || d.esize > 8)
    throw ProgramError("dma esize must be 1..8 bytes, got " + std::to_string(d.esize));
  const uint64_t row_bytes = d.n[0] * d.esize;
  const uint64_t valid0 = std::min(d.n[0], d.v[0]) * d.esize;
  BankCounter banks(chip_.cfg.core.sram.banks, chip_.cfg.core.sram.bank_width);
  issue_ps_ = chip_.seconds_ps(chip_.cfg.core.dma.setup);
  done_ps_ = issue_ps_;
  uint64_t moved = 0;
  for (uint64_t i2 = 0; i2 < d.n[2]; ++i2) {
    for (uint64_t i1 = 0; i1 < d.n[1]; ++i1) {
      const uint64_t la = local_base + i2 * d.ls[2] + i1 * d.ls[1];
      const uint64_t ha = hbm_base + i2 * d.hs[2] + i1 * d.hs[1];
      const uint64_t valid = (i1 < d.v[1] && i2 < d.v[2]) ? valid0 : 0;
      uint8_t *row = core_.mem.span(la, load ? row_bytes : valid, isa::op_info(c.op).mnemonic);
      transfer_row(load, ha, row, valid);
      if (load) // pad the out-of-bounds tail of the row
        for (uint64_t b = valid; b < row_bytes; b += d.esize)
          std::memcpy(row + b, &d.pad, d.esize);
      banks.touch(la, load ? row_bytes : valid);
      moved += valid;
      (LocalMemory::is_acc(la) ? acc_bytes_ : sram_bytes_) += static_cast<double>(load ? row_bytes : valid);
    }
  }
  hbm_bytes_ += static_cast<double>(moved);
  const uint64_t sram_done =
      chip_.seconds_ps(chip_.cfg.core.dma.setup) + chip_.cycles_ps(static_cast<double>(banks.busiest()));
  return std::max({done_ps_, issue_ps_, sram_done});
}

} // namespace tl::npu::model
