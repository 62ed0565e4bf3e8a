// C++ RAII layer over the HAL C API: owning wrappers that release their handles and turn
// statuses into tl::hal::Error exceptions (the C ABI itself never throws).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/hal.h"

#include <array>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace tl::hal {

class Error : public std::runtime_error {
public:
  Error(tl_status_code code, const std::string &message)
      : std::runtime_error(message), code_(code) {}
  tl_status_code code() const { return code_; }

private:
  tl_status_code code_;
};

/// Throws Error for a failed status (and frees it).
inline void check(tl_status s) {
  if (!s)
    return;
  tl_status_code code = tl_status_get_code(s);
  std::string msg = tl_status_get_message(s);
  tl_status_free(s);
  throw Error(code, msg);
}

/// A move-only owner of one handle, released with `Release`.
template <class H, tl_status (*Release)(H)> class Owned {
public:
  Owned() = default;
  explicit Owned(H h) : h_(h) {}
  Owned(Owned &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Owned &operator=(Owned &&o) noexcept {
    reset();
    h_ = std::exchange(o.h_, nullptr);
    return *this;
  }
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  ~Owned() { reset(); }
  H get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr; }
  /// Releases now and reports failure (the destructor must swallow it).
  void release() { check(Release(std::exchange(h_, nullptr))); }

private:
  void reset() {
    if (h_)
      tl_status_free(Release(std::exchange(h_, nullptr)));
  }
  H h_ = nullptr;
};

class Buffer : public Owned<tl_buffer, tl_buffer_release> {
public:
  using Owned::Owned;
  uint64_t size() const {
    uint64_t n;
    check(tl_buffer_size(get(), &n));
    return n;
  }
  void *map() const {
    void *p;
    check(tl_buffer_map(get(), &p));
    return p;
  }
};

class Event : public Owned<tl_event, tl_event_release> {
public:
  using Owned::Owned;
  void synchronize() const { check(tl_event_synchronize(get())); }
  bool done() const {
    int32_t d;
    check(tl_event_query(get(), &d));
    return d != 0;
  }
  /// Milliseconds from `start` to this event.
  double elapsed_ms_since(const Event &start) const {
    double ms;
    check(tl_event_elapsed_ms(start.get(), get(), &ms));
    return ms;
  }
};

class Executable : public Owned<tl_executable, tl_executable_release> {
public:
  using Owned::Owned;
  uint32_t find_kernel(const std::string &name) const {
    uint32_t k;
    check(tl_executable_find_kernel(get(), name.c_str(), &k));
    return k;
  }
};

/// Launch-argument builders.
inline tl_arg tensor_arg(const Buffer &b, tl_dtype dtype, std::vector<int64_t> shape,
                         std::vector<int64_t> strides = {}, uint64_t offset_bytes = 0) {
  tl_arg a{};
  a.struct_size = sizeof(tl_arg);
  a.kind = TL_PARAM_TENSOR;
  a.dtype = dtype;
  a.buffer = b.get();
  a.offset_bytes = offset_bytes;
  a.rank = static_cast<uint32_t>(shape.size());
  if (strides.empty()) { // row-major contiguous
    strides.assign(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
      strides[i] = strides[i + 1] * shape[i + 1];
  }
  for (size_t i = 0; i < shape.size() && i < TL_HAL_MAX_RANK; ++i) {
    a.shape[i] = shape[i];
    a.strides[i] = strides[i];
  }
  return a;
}
inline tl_arg int_arg(tl_dtype dtype, int64_t v) {
  tl_arg a{};
  a.struct_size = sizeof(tl_arg);
  a.kind = TL_PARAM_SCALAR;
  a.dtype = dtype;
  a.i = v;
  return a;
}
inline tl_arg float_arg(tl_dtype dtype, double v) {
  tl_arg a = int_arg(dtype, 0);
  a.f = v;
  return a;
}

class Stream : public Owned<tl_stream, tl_stream_release> {
public:
  using Owned::Owned;
  void synchronize() const { check(tl_stream_synchronize(get())); }
  void copy_to_device(const void *src, const Buffer &dst, uint64_t size,
                      uint64_t offset = 0) const {
    check(tl_stream_copy_to_device(get(), src, dst.get(), offset, size));
  }
  void copy_to_host(const Buffer &src, void *dst, uint64_t size, uint64_t offset = 0) const {
    check(tl_stream_copy_to_host(get(), src.get(), offset, dst, size));
  }
  void copy(const Buffer &src, const Buffer &dst, uint64_t size) const {
    check(tl_stream_copy_buffer(get(), src.get(), 0, dst.get(), 0, size));
  }
  void record(const Event &e) const { check(tl_stream_record_event(get(), e.get())); }
  void wait(const Event &e) const { check(tl_stream_wait_event(get(), e.get())); }
  void launch(const Executable &exe, uint32_t kernel, std::array<uint64_t, 3> grid,
              const std::vector<tl_arg> &args) const {
    tl_launch_desc d{sizeof(tl_launch_desc),
                     kernel,
                     {grid[0], grid[1], grid[2]},
                     args.data(),
                     static_cast<uint32_t>(args.size())};
    check(tl_stream_launch(get(), exe.get(), &d));
  }
};

/// A device of a runtime (not owned: it lives as long as its runtime).
class Device {
public:
  explicit Device(tl_device d) : d_(d) {}
  tl_device get() const { return d_; }
  tl_device_info info() const {
    tl_device_info i{};
    i.struct_size = sizeof i;
    check(tl_device_query(d_, &i));
    return i;
  }
  Buffer buffer(uint64_t size,
                uint32_t flags = TL_BUFFER_DEVICE_LOCAL | TL_BUFFER_HOST_VISIBLE) const {
    tl_buffer_desc desc{sizeof desc, size, flags};
    tl_buffer b;
    check(tl_buffer_create(d_, &desc, &b));
    return Buffer(b);
  }
  Stream stream() const {
    tl_stream s;
    check(tl_stream_create(d_, &s));
    return Stream(s);
  }
  Event event() const {
    tl_event e;
    check(tl_event_create(d_, &e));
    return Event(e);
  }
  Executable load(const void *data, size_t size) const {
    tl_executable e;
    check(tl_executable_load(d_, data, size, &e));
    return Executable(e);
  }

private:
  tl_device d_;
};

/// A kernel argument in host memory: a tensor (copied to a device buffer before the launch and
/// back after it) or a scalar, which takes the dtype the kernel declares for it.
struct HostArg {
  bool is_tensor = false;
  void *data = nullptr; ///< tensors: `bytes` bytes, C order
  uint64_t bytes = 0;
  tl_dtype dtype = TL_DTYPE_F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides; ///< tensors: in elements over `data`; empty: C order
  int64_t i = 0;                ///< integer scalars
  double f = 0;                 ///< float scalars

  static HostArg tensor(void *data, uint64_t bytes, tl_dtype dtype, std::vector<int64_t> shape) {
    HostArg a;
    a.is_tensor = true;
    a.data = data;
    a.bytes = bytes;
    a.dtype = dtype;
    a.shape = std::move(shape);
    return a;
  }
  static HostArg integer(int64_t v) {
    HostArg a;
    a.i = v;
    a.dtype = TL_DTYPE_I64;
    return a;
  }
  static HostArg real(double v) {
    HostArg a;
    a.f = v;
    a.dtype = TL_DTYPE_F64;
    return a;
  }
};

/// Runs kernel `kernel` of `exe` on `dev` over `grid` with host arguments: every tensor copied
/// into a buffer of its own, scalars given the kernel's declared dtype (an integer given for a
/// float parameter is converted), tensors copied back, then synchronized. Throws hal::Error.
inline void run_with_host_args(const Device &dev, const Executable &exe, uint32_t kernel,
                               std::array<uint64_t, 3> grid, const std::vector<HostArg> &args) {
  Stream stream = dev.stream();
  std::vector<Buffer> buffers;
  std::vector<tl_arg> launch;
  buffers.reserve(args.size());
  for (uint32_t p = 0; p < args.size(); ++p) {
    const HostArg &a = args[p];
    if (a.is_tensor) {
      buffers.push_back(dev.buffer(a.bytes ? a.bytes : 1, TL_BUFFER_DEVICE_LOCAL));
      if (a.bytes)
        stream.copy_to_device(a.data, buffers.back(), a.bytes);
      launch.push_back(tensor_arg(buffers.back(), a.dtype, a.shape, a.strides));
      continue;
    }
    tl_param_info info{};
    info.struct_size = sizeof info;
    check(tl_executable_param_info(exe.get(), kernel, p, &info));
    const auto dtype = static_cast<tl_dtype>(info.dtype);
    const bool is_float = dtype >= TL_DTYPE_F16 && dtype <= TL_DTYPE_F8E5M2;
    const bool given_float = a.dtype >= TL_DTYPE_F16 && a.dtype <= TL_DTYPE_F8E5M2;
    launch.push_back(is_float ? float_arg(dtype, given_float ? a.f : static_cast<double>(a.i))
                              : int_arg(dtype, given_float ? static_cast<int64_t>(a.f) : a.i));
  }
  stream.launch(exe, kernel, grid, launch);
  size_t b = 0;
  for (const HostArg &a : args)
    if (a.is_tensor) {
      if (a.bytes)
        stream.copy_to_host(buffers[b], a.data, a.bytes);
      ++b;
    }
  stream.synchronize();
}

class Runtime : public Owned<tl_runtime, tl_runtime_destroy> {
public:
  /// validation: 1 on, 0 off, -1 from TL_HAL_VALIDATE.
  explicit Runtime(const char *plugin_path = nullptr, int32_t validation = -1) {
    tl_runtime_options o{sizeof o, plugin_path, validation};
    tl_runtime r;
    check(tl_runtime_create(&o, &r));
    *this = Runtime(r);
  }
  std::vector<Device> devices() const {
    uint32_t n;
    check(tl_runtime_device_count(get(), &n));
    std::vector<Device> out;
    for (uint32_t i = 0; i < n; ++i) {
      tl_device d;
      check(tl_runtime_device_get(get(), i, &d));
      out.emplace_back(d);
    }
    return out;
  }
  Device device(const std::string &name) const {
    tl_device d;
    check(tl_runtime_device_find(get(), name.c_str(), &d));
    return Device(d);
  }
  std::vector<tl_plugin_info> plugins() const {
    uint32_t n;
    check(tl_runtime_plugin_count(get(), &n));
    std::vector<tl_plugin_info> out(n);
    for (uint32_t i = 0; i < n; ++i) {
      out[i].struct_size = sizeof(tl_plugin_info);
      check(tl_runtime_plugin_info(get(), i, &out[i]));
    }
    return out;
  }

private:
  explicit Runtime(tl_runtime r) : Owned(r) {}
};

} // namespace tl::hal
