// Buffers, streams (one worker thread per ordered queue), copies and fills of the cpu plugin.
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace tl::cpu {
namespace {

/// Below this a copy or fill runs on the stream's own thread; above it on the device's workers.
constexpr uint64_t kParallelBytes = uint64_t(4) << 20;
constexpr uint64_t kChunkBytes = uint64_t(1) << 20;

Stream &stream_of(void *s) { return *static_cast<Stream *>(s); }
Buffer &buffer_of(void *b) { return *static_cast<Buffer *>(b); }
char *at(void *buffer, uint64_t offset) {
  return static_cast<char *>(buffer_of(buffer).data) + offset;
}

/// Fills [dst, dst + size) with `pattern` by writing it once and doubling the filled prefix.
void fill_serial(char *dst, uint64_t size, const uint8_t *pattern, uint32_t pattern_size) {
  if (pattern_size == 1) {
    std::memset(dst, pattern[0], size);
    return;
  }
  uint64_t filled = std::min<uint64_t>(pattern_size, size);
  std::memcpy(dst, pattern, filled);
  while (filled < size) {
    uint64_t n = std::min(filled, size - filled);
    std::memcpy(dst + filled, dst, n);
    filled += n;
  }
}

/// Chunks start at multiples of the pattern size, so each one begins with the pattern's byte 0.
void fill(tbb::task_arena &arena, char *dst, uint64_t size, const uint8_t *pattern,
          uint32_t pattern_size) {
  if (size < kParallelBytes) {
    fill_serial(dst, size, pattern, pattern_size);
    return;
  }
  uint64_t chunk = kChunkBytes - kChunkBytes % pattern_size;
  uint64_t chunks = (size + chunk - 1) / chunk;
  arena.execute([&] {
    tbb::parallel_for(uint64_t(0), chunks, [&](uint64_t c) {
      uint64_t begin = c * chunk;
      fill_serial(dst + begin, std::min(chunk, size - begin), pattern, pattern_size);
    });
  });
}

Error ok() { return {}; }

tl_status enqueue_copy(void *stream, void *dst, const void *src, uint64_t size) {
  Stream &s = stream_of(stream);
  return guarded(*s.device()->plugin, [&]() -> tl_status {
    if (size == 0)
      return nullptr;
    tbb::task_arena *arena = s.device()->arena.get();
    // memmove semantics are not promised; overlapping ranges of one buffer are the caller's bug.
    s.enqueue([=] {
      parallel_copy(*arena, dst, src, size);
      return ok();
    });
    return nullptr;
  });
}

} // namespace

void parallel_copy(tbb::task_arena &arena, void *dst, const void *src, uint64_t size) {
  if (size < kParallelBytes) {
    std::memcpy(dst, src, size);
    return;
  }
  auto *d = static_cast<char *>(dst);
  auto *s = static_cast<const char *>(src);
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<uint64_t>(0, size, kChunkBytes),
                      [&](const tbb::blocked_range<uint64_t> &r) {
                        std::memcpy(d + r.begin(), s + r.begin(), r.size());
                      });
  });
}

// ---- Stream ------------------------------------------------------------------------------------

Stream::Stream(Device *device)
    : device_(device), queue_([](const Task &task) { return guarded_task(task); }) {}

// ---- buffers -----------------------------------------------------------------------------------

tl_status buffer_allocate(void *device, const tl_buffer_desc *desc, void **out_buffer) {
  auto *d = static_cast<Device *>(device);
  *out_buffer = nullptr;
  return guarded(*d->plugin, [&]() -> tl_status {
    // aligned_alloc wants a multiple of the alignment. Contents start uninitialized.
    uint64_t size = std::max<uint64_t>(desc->size_bytes, 1);
    uint64_t rounded = (size + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    if (rounded < size)
      return d->plugin->status(TL_STATUS_RESOURCE_EXHAUSTED, "cpu: buffer size overflows");
    auto buffer = std::make_unique<Buffer>();
    buffer->data = std::aligned_alloc(kBufferAlignment, rounded);
    if (!buffer->data)
      return d->plugin->status(TL_STATUS_RESOURCE_EXHAUSTED, "cpu: cannot allocate " +
                                                                 std::to_string(desc->size_bytes) +
                                                                 " bytes of host memory");
    buffer->size = desc->size_bytes;
    *out_buffer = buffer.release();
    return nullptr;
  });
}

void buffer_free(void *device, void *buffer) {
  if (!buffer)
    return;
  std::free(buffer_of(buffer).data);
  delete static_cast<Buffer *>(buffer);
}

tl_status buffer_map(void *device, void *buffer, void **out_host_ptr) {
  // Device-local and host-visible buffers are both plain host memory.
  *out_host_ptr = buffer_of(buffer).data;
  return nullptr;
}

// ---- streams, copies and fills
// -------------------------------------------------------------------

tl_status stream_create(void *device, void **out_stream) {
  auto *d = static_cast<Device *>(device);
  *out_stream = nullptr;
  return guarded(*d->plugin, [&]() -> tl_status {
    *out_stream = new Stream(d); // std::system_error if no thread can be made: INTERNAL
    return nullptr;
  });
}

void stream_destroy(void *device, void *stream) {
  auto *d = static_cast<Device *>(device);
  guarded_void(*d->plugin, "cpu: stream_destroy", [&] { delete static_cast<Stream *>(stream); });
}

tl_status stream_synchronize(void *stream) {
  Stream &s = stream_of(stream);
  const Plugin &plugin = *s.device()->plugin;
  return guarded(plugin, [&] { return plugin.status(s.synchronize()); });
}

tl_status stream_copy_to_device(void *stream, const void *src, void *dst, uint64_t dst_offset,
                                uint64_t size) {
  return enqueue_copy(stream, at(dst, dst_offset), src, size);
}

tl_status stream_copy_to_host(void *stream, void *src, uint64_t src_offset, void *dst,
                              uint64_t size) {
  return enqueue_copy(stream, dst, at(src, src_offset), size);
}

tl_status stream_copy_buffer(void *stream, void *src, uint64_t src_offset, void *dst,
                             uint64_t dst_offset, uint64_t size) {
  return enqueue_copy(stream, at(dst, dst_offset), at(src, src_offset), size);
}

tl_status stream_fill(void *stream, void *dst, uint64_t offset, uint64_t size, const void *pattern,
                      uint32_t pattern_size) {
  Stream &s = stream_of(stream);
  const Plugin &plugin = *s.device()->plugin;
  return guarded(plugin, [&]() -> tl_status {
    if (pattern_size == 0 || size % pattern_size != 0)
      return plugin.status(TL_STATUS_INVALID_ARGUMENT,
                           "cpu: fill size must be a multiple of the pattern size");
    if (size == 0)
      return nullptr;
    auto *p = static_cast<const uint8_t *>(pattern);
    std::vector<uint8_t> bytes(p,
                               p + pattern_size); // the caller's pattern may not outlive this call
    char *begin = at(dst, offset);
    tbb::task_arena *arena = s.device()->arena.get();
    s.enqueue([=] {
      fill(*arena, begin, size, bytes.data(), pattern_size);
      return ok();
    });
    return nullptr;
  });
}

} // namespace tl::cpu
