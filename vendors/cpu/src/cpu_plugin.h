// Internal declarations of the cpu plugin: its objects, status helpers and the entry functions.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/vendor.h"
#include "tl/vendor_support.hpp"

#include <tbb/task_arena.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>

namespace tl::cpu {

inline constexpr const char *kPluginName = "cpu";
inline constexpr const char *kPluginVersion = "0.1.0";
/// Buffers are aligned for the widest vector loads (AVX-512) and whole cache lines.
inline constexpr uint64_t kBufferAlignment = 64;

/// A failure kept inside the plugin (e.g. by a stream task) until it is turned into a tl_status.
using Error = tl::vendor::Error;

struct Plugin {
  const tl_vendor_host_api *host = nullptr;

  tl_status status(tl_status_code code, const std::string &message) const {
    return host->make_status(code, message.c_str());
  }
  tl_status status(const Error &e) const { return e.ok() ? nullptr : status(e.code, e.message); }
  /// Logs through the host when it offers a logger (level 0 error ... 3 debug).
  void log(int32_t level, const std::string &message) const;
};

struct Device {
  Plugin *plugin = nullptr;
  uint32_t compute_units = 1;
  /// The worker pool that runs launch grids and large copies; sized to compute_units.
  std::unique_ptr<tbb::task_arena> arena;
};

struct Buffer {
  void *data = nullptr;
  uint64_t size = 0;
};

/// A stream: the SDK's ordered work queue plus its device (tasks run through guarded_task).
class Stream {
public:
  using Task = tl::vendor::WorkQueue::Task;
  explicit Stream(Device *device);
  Device *device() const { return device_; }
  void enqueue(Task task) { queue_.enqueue(std::move(task)); }
  /// Waits until every task queued so far has run; returns and clears the first error.
  Error synchronize() { return queue_.synchronize(); }

private:
  Device *device_;
  tl::vendor::WorkQueue queue_; // last: its destructor runs what is queued, then joins
};

using EventState = tl::vendor::EventState;

struct Event {
  Device *device = nullptr;
  std::shared_ptr<EventState> state = std::make_shared<EventState>();
};

/// Turns any exception into a status: bad_alloc is RESOURCE_EXHAUSTED, the rest INTERNAL.
template <class Fn> tl_status guarded(const Plugin &plugin, Fn &&fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc &) {
    return plugin.status(TL_STATUS_RESOURCE_EXHAUSTED, "cpu: out of host memory");
  } catch (const std::exception &e) {
    return plugin.status(TL_STATUS_INTERNAL, std::string("cpu: ") + e.what());
  } catch (...) {
    return plugin.status(TL_STATUS_INTERNAL, "cpu: unknown exception");
  }
}

/// The same for entry functions that return nothing: failures are logged.
template <class Fn> void guarded_void(const Plugin &plugin, const char *what, Fn &&fn) noexcept {
  try {
    fn();
  } catch (const std::exception &e) {
    try {
      plugin.log(0, std::string(what) + ": " + e.what());
    } catch (...) {
    }
  } catch (...) {
    try {
      plugin.log(0, std::string(what) + ": unknown exception");
    } catch (...) {
    }
  }
}

/// Same as guarded, for code that runs inside a stream task: the failure becomes an Error.
template <class Fn> Error guarded_task(Fn &&fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc &) {
    return {TL_STATUS_RESOURCE_EXHAUSTED, "cpu: out of host memory"};
  } catch (const std::exception &e) {
    return {TL_STATUS_INTERNAL, std::string("cpu: ") + e.what()};
  } catch (...) {
    return {TL_STATUS_INTERNAL, "cpu: unknown exception"};
  }
}

/// Copies with the device's workers when the copy is large enough to gain from it.
void parallel_copy(tbb::task_arena &arena, void *dst, const void *src, uint64_t size);

// ---- entry functions, grouped by the file that defines them ----------------------------------

// device_info.cpp
tl_status device_query(void *device, tl_device_info *out_info);

// memory.cpp: buffers, streams, copies, fills, events
tl_status buffer_allocate(void *device, const tl_buffer_desc *desc, void **out_buffer);
void buffer_free(void *device, void *buffer);
tl_status buffer_map(void *device, void *buffer, void **out_host_ptr);
tl_status stream_create(void *device, void **out_stream);
void stream_destroy(void *device, void *stream);
tl_status stream_synchronize(void *stream);
tl_status stream_copy_to_device(void *stream, const void *src, void *dst, uint64_t dst_offset,
                                uint64_t size);
tl_status stream_copy_to_host(void *stream, void *src, uint64_t src_offset, void *dst,
                              uint64_t size);
tl_status stream_copy_buffer(void *stream, void *src, uint64_t src_offset, void *dst,
                             uint64_t dst_offset, uint64_t size);
tl_status stream_fill(void *stream, void *dst, uint64_t offset, uint64_t size, const void *pattern,
                      uint32_t pattern_size);

// events.cpp
tl_status event_create(void *device, void **out_event);
void event_destroy(void *device, void *event);
tl_status stream_record_event(void *stream, void *event);
tl_status stream_wait_event(void *stream, void *event);
tl_status event_query(void *event, int32_t *out_done);
tl_status event_synchronize(void *event);
tl_status event_timestamp_ns(void *event, uint64_t *out_ns);

// executables.cpp
tl_status executable_load(void *device, const tl_vendor_executable_image *image,
                          void **out_executable);
void executable_free(void *device, void *executable);
tl_status stream_launch(void *stream, void *executable, const tl_vendor_launch *launch);

} // namespace tl::cpu
