// A command as the command processor hands it to a unit queue: the instruction's operands read
// from registers, plus a snapshot of the unit's configuration registers at issue time.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/npu/isa.h"

#include <cstdint>
#include <ostream>

namespace tl::npu::model {

/// DMA descriptor (dma.cfg fields); n* and v* in elements, strides in bytes.
struct DmaDesc {
  uint64_t esize = 1, n[3] = {1, 1, 1}, hs[3] = {0, 0, 0}, ls[3] = {0, 0, 0};
  uint64_t v[3] = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
  uint64_t l[3] = {0, 0, 0}; ///< dma.ld / dma.st: the first valid index of each dimension
  uint64_t pad = 0;
  uint64_t isz = 4, adt = 2,
           oob = 0; ///< indexed commands: index bytes, dma.atadd dtype, bounds rule
};

struct MxCfg {
  uint64_t mode = 0, m = 0, k = 0, n = 0, lda = 0, ldw = 0, ldc = 0;
};

struct VecCfg {
  uint64_t n = 0, rows = 1, sd = 0, sa = 0, sb = 0, src = 2, dst = 2;
  uint64_t t = 2, u = 0, rm = 0, sc = 0, ea = 0, ed = 0; ///< typed arithmetic, v.cvt, v.scopy
};

struct Command {
  isa::Opcode op = isa::Opcode::Nop;
  uint32_t pc = 0; ///< where the instruction is, for messages
  uint64_t a = 0, b = 0, c = 0,
           d = 0;    ///< register operands in instruction order (addresses, scalars)
  int sem = 0;       ///< sem.sig / sem.wait
  int64_t count = 0; ///< sem.sig / sem.wait amount
  DmaDesc dma;
  MxCfg mx;
  VecCfg vec;
};

// sc_fifo<T> needs operator<< for tracing; commands print as their mnemonic and pc.
inline std::ostream &operator<<(std::ostream &os, const Command &c) {
  return os << isa::op_info(c.op).mnemonic << "@" << c.pc;
}

} // namespace tl::npu::model
