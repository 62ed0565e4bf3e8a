// Internal declarations of the cpu plugin: its device class, which tl/vendor_plugin.hpp turns into
// the plugin table (streams, events and the guards come from the SDK).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/vendor_plugin.hpp"

#include <tbb/task_arena.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

namespace tl::cpu {

using vendor::Error;
using vendor::Host;
using vendor::WorkQueue;

/// Buffers are aligned for the widest vector loads (AVX-512) and whole cache lines.
inline constexpr uint64_t kBufferAlignment = 64;
/// Buffers of at least this size are allocated on 2 MiB boundaries and advised to use huge pages.
inline constexpr uint64_t kHugePage = uint64_t(2) << 20, kHugePageMinBytes = uint64_t(4) << 20;

/// Linked llvm-cpu object code and its kernels (executables.cpp).
struct Program;

/// The host CPU, all of its cores as one device.
class Device {
public:
  static constexpr const char *kName = "cpu";
  static constexpr const char *kVersion = "0.1.0";

  /// Host memory: device-local and host-visible buffers are the same thing.
  struct Buffer {
    void *data = nullptr;
    uint64_t size = 0;
    bool owned = true; // false: imported (tl_buffer_import), the caller frees it
    Buffer() = default;
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    ~Buffer() {
      if (owned)
        std::free(data);
    }
  };
  /// Shared with queued launches, so that freeing the executable while they wait is safe.
  struct Executable {
    std::shared_ptr<const Program> program;
  };

  explicit Device(const Host &host) : host_(&host) {}
  const Host &host() const { return *host_; }

  // plugin.cpp
  static Error count(const Host &host, uint32_t &out);
  static Error open(const Host &host, uint32_t index, std::unique_ptr<Device> &out);
  /// steady_clock in nanoseconds: event timestamps.
  uint64_t now_ns();

  // device_info.cpp
  Error query(tl_device_info &info);

  // memory.cpp
  Error allocate(const tl_buffer_desc &desc, std::unique_ptr<Buffer> &out);
  void *map(Buffer &buffer) { return buffer.data; }
  /// Wraps a host pointer (device memory is host memory): numpy arrays without a copy.
  Error import(const tl_buffer_import_desc &desc, std::unique_ptr<Buffer> &out);
  Error copy_to_device(WorkQueue &stream, const void *src, Buffer &dst, uint64_t dst_offset,
                       uint64_t size);
  Error copy_to_host(WorkQueue &stream, Buffer &src, uint64_t src_offset, void *dst, uint64_t size);
  Error copy_buffer(WorkQueue &stream, Buffer &src, uint64_t src_offset, Buffer &dst,
                    uint64_t dst_offset, uint64_t size);
  Error fill(WorkQueue &stream, Buffer &dst, uint64_t offset, uint64_t size,
             std::vector<uint8_t> pattern);

  // executables.cpp
  Error load(const tl_vendor_executable_image &image, std::unique_ptr<Executable> &out);
  Error launch(WorkQueue &stream, Executable &exe, const tl_vendor_launch &launch);

  uint32_t compute_units = 1;
  /// The worker pool that runs launch grids and large copies; sized to compute_units.
  std::unique_ptr<tbb::task_arena> arena;

private:
  /// Queues a copy: on the stream's thread, or on the workers when it is large.
  Error enqueue_copy(WorkQueue &stream, void *dst, const void *src, uint64_t size);

  const Host *host_;
};

/// Copies with the device's workers when the copy is large enough to gain from it.
void parallel_copy(tbb::task_arena &arena, void *dst, const void *src, uint64_t size);

} // namespace tl::cpu
