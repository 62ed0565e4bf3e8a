// C API: buffers, streams, copies, fills and events, with the validation layer's checks.
// SPDX-License-Identifier: Apache-2.0
#include "api_util.h"

#include <utility>

using namespace tl::hal;

namespace {

const tl_vendor_plugin &vt(const Device *d) { return *d->plugin->table; }

/// [offset, offset + size) lies inside a buffer of `buffer_size` bytes (overflow-safe).
tl_status check_range(const char *fn, const char *what, uint64_t offset, uint64_t size,
                      uint64_t buffer_size) {
  if (offset > buffer_size || size > buffer_size - offset)
    return invalid(fn,
                   std::string(what) + " range [" + std::to_string(offset) + ", " +
                       std::to_string(offset) + " + " + std::to_string(size) +
                       ") exceeds the buffer's " + std::to_string(buffer_size) + " bytes",
                   TL_STATUS_OUT_OF_RANGE);
  return nullptr;
}

tl_status same_device(const char *fn, const char *what, const Device *a, const Device *b) {
  if (a != b)
    return invalid(fn, std::string(what) + " belongs to device '" + b->info.name +
                           "', the stream to device '" + a->info.name + "'");
  return nullptr;
}

void track(Runtime &rt, std::set<uint64_t> &set, uint64_t h) {
  std::lock_guard<std::mutex> lock(rt.mutex);
  set.insert(h);
}
void untrack(Runtime &rt, std::set<uint64_t> &set, uint64_t h) {
  std::lock_guard<std::mutex> lock(rt.mutex);
  set.erase(h);
}

} // namespace

namespace tl::hal {
void drain_device(Device &device) {
  Runtime &rt = *device.runtime;
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(rt.mutex);
    for (auto &[h, s] : rt.streams)
      if (s->device == &device)
        streams.push_back(s);
  }
  for (const std::shared_ptr<Stream> &s : streams) {
    std::lock_guard<std::mutex> use(s->use_mutex);
    if (s->destroyed) // released meanwhile: nothing queued on it any more
      continue;
    if (tl_status err = vt(&device).stream_synchronize(s->object)) {
      if (!s->deferred_error)
        s->deferred_error = err;
      else
        tl_status_free(err);
    }
  }
}
} // namespace tl::hal

extern "C" {

tl_status tl_buffer_create(tl_device device, const tl_buffer_desc *desc, tl_buffer *out_buffer) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_buffer)
      return invalid(kFn, "out_buffer is null");
    *out_buffer = nullptr;
    Device *d;
    TL_RETURN_IF_ERROR(resolve(kFn, "device", device, HandleType::Device, &d));
    TL_RETURN_IF_ERROR(check_struct(kFn, "desc", desc, sizeof(tl_buffer_desc)));
    if (desc->size_bytes == 0)
      return invalid(kFn, "size_bytes must be positive");
    if (d->runtime->validate) {
      if (desc->flags & ~uint32_t(TL_BUFFER_DEVICE_LOCAL | TL_BUFFER_HOST_VISIBLE))
        return invalid(kFn, "unknown flags 0x" + std::to_string(desc->flags));
      if (d->info.memory_bytes && desc->size_bytes > d->info.memory_bytes)
        return invalid(kFn,
                       "size " + std::to_string(desc->size_bytes) +
                           " exceeds the device memory of " + std::to_string(d->info.memory_bytes) +
                           " bytes",
                       TL_STATUS_RESOURCE_EXHAUSTED);
    }
    auto b = std::make_unique<Buffer>(Buffer{d, nullptr, desc->size_bytes, desc->flags});
    TL_RETURN_IF_ERROR(from_plugin(kFn, vt(d).buffer_allocate(d->object, desc, &b->object)));
    b->handle = HandleTable::global().insert(HandleType::Buffer, b.get());
    track(*d->runtime, d->runtime->buffers, b->handle);
    *out_buffer = to_handle<tl_buffer>(b.release()->handle);
    return nullptr;
  });
}

tl_status tl_buffer_import(tl_device device, const tl_buffer_import_desc *desc,
                           tl_buffer *out_buffer) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_buffer)
      return invalid(kFn, "out_buffer is null");
    *out_buffer = nullptr;
    Device *d;
    TL_RETURN_IF_ERROR(resolve(kFn, "device", device, HandleType::Device, &d));
    TL_RETURN_IF_ERROR(check_struct(kFn, "desc", desc, sizeof(tl_buffer_import_desc)));
    // Checked with validation off too: a null or empty import is never useful, and cheap to catch.
    if (!desc->pointer)
      return invalid(kFn, "pointer is null");
    if (desc->size_bytes == 0)
      return invalid(kFn, "size_bytes must be positive");
    if (desc->flags & ~uint32_t(TL_BUFFER_DEVICE_LOCAL | TL_BUFFER_HOST_VISIBLE))
      return invalid(kFn, "unknown flags 0x" + std::to_string(desc->flags));
    auto import = TL_OPTIONAL_FN(vt(d), buffer_import);
    if (!import)
      return invalid(kFn,
                     "device '" + std::string(d->info.name) + "' (plugin " + d->plugin->name +
                         ") does not support importing external memory",
                     TL_STATUS_UNIMPLEMENTED);
    auto b = std::make_unique<Buffer>(Buffer{d, nullptr, desc->size_bytes, desc->flags});
    b->imported = true;
    TL_RETURN_IF_ERROR(from_plugin(kFn, import(d->object, desc, &b->object)));
    b->handle = HandleTable::global().insert(HandleType::Buffer, b.get());
    track(*d->runtime, d->runtime->buffers, b->handle);
    *out_buffer = to_handle<tl_buffer>(b.release()->handle);
    return nullptr;
  });
}

tl_status tl_buffer_release(tl_buffer buffer) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Buffer *b;
    TL_RETURN_IF_ERROR(resolve(kFn, "buffer", buffer, HandleType::Buffer, &b));
    std::string why;
    if (!HandleTable::global().remove(b->handle, HandleType::Buffer, &why))
      return invalid(kFn, "buffer: " + why);
    untrack(*b->device->runtime, b->device->runtime->buffers, b->handle);
    drain_device(*b->device); // queued work may still use the memory
    vt(b->device).buffer_free(b->device->object, b->object);
    delete b;
    return nullptr;
  });
}

tl_status tl_buffer_size(tl_buffer buffer, uint64_t *out_size_bytes) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_size_bytes)
      return invalid(kFn, "out_size_bytes is null");
    *out_size_bytes = 0;
    Buffer *b;
    TL_RETURN_IF_ERROR(resolve(kFn, "buffer", buffer, HandleType::Buffer, &b));
    *out_size_bytes = b->size;
    return nullptr;
  });
}

tl_status tl_buffer_map(tl_buffer buffer, void **out_host_ptr) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_host_ptr)
      return invalid(kFn, "out_host_ptr is null");
    *out_host_ptr = nullptr;
    Buffer *b;
    TL_RETURN_IF_ERROR(resolve(kFn, "buffer", buffer, HandleType::Buffer, &b));
    if (!(b->flags & TL_BUFFER_HOST_VISIBLE))
      return invalid(kFn, "the buffer was not created TL_BUFFER_HOST_VISIBLE",
                     TL_STATUS_FAILED_PRECONDITION);
    return from_plugin(kFn, vt(b->device).buffer_map(b->device->object, b->object, out_host_ptr));
  });
}

tl_status tl_stream_create(tl_device device, tl_stream *out_stream) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_stream)
      return invalid(kFn, "out_stream is null");
    *out_stream = nullptr;
    Device *d;
    TL_RETURN_IF_ERROR(resolve(kFn, "device", device, HandleType::Device, &d));
    auto s = std::make_shared<Stream>();
    s->device = d;
    TL_RETURN_IF_ERROR(from_plugin(kFn, vt(d).stream_create(d->object, &s->object)));
    s->handle = HandleTable::global().insert(HandleType::Stream, s.get());
    {
      std::lock_guard<std::mutex> lock(d->runtime->mutex);
      d->runtime->streams[s->handle] = s;
    }
    *out_stream = to_handle<tl_stream>(s->handle);
    return nullptr;
  });
}

tl_status tl_stream_import(tl_device device, void *native_stream, tl_stream *out_stream) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_stream)
      return invalid(kFn, "out_stream is null");
    *out_stream = nullptr;
    Device *d;
    TL_RETURN_IF_ERROR(resolve(kFn, "device", device, HandleType::Device, &d));
    auto import = TL_OPTIONAL_FN(vt(d), stream_import);
    if (!import)
      return invalid(kFn,
                     "device '" + std::string(d->info.name) + "' (plugin " + d->plugin->name +
                         ") has no native streams to import",
                     TL_STATUS_UNIMPLEMENTED);
    auto s = std::make_shared<Stream>();
    s->device = d;
    TL_RETURN_IF_ERROR(from_plugin(kFn, import(d->object, native_stream, &s->object)));
    s->handle = HandleTable::global().insert(HandleType::Stream, s.get());
    {
      std::lock_guard<std::mutex> lock(d->runtime->mutex);
      d->runtime->streams[s->handle] = s;
    }
    *out_stream = to_handle<tl_stream>(s->handle);
    return nullptr;
  });
}

tl_status tl_stream_synchronize(tl_stream stream) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Stream *s;
    TL_RETURN_IF_ERROR(resolve(kFn, "stream", stream, HandleType::Stream, &s));
    std::lock_guard<std::mutex> use(s->use_mutex);
    tl_status err = vt(s->device).stream_synchronize(s->object);
    if (s->deferred_error) { // the earlier error is the one the caller has not seen yet
      tl_status_free(err);
      err = s->deferred_error;
      s->deferred_error = nullptr;
    }
    return from_plugin(kFn, err);
  });
}

tl_status tl_stream_release(tl_stream stream) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Stream *s;
    TL_RETURN_IF_ERROR(resolve(kFn, "stream", stream, HandleType::Stream, &s));
    std::string why;
    if (!HandleTable::global().remove(s->handle, HandleType::Stream, &why))
      return invalid(kFn, "stream: " + why);
    std::shared_ptr<Stream> owner; // keeps the object alive until any drain_device is done
    {
      std::lock_guard<std::mutex> lock(s->device->runtime->mutex);
      auto it = s->device->runtime->streams.find(s->handle);
      owner = it->second;
      s->device->runtime->streams.erase(it);
    }
    tl_status err;
    {
      std::lock_guard<std::mutex> use(s->use_mutex);
      err = vt(s->device).stream_synchronize(s->object);
      vt(s->device).stream_destroy(s->device->object, s->object);
      s->destroyed = true;
      if (s->deferred_error) {
        tl_status_free(err);
        err = std::exchange(s->deferred_error, nullptr);
      }
    }
    return from_plugin(kFn, err);
  });
}

tl_status tl_stream_copy_to_device(tl_stream stream, const void *src, tl_buffer dst,
                                   uint64_t dst_offset, uint64_t size_bytes) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Stream *s;
    Buffer *b;
    TL_RETURN_IF_ERROR(resolve(kFn, "stream", stream, HandleType::Stream, &s));
    TL_RETURN_IF_ERROR(resolve(kFn, "dst", dst, HandleType::Buffer, &b));
    if (!src && size_bytes)
      return invalid(kFn, "src is null");
    if (s->device->runtime->validate) {
      TL_RETURN_IF_ERROR(same_device(kFn, "dst", s->device, b->device));
      TL_RETURN_IF_ERROR(check_range(kFn, "dst", dst_offset, size_bytes, b->size));
    }
    if (!size_bytes)
      return nullptr;
    return from_plugin(kFn, vt(s->device).stream_copy_to_device(s->object, src, b->object,
                                                                dst_offset, size_bytes));
  });
}

tl_status tl_stream_copy_to_host(tl_stream stream, tl_buffer src, uint64_t src_offset, void *dst,
                                 uint64_t size_bytes) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Stream *s;
    Buffer *b;
    TL_RETURN_IF_ERROR(resolve(kFn, "stream", stream, HandleType::Stream, &s));
    TL_RETURN_IF_ERROR(resolve(kFn, "src", src, HandleType::Buffer, &b));
    if (!dst && size_bytes)
      return invalid(kFn, "dst is null");
    if (s->device->runtime->validate) {
      TL_RETURN_IF_ERROR(same_device(kFn, "src", s->device, b->device));
      TL_RETURN_IF_ERROR(check_range(kFn, "src", src_offset, size_bytes, b->size));
    }
    if (!size_bytes)
      return nullptr;
    return from_plugin(
        kFn, vt(s->device).stream_copy_to_host(s->object, b->object, src_offset, dst, size_bytes));
  });
}

tl_status tl_stream_copy_buffer(tl_stream stream, tl_buffer src, uint64_t src_offset, tl_buffer dst,
                                uint64_t dst_offset, uint64_t size_bytes) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Stream *s;
    Buffer *from, *to;
    TL_RETURN_IF_ERROR(resolve(kFn, "stream", stream, HandleType::Stream, &s));
    TL_RETURN_IF_ERROR(resolve(kFn, "src", src, HandleType::Buffer, &from));
    TL_RETURN_IF_ERROR(resolve(kFn, "dst", dst, HandleType::Buffer, &to));
    if (s->device->runtime->validate) {
      TL_RETURN_IF_ERROR(same_device(kFn, "src", s->device, from->device));
      TL_RETURN_IF_ERROR(same_device(kFn, "dst", s->device, to->device));
      TL_RETURN_IF_ERROR(check_range(kFn, "src", src_offset, size_bytes, from->size));
      TL_RETURN_IF_ERROR(check_range(kFn, "dst", dst_offset, size_bytes, to->size));
      if (from == to && src_offset < dst_offset + size_bytes &&
          dst_offset < src_offset + size_bytes)
        return invalid(kFn, "source and destination ranges overlap");
    }
    if (!size_bytes)
      return nullptr;
    return from_plugin(kFn, vt(s->device).stream_copy_buffer(s->object, from->object, src_offset,
                                                             to->object, dst_offset, size_bytes));
  });
}

tl_status tl_stream_fill(tl_stream stream, tl_buffer dst, uint64_t offset, uint64_t size_bytes,
                         const void *pattern, uint32_t pattern_size) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Stream *s;
    Buffer *b;
    TL_RETURN_IF_ERROR(resolve(kFn, "stream", stream, HandleType::Stream, &s));
    TL_RETURN_IF_ERROR(resolve(kFn, "dst", dst, HandleType::Buffer, &b));
    if (!pattern)
      return invalid(kFn, "pattern is null");
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
      return invalid(kFn, "pattern_size must be 1, 2 or 4, got " + std::to_string(pattern_size));
    if (s->device->runtime->validate) {
      TL_RETURN_IF_ERROR(same_device(kFn, "dst", s->device, b->device));
      if (offset % pattern_size || size_bytes % pattern_size)
        return invalid(kFn, "offset and size must be multiples of pattern_size " +
                                std::to_string(pattern_size));
      TL_RETURN_IF_ERROR(check_range(kFn, "dst", offset, size_bytes, b->size));
    }
    if (!size_bytes)
      return nullptr;
    return from_plugin(kFn, vt(s->device).stream_fill(s->object, b->object, offset, size_bytes,
                                                      pattern, pattern_size));
  });
}

tl_status tl_event_create(tl_device device, tl_event *out_event) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_event)
      return invalid(kFn, "out_event is null");
    *out_event = nullptr;
    Device *d;
    TL_RETURN_IF_ERROR(resolve(kFn, "device", device, HandleType::Device, &d));
    auto e = std::make_unique<Event>(Event{d, nullptr});
    TL_RETURN_IF_ERROR(from_plugin(kFn, vt(d).event_create(d->object, &e->object)));
    e->handle = HandleTable::global().insert(HandleType::Event, e.get());
    track(*d->runtime, d->runtime->events, e->handle);
    *out_event = to_handle<tl_event>(e.release()->handle);
    return nullptr;
  });
}

tl_status tl_event_release(tl_event event) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Event *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "event", event, HandleType::Event, &e));
    std::string why;
    if (!HandleTable::global().remove(e->handle, HandleType::Event, &why))
      return invalid(kFn, "event: " + why);
    untrack(*e->device->runtime, e->device->runtime->events, e->handle);
    drain_device(*e->device); // queued records and waits may still name the event
    vt(e->device).event_destroy(e->device->object, e->object);
    delete e;
    return nullptr;
  });
}

tl_status tl_stream_record_event(tl_stream stream, tl_event event) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Stream *s;
    Event *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "stream", stream, HandleType::Stream, &s));
    TL_RETURN_IF_ERROR(resolve(kFn, "event", event, HandleType::Event, &e));
    TL_RETURN_IF_ERROR(same_device(kFn, "event", s->device, e->device));
    e->recorded = true;
    return from_plugin(kFn, vt(s->device).stream_record_event(s->object, e->object));
  });
}

tl_status tl_stream_wait_event(tl_stream stream, tl_event event) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Stream *s;
    Event *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "stream", stream, HandleType::Stream, &s));
    TL_RETURN_IF_ERROR(resolve(kFn, "event", event, HandleType::Event, &e));
    TL_RETURN_IF_ERROR(same_device(kFn, "event", s->device, e->device));
    if (!e->recorded)
      return invalid(kFn, "event was never recorded: waiting on it would block forever",
                     TL_STATUS_FAILED_PRECONDITION);
    return from_plugin(kFn, vt(s->device).stream_wait_event(s->object, e->object));
  });
}

tl_status tl_event_query(tl_event event, int32_t *out_done) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_done)
      return invalid(kFn, "out_done is null");
    *out_done = 0;
    Event *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "event", event, HandleType::Event, &e));
    if (!e->recorded)
      return invalid(kFn, "event was never recorded", TL_STATUS_FAILED_PRECONDITION);
    return from_plugin(kFn, vt(e->device).event_query(e->object, out_done));
  });
}

tl_status tl_event_synchronize(tl_event event) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Event *e;
    TL_RETURN_IF_ERROR(resolve(kFn, "event", event, HandleType::Event, &e));
    if (!e->recorded)
      return invalid(kFn, "event was never recorded", TL_STATUS_FAILED_PRECONDITION);
    return from_plugin(kFn, vt(e->device).event_synchronize(e->object));
  });
}

tl_status tl_event_elapsed_ms(tl_event start, tl_event end, double *out_ms) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_ms)
      return invalid(kFn, "out_ms is null");
    *out_ms = 0;
    Event *a, *b;
    TL_RETURN_IF_ERROR(resolve(kFn, "start", start, HandleType::Event, &a));
    TL_RETURN_IF_ERROR(resolve(kFn, "end", end, HandleType::Event, &b));
    if (a->device != b->device)
      return invalid(kFn, "start and end belong to different devices");
    auto elapsed = TL_OPTIONAL_FN(vt(a->device), event_elapsed_ms);
    uint64_t t0 = 0, t1 = 0;
    for (auto [e, t, name] : {std::tuple{a, &t0, "start"}, std::tuple{b, &t1, "end"}}) {
      int32_t done = 0;
      if (!e->recorded)
        return invalid(kFn, std::string(name) + " was never recorded",
                       TL_STATUS_FAILED_PRECONDITION);
      TL_RETURN_IF_ERROR(from_plugin(kFn, vt(e->device).event_query(e->object, &done)));
      if (!done)
        return invalid(kFn, std::string(name) + " has not completed yet",
                       TL_STATUS_FAILED_PRECONDITION);
      if (!elapsed)
        TL_RETURN_IF_ERROR(from_plugin(kFn, vt(e->device).event_timestamp_ns(e->object, t)));
    }
    // Devices without absolute event timestamps (CUDA) measure the interval themselves.
    if (elapsed)
      return from_plugin(kFn, elapsed(a->object, b->object, out_ms));
    *out_ms = (static_cast<double>(t1) - static_cast<double>(t0)) / 1e6;
    return nullptr;
  });
}

} // extern "C"
