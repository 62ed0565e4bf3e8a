// Internal declarations of the npusim plugin: the simulated TNPU's device class
// (tl/vendor_plugin.hpp turns it into the plugin table, with streams and events) and its HBM.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/format/tnpu_code.h"
#include "tl/npu/config.h"
#include "tl/vendor_plugin.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tl::npusim {

using vendor::Error;
using vendor::Host;
using vendor::WorkQueue;

/// Buffers start on an HBM interleave boundary (and whole DMA bursts).
inline constexpr uint64_t kBufferAlignment = 256;
/// HBM below this is never handed out (address 0 stays recognizable as a bug).
inline constexpr uint64_t kHbmReserved = 4096;

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

struct KernelCode {
  std::string name;
  tnpu::Kernel code;
};

/// One simulated chip, described by TL_NPUSIM_CONFIG.
class Device {
public:
  static constexpr const char *kName = "npusim";
  static constexpr const char *kVersion = "0.1.0";

  /// A range of HBM, given back when the buffer is freed.
  struct Buffer {
    Hbm *hbm = nullptr;
    uint64_t address = 0; ///< in HBM
    uint64_t size = 0;
    Buffer(Hbm *hbm, uint64_t address, uint64_t size) : hbm(hbm), address(address), size(size) {}
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    ~Buffer() { hbm->free(address); }
  };
  struct Executable {
    std::vector<KernelCode> kernels;
  };

  explicit Device(const Host &host) : host_(&host) {}
  const Host &host() const { return *host_; }

  // plugin.cpp
  static Error count(const Host &host, uint32_t &out);
  static Error open(const Host &host, uint32_t index, std::unique_ptr<Device> &out);
  Error query(tl_device_info &info);
  /// Simulated time: event timestamps.
  uint64_t now_ns() { return static_cast<uint64_t>(now()); }

  // memory.cpp
  Error allocate(const tl_buffer_desc &desc, std::unique_ptr<Buffer> &out);
  void *map(Buffer &buffer) { return hbm->at(buffer.address); }
  Error copy_to_device(WorkQueue &stream, const void *src, Buffer &dst, uint64_t dst_offset,
                       uint64_t size);
  Error copy_to_host(WorkQueue &stream, Buffer &src, uint64_t src_offset, void *dst, uint64_t size);
  Error copy_buffer(WorkQueue &stream, Buffer &src, uint64_t src_offset, Buffer &dst,
                    uint64_t dst_offset, uint64_t size);
  Error fill(WorkQueue &stream, Buffer &dst, uint64_t offset, uint64_t size,
             std::vector<uint8_t> pattern);

  // launch.cpp
  Error load(const tl_vendor_executable_image &image, std::unique_ptr<Executable> &out);
  Error launch(WorkQueue &stream, Executable &exe, const tl_vendor_launch &launch);

  npu::ChipConfig config;
  std::string config_path;
  std::string worker_path; ///< the simulator process run per launch
  std::string trace_dir;   ///< TL_NPUSIM_TRACE: a directory for every launch's trace and stats
  std::unique_ptr<Hbm> hbm;

  /// Simulated time: one timeline for the device; every copy, fill and launch advances it.
  std::mutex clock_mu;
  double clock_ns = 0;
  uint64_t launches = 0;
  /// Launches run one at a time: the chip has one set of cores.
  std::mutex launch_mu;

  double advance(double ns) {
    std::lock_guard lock(clock_mu);
    clock_ns += ns;
    return clock_ns;
  }
  double now() {
    std::lock_guard lock(clock_mu);
    return clock_ns;
  }

private:
  /// Queues a copy of `size` bytes that advances simulated time by `ns`.
  Error enqueue_copy(WorkQueue &stream, char *dst, const char *src, uint64_t size, double ns);

  const Host *host_;
};

} // namespace tl::npusim
