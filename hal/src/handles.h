// Handle table: opaque handles carry a slot index, a type tag and a generation, so that null,
// foreign, released and double-released handles are told apart instead of dereferenced.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tl::hal {

enum class HandleType : uint8_t { Runtime = 1, Buffer, Stream, Event, Executable, Device };
const char *handle_type_name(HandleType t);

/// Encoding: generation (24 bits) << 40 | type (8 bits) << 32 | slot index (32 bits).
class HandleTable {
public:
  static HandleTable &global();

  uint64_t insert(HandleType type, void *object);
  /// The object of a live handle of `type`, or null with `why` set.
  void *lookup(uint64_t handle, HandleType type, std::string *why) const;
  /// Retires a live handle (its generation advances); false with `why` if it was not live.
  bool remove(uint64_t handle, HandleType type, std::string *why);

private:
  static constexpr uint32_t kChunkBits = 12, kChunkSize = 1u << kChunkBits, kMaxChunks = 1u << 16;
  struct Slot {
    std::atomic<uint32_t> generation{1};
    std::atomic<uint8_t> type{0}; // 0: free
    std::atomic<void *> object{nullptr};
  };
  Slot *slot(uint32_t index) const;

  mutable std::mutex mutex_;
  std::atomic<Slot *> chunks_[kMaxChunks] = {};
  uint32_t next_index_ = 0;
  std::vector<uint32_t> free_;
};

} // namespace tl::hal
