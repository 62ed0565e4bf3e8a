// The null device: a complete, minimal TL vendor plugin to copy when porting a device.
// SPDX-License-Identifier: Apache-2.0
//
// Buffers are host memory, streams run every operation at once (in order, trivially), events
// complete when recorded, and executables of target "null" load but launching them is
// UNIMPLEMENTED. Replace each function with your device's; keep the rules of tl/vendor.h: no
// exception or exit() across the boundary, errors as host->make_status(), outputs zeroed first.
#include "tl/vendor.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const tl_vendor_host_api *g_host = nullptr;

tl_status status(tl_status_code code, const std::string &message) {
  return g_host->make_status(code, ("null: " + message).c_str());
}

struct Buffer {
  void *data;
  uint64_t size;
};
struct Event {
  int recorded = 0;
  uint64_t ns = 0;
};

uint64_t now_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}
char *at(void *b, uint64_t off) {
  return static_cast<char *>(static_cast<Buffer *>(b)->data) + off;
}

tl_status initialize(const tl_vendor_host_api *host, void **out_state) {
  *out_state = nullptr;
  if (host->abi_major != TL_VENDOR_ABI_MAJOR)
    return host->make_status(TL_STATUS_INCOMPATIBLE, "null: vendor ABI mismatch");
  g_host = host;
  static int state;
  *out_state = &state;
  return nullptr;
}
void shutdown(void *) {}
tl_status device_count(void *, uint32_t *n) {
  *n = 1;
  return nullptr;
}
tl_status device_open(void *, uint32_t index, void **out) {
  static int device;
  *out = index == 0 ? &device : nullptr;
  return index == 0 ? nullptr : status(TL_STATUS_NOT_FOUND, "one device only");
}
void device_close(void *) {}

tl_status device_query(void *, tl_device_info *out) {
  tl_device_info i{};
  const size_t size = out->struct_size ? out->struct_size : sizeof i;
  std::snprintf(i.name, sizeof i.name, "null device");
  std::snprintf(i.vendor, sizeof i.vendor, "TL SDK template");
  std::snprintf(i.driver_version, sizeof i.driver_version, "0.1.0");
  std::snprintf(i.plugin, sizeof i.plugin, "null");
  std::snprintf(i.target, sizeof i.target, "null");
  std::snprintf(i.targets, sizeof i.targets, "null");
  i.memory_bytes = uint64_t(1) << 30;
  i.compute_units = 1;
  i.max_grid[0] = i.max_grid[1] = i.max_grid[2] = 1;
  i.peak_bandwidth_bytes_per_s = 1e9;
  i.peak_flops[TL_DTYPE_F32] = 1e9;
  i.supported_dtypes = uint64_t(1) << TL_DTYPE_F32;
  i.struct_size = size;
  std::memcpy(out, &i, size < sizeof i ? size : sizeof i);
  return nullptr;
}

tl_status buffer_allocate(void *, const tl_buffer_desc *desc, void **out) {
  *out = nullptr;
  void *data = std::calloc(1, desc->size_bytes);
  if (!data)
    return status(TL_STATUS_RESOURCE_EXHAUSTED, "out of host memory");
  *out = new Buffer{data, desc->size_bytes};
  return nullptr;
}
void buffer_free(void *, void *b) {
  std::free(static_cast<Buffer *>(b)->data);
  delete static_cast<Buffer *>(b);
}
tl_status buffer_map(void *, void *b, void **out) {
  *out = static_cast<Buffer *>(b)->data;
  return nullptr;
}

tl_status stream_create(void *, void **out) {
  static int stream;
  *out = &stream;
  return nullptr;
}
void stream_destroy(void *, void *) {}
tl_status stream_synchronize(void *) { return nullptr; }
tl_status copy_to_device(void *, const void *src, void *dst, uint64_t off, uint64_t n) {
  std::memcpy(at(dst, off), src, n);
  return nullptr;
}
tl_status copy_to_host(void *, void *src, uint64_t off, void *dst, uint64_t n) {
  std::memcpy(dst, at(src, off), n);
  return nullptr;
}
tl_status copy_buffer(void *, void *src, uint64_t so, void *dst, uint64_t doff, uint64_t n) {
  std::memcpy(at(dst, doff), at(src, so), n);
  return nullptr;
}
tl_status fill(void *, void *dst, uint64_t off, uint64_t n, const void *p, uint32_t ps) {
  for (uint64_t i = 0; i < n; i += ps)
    std::memcpy(at(dst, off + i), p, ps);
  return nullptr;
}
tl_status launch(void *, void *, const tl_vendor_launch *) {
  return status(TL_STATUS_UNIMPLEMENTED, "the null device runs no kernels");
}

tl_status event_create(void *, void **out) {
  *out = new Event;
  return nullptr;
}
void event_destroy(void *, void *e) { delete static_cast<Event *>(e); }
tl_status record(void *, void *e) {
  static_cast<Event *>(e)->recorded = 1;
  static_cast<Event *>(e)->ns = now_ns();
  return nullptr;
}
tl_status wait(void *, void *) { return nullptr; }
tl_status query(void *e, int32_t *done) {
  *done = static_cast<Event *>(e)->recorded;
  return *done ? nullptr : status(TL_STATUS_FAILED_PRECONDITION, "never recorded");
}
tl_status event_sync(void *e) {
  return static_cast<Event *>(e)->recorded
             ? nullptr
             : status(TL_STATUS_FAILED_PRECONDITION, "never recorded");
}
tl_status timestamp(void *e, uint64_t *ns) {
  *ns = static_cast<Event *>(e)->ns;
  return event_sync(e);
}

tl_status executable_load(void *, const tl_vendor_executable_image *image, void **out) {
  *out = nullptr;
  if (std::strcmp(image->target, "null") != 0)
    return status(TL_STATUS_INCOMPATIBLE, std::string("cannot run target ") + image->target);
  static int exe;
  *out = &exe;
  return nullptr;
}
void executable_free(void *, void *) {}

const tl_vendor_plugin kPlugin = {sizeof(tl_vendor_plugin),
                                  TL_VENDOR_ABI_MAJOR,
                                  TL_VENDOR_ABI_MINOR,
                                  "null",
                                  "0.1.0",
                                  initialize,
                                  shutdown,
                                  device_count,
                                  device_open,
                                  device_close,
                                  device_query,
                                  buffer_allocate,
                                  buffer_free,
                                  buffer_map,
                                  stream_create,
                                  stream_destroy,
                                  stream_synchronize,
                                  copy_to_device,
                                  copy_to_host,
                                  copy_buffer,
                                  fill,
                                  launch,
                                  event_create,
                                  event_destroy,
                                  record,
                                  wait,
                                  query,
                                  event_sync,
                                  timestamp,
                                  executable_load,
                                  executable_free,
                                  {}};

} // namespace

extern "C" TL_VENDOR_EXPORT const tl_vendor_plugin *tl_vendor_plugin_entry(uint32_t) {
  return &kPlugin;
}
