// Handle table with generation counters (see handles.h).
// SPDX-License-Identifier: Apache-2.0
#include "handles.h"

namespace tl::hal {

const char *handle_type_name(HandleType t) {
  switch (t) {
  case HandleType::Runtime:
    return "tl_runtime";
  case HandleType::Buffer:
    return "tl_buffer";
  case HandleType::Stream:
    return "tl_stream";
  case HandleType::Event:
    return "tl_event";
  case HandleType::Executable:
    return "tl_executable";
  case HandleType::Device:
    return "tl_device";
  }
  return "handle";
}

HandleTable &HandleTable::global() {
  static HandleTable *table = new HandleTable(); // never destroyed: handles may outlive statics
  return *table;
}

HandleTable::Slot *HandleTable::slot(uint32_t index) const {
  Slot *chunk = chunks_[index >> kChunkBits].load(std::memory_order_acquire);
  return chunk ? &chunk[index & (kChunkSize - 1)] : nullptr;
}

uint64_t HandleTable::insert(HandleType type, void *object) {
  std::lock_guard<std::mutex> lock(mutex_);
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    index = next_index_++;
    if ((index >> kChunkBits) >= kMaxChunks)
      return 0;
    if (!chunks_[index >> kChunkBits].load())
      chunks_[index >> kChunkBits].store(new Slot[kChunkSize], std::memory_order_release);
  }
  Slot *s = slot(index);
  s->object.store(object);
  s->type.store(static_cast<uint8_t>(type));
  const uint32_t gen = s->generation.load() & 0xffffff;
  return (uint64_t(gen) << 40) | (uint64_t(static_cast<uint8_t>(type)) << 32) | index;
}

void *HandleTable::lookup(uint64_t handle, HandleType type, std::string *why) const {
  const char *name = handle_type_name(type);
  if (handle == 0) {
    *why = std::string("null ") + name;
    return nullptr;
  }
  const uint32_t index = static_cast<uint32_t>(handle);
  const uint8_t tag = static_cast<uint8_t>(handle >> 32);
  const uint32_t gen = static_cast<uint32_t>(handle >> 40);
  Slot *s = (index >> kChunkBits) < kMaxChunks ? slot(index) : nullptr;
  if (!s || tag == 0 || tag > static_cast<uint8_t>(HandleType::Device) || gen == 0) {
    *why = std::string("invalid ") + name + " (not a handle made by this runtime)";
    return nullptr;
  }
  if (tag != static_cast<uint8_t>(type)) {
    *why = std::string("a ") + handle_type_name(static_cast<HandleType>(tag)) +
           " was passed as a " + name;
    return nullptr;
  }
  if ((s->generation.load(std::memory_order_acquire) & 0xffffff) != gen || s->type.load() != tag) {
    *why = std::string(name) + " was already released";
    return nullptr;
  }
  return s->object.load(std::memory_order_acquire);
}

bool HandleTable::remove(uint64_t handle, HandleType type, std::string *why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!lookup(handle, type, why)) {
    if (handle && why->find("already released") != std::string::npos)
      *why += " (double release)";
    return false;
  }
  const uint32_t index = static_cast<uint32_t>(handle);
  Slot *s = slot(index);
  s->type.store(0);
  s->object.store(nullptr);
  uint32_t gen = (s->generation.load() + 1) & 0xffffff;
  s->generation.store(gen == 0 ? 1 : gen, std::memory_order_release);
  free_.push_back(index);
  return true;
}

} // namespace tl::hal
