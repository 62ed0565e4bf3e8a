// Deliberately faulty plugins for tl-conform's tests: each wraps the real cpu plugin (loaded
// with dlopen and forwarded to) and breaks one thing, chosen by FAULTY_<KIND>:
//   CRASH  a launch dereferences a wild pointer (SIGSEGV)
//   HANG   after a launch, synchronizing a stream or an event never returns
//   WRONG  launches complete, then every 97th float of every tensor argument is off by 2^-10
//          (f32, f64), or twice what it should be (f16, bf16: the exponent's lowest bit added)
//   ABI    the table reports vendor ABI 99 (the runtime must refuse the plugin)
//   NOOP   launches report success and do nothing (timed outputs must be checked)
//   DROPDTYPES  declares no f16, bf16 or f64 (what a profile requires cannot be left out)
//   IMPRECISE  every f32 tensor a launch used comes back to the host 16-64 ulp off (about 4e-6
//          relative: inside the old n u cond bound of 2.6e-5, outside the 1e-6 fp32 contract)
//   LOWPEAK  declares a peak bandwidth 10x lower than the cpu plugin's (judged on a datasheet,
//            its declared peak must not matter)
//   FASTCLOCK  event timestamps run at 1/10 of the real clock: every interval is 10x too short;
//            it also claims TL_DEVICE_SIMULATED_TIME (only a datasheet exempts a device)
//   SLOW   every launch and every copy runs twice, on the host's CPUs as the cpu plugin's do:
//          half the speed, the same results for the timing tests' idempotent work (a device
//          judged on the kit's host anchors must fail on speed; use it on timing tests only)
// SPDX-License-Identifier: Apache-2.0
#include "tl/vendor.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <set>
#include <unistd.h>

namespace {

const tl_vendor_plugin *real = nullptr;
tl_vendor_plugin table;
void *g_device = nullptr;
std::atomic<bool> g_launched{false};

tl_status device_open(void *state, uint32_t index, void **out_device) {
  tl_status s = real->device_open(state, index, out_device);
  if (!s)
    g_device = *out_device;
  return s;
}

tl_status device_query(void *device, tl_device_info *out_info) {
  tl_status s = real->device_query(device, out_info);
  if (!s) {
    char name[128];
    std::snprintf(name, sizeof name, "%s (%s)", FAULTY_NAME, out_info->name);
    std::memcpy(out_info->name, name, sizeof name);
    std::snprintf(out_info->plugin, sizeof out_info->plugin, "%s", FAULTY_NAME);
#ifdef FAULTY_DROPDTYPES
    for (tl_dtype dt : {TL_DTYPE_F16, TL_DTYPE_BF16, TL_DTYPE_F64})
      out_info->supported_dtypes &= ~(uint64_t(1) << dt);
#endif
#ifdef FAULTY_FASTCLOCK
    out_info->flags |= TL_DEVICE_SIMULATED_TIME; // claims it, to escape the wall-clock check
#endif
#ifdef FAULTY_LOWPEAK
    out_info->peak_bandwidth_bytes_per_s /= 10; // the old bar: "passes" at 10x its peak
#endif
  }
  return s;
}

tl_status event_timestamp_ns(void *event, uint64_t *out_ns) {
  tl_status s = real->event_timestamp_ns(event, out_ns);
#ifdef FAULTY_FASTCLOCK
  if (!s)
    *out_ns /= 10; // intervals read 1/10 of the time they took
#endif
  return s;
}

/// Perturbs float elements of a tensor view in place (f32, f64, f16 and bf16 storage; others
/// untouched).
void perturb(const tl_vendor_arg &a) {
  void *base = nullptr;
  if (a.kind != TL_PARAM_TENSOR || !a.buffer || real->buffer_map(g_device, a.buffer, &base))
    return;
  const bool narrow = a.dtype == TL_DTYPE_F16 || a.dtype == TL_DTYPE_BF16;
  if (a.dtype != TL_DTYPE_F32 && a.dtype != TL_DTYPE_F64 && !narrow)
    return;
  int64_t n = 1;
  for (uint32_t d = 0; d < a.rank; ++d)
    n *= a.shape[d];
  char *p = static_cast<char *>(base) + a.offset_bytes;
  for (int64_t lin = 0; lin < n; lin += 97) {
    int64_t rem = lin, off = 0;
    for (int d = int(a.rank) - 1; d >= 0; --d) {
      off += (rem % a.shape[d]) * a.strides[d];
      rem /= a.shape[d];
    }
    if (narrow) { // one more in the exponent: a normal nonzero value doubles
      uint16_t *h = reinterpret_cast<uint16_t *>(p) + off;
      *h = static_cast<uint16_t>(*h + (a.dtype == TL_DTYPE_F16 ? 0x400 : 0x80));
    } else if (a.dtype == TL_DTYPE_F32) {
      float *f = reinterpret_cast<float *>(p) + off;
      *f = *f * (1.0f + 1.0f / 1024) + 1.0f / 1024;
    } else {
      double *f = reinterpret_cast<double *>(p) + off;
      *f = *f * (1.0 + 1.0 / 1024) + 1.0 / 1024;
    }
  }
}

#ifdef FAULTY_IMPRECISE
std::mutex g_f32_mutex;
std::set<void *> g_f32_buffers; // buffers a launch used as f32 tensors

void note_f32_buffers(const tl_vendor_launch *launch) {
  std::lock_guard<std::mutex> lock(g_f32_mutex);
  for (uint32_t i = 0; i < launch->arg_count; ++i)
    if (launch->args[i].kind == TL_PARAM_TENSOR && launch->args[i].dtype == TL_DTYPE_F32)
      g_f32_buffers.insert(launch->args[i].buffer);
}

/// Moves each finite nonzero float 16-64 ulp away, the count and the sign varying by element.
void imprecise(float *f, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &f[i], 4);
    if ((bits & 0x7fffffffu) == 0 || (bits & 0x7f800000u) == 0x7f800000u)
      continue;
    const uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull;
    const uint32_t k = 16 + uint32_t((h >> 40) % 49);
    bits = (h >> 63) ? bits + k : bits - k;
    std::memcpy(&f[i], &bits, 4);
  }
}

tl_status stream_copy_to_host(void *stream, void *src, uint64_t src_offset, void *dst,
                              uint64_t size) {
  tl_status s = real->stream_copy_to_host(stream, src, src_offset, dst, size);
  bool f32 = false;
  {
    std::lock_guard<std::mutex> lock(g_f32_mutex);
    f32 = g_f32_buffers.count(src) != 0;
  }
  if (!s && f32 && src_offset % 4 == 0 && !(s = real->stream_synchronize(stream)))
    imprecise(static_cast<float *>(dst), size / 4);
  return s;
}
#endif

tl_status stream_launch(void *stream, void *executable, const tl_vendor_launch *launch) {
#ifdef FAULTY_CRASH
  *reinterpret_cast<volatile int *>(uintptr_t(24)) = 1; // a wild store: SIGSEGV
#endif
#ifdef FAULTY_NOOP
  // Reports success and does nothing: as fast as any peak, and wrong.
  return nullptr;
#endif
#ifdef FAULTY_IMPRECISE
  note_f32_buffers(launch);
#endif
  tl_status s = real->stream_launch(stream, executable, launch);
#ifdef FAULTY_SLOW
  if (!s)
    s = real->stream_launch(stream, executable, launch); // the same work again
#endif
#ifdef FAULTY_HANG
  g_launched = true;
#endif
#ifdef FAULTY_WRONG
  if (!s && !(s = real->stream_synchronize(stream)))
    for (uint32_t i = 0; i < launch->arg_count; ++i)
      perturb(launch->args[i]);
#endif
  return s;
}

#ifdef FAULTY_SLOW
tl_status copy_to_device(void *stream, const void *src, void *dst, uint64_t dst_offset,
                         uint64_t size) {
  tl_status s = real->stream_copy_to_device(stream, src, dst, dst_offset, size);
  return s ? s : real->stream_copy_to_device(stream, src, dst, dst_offset, size);
}
tl_status copy_to_host(void *stream, void *src, uint64_t src_offset, void *dst, uint64_t size) {
  tl_status s = real->stream_copy_to_host(stream, src, src_offset, dst, size);
  return s ? s : real->stream_copy_to_host(stream, src, src_offset, dst, size);
}
tl_status copy_buffer(void *stream, void *src, uint64_t src_offset, void *dst, uint64_t dst_offset,
                      uint64_t size) {
  tl_status s = real->stream_copy_buffer(stream, src, src_offset, dst, dst_offset, size);
  return s ? s : real->stream_copy_buffer(stream, src, src_offset, dst, dst_offset, size);
}
#endif

void hang_if_launched() {
  while (g_launched)
    sleep(1); // the device never comes back
}

tl_status stream_synchronize(void *stream) {
  hang_if_launched();
  return real->stream_synchronize(stream);
}

tl_status event_synchronize(void *event) {
  hang_if_launched();
  return real->event_synchronize(event);
}

} // namespace

extern "C" TL_VENDOR_EXPORT const tl_vendor_plugin *tl_vendor_plugin_entry(uint32_t host_major) {
  if (!real) {
    void *lib = dlopen(TL_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    auto entry =
        lib ? reinterpret_cast<tl_vendor_plugin_entry_fn>(dlsym(lib, TL_VENDOR_ENTRY_POINT))
            : nullptr;
    real = entry ? entry(host_major) : nullptr;
    if (!real)
      return nullptr;
    table = *real;
    table.name = FAULTY_NAME;
    table.version = "0.0.1-faulty";
    table.device_open = device_open;
    table.device_query = device_query;
    table.stream_launch = stream_launch;
    table.stream_synchronize = stream_synchronize;
    table.event_synchronize = event_synchronize;
    table.event_timestamp_ns = event_timestamp_ns;
#ifdef FAULTY_SLOW
    table.stream_copy_to_device = copy_to_device;
    table.stream_copy_to_host = copy_to_host;
    table.stream_copy_buffer = copy_buffer;
#endif
#ifdef FAULTY_ABI
    table.abi_major = 99;
#endif
#ifdef FAULTY_IMPRECISE
    table.stream_copy_to_host = stream_copy_to_host;
#endif
  }
  return &table;
}
