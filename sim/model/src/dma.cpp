// DMA engine (see dma.h).
// SPDX-License-Identifier: Apache-2.0
#include "dma.h"

#include "tl/npu/numerics.h"

#include <algorithm>
#include <cstring>
#include <vector>

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
      throw ProgramError("HBM address 0x" +
                         [&] {
                           char buf[32];
                           std::snprintf(buf, sizeof buf, "%llx",
                                         static_cast<unsigned long long>(hbm));
                           return std::string(buf);
                         }() +
                         " (+" + std::to_string(n) + " bytes) is outside HBM");
    done_ps_ = std::max(done_ps_, static_cast<uint64_t>(delay.value()));
    if (chip_.timed())
      issue_ps_ += static_cast<uint64_t>(std::llround(static_cast<double>(n) * ps_per_byte_));
    hbm += n;
    local += n;
    bytes -= n;
  }
}

void DmaEngine::carry_stale(bool load, uint64_t hbm, uint64_t local, uint64_t local_bytes,
                            uint64_t valid) {
  if (chip_.opts.compute_data)
    return;
  if (load)
    core_.mem.set_stale(local, local_bytes, chip_.hbm_any_stale(hbm, valid));
  else
    chip_.set_hbm_stale(hbm, valid, core_.mem.any_stale(local, valid));
}

uint64_t DmaEngine::execute(const Command &c) {
  if (c.op != isa::Opcode::DmaLd && c.op != isa::Opcode::DmaSt)
    return execute_indexed(c);
  const DmaDesc &d = c.dma;
  const bool load = c.op == isa::Opcode::DmaLd;
  const uint64_t local_base = load ? c.a : c.b, hbm_base = load ? c.b : c.a;
  if (d.esize == 0 || d.esize > 8)
    throw ProgramError("dma esize must be 1..8 bytes, got " + std::to_string(d.esize));
  const uint64_t row_bytes = d.n[0] * d.esize;
  // a row's in-bounds elements are [l0, min(n0, v0)): from byte `first`, `span0` bytes
  const uint64_t end0 = std::min(d.n[0], d.v[0]);
  const uint64_t first0 = std::min(d.l[0], end0) * d.esize, span0 = end0 * d.esize - first0;
  BankCounter banks(chip_.cfg.core.sram.banks, chip_.cfg.core.sram.bank_width);
  issue_ps_ = chip_.seconds_ps(chip_.cfg.core.dma.setup);
  done_ps_ = issue_ps_;
  uint64_t moved = 0;
  for (uint64_t i2 = 0; i2 < d.n[2]; ++i2) {
    for (uint64_t i1 = 0; i1 < d.n[1]; ++i1) {
      const uint64_t la = local_base + i2 * d.ls[2] + i1 * d.ls[1];
      const uint64_t ha = hbm_base + i2 * d.hs[2] + i1 * d.hs[1];
      const bool in = i1 >= d.l[1] && i1 < d.v[1] && i2 >= d.l[2] && i2 < d.v[2];
      const uint64_t first = in ? first0 : 0, valid = in ? span0 : 0;
      // a load writes the whole local row (the rest is pad); a store reads only the valid span
      const uint64_t lo = load ? la : la + first, lo_bytes = load ? row_bytes : valid;
      uint8_t *row = core_.mem.span(lo, lo_bytes, isa::op_info(c.op).mnemonic);
      uint8_t *data = load ? row + first : row;
      transfer_row(load, ha + first, data, valid);
      carry_stale(load, ha + first, lo, lo_bytes, valid);
      if (load) // pad the out-of-bounds head and tail of the row
        for (uint64_t b = 0; b < row_bytes; b += d.esize)
          if (b < first || b >= first + valid)
            std::memcpy(row + b, &d.pad, d.esize);
      banks.touch(lo, lo_bytes);
      moved += valid;
      (LocalMemory::is_acc(la) ? acc_bytes_ : sram_bytes_) +=
          static_cast<double>(load ? row_bytes : valid);
    }
  }
  hbm_bytes_ += static_cast<double>(moved);
  const uint64_t sram_done = chip_.seconds_ps(chip_.cfg.core.dma.setup) +
                             chip_.cycles_ps(static_cast<double>(banks.busiest()));
  return std::max({done_ps_, issue_ps_, sram_done});
}

void DmaEngine::atomic_add_row(const DmaDesc &d, uint64_t hbm, uint8_t *local, uint64_t n) {
  const uint64_t bytes = n * 4;
  if (bytes == 0)
    return;
  std::vector<uint8_t> old(bytes);
  transfer_row(true, hbm, old.data(), bytes);
  std::vector<uint8_t> sum(bytes);
  const num::DType t = static_cast<num::DType>(d.adt);
  for (uint64_t i = 0; i < n; ++i)
    num::store_bits(t, sum.data(), i,
                    num::binary(num::BinOp::Add, t, num::load_bits(t, old.data(), i),
                                num::load_bits(t, local, i)));
  transfer_row(false, hbm, sum.data(), bytes);
  std::memcpy(local, old.data(), bytes); // the old values come back, as atomic_add returns them
}

uint64_t DmaEngine::execute_indexed(const Command &c) {
  const DmaDesc &d = c.dma;
  const char *name = isa::op_info(c.op).mnemonic;
  const bool gather = c.op == isa::Opcode::DmaGather, atomic = c.op == isa::Opcode::DmaAtAdd;
  const uint64_t local_base = gather ? c.a : c.b, hbm_base = gather ? c.b : c.a, index_base = c.c;
  if (d.esize == 0 || d.esize > 8)
    throw ProgramError("dma esize must be 1..8 bytes, got " + std::to_string(d.esize));
  if (d.isz != 4 && d.isz != 8)
    throw ProgramError("dma isz (index bytes) must be 4 or 8, got " + std::to_string(d.isz));
  if (d.oob > 2)
    throw ProgramError(
        "dma oob must be 0 (fault), 1 (pad / skip) or 2 (negative pads / skips), got " +
        std::to_string(d.oob));
  if (atomic && ((d.adt != static_cast<uint64_t>(num::DType::F32) &&
                  d.adt != static_cast<uint64_t>(num::DType::I32)) ||
                 d.esize != 4))
    throw ProgramError("dma.atadd needs adt f32 or i32 and esize 4 (adt " + std::to_string(d.adt) +
                       ", esize " + std::to_string(d.esize) + ")");
  const uint64_t row_bytes = d.n[0] * d.esize;
  const uint64_t valid = std::min(d.n[0], d.v[0]) * d.esize;
  BankCounter banks(chip_.cfg.core.sram.banks, chip_.cfg.core.sram.bank_width);
  issue_ps_ = chip_.seconds_ps(chip_.cfg.core.dma.setup);
  done_ps_ = issue_ps_;
  uint64_t moved = 0;
  for (uint64_t e = 0; e < d.n[1]; ++e) {
    const uint8_t *ip = core_.mem.span(index_base + e * d.isz, d.isz, name);
    if (core_.mem.any_stale(index_base + e * d.isz, d.isz))
      throw ProgramError(std::string(name) + ": entry " + std::to_string(e) +
                         " of the index tile depends on matrix arithmetic that arithmetic-off "
                         "mode skipped; its value, and so the time, is unknown (run with "
                         "compute_data on)");
    int64_t k;
    if (d.isz == 4) {
      int32_t k32;
      std::memcpy(&k32, ip, 4);
      k = k32;
    } else {
      std::memcpy(&k, ip, 8);
    }
    banks.touch(index_base + e * d.isz, d.isz);
    const uint64_t la = local_base + e * d.ls[1];
    uint8_t *row = core_.mem.span(la, gather ? row_bytes : valid, name);
    const bool in_bounds = k >= 0 && static_cast<uint64_t>(k) < d.v[1];
    if (!in_bounds) {
      if (d.oob == 0 || (d.oob == 2 && k >= 0))
        throw ProgramError(std::string(name) + ": index " + std::to_string(k) + " (entry " +
                           std::to_string(e) + " of the index tile) is out of bounds [0, " +
                           (d.v[1] == UINT64_MAX ? std::string("inf") : std::to_string(d.v[1])) +
                           ")");
      if (gather) // a masked row reads as pad
        for (uint64_t b = 0; b < row_bytes; b += d.esize)
          std::memcpy(row + b, &d.pad, d.esize);
      continue;
    }
    const uint64_t ha = hbm_base + static_cast<uint64_t>(k) * d.hs[1];
    if (atomic) {
      atomic_add_row(d, ha, row, valid / 4);
      moved += 2 * valid;
      const bool stale = core_.mem.any_stale(la, valid) || chip_.hbm_any_stale(ha, valid);
      core_.mem.set_stale(la, valid, stale); // both sides now depend on both
      chip_.set_hbm_stale(ha, valid, stale);
    } else {
      transfer_row(gather, ha, row, valid);
      carry_stale(gather, ha, la, gather ? row_bytes : valid, valid);
      moved += valid;
    }
    if (gather)
      for (uint64_t b = valid; b < row_bytes; b += d.esize)
        std::memcpy(row + b, &d.pad, d.esize);
    banks.touch(la, gather ? row_bytes : valid);
    (LocalMemory::is_acc(la) ? acc_bytes_ : sram_bytes_) +=
        static_cast<double>(gather ? row_bytes : valid);
  }
  hbm_bytes_ += static_cast<double>(moved);
  const uint64_t sram_done = chip_.seconds_ps(chip_.cfg.core.dma.setup) +
                             chip_.cycles_ps(static_cast<double>(banks.busiest()));
  return std::max({done_ps_, issue_ps_, sram_done});
}

} // namespace tl::npu::model
