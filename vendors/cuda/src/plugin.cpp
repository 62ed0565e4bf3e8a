// The cuda plugin's function table: lifetime, devices, streams (CUstream) and events (CUevent).
// It is written out rather than made by tl/vendor_plugin.hpp because that SDK's streams are host
// threads; here the driver's own queues are the streams.
// SPDX-License-Identifier: Apache-2.0
#include "cuda_plugin.h"

#include <cstring>

namespace tl::cuda {
namespace {

using vendor::guard;
using vendor::guard_void;

const Host &host_of(void *state) { return *static_cast<Host *>(state); }
Device &dev(void *d) { return *static_cast<Device *>(d); }
Stream &str(void *s) { return *static_cast<Stream *>(s); }
Event &evt(void *e) { return *static_cast<Event *>(e); }
Buffer &buf(void *b) { return *static_cast<Buffer *>(b); }

// ---- lifetime and devices ----------------------------------------------------------------------

tl_status initialize(const tl_vendor_host_api *api, void **out_state) {
  if (out_state)
    *out_state = nullptr;
  if (!api || !api->make_status || !out_state)
    return nullptr;
  const Host probe(*api, "cuda");
  if (api->abi_major != TL_VENDOR_ABI_MAJOR)
    return probe.status(TL_STATUS_INCOMPATIBLE,
                        "plugin speaks vendor ABI " + std::to_string(TL_VENDOR_ABI_MAJOR) +
                            ", host speaks " + std::to_string(api->abi_major));
  // The driver is opened by device_count, so that a machine without one still loads the plugin
  // and says why it has no device.
  return guard(probe, [&] {
    *out_state = new Host(*api, "cuda");
    return Error{};
  });
}

void shutdown(void *state) { delete static_cast<Host *>(state); }

tl_status device_count(void *state, uint32_t *out_count) {
  *out_count = 0;
  return guard(host_of(state), [&] {
    const Driver &d = driver();
    if (!d.ok())
      return Error{TL_STATUS_UNAVAILABLE, "no device: " + d.reason};
    *out_count = static_cast<uint32_t>(d.devices);
    return Error{};
  });
}

tl_status device_open(void *state, uint32_t index, void **out_device) {
  *out_device = nullptr;
  const Host &host = host_of(state);
  return guard(host, [&] {
    const Driver &drv = driver();
    if (!drv.ok() || index >= static_cast<uint32_t>(drv.devices))
      return Error{TL_STATUS_NOT_FOUND, "no device " + std::to_string(index)};
    auto d = std::make_unique<Device>();
    d->host = &host;
    d->ordinal = static_cast<int>(index);
    TL_CU_CHECK("", cuDeviceGet, &d->device, d->ordinal);
    TL_CU_CHECK("", cuDevicePrimaryCtxRetain, &d->context, d->device);
    if (Error e = d->bind(); !e.ok())
      return e;
    if (Error e = query_device(*d); !e.ok())
      return e;
    // Event timestamps count from this event (the HAL asks plugins for absolute stamps; CUDA has
    // only intervals); elapsed times use cuEventElapsedTime directly (event_elapsed_ms).
    TL_CU_CHECK("", cuStreamCreate, &d->base_stream, CU_STREAM_NON_BLOCKING);
    TL_CU_CHECK("", cuEventCreate, &d->base, CU_EVENT_DEFAULT);
    TL_CU_CHECK("", cuEventRecord, d->base, d->base_stream);
    TL_CU_CHECK("", cuEventSynchronize, d->base);
    *out_device = d.release();
    return Error{};
  });
}

void device_close(void *device) {
  Device *d = &dev(device);
  guard_void(*d->host, "device_close", [&] { delete d; });
}

tl_status device_query(void *device, tl_device_info *out_info) {
  Device &d = dev(device);
  return guard(*d.host, [&] {
    const size_t size = out_info->struct_size == 0 ? sizeof(tl_device_info) : out_info->struct_size;
    if (size < sizeof(size_t))
      return Error{TL_STATUS_INVALID_ARGUMENT, "tl_device_info.struct_size is too small"};
    tl_device_info info = d.info;
    info.struct_size = size;
    std::memcpy(out_info, &info, std::min(size, sizeof(info)));
    return Error{};
  });
}

// ---- buffers -----------------------------------------------------------------------------------

tl_status buffer_allocate(void *device, const tl_buffer_desc *desc, void **out_buffer) {
  Device &d = dev(device);
  *out_buffer = nullptr;
  return guard(*d.host, [&] {
    if (Error e = d.bind(); !e.ok())
      return e;
    auto b = std::make_unique<Buffer>();
    b->device = &d;
    b->size = desc->size_bytes;
    // Device-local ones are device memory; host-visible and device-local, managed memory (the
    // driver migrates pages on access); host-visible alone, pinned host memory mapped into the
    // device (as Vulkan's HOST_VISIBLE without DEVICE_LOCAL): kernels reach it over the link,
    // and host copies from or to it are one DMA at link speed (the staging buffers' own kind).
    b->host_visible = (desc->flags & TL_BUFFER_HOST_VISIBLE) != 0;
    const bool local = (desc->flags & TL_BUFFER_DEVICE_LOCAL) != 0;
    const std::string what = "allocating " + std::to_string(desc->size_bytes) + " bytes";
    if (b->host_visible && local) {
      TL_CU_CHECK(what, cuMemAllocManaged, &b->ptr, desc->size_bytes, CU_MEM_ATTACH_GLOBAL);
    } else if (b->host_visible) {
      TL_CU_CHECK(what + " of pinned host memory", cuMemHostAlloc, &b->host, desc->size_bytes,
                  CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
      if (CUresult r = driver().cuMemHostGetDevicePointer(&b->ptr, b->host, 0); r != CUDA_SUCCESS) {
        driver().cuMemFreeHost(b->host);
        return Error{TL_STATUS_INTERNAL,
                     "mapping pinned host memory into the device: " + driver().name(r)};
      }
      std::lock_guard lock(d.pinned_mutex);
      d.pinned[reinterpret_cast<uintptr_t>(b->host)] = desc->size_bytes;
    } else {
      TL_CU_CHECK(what, cuMemAlloc, &b->ptr, desc->size_bytes);
    }
    *out_buffer = b.release();
    return Error{};
  });
}

tl_status buffer_import(void *device, const tl_buffer_import_desc *desc, void **out_buffer) {
  Device &d = dev(device);
  *out_buffer = nullptr;
  return guard(*d.host, [&] {
    if (Error e = d.bind(); !e.ok())
      return e;
    const auto ptr = reinterpret_cast<CUdeviceptr>(desc->pointer);
    // The pointer must be device memory of this GPU (or managed memory); a host pointer or
    // another GPU's memory would fault inside a kernel, far from the mistake.
    int ordinal = -1;
    TL_CU_CHECK("the pointer is not CUDA memory", cuPointerGetAttribute, &ordinal,
                CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
    if (ordinal != d.ordinal)
      return Error{TL_STATUS_INVALID_ARGUMENT, "the pointer belongs to CUDA device " +
                                                   std::to_string(ordinal) + ", not device " +
                                                   std::to_string(d.ordinal)};
    auto b = std::make_unique<Buffer>();
    if (desc->flags & TL_BUFFER_HOST_VISIBLE) {
      unsigned int managed = 0;
      TL_CU_CHECK("", cuPointerGetAttribute, &managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr);
      if (!managed)
        return Error{TL_STATUS_INVALID_ARGUMENT,
                     "TL_BUFFER_HOST_VISIBLE needs managed memory (cuMemAllocManaged); the "
                     "pointer is device memory"};
      b->host_visible = true;
    }
    b->device = &d;
    b->ptr = ptr;
    b->size = desc->size_bytes;
    b->owned = false;
    *out_buffer = b.release();
    return Error{};
  });
}

void buffer_free(void *device, void *buffer) {
  guard_void(*dev(device).host, "buffer_free", [&] {
    std::unique_ptr<Buffer> b(&buf(buffer));
    // The runtime drained the device's streams first, so no queued work uses the memory.
    if (b->host) {
      {
        std::lock_guard lock(b->device->pinned_mutex);
        b->device->pinned.erase(reinterpret_cast<uintptr_t>(b->host));
      }
      if (b->device->bind().ok())
        driver().cuMemFreeHost(b->host);
    } else if (b->owned && b->device->bind().ok()) {
      driver().cuMemFree(b->ptr);
    }
  });
}

tl_status buffer_map(void *device, void *buffer, void **out_host_ptr) {
  *out_host_ptr = nullptr;
  Buffer &b = buf(buffer);
  if (!b.host_visible) // the runtime checks the flag; an import without it lands here
    return dev(device).host->status(TL_STATUS_FAILED_PRECONDITION,
                                    "the buffer is device memory, not managed memory");
  *out_host_ptr = b.host ? b.host : reinterpret_cast<void *>(static_cast<uintptr_t>(b.ptr));
  return nullptr;
}

// ---- streams -----------------------------------------------------------------------------------

tl_status stream_create(void *device, void **out_stream) {
  Device &d = dev(device);
  *out_stream = nullptr;
  return guard(*d.host, [&] {
    if (Error e = d.bind(); !e.ok())
      return e;
    auto s = std::make_unique<Stream>();
    s->device = &d;
    // Non-blocking: TL streams do not serialize with the legacy default stream, as in PyTorch.
    TL_CU_CHECK("", cuStreamCreate, &s->stream, CU_STREAM_NON_BLOCKING);
    *out_stream = s.release();
    return Error{};
  });
}

tl_status stream_import(void *device, void *native, void **out_stream) {
  Device &d = dev(device);
  *out_stream = nullptr;
  return guard(*d.host, [&] {
    if (Error e = d.bind(); !e.ok())
      return e;
    auto s = std::make_unique<Stream>();
    s->device = &d;
    s->stream = static_cast<CUstream>(native);
    s->owned = false;
    // A stream of another context would run TL's work on another GPU's memory.
    if (s->stream) {
      CUcontext ctx = nullptr;
      TL_CU_CHECK("the native stream is not a CUstream", cuStreamGetCtx, s->stream, &ctx);
      if (ctx != d.context)
        return Error{TL_STATUS_INVALID_ARGUMENT,
                     "the native stream belongs to another CUDA context than device " +
                         std::to_string(d.ordinal) + "'s primary context"};
    }
    *out_stream = s.release();
    return Error{};
  });
}

void stream_destroy(void *device, void *stream) {
  guard_void(*dev(device).host, "stream_destroy", [&] {
    std::unique_ptr<Stream> s(&str(stream));
    if (!s->device->bind().ok())
      return;
    free_staging(*s);
    if (s->status.host)
      driver().cuMemFreeHost(s->status.host);
    if (s->status.device)
      driver().cuMemFree(s->status.device);
    if (s->owned)
      driver().cuStreamDestroy(s->stream);
  });
}

tl_status stream_synchronize(void *stream) {
  Stream &s = str(stream);
  return guard(*s.device->host, [&] {
    if (Error e = s.device->bind(); !e.ok())
      return e;
    TL_CU_CHECK("a queued copy or kernel failed", cuStreamSynchronize, s.stream);
    return check_status_words(s);
  });
}

tl_status stream_copy_to_device(void *stream, const void *src, void *dst, uint64_t offset,
                                uint64_t size) {
  Stream &s = str(stream);
  return guard(*s.device->host,
               [&] { return size ? copy_to_device(s, src, buf(dst), offset, size) : Error{}; });
}

tl_status stream_copy_to_host(void *stream, void *src, uint64_t offset, void *dst, uint64_t size) {
  Stream &s = str(stream);
  return guard(*s.device->host,
               [&] { return size ? copy_to_host(s, buf(src), offset, dst, size) : Error{}; });
}

tl_status stream_copy_buffer(void *stream, void *src, uint64_t src_offset, void *dst,
                             uint64_t dst_offset, uint64_t size) {
  Stream &s = str(stream);
  return guard(*s.device->host, [&] {
    if (size == 0)
      return Error{};
    if (Error e = s.device->bind(); !e.ok())
      return e;
    TL_CU_CHECK("", cuMemcpyDtoDAsync, buf(dst).ptr + dst_offset, buf(src).ptr + src_offset, size,
                s.stream);
    return Error{};
  });
}

tl_status stream_fill(void *stream, void *dst, uint64_t offset, uint64_t size, const void *pattern,
                      uint32_t pattern_size) {
  Stream &s = str(stream);
  return guard(*s.device->host, [&] {
    if (pattern_size == 0 || size % pattern_size != 0)
      return Error{TL_STATUS_INVALID_ARGUMENT, "fill size must be a multiple of the pattern size"};
    if (size == 0)
      return Error{};
    if (Error e = s.device->bind(); !e.ok())
      return e;
    const CUdeviceptr p = buf(dst).ptr + offset;
    const size_t n = size / pattern_size;
    if (pattern_size == 1) {
      TL_CU_CHECK("", cuMemsetD8Async, p, *static_cast<const uint8_t *>(pattern), n, s.stream);
    } else if (pattern_size == 2) {
      uint16_t v;
      std::memcpy(&v, pattern, 2);
      TL_CU_CHECK("", cuMemsetD16Async, p, v, n, s.stream);
    } else if (pattern_size == 4) {
      uint32_t v;
      std::memcpy(&v, pattern, 4);
      TL_CU_CHECK("", cuMemsetD32Async, p, v, n, s.stream);
    } else {
      return Error{TL_STATUS_INVALID_ARGUMENT, "fill patterns are 1, 2 or 4 bytes"};
    }
    return Error{};
  });
}

tl_status stream_launch(void *stream, void *executable, const tl_vendor_launch *l) {
  Stream &s = str(stream);
  return guard(*s.device->host,
               [&] { return launch(s, *static_cast<Executable *>(executable), *l); });
}

// ---- events ------------------------------------------------------------------------------------

tl_status event_create(void *device, void **out_event) {
  Device &d = dev(device);
  *out_event = nullptr;
  return guard(*d.host, [&] {
    if (Error e = d.bind(); !e.ok())
      return e;
    auto e = std::make_unique<Event>();
    e->device = &d;
    TL_CU_CHECK("", cuEventCreate, &e->event, CU_EVENT_DEFAULT); // timing enabled
    *out_event = e.release();
    return Error{};
  });
}

void event_destroy(void *device, void *event) {
  guard_void(*dev(device).host, "event_destroy", [&] {
    std::unique_ptr<Event> e(&evt(event));
    // CUDA defers the destruction of an event still queued on a stream: no drain needed.
    if (e->device->bind().ok())
      driver().cuEventDestroy(e->event);
  });
}

Error never_recorded() { return {TL_STATUS_FAILED_PRECONDITION, "the event was never recorded"}; }

tl_status stream_record_event(void *stream, void *event) {
  Stream &s = str(stream);
  return guard(*s.device->host, [&] {
    if (Error e = s.device->bind(); !e.ok())
      return e;
    TL_CU_CHECK("", cuEventRecord, evt(event).event, s.stream);
    evt(event).recorded = true;
    return Error{};
  });
}

tl_status stream_wait_event(void *stream, void *event) {
  Stream &s = str(stream);
  return guard(*s.device->host, [&] {
    if (!evt(event).recorded)
      return Error{};
    if (Error e = s.device->bind(); !e.ok())
      return e;
    TL_CU_CHECK("", cuStreamWaitEvent, s.stream, evt(event).event, 0);
    return Error{};
  });
}

tl_status event_query(void *event, int32_t *out_done) {
  Event &e = evt(event);
  *out_done = 0;
  return guard(*e.device->host, [&] {
    if (!e.recorded)
      return never_recorded();
    if (Error err = e.device->bind(); !err.ok())
      return err;
    const CUresult r = driver().cuEventQuery(e.event);
    if (r == CUDA_ERROR_NOT_READY)
      return Error{};
    if (r != CUDA_SUCCESS)
      return driver().error(r, TL_CUDA_SYMBOL(cuEventQuery));
    *out_done = 1;
    return Error{};
  });
}

tl_status event_synchronize(void *event) {
  Event &e = evt(event);
  return guard(*e.device->host, [&] {
    if (!e.recorded)
      return never_recorded();
    if (Error err = e.device->bind(); !err.ok())
      return err;
    TL_CU_CHECK("", cuEventSynchronize, e.event);
    return Error{};
  });
}

tl_status event_elapsed_ms(void *start, void *end, double *out_ms) {
  Event &a = evt(start), &b = evt(end);
  *out_ms = 0;
  return guard(*a.device->host, [&] {
    if (Error err = a.device->bind(); !err.ok())
      return err;
    float ms = 0;
    TL_CU_CHECK("", cuEventElapsedTime, &ms, a.event, b.event);
    *out_ms = ms;
    return Error{};
  });
}

tl_status event_timestamp_ns(void *event, uint64_t *out_ns) {
  Event &e = evt(event);
  *out_ns = 0;
  return guard(*e.device->host, [&] {
    if (!e.recorded)
      return never_recorded();
    if (Error err = e.device->bind(); !err.ok())
      return err;
    // Coarse far from the base event (cuEventElapsedTime gives float milliseconds): intervals
    // should come from event_elapsed_ms, which the runtime prefers.
    float ms = 0;
    TL_CU_CHECK("", cuEventElapsedTime, &ms, e.device->base, e.event);
    *out_ns = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
    return Error{};
  });
}

// ---- executables -------------------------------------------------------------------------------

tl_status executable_load(void *device, const tl_vendor_executable_image *image,
                          void **out_executable) {
  Device &d = dev(device);
  *out_executable = nullptr;
  return guard(*d.host, [&] {
    std::unique_ptr<Executable> exe;
    Error e = load_executable(d, *image, exe);
    if (e.ok())
      *out_executable = exe.release();
    return e;
  });
}

void executable_free(void *device, void *executable) {
  guard_void(*dev(device).host, "executable_free", [&] {
    std::unique_ptr<Executable> exe(static_cast<Executable *>(executable));
    // The runtime drained the device's streams: no queued launch uses the module.
    if (exe->module && exe->device->bind().ok())
      driver().cuModuleUnload(exe->module);
  });
}

const tl_vendor_plugin kTable = {
    sizeof(tl_vendor_plugin),
    TL_VENDOR_ABI_MAJOR,
    TL_VENDOR_ABI_MINOR,
    "cuda",
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
    stream_copy_to_device,
    stream_copy_to_host,
    stream_copy_buffer,
    stream_fill,
    stream_launch,
    event_create,
    event_destroy,
    stream_record_event,
    stream_wait_event,
    event_query,
    event_synchronize,
    event_timestamp_ns,
    executable_load,
    executable_free,
    buffer_import,
    stream_import,
    event_elapsed_ms,
    {},
};

} // namespace

Device::~Device() {
  const Driver &drv = driver();
  if (bind().ok()) {
    if (base)
      drv.cuEventDestroy(base);
    if (base_stream)
      drv.cuStreamDestroy(base_stream);
  }
  if (context)
    drv.cuDevicePrimaryCtxRelease(device);
}

Error Device::bind() const {
  // Asked each time (a cheap thread-local read in the driver): another library on this thread,
  // or another device of ours, may have made a different context current since.
  CUcontext current = nullptr;
  if (driver().cuCtxGetCurrent(&current) == CUDA_SUCCESS && current == context)
    return {};
  TL_CU_CHECK("", cuCtxSetCurrent, context);
  return {};
}

} // namespace tl::cuda

extern "C" TL_VENDOR_EXPORT const tl_vendor_plugin *tl_vendor_plugin_entry(uint32_t) {
  return &tl::cuda::kTable;
}
