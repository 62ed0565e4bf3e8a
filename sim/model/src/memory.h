// Storage behind the model: a core's local memory (scratchpad SRAM + accumulator), the paged HBM
// store, and the per-channel reservation calendar that times HBM requests. Plain C++.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tl::npu::model {

/// A program's mistake found while running it (bad address, misconfigured unit): the run stops
/// with SimStatus::ProgramError and this message.
class ProgramError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One core's local address space: SRAM at [0, sram_size), the accumulator at
/// [isa::kAccBase, isa::kAccBase + acc_size).
class LocalMemory {
public:
  LocalMemory(uint64_t sram_size, uint64_t acc_size);
  /// Pointer to [address, address + bytes), which must lie in one region; throws ProgramError
  /// naming `what` otherwise.
  uint8_t *span(uint64_t address, uint64_t bytes, const char *what);
  const uint8_t *span(uint64_t address, uint64_t bytes, const char *what) const;
  static bool is_acc(uint64_t address);

  /// Arithmetic-off mode (SimOptions::compute_data = false) skips the matrix unit's arithmetic,
  /// so the bytes it should have written hold old values: "stale". Tracking marks them so that
  /// nothing whose timing depends on values (index tiles, scalar loads) reads them unnoticed.
  void track_stale();
  bool tracking() const { return !stale_sram_.empty() || !stale_acc_.empty(); }
  /// Marks a range that span() accepted (no-op unless tracking).
  void set_stale(uint64_t address, uint64_t bytes, bool stale);
  bool any_stale(uint64_t address, uint64_t bytes) const;
  /// Between these two calls every span() is recorded; if any recorded range was stale, all of
  /// them become stale (a command's output depends on its inputs; its inputs are marked too,
  /// which is conservative: it can only reject more, never time wrong).
  void begin_command();
  void end_command();

private:
  std::vector<uint8_t> sram_, acc_;
  std::vector<uint8_t> stale_sram_, stale_acc_; ///< one flag per byte, empty unless tracking
  mutable bool recording_ = false;
  mutable std::vector<std::pair<uint64_t, uint64_t>> touched_;
};

/// HBM contents, allocated in 1 MiB pages on first write (a 96 GiB chip costs nothing untouched).
class HbmStore {
public:
  explicit HbmStore(uint64_t size);
  uint64_t size() const { return size_; }
  void read(uint64_t address, void *out, uint64_t bytes) const;
  void write(uint64_t address, const void *in, uint64_t bytes);
  /// Throws std::out_of_range if [address, address + bytes) is outside HBM.
  void check(uint64_t address, uint64_t bytes) const;

private:
  static constexpr uint64_t kPageBits = 20;
  uint64_t size_;
  std::vector<std::unique_ptr<uint8_t[]>> pages_;
};

/// Busy intervals of one HBM channel in picoseconds. A request is served in the free time of the
/// channel from its arrival on, split across gaps if need be (work-conserving), so requests from
/// different engines share the channel fairly whatever order their engines happened to call in.
class ChannelCalendar {
public:
  /// Reserves `duration` ps of channel time from `arrival` on; returns when the last of it ends.
  /// Intervals ending at or before `now` are forgotten.
  uint64_t reserve(uint64_t now, uint64_t arrival, uint64_t duration);

private:
  void insert(uint64_t start, uint64_t end);
  std::vector<std::pair<uint64_t, uint64_t>> busy_; // sorted, disjoint, non-touching [start, end)
  size_t head_ = 0;                                 // first interval still relevant
};

/// Cycles the SRAM banks need to serve the byte ranges of one transfer: each bank serves one
/// bank_width word per cycle, so the busiest bank decides (bank conflicts serialize).
class BankCounter {
public:
  BankCounter(int banks, int bank_width) : width_(bank_width), counts_(banks, 0) {}
  void touch(uint64_t address, uint64_t bytes);
  uint64_t busiest() const;

private:
  uint64_t width_;
  std::vector<uint64_t> counts_;
};

} // namespace tl::npu::model
