// Internal declarations of the cuda plugin: its devices, buffers, streams, events and
// executables, each a thin owner of the CUDA driver object it stands for.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "driver.h"
#include "tl/format/nvptx_code.h"
#include "tl/vendor_support.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tl::cuda {

using vendor::Host;

/// One GPU, through its primary context (shared with every other user of the driver API in the
/// process, e.g. PyTorch, so their pointers and streams work here).
struct Device {
  const Host *host = nullptr;
  int ordinal = 0;
  CUdevice device = 0;
  CUcontext context = nullptr;
  int sm = 0;             ///< compute capability major * 10 + minor
  CUevent base = nullptr; ///< recorded at open: event timestamps count from it
  CUstream base_stream = nullptr;
  tl_device_info info{};        ///< filled at open (device_info.cpp)
  uint64_t launch_grid[3] = {}; ///< the programs one cuLaunchKernel takes per axis (the driver's)
  /// The pinned host memory of its host-visible buffers, by start address: host copies from or
  /// to it are one DMA each, at link speed, with no staging (memory.cpp).
  mutable std::mutex pinned_mutex;
  std::map<uintptr_t, uint64_t> pinned;
  /// Whether [p, p + size) lies inside one of `pinned`.
  bool is_pinned(const void *p, uint64_t size) const;

  ~Device();
  /// Makes the primary context current on the calling thread (each entry point may come from
  /// another thread).
  Error bind() const;
};

struct Buffer {
  Device *device = nullptr;
  CUdeviceptr ptr = 0;
  uint64_t size = 0;
  bool owned = true;         ///< false: imported (tl_buffer_import), the caller frees it
  bool host_visible = false; ///< tl_buffer_map works: it returns `host`, else ptr (managed)
  /// Pinned host memory mapped into the device (HOST_VISIBLE without DEVICE_LOCAL), or null.
  void *host = nullptr;
};

/// Pinned host memory that host copies go through, two chunks so that filling one overlaps the
/// DMA of the other (memory.cpp).
struct Staging {
  /// Bytes per chunk: 32 MiB, or TL_CUDA_STAGING_MIB (1..256) to tune on a given machine.
  static uint64_t chunk_bytes();
  void *chunk[2] = {nullptr, nullptr};
  CUevent done[2] = {nullptr, nullptr}; ///< the last DMA out of or into chunk i
  bool used[2] = {false, false};
};

/// Status words of the launches queued since the last synchronize (nvptx Slot::Status): each
/// launch with asserts gets a zeroed device u32, copied back to pinned `host` after the kernel.
struct StatusWords {
  static constexpr size_t kCount = 1024;
  struct Launch {
    std::string kernel;
    std::vector<std::string> asserts;
  };
  CUdeviceptr device = 0;
  uint32_t *host = nullptr;
  std::vector<Launch> pending; ///< launch i uses word i
};

struct Stream {
  Device *device = nullptr;
  CUstream stream = nullptr;
  bool owned = true; ///< false: imported (tl_stream_import)
  std::mutex staging_mutex;
  Staging staging;    ///< allocated on the first host copy
  StatusWords status; ///< allocated on the first launch of a kernel with asserts
};

struct Event {
  Device *device = nullptr;
  CUevent event = nullptr;
  bool recorded = false;
};

struct Executable {
  Device *device = nullptr;
  CUmodule module = nullptr;
  nvptx::Code code; ///< the launch metadata (images dropped after loading)
  std::vector<CUfunction> functions;
  std::vector<std::vector<tl_vendor_param>> params; ///< the HAL's view, for the slot checks
};

// device_info.cpp
Error query_device(Device &d);

// memory.cpp
Error copy_to_device(Stream &s, const void *src, Buffer &dst, uint64_t offset, uint64_t size);
Error copy_to_host(Stream &s, Buffer &src, uint64_t offset, void *dst, uint64_t size);
void free_staging(Stream &s);

// executables.cpp
Error load_executable(Device &d, const tl_vendor_executable_image &image,
                      std::unique_ptr<Executable> &out);
Error launch(Stream &s, Executable &exe, const tl_vendor_launch &launch);
/// Gives launch of `k` a zeroed status word (index in `out`).
Error take_status_word(Stream &s, const nvptx::Kernel &k, int &out);
/// Synchronizes when launches with status words are pending and reports the first failed
/// assert among them as ABORTED (the stream stays usable: nothing trapped).
Error check_status_words(Stream &s);

} // namespace tl::cuda
