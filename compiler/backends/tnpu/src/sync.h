// Ordering between the TNPU's unit queues by semaphores instead of fences (see README "Ordering").
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/npu/isa.h"

#include <cstdint>
#include <vector>

namespace tl::tnpu {

/// A byte range [lo, hi) of a core's local memory, or of a tensor argument in HBM (hbm_range).
struct Range {
  uint64_t lo = 0, hi = 0;
};
/// HBM accesses are tracked per tensor argument (any two may overlap only if they are the same).
Range hbm_range(unsigned param);

/// Tracks, at compile time, which commands every queue has issued and which local / HBM ranges
/// they read and write. Before a command is issued on queue q, `issue` makes q wait for every
/// earlier command of another queue that conflicts with it (read after write, write after read,
/// write after write): `sem.sig P, s, 1` is appended to the producer queue P (it runs after all
/// that P holds so far) and `sem.wait q, s, 1` to q, semaphore s = P * queues + q. Each pair is
/// emitted together, so semaphores always balance, and a wait only ever depends on commands
/// issued before it (no deadlock). The command processor never blocks on these (it waits only
/// to read back a scalar the vector unit computed, on a semaphore of its own: vector_unit.cpp).
///
/// Control flow: code that may be skipped (a guarded prefetch) or repeated (a loop body) brackets
/// itself with `known()` / `restore()`, since what was learnt there may not hold after it. A loop
/// body without prefetches ends with `sync_all()`, after which every command issued so far is
/// ordered before everything that follows, so the state at the loop head is the entry state
/// again; a software-pipelined body orders what crosses iterations itself with `order` and the
/// eager `signal_ahead` / `wait_ahead` (see lower_loop.cpp).
class QueueSync {
public:
  /// `dma` engines (at most 3: the semaphore budget is 64), then mx, then vec.
  QueueSync(int dma, std::vector<npu::isa::Instr> &program);

  int num_dma() const { return dma_; }
  int mx() const { return dma_; }
  int vec() const { return dma_ + 1; }
  /// The isa queue operand of queue index q.
  static uint8_t isa_queue(int q, int dma);

  /// Orders a command that is about to be emitted on queue q, then records it. Commands of one
  /// nonzero `group` (the parts of one split transfer) do not conflict with each other.
  void issue(int q, const std::vector<Range> &reads, const std::vector<Range> &writes,
             int group = 0);
  /// The waits `issue` would emit, without recording a command: the parts of a split transfer
  /// are all prepared before the first is issued, so that no part waits behind another.
  void prepare(int q, const std::vector<Range> &reads, const std::vector<Range> &writes,
               int group = 0);
  /// Every queue waits for everything every other queue has issued so far.
  void sync_all();
  /// Queue c waits for everything queue p has issued so far, whatever is known.
  void order(int p, int c) { wait_for(p, c); }
  /// Eager signals (semaphores from kAhead on): `sem.sig p, s, 1` on DMA engine p for every other
  /// queue, right behind what p holds now (a prefetch); `wait_ahead` is the matching wait of
  /// every queue, emitted later (when the data is needed), given the engines' issue counts at
  /// their signals.
  void signal_ahead(int p);
  /// Tokens between the matrix and vector units across a pipelined loop's back edge: semaphore
  /// kTokens + 2 copy + (q == mx), signalled by q at the end of copy `copy`.
  void token_signal(int q, int copy) { sem(npu::isa::Opcode::SemSig, q, token(q, copy)); }
  void token_wait(int c, int q, int copy) { sem(npu::isa::Opcode::SemWait, c, token(q, copy)); }
  int token(int q, int copy) const { return kTokens + 2 * copy + (q == mx() ? 1 : 0); }
  static constexpr int kTokens = 48;
  void wait_ahead(const std::vector<uint64_t> &issued_at_signal);
  std::vector<uint64_t> issued() const { return seq_; }

  /// What each queue is known to have waited for (restore after code that may not run).
  std::vector<uint64_t> known() const { return synced_; }
  void restore(const std::vector<uint64_t> &k) { synced_ = k; }

private:
  struct Access {
    Range r;
    int q;
    uint64_t seq;
    bool write;
    int group;
  };
  void wait_for(int producer, int consumer);
  void sem(npu::isa::Opcode op, int q, int s);
  static constexpr int kAhead = 32;
  uint64_t &synced(int p, int c) { return synced_[size_t(p * queues_ + c)]; }

  int dma_, queues_;
  std::vector<npu::isa::Instr> &program_;
  std::vector<uint64_t> seq_;    ///< commands issued per queue
  std::vector<uint64_t> synced_; ///< [p][c]: c has waited for p's commands 1..synced
  std::vector<Access> log_;
};

} // namespace tl::tnpu
