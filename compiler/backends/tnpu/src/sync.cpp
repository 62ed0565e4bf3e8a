// Ordering between the TNPU's unit queues by semaphores (see sync.h).
// SPDX-License-Identifier: Apache-2.0
#include "sync.h"

#include <algorithm>
#include <cassert>

namespace tl::tnpu {

namespace isa = npu::isa;

Range hbm_range(unsigned param) {
  // Far above any local address (the accumulator starts at 2^32).
  const uint64_t base = uint64_t(1) << 52, span = uint64_t(1) << 40;
  return {base + param * span, base + (param + 1) * span};
}

QueueSync::QueueSync(int dma, std::vector<isa::Instr> &program)
    : dma_(dma), queues_(dma + 2), program_(program), seq_(size_t(dma + 2), 0),
      synced_(size_t((dma + 2) * (dma + 2)), 0) {
  assert(dma >= 1 && kAhead + queues_ * queues_ <= isa::kNumSemaphores);
  // the tokens (4 copies at most) above the eager signals, below the vector read-back's
  assert(kAhead + dma * queues_ <= kTokens && kTokens + 8 < isa::kNumSemaphores);
}

uint8_t QueueSync::isa_queue(int q, int dma) {
  if (q < dma)
    return uint8_t(int(isa::Queue::Dma0) + q);
  return uint8_t(q == dma ? isa::Queue::Mx : isa::Queue::Vec);
}

void QueueSync::sem(isa::Opcode op, int q, int s) {
  isa::Instr in;
  in.op = op, in.slot[0] = isa_queue(q, dma_), in.slot[1] = uint8_t(s), in.imm = 1;
  program_.push_back(in);
}

void QueueSync::wait_for(int p, int c) {
  sem(isa::Opcode::SemSig, p, p * queues_ + c);
  sem(isa::Opcode::SemWait, c, p * queues_ + c);
  synced(p, c) = seq_[size_t(p)];
}

void QueueSync::signal_ahead(int p) {
  for (int c = 0; c < queues_; ++c)
    if (c != p)
      sem(isa::Opcode::SemSig, p, kAhead + p * queues_ + c);
}

void QueueSync::wait_ahead(const std::vector<uint64_t> &at) {
  for (int p = 0; p < dma_; ++p)
    for (int c = 0; c < queues_; ++c)
      if (c != p) {
        sem(isa::Opcode::SemWait, c, kAhead + p * queues_ + c);
        synced(p, c) = std::max(synced(p, c), at[size_t(p)]);
      }
}

void QueueSync::issue(int q, const std::vector<Range> &reads, const std::vector<Range> &writes,
                      int group) {
  prepare(q, reads, writes, group);
  const uint64_t seq = ++seq_[size_t(q)];
  for (const Range &r : reads)
    log_.push_back({r, q, seq, false, group});
  for (const Range &w : writes)
    log_.push_back({w, q, seq, true, group});
}

void QueueSync::prepare(int q, const std::vector<Range> &reads, const std::vector<Range> &writes,
                        int group) {
  auto overlaps = [](const Range &a, const Range &b) { return a.lo < b.hi && b.lo < a.hi; };
  std::vector<uint64_t> need(size_t(queues_), 0);
  for (const Access &a : log_) {
    if (a.q == q || a.seq <= synced(a.q, q) || a.seq <= need[size_t(a.q)] ||
        (group != 0 && a.group == group))
      continue;
    bool hit = false;
    for (const Range &w : writes)
      hit = hit || overlaps(a.r, w);
    for (const Range &r : reads)
      hit = hit || (a.write && overlaps(a.r, r));
    if (hit)
      need[size_t(a.q)] = a.seq;
  }
  for (int p = 0; p < queues_; ++p)
    if (need[size_t(p)] > 0)
      wait_for(p, q);
}

void QueueSync::sync_all() {
  for (int c = 0; c < queues_; ++c)
    for (int p = 0; p < queues_; ++p)
      if (p != c && seq_[size_t(p)] > synced(p, c))
        wait_for(p, c);
  // The log is kept whole: a restore() after a loop that may run zero times can make earlier
  // accesses unordered again.
}

} // namespace tl::tnpu
