// Internal declarations of the npusim plugin: the simulated TNPU's device, HBM, streams, events.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/format/tnpu_code.h"
#include "tl/npu/config.h"
#include "tl/vendor.h"
#include "tl/vendor_support.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>

namespace tl::npusim {

inline constexpr const char *kPluginName = "npusim";
inline constexpr const char *kPluginVersion = "0.1.0";
/// Buffers start on an HBM interleave boundary (and whole DMA bursts).
inline constexpr uint64_t kBufferAlignment = 256;
/// HBM below this is never handed out (address 0 stays recognizable as a bug).
inline constexpr uint64_t kHbmReserved = 4096;

using Error = tl::vendor::Error;

struct Plugin {
  const tl_vendor_host_api *host = nullptr;
  tl_status status(tl_status_code code, const std::string &message) const {
    return host->make_status(code, ("npusim: " + message).c_str());
  }
  tl_status status(const Error &e) const { return e.ok() ? nullptr : status(e.code, e.message); }
  void log(int32_t level, const std::string &message) const;
};

/// The chip's HBM as a shared-memory file: buffers are ranges of it, the host maps it, and each
/// launch's simulator process maps it too (see launch.cpp).
class Hbm {
public:
  explicit Hbm(uint64_t size); // throws std::runtime_error
  ~Hbm();
  Hbm(const Hbm &) = delete;
  Hbm &operator=(const Hbm &) = delete;
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }
  char *at(uint64_t address) const { return base_ + address; }
  /// First fit; 0 when nothing fits (0 is never a buffer address).
  uint64_t allocate(uint64_t bytes);
  void free(uint64_t address);

private:
  int fd_ = -1;
  uint64_t size_ = 0;
  char *base_ = nullptr;
  std::mutex mu_;
  std::map<uint64_t, uint64_t> free_; // address -> size
  std::map<uint64_t, uint64_t> used_;
};

struct Device {
  Plugin *plugin = nullptr;
  npu::ChipConfig config;
  std::string config_path;
  std::string worker_path; ///< the simulator process run per launch
  std::string trace_dir;   ///< TL_NPUSIM_TRACE: a directory for every launch's trace and stats
  std::unique_ptr<Hbm> hbm;

  /// Simulated time: one timeline for the device; every copy, fill and launch advances it.
  std::mutex clock_mu;
  double now_ns = 0;
  uint64_t launches = 0;
  /// Launches run one at a time: the chip has one set of cores.
  std::mutex launch_mu;

  double advance(double ns) {
    std::lock_guard lock(clock_mu);
    now_ns += ns;
    return now_ns;
  }
  double now() {
    std::lock_guard lock(clock_mu);
    return now_ns;
  }
};

struct Buffer {
  uint64_t address = 0; ///< in HBM
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

using EventState = tl::vendor::EventState; // shared with record/wait tasks (vendor_support.hpp)

struct Event {
  Device *device = nullptr;
  std::shared_ptr<EventState> state = std::make_shared<EventState>();
};

struct KernelCode {
  std::string name;
  tnpu::Kernel code;
};

struct Executable {
  std::vector<KernelCode> kernels;
};

template <class Fn> Error guarded_task(Fn &&fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc &) {
    return {TL_STATUS_RESOURCE_EXHAUSTED, "out of host memory"};
  } catch (const std::exception &e) {
    return {TL_STATUS_INTERNAL, e.what()};
  } catch (...) {
    return {TL_STATUS_INTERNAL, "unknown exception"};
  }
}

template <class Fn> tl_status guarded(const Plugin &plugin, Fn &&fn) noexcept {
  tl_status out = nullptr;
  Error e = guarded_task([&]() -> Error {
    out = fn();
    return {};
  });
  return e.ok() ? out : plugin.status(e);
}

// plugin.cpp
tl_status device_query(void *device, tl_device_info *out_info);

// memory.cpp
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
tl_status event_create(void *device, void **out_event);
void event_destroy(void *device, void *event);
tl_status stream_record_event(void *stream, void *event);
tl_status stream_wait_event(void *stream, void *event);
tl_status event_query(void *event, int32_t *out_done);
tl_status event_synchronize(void *event);
tl_status event_timestamp_ns(void *event, uint64_t *out_ns);

// launch.cpp
tl_status executable_load(void *device, const tl_vendor_executable_image *image,
                          void **out_executable);
void executable_free(void *device, void *executable);
tl_status stream_launch(void *stream, void *executable, const tl_vendor_launch *launch);

} // namespace tl::npusim
