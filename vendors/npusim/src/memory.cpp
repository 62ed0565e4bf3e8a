// HBM (a shared-memory file), buffers, streams, copies, fills and events of the npusim plugin.
// SPDX-License-Identifier: Apache-2.0
#include "npusim_plugin.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tl::npusim {

// ---- HBM ---------------------------------------------------------------------------------------

Hbm::Hbm(uint64_t size) : size_(size) {
  fd_ = memfd_create("tnpu-hbm", MFD_CLOEXEC);
  if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(size)) != 0)
    throw std::runtime_error("cannot create the simulated HBM (" + std::to_string(size) +
                             " bytes): " + std::strerror(errno));
  void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd_, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error(std::string("cannot map the simulated HBM: ") + std::strerror(errno));
  base_ = static_cast<char *>(p);
  free_[kHbmReserved] = size - kHbmReserved;
}

Hbm::~Hbm() {
  if (base_)
    munmap(base_, size_);
  if (fd_ >= 0)
    close(fd_);
}

uint64_t Hbm::allocate(uint64_t bytes) {
  const uint64_t need =
      (std::max<uint64_t>(bytes, 1) + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  std::lock_guard lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need)
      continue;
    const uint64_t address = it->first, left = it->second - need;
    free_.erase(it);
    if (left)
      free_[address + need] = left;
    used_[address] = need;
    return address;
  }
  return 0;
}

void Hbm::free(uint64_t address) {
  std::lock_guard lock(mu_);
  auto u = used_.find(address);
  if (u == used_.end())
    return;
  uint64_t start = address, size = u->second;
  used_.erase(u);
  // Give the pages back to the host, then merge with the free neighbours.
  madvise(base_ + start, size, MADV_REMOVE);
  auto next = free_.lower_bound(start);
  if (next != free_.end() && start + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += size;
      return;
    }
  }
  free_[start] = size;
}

// ---- Stream ------------------------------------------------------------------------------------

Stream::Stream(Device *device)
    : device_(device), queue_([](const Task &task) { return guarded_task(task); }) {}

namespace {

Stream &stream_of(void *s) { return *static_cast<Stream *>(s); }
Buffer &buffer_of(void *b) { return *static_cast<Buffer *>(b); }
Event &event_of(void *e) { return *static_cast<Event *>(e); }

/// Simulated time of moving `bytes` through HBM `passes` times (a read, a write or both): the
/// HBM latency plus the bytes at the configured bandwidth. The host link is not modeled.
double hbm_ns(const Device &d, uint64_t bytes, int passes) {
  return d.config.hbm.latency * 1e9 + double(bytes) * passes / d.config.hbm.bandwidth * 1e9;
}

tl_status enqueue_copy(void *stream, char *dst, const char *src, uint64_t size, int passes) {
  Stream &s = stream_of(stream);
  Device *d = s.device();
  return guarded(*d->plugin, [&]() -> tl_status {
    if (size == 0)
      return nullptr;
    s.enqueue([=] {
      std::memcpy(dst, src, size);
      d->advance(hbm_ns(*d, size, passes));
      return Error{};
    });
    return nullptr;
  });
}

} // namespace

// ---- buffers -----------------------------------------------------------------------------------

tl_status buffer_allocate(void *device, const tl_buffer_desc *desc, void **out_buffer) {
  auto *d = static_cast<Device *>(device);
  *out_buffer = nullptr;
  return guarded(*d->plugin, [&]() -> tl_status {
    const uint64_t address = d->hbm->allocate(desc->size_bytes);
    if (address == 0)
      return d->plugin->status(TL_STATUS_RESOURCE_EXHAUSTED, "no room for " +
                                                                 std::to_string(desc->size_bytes) +
                                                                 " bytes in the simulated HBM");
    *out_buffer = new Buffer{address, desc->size_bytes};
    return nullptr;
  });
}

void buffer_free(void *device, void *buffer) {
  if (!buffer)
    return;
  static_cast<Device *>(device)->hbm->free(buffer_of(buffer).address);
  delete static_cast<Buffer *>(buffer);
}

tl_status buffer_map(void *device, void *buffer, void **out_host_ptr) {
  *out_host_ptr = static_cast<Device *>(device)->hbm->at(buffer_of(buffer).address);
  return nullptr;
}

// ---- streams, copies, fills --------------------------------------------------------------------

tl_status stream_create(void *device, void **out_stream) {
  auto *d = static_cast<Device *>(device);
  *out_stream = nullptr;
  return guarded(*d->plugin, [&]() -> tl_status {
    *out_stream = new Stream(d);
    return nullptr;
  });
}

void stream_destroy(void *, void *stream) { delete static_cast<Stream *>(stream); }

tl_status stream_synchronize(void *stream) {
  Stream &s = stream_of(stream);
  const Plugin &plugin = *s.device()->plugin;
  return guarded(plugin, [&] { return plugin.status(s.synchronize()); });
}

tl_status stream_copy_to_device(void *stream, const void *src, void *dst, uint64_t dst_offset,
                                uint64_t size) {
  Hbm &hbm = *stream_of(stream).device()->hbm;
  return enqueue_copy(stream, hbm.at(buffer_of(dst).address + dst_offset),
                      static_cast<const char *>(src), size, 1);
}

tl_status stream_copy_to_host(void *stream, void *src, uint64_t src_offset, void *dst,
                              uint64_t size) {
  Hbm &hbm = *stream_of(stream).device()->hbm;
  return enqueue_copy(stream, static_cast<char *>(dst), hbm.at(buffer_of(src).address + src_offset),
                      size, 1);
}

tl_status stream_copy_buffer(void *stream, void *src, uint64_t src_offset, void *dst,
                             uint64_t dst_offset, uint64_t size) {
  Hbm &hbm = *stream_of(stream).device()->hbm;
  return enqueue_copy(stream, hbm.at(buffer_of(dst).address + dst_offset),
                      hbm.at(buffer_of(src).address + src_offset), size, 2);
}

tl_status stream_fill(void *stream, void *dst, uint64_t offset, uint64_t size, const void *pattern,
                      uint32_t pattern_size) {
  Stream &s = stream_of(stream);
  Device *d = s.device();
  return guarded(*d->plugin, [&]() -> tl_status {
    if (pattern_size == 0 || size % pattern_size != 0)
      return d->plugin->status(TL_STATUS_INVALID_ARGUMENT,
                               "fill size must be a multiple of the pattern size");
    if (size == 0)
      return nullptr;
    auto *p = static_cast<const uint8_t *>(pattern);
    std::vector<uint8_t> bytes(p, p + pattern_size);
    char *begin = d->hbm->at(buffer_of(dst).address + offset);
    s.enqueue([=] {
      for (uint64_t i = 0; i < size; i += pattern_size)
        std::memcpy(begin + i, bytes.data(), pattern_size);
      d->advance(hbm_ns(*d, size, 1));
      return Error{};
    });
    return nullptr;
  });
}

// ---- events (timestamps in simulated nanoseconds) ----------------------------------------------

tl_status event_create(void *device, void **out_event) {
  auto *d = static_cast<Device *>(device);
  *out_event = nullptr;
  return guarded(*d->plugin, [&]() -> tl_status {
    *out_event = new Event{d};
    return nullptr;
  });
}

void event_destroy(void *, void *event) { delete static_cast<Event *>(event); }

tl_status stream_record_event(void *stream, void *event) {
  Stream &s = stream_of(stream);
  Device *d = s.device();
  return guarded(*d->plugin, [&]() -> tl_status {
    s.enqueue(EventState::record(event_of(event).state, [d] { return d->now(); }));
    return nullptr;
  });
}

tl_status stream_wait_event(void *stream, void *event) {
  Stream &s = stream_of(stream);
  return guarded(*s.device()->plugin, [&]() -> tl_status {
    std::shared_ptr<EventState> state = event_of(event).state;
    if (const uint64_t target = state->newest())
      s.enqueue(EventState::wait_for(state, target));
    return nullptr;
  });
}

tl_status event_query(void *event, int32_t *out_done) {
  Event &e = event_of(event);
  *out_done = 0;
  std::lock_guard lock(e.state->mu);
  if (e.state->recorded == 0)
    return e.device->plugin->status(TL_STATUS_FAILED_PRECONDITION, "the event was never recorded");
  *out_done = e.state->completed >= e.state->recorded ? 1 : 0;
  return nullptr;
}

tl_status event_synchronize(void *event) {
  Event &e = event_of(event);
  std::unique_lock lock(e.state->mu);
  const uint64_t target = e.state->recorded;
  if (target == 0)
    return e.device->plugin->status(TL_STATUS_FAILED_PRECONDITION, "the event was never recorded");
  e.state->cv.wait(lock, [&] { return e.state->completed >= target; });
  return nullptr;
}

tl_status event_timestamp_ns(void *event, uint64_t *out_ns) {
  Event &e = event_of(event);
  *out_ns = 0;
  std::lock_guard lock(e.state->mu);
  if (e.state->recorded == 0)
    return e.device->plugin->status(TL_STATUS_FAILED_PRECONDITION, "the event was never recorded");
  if (e.state->completed < e.state->recorded)
    return e.device->plugin->status(TL_STATUS_FAILED_PRECONDITION,
                                    "the event has not completed yet");
  *out_ns = e.state->timestamp_ns;
  return nullptr;
}

} // namespace tl::npusim
