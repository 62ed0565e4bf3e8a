// The null device: a complete, minimal TL vendor plugin to copy when porting a device.
// SPDX-License-Identifier: Apache-2.0
//
// Buffers are host memory, copies and fills run on the stream's thread, executables of target
// "null" load but launching them is UNIMPLEMENTED. tl/vendor_plugin.hpp supplies the rest: the
// plugin table and entry point, lifetime, streams (an ordered queue and thread each), events, and
// the guard that turns exceptions into statuses. Replace each function with your device's.
#include "tl/vendor_plugin.hpp"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using tl::vendor::Error;
using tl::vendor::Host;
using tl::vendor::WorkQueue;

class NullDevice {
public:
  static constexpr const char *kName = "null"; // the plugin's name: prefixes every message
  static constexpr const char *kVersion = "0.1.0";

  struct Buffer {
    void *data = nullptr;
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;
    explicit Buffer(void *data) : data(data) {}
    ~Buffer() { std::free(data); }
  };
  struct Executable {};

  explicit NullDevice(const Host &host) : host_(&host) {}
  const Host &host() const { return *host_; }

  // ---- devices ---------------------------------------------------------------------------------

  /// How many devices this process sees; UNAVAILABLE with a reason when the driver is missing.
  static Error count(const Host &, uint32_t &out) {
    out = 1;
    return {};
  }

  static Error open(const Host &host, uint32_t, std::unique_ptr<NullDevice> &out) {
    out = std::make_unique<NullDevice>(host);
    return {};
  }

  Error query(tl_device_info &info) {
    tl::vendor::copy_string(info.name, "null device");
    tl::vendor::copy_string(info.vendor, "TL SDK template");
    tl::vendor::copy_string(info.driver_version, kVersion);
    tl::vendor::copy_string(info.plugin, kName);
    tl::vendor::copy_string(info.target, "null");
    tl::vendor::copy_string(info.targets, "null");
    info.memory_bytes = uint64_t(1) << 30;
    info.compute_units = 1;
    info.max_grid[0] = info.max_grid[1] = info.max_grid[2] = 1;
    info.peak_bandwidth_bytes_per_s = 1e9;
    info.peak_flops[TL_DTYPE_F32] = 1e9;
    info.supported_dtypes = uint64_t(1) << TL_DTYPE_F32;
    return {};
  }

  /// Event timestamps: nanoseconds of the device's timeline (a simulator reports its own time).
  uint64_t now_ns() {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
  }

  // ---- buffers and stream work -----------------------------------------------------------------

  Error allocate(const tl_buffer_desc &desc, std::unique_ptr<Buffer> &out) {
    void *data = std::calloc(1, desc.size_bytes ? desc.size_bytes : 1);
    if (!data)
      return {TL_STATUS_RESOURCE_EXHAUSTED, "out of host memory"};
    out = std::make_unique<Buffer>(data);
    return {};
  }
  void *map(Buffer &b) { return b.data; }

  // Work is queued on the stream; a task's Error surfaces at the next stream_synchronize.
  Error copy_to_device(WorkQueue &s, const void *src, Buffer &dst, uint64_t off, uint64_t n) {
    return copy(s, at(dst, off), src, n);
  }
  Error copy_to_host(WorkQueue &s, Buffer &src, uint64_t off, void *dst, uint64_t n) {
    return copy(s, dst, at(src, off), n);
  }
  Error copy_buffer(WorkQueue &s, Buffer &src, uint64_t so, Buffer &dst, uint64_t doff,
                    uint64_t n) {
    return copy(s, at(dst, doff), at(src, so), n);
  }
  Error fill(WorkQueue &s, Buffer &dst, uint64_t off, uint64_t n, std::vector<uint8_t> pattern) {
    char *begin = at(dst, off);
    s.enqueue([begin, n, pattern = std::move(pattern)] {
      for (uint64_t i = 0; i < n; i += pattern.size())
        std::memcpy(begin + i, pattern.data(), pattern.size());
      return Error{};
    });
    return {};
  }
  Error launch(WorkQueue &, Executable &, const tl_vendor_launch &) {
    return {TL_STATUS_UNIMPLEMENTED, "the null device runs no kernels"};
  }

  // ---- executables -----------------------------------------------------------------------------

  Error load(const tl_vendor_executable_image &image, std::unique_ptr<Executable> &out) {
    if (std::strcmp(image.target, "null") != 0)
      return {TL_STATUS_INCOMPATIBLE, std::string("cannot run target ") + image.target};
    out = std::make_unique<Executable>();
    return {};
  }

private:
  static char *at(Buffer &b, uint64_t off) { return static_cast<char *>(b.data) + off; }
  static Error copy(WorkQueue &s, void *dst, const void *src, uint64_t n) {
    s.enqueue([=] {
      std::memcpy(dst, src, n);
      return Error{};
    });
    return {};
  }

  const Host *host_;
};

} // namespace

TL_DEFINE_VENDOR_PLUGIN(NullDevice)
