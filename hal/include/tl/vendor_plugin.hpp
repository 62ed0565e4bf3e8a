// A whole vendor plugin from one device class (header-only, C++17): the tl_vendor_plugin table and
// its entry point, lifetime, streams on WorkQueue, events on EventState and the guard around
// every entry function are written here once; a plugin writes only what its device does.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/vendor.h"
#include "tl/vendor_support.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tl::vendor {

/// The device class a plugin writes (`D` below). Every object it returns is owned by the SDK
/// through a unique_ptr, so destructors release them (a buffer frees its memory, the device its
/// handles). Functions return Error{} or a failure whose message the SDK prefixes with the
/// plugin's name; they may throw (bad_alloc: RESOURCE_EXHAUSTED, the rest INTERNAL). Those with a
/// `stream` queue their work on it and report its failures as Errors from the queued task.
///
///   class MyDevice {
///   public:
///     static constexpr const char *kName = "my";        // tl_vendor_plugin::name, messages
///     static constexpr const char *kVersion = "0.1.0";
///     struct Buffer { ... };                            // what buffer_allocate makes
///     struct Executable { ... };                        // what executable_load makes
///
///     static Error count(const Host &host, uint32_t &out); // devices; UNAVAILABLE: no driver
///     static Error open(const Host &host, uint32_t index, std::unique_ptr<MyDevice> &out);
///     const Host &host() const;                         // the host open() was given
///     Error query(tl_device_info &info);                // zeroed; the SDK copies struct_size
///     uint64_t now_ns();                                // the device's timeline, for events
///
///     Error allocate(const tl_buffer_desc &desc, std::unique_ptr<Buffer> &out);
///     void *map(Buffer &buffer);
///     Error copy_to_device(WorkQueue &stream, const void *src, Buffer &dst, uint64_t dst_offset,
///                          uint64_t size);             // size > 0
///     Error copy_to_host(WorkQueue &stream, Buffer &src, uint64_t src_offset, void *dst,
///                        uint64_t size);               // size > 0
///     Error copy_buffer(WorkQueue &stream, Buffer &src, uint64_t src_offset, Buffer &dst,
///                       uint64_t dst_offset, uint64_t size);   // size > 0
///     Error fill(WorkQueue &stream, Buffer &dst, uint64_t offset, uint64_t size,
///                std::vector<uint8_t> pattern);        // size > 0, a multiple of the pattern
///     Error launch(WorkQueue &stream, Executable &exe, const tl_vendor_launch &launch);
///     Error load(const tl_vendor_executable_image &image, std::unique_ptr<Executable> &out);
///     // optional (ABI 1.2): wrap memory the caller owns; without it tl_buffer_import is
///     // UNIMPLEMENTED on the device. The Buffer must not free that memory.
///     Error import(const tl_buffer_import_desc &desc, std::unique_ptr<Buffer> &out);
///   };
///   TL_DEFINE_VENDOR_PLUGIN(MyDevice)
///
/// The SDK checks the ABI major, the device index and the fill pattern, zeroes outputs, skips
/// empty copies and fills, and implements streams (one WorkQueue thread each) and events.

/// Copies `src` into a fixed-size field of tl_device_info, truncated and NUL-terminated.
template <size_t N> void copy_string(char (&dst)[N], const std::string &src) {
  std::snprintf(dst, N, "%s", src.c_str());
}

/// An event: its state is shared with the stream tasks that record or wait on it.
struct Event {
  const Host *host;
  std::shared_ptr<EventState> state = std::make_shared<EventState>();
};

/// Whether device class D offers the optional `import` (tl_buffer_import).
template <class D, class = void> struct HasImport : std::false_type {};
template <class D>
struct HasImport<D, std::void_t<decltype(std::declval<D &>().import(
                        std::declval<const tl_buffer_import_desc &>(),
                        std::declval<std::unique_ptr<typename D::Buffer> &>()))>> : std::true_type {
};

/// The plugin table's functions for device class D.
template <class D> struct PluginEntries {
  using Buffer = typename D::Buffer;
  using Executable = typename D::Executable;
  struct Stream {
    D &device;
    WorkQueue queue; // last: its destructor runs what is queued, then joins
  };

  static D &device_of(void *d) { return *static_cast<D *>(d); }
  static Stream &stream_of(void *s) { return *static_cast<Stream *>(s); }
  static Event &event_of(void *e) { return *static_cast<Event *>(e); }
  static Buffer &buffer_of(void *b) { return *static_cast<Buffer *>(b); }

  /// Runs `make` (which fills a unique_ptr<T>) and hands the object to the caller on success.
  template <class T, class Make> static Error make_into(void **out, Make make) {
    std::unique_ptr<T> object;
    Error e = make(object);
    if (e.ok())
      *out = object.release();
    return e;
  }

  // ---- lifetime and devices --------------------------------------------------------------------

  static tl_status initialize(const tl_vendor_host_api *api, void **out_state) {
    if (out_state)
      *out_state = nullptr;
    // Without the host's make_status no error can be reported; the runtime always provides it.
    if (!api || !api->make_status || !out_state)
      return nullptr;
    const Host probe(*api, D::kName);
    if (api->abi_major != TL_VENDOR_ABI_MAJOR)
      return probe.status(TL_STATUS_INCOMPATIBLE,
                          "plugin speaks vendor ABI " + std::to_string(TL_VENDOR_ABI_MAJOR) +
                              ", host speaks " + std::to_string(api->abi_major));
    return guard(probe, [&] {
      *out_state = new Host(*api, D::kName);
      return Error{};
    });
  }

  static void shutdown(void *state) { delete static_cast<Host *>(state); }

  static tl_status device_count(void *state, uint32_t *out_count) {
    const Host &host = *static_cast<Host *>(state);
    *out_count = 0;
    return guard(host, [&] { return D::count(host, *out_count); });
  }

  static tl_status device_open(void *state, uint32_t index, void **out_device) {
    const Host &host = *static_cast<Host *>(state);
    *out_device = nullptr;
    return guard(host, [&] {
      uint32_t count = 0;
      if (Error e = D::count(host, count); !e.ok())
        return e;
      if (index >= count)
        return Error{TL_STATUS_NOT_FOUND, "no device " + std::to_string(index) +
                                              " (the plugin has " + std::to_string(count) + ")"};
      return make_into<D>(out_device, [&](auto &out) { return D::open(host, index, out); });
    });
  }

  static void device_close(void *device) {
    D *d = static_cast<D *>(device);
    guard_void(d->host(), "device_close", [&] { delete d; });
  }

  static tl_status device_query(void *device, tl_device_info *out_info) {
    D &d = device_of(device);
    return guard(d.host(), [&] {
      // Write only as much as the caller's (possibly older, smaller) struct holds; 0 means the
      // caller did not say, and gets this header's struct.
      const size_t size =
          out_info->struct_size == 0 ? sizeof(tl_device_info) : out_info->struct_size;
      if (size < sizeof(size_t))
        return Error{TL_STATUS_INVALID_ARGUMENT, "tl_device_info.struct_size is too small"};
      tl_device_info info{};
      if (Error e = d.query(info); !e.ok())
        return e;
      info.struct_size = size;
      std::memcpy(out_info, &info, std::min(size, sizeof(info)));
      return Error{};
    });
  }

  // ---- buffers ---------------------------------------------------------------------------------

  static tl_status buffer_allocate(void *device, const tl_buffer_desc *desc, void **out_buffer) {
    D &d = device_of(device);
    *out_buffer = nullptr;
    return guard(d.host(), [&] {
      return make_into<Buffer>(out_buffer, [&](auto &out) { return d.allocate(*desc, out); });
    });
  }

  static tl_status buffer_import(void *device, const tl_buffer_import_desc *desc,
                                 void **out_buffer) {
    D &d = device_of(device);
    *out_buffer = nullptr;
    return guard(d.host(), [&] {
      if constexpr (HasImport<D>::value)
        return make_into<Buffer>(out_buffer, [&](auto &out) { return d.import(*desc, out); });
      else
        return Error{TL_STATUS_UNIMPLEMENTED, "importing external memory is not supported"};
    });
  }

  static void buffer_free(void *device, void *buffer) {
    guard_void(device_of(device).host(), "buffer_free",
               [&] { delete static_cast<Buffer *>(buffer); });
  }

  static tl_status buffer_map(void *device, void *buffer, void **out_host_ptr) {
    D &d = device_of(device);
    *out_host_ptr = nullptr;
    return guard(d.host(), [&] {
      *out_host_ptr = d.map(buffer_of(buffer));
      return Error{};
    });
  }

  // ---- streams, copies, fills, launches --------------------------------------------------------

  static tl_status stream_create(void *device, void **out_stream) {
    D &d = device_of(device);
    *out_stream = nullptr;
    return guard(d.host(), [&] {
      *out_stream = new Stream{d, {}}; // std::system_error if no thread can be made: INTERNAL
      return Error{};
    });
  }

  static void stream_destroy(void *device, void *stream) {
    guard_void(device_of(device).host(), "stream_destroy",
               [&] { delete static_cast<Stream *>(stream); });
  }

  static tl_status stream_synchronize(void *stream) {
    Stream &s = stream_of(stream);
    return guard(s.device.host(), [&] { return s.queue.synchronize(); });
  }

  static tl_status stream_copy_to_device(void *stream, const void *src, void *dst,
                                         uint64_t dst_offset, uint64_t size) {
    Stream &s = stream_of(stream);
    return guard(s.device.host(), [&] {
      return size == 0 ? Error{}
                       : s.device.copy_to_device(s.queue, src, buffer_of(dst), dst_offset, size);
    });
  }

  static tl_status stream_copy_to_host(void *stream, void *src, uint64_t src_offset, void *dst,
                                       uint64_t size) {
    Stream &s = stream_of(stream);
    return guard(s.device.host(), [&] {
      return size == 0 ? Error{}
                       : s.device.copy_to_host(s.queue, buffer_of(src), src_offset, dst, size);
    });
  }

  static tl_status stream_copy_buffer(void *stream, void *src, uint64_t src_offset, void *dst,
                                      uint64_t dst_offset, uint64_t size) {
    Stream &s = stream_of(stream);
    return guard(s.device.host(), [&] {
      return size == 0 ? Error{}
                       : s.device.copy_buffer(s.queue, buffer_of(src), src_offset, buffer_of(dst),
                                              dst_offset, size);
    });
  }

  static tl_status stream_fill(void *stream, void *dst, uint64_t offset, uint64_t size,
                               const void *pattern, uint32_t pattern_size) {
    Stream &s = stream_of(stream);
    return guard(s.device.host(), [&] {
      if (pattern_size == 0 || size % pattern_size != 0)
        return Error{TL_STATUS_INVALID_ARGUMENT,
                     "fill size must be a multiple of the pattern size"};
      if (size == 0)
        return Error{};
      auto *p = static_cast<const uint8_t *>(pattern); // it may not outlive this call
      return s.device.fill(s.queue, buffer_of(dst), offset, size,
                           std::vector<uint8_t>(p, p + pattern_size));
    });
  }

  static tl_status stream_launch(void *stream, void *executable, const tl_vendor_launch *launch) {
    Stream &s = stream_of(stream);
    return guard(s.device.host(), [&] {
      return s.device.launch(s.queue, *static_cast<Executable *>(executable), *launch);
    });
  }

  // ---- events ----------------------------------------------------------------------------------

  static Error never_recorded() {
    return {TL_STATUS_FAILED_PRECONDITION, "the event was never recorded"};
  }

  static tl_status event_create(void *device, void **out_event) {
    D &d = device_of(device);
    *out_event = nullptr;
    return guard(d.host(), [&] {
      *out_event = new Event{&d.host()};
      return Error{};
    });
  }

  static void event_destroy(void *device, void *event) {
    // Tasks still queued keep the shared state alive.
    delete static_cast<Event *>(event);
  }

  static tl_status stream_record_event(void *stream, void *event) {
    Stream &s = stream_of(stream);
    return guard(s.device.host(), [&] {
      D *d = &s.device;
      s.queue.enqueue(EventState::record(event_of(event).state, [d] { return d->now_ns(); }));
      return Error{};
    });
  }

  static tl_status stream_wait_event(void *stream, void *event) {
    Stream &s = stream_of(stream);
    return guard(s.device.host(), [&] {
      std::shared_ptr<EventState> state = event_of(event).state;
      if (const uint64_t target = state->newest())
        s.queue.enqueue(EventState::wait_for(state, target));
      return Error{};
    });
  }

  static tl_status event_query(void *event, int32_t *out_done) {
    Event &e = event_of(event);
    *out_done = 0;
    return guard(*e.host, [&] {
      std::lock_guard lock(e.state->mu);
      if (e.state->recorded == 0)
        return never_recorded();
      *out_done = e.state->completed >= e.state->recorded ? 1 : 0;
      return Error{};
    });
  }

  static tl_status event_synchronize(void *event) {
    Event &e = event_of(event);
    return guard(*e.host, [&] {
      std::unique_lock lock(e.state->mu);
      const uint64_t target = e.state->recorded;
      if (target == 0)
        return never_recorded();
      e.state->cv.wait(lock, [&] { return e.state->completed >= target; });
      return Error{};
    });
  }

  static tl_status event_timestamp_ns(void *event, uint64_t *out_ns) {
    Event &e = event_of(event);
    *out_ns = 0;
    return guard(*e.host, [&] {
      std::lock_guard lock(e.state->mu);
      if (e.state->recorded == 0)
        return never_recorded();
      if (e.state->completed < e.state->recorded)
        return Error{TL_STATUS_FAILED_PRECONDITION, "the event has not completed yet"};
      *out_ns = e.state->timestamp_ns;
      return Error{};
    });
  }

  // ---- executables -----------------------------------------------------------------------------

  static tl_status executable_load(void *device, const tl_vendor_executable_image *image,
                                   void **out_executable) {
    D &d = device_of(device);
    *out_executable = nullptr;
    return guard(d.host(), [&] {
      return make_into<Executable>(out_executable, [&](auto &out) { return d.load(*image, out); });
    });
  }

  static void executable_free(void *device, void *executable) {
    // Queued launches keep what they need alive (the device's tasks own it).
    guard_void(device_of(device).host(), "executable_free",
               [&] { delete static_cast<Executable *>(executable); });
  }
};

/// The plugin table of device class D (see above). The same table is returned whatever ABI major
/// the host asks for: the runtime compares abi_major and refuses a mismatch naming both versions.
template <class D> const tl_vendor_plugin *plugin_table() {
  using E = PluginEntries<D>;
  static const tl_vendor_plugin table = {sizeof(tl_vendor_plugin),
                                         TL_VENDOR_ABI_MAJOR,
                                         TL_VENDOR_ABI_MINOR,
                                         D::kName,
                                         D::kVersion,
                                         E::initialize,
                                         E::shutdown,
                                         E::device_count,
                                         E::device_open,
                                         E::device_close,
                                         E::device_query,
                                         E::buffer_allocate,
                                         E::buffer_free,
                                         E::buffer_map,
                                         E::stream_create,
                                         E::stream_destroy,
                                         E::stream_synchronize,
                                         E::stream_copy_to_device,
                                         E::stream_copy_to_host,
                                         E::stream_copy_buffer,
                                         E::stream_fill,
                                         E::stream_launch,
                                         E::event_create,
                                         E::event_destroy,
                                         E::stream_record_event,
                                         E::stream_wait_event,
                                         E::event_query,
                                         E::event_synchronize,
                                         E::event_timestamp_ns,
                                         E::executable_load,
                                         E::executable_free,
                                         HasImport<D>::value ? E::buffer_import : nullptr,
                                         nullptr, // stream_import: WorkQueue streams are not native
                                         nullptr, // event_elapsed_ms: events have timestamps
                                         {}};
  return &table;
}

} // namespace tl::vendor

/// Defines the plugin's one exported symbol, tl_vendor_plugin_entry, for device class `Device`.
#define TL_DEFINE_VENDOR_PLUGIN(Device)                                                            \
  extern "C" TL_VENDOR_EXPORT const tl_vendor_plugin *tl_vendor_plugin_entry(uint32_t) {           \
    return ::tl::vendor::plugin_table<Device>();                                                   \
  }
