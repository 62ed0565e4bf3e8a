// The cpu plugin's table and entry point: lifetime, device enumeration and opening.
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"

#include <cstdlib>

#include <algorithm>
#include <cstddef>
#include <string>
#include <thread>

namespace tl::cpu {

void Plugin::log(int32_t level, const std::string &message) const {
  // `log` is optional: an older host table may end before it, or leave it null.
  if (host && host->struct_size >= offsetof(tl_vendor_host_api, log) + sizeof(host->log) &&
      host->log)
    host->log(level, kPluginName, message.c_str());
}

namespace {

tl_status initialize(const tl_vendor_host_api *host, void **out_state) {
  if (out_state)
    *out_state = nullptr;
  // Without the host's make_status no error can be reported; the runtime always provides it.
  if (!host || !host->make_status || !out_state)
    return nullptr;
  Plugin probe{host};
  if (host->abi_major != TL_VENDOR_ABI_MAJOR)
    return probe.status(TL_STATUS_INCOMPATIBLE,
                        "cpu: plugin speaks vendor ABI " + std::to_string(TL_VENDOR_ABI_MAJOR) +
                            ", host speaks " + std::to_string(host->abi_major));
  return guarded(probe, [&]() -> tl_status {
    *out_state = new Plugin{host};
    return nullptr;
  });
}

void shutdown(void *state) { delete static_cast<Plugin *>(state); }

tl_status device_count(void *state, uint32_t *out_count) {
  *out_count = 1; // the host CPU, all of its cores as one device
  return nullptr;
}

tl_status device_open(void *state, uint32_t index, void **out_device) {
  auto *plugin = static_cast<Plugin *>(state);
  *out_device = nullptr;
  if (index != 0)
    return plugin->status(TL_STATUS_NOT_FOUND,
                          "cpu: no device " + std::to_string(index) + " (the plugin has 1)");
  return guarded(*plugin, [&]() -> tl_status {
    auto device = std::make_unique<Device>();
    device->plugin = plugin;
    device->compute_units = std::max(1u, std::thread::hardware_concurrency());
    // TL_CPU_THREADS limits the worker pool (benchmarks on 1 thread, sharing a machine).
    if (const char *env = std::getenv("TL_CPU_THREADS")) {
      char *end = nullptr;
      const long n = std::strtol(env, &end, 10);
      if (*env == '\0' || *end != '\0' || n < 1 || n > 4096)
        return plugin->status(TL_STATUS_INVALID_ARGUMENT,
                              std::string("cpu: TL_CPU_THREADS must be a positive integer, got '") +
                                  env + "'");
      device->compute_units = static_cast<unsigned>(n);
    }
    device->arena = std::make_unique<tbb::task_arena>(static_cast<int>(device->compute_units));
    *out_device = device.release();
    return nullptr;
  });
}

void device_close(void *device) {
  auto *d = static_cast<Device *>(device);
  guarded_void(*d->plugin, "cpu: device_close", [&] { delete d; });
}

constexpr tl_vendor_plugin kPlugin = {
    .struct_size = sizeof(tl_vendor_plugin),
    .abi_major = TL_VENDOR_ABI_MAJOR,
    .abi_minor = TL_VENDOR_ABI_MINOR,
    .name = kPluginName,
    .version = kPluginVersion,
    .initialize = initialize,
    .shutdown = shutdown,
    .device_count = device_count,
    .device_open = device_open,
    .device_close = device_close,
    .device_query = device_query,
    .buffer_allocate = buffer_allocate,
    .buffer_free = buffer_free,
    .buffer_map = buffer_map,
    .stream_create = stream_create,
    .stream_destroy = stream_destroy,
    .stream_synchronize = stream_synchronize,
    .stream_copy_to_device = stream_copy_to_device,
    .stream_copy_to_host = stream_copy_to_host,
    .stream_copy_buffer = stream_copy_buffer,
    .stream_fill = stream_fill,
    .stream_launch = stream_launch,
    .event_create = event_create,
    .event_destroy = event_destroy,
    .stream_record_event = stream_record_event,
    .stream_wait_event = stream_wait_event,
    .event_query = event_query,
    .event_synchronize = event_synchronize,
    .event_timestamp_ns = event_timestamp_ns,
    .executable_load = executable_load,
    .executable_free = executable_free,
    .reserved = {},
};

} // namespace
} // namespace tl::cpu

/// The one exported symbol. The table is returned whatever major the host asks for: the runtime
/// compares abi_major and refuses a mismatch with a message naming both versions.
extern "C" TL_VENDOR_EXPORT const tl_vendor_plugin *
tl_vendor_plugin_entry(uint32_t host_abi_major) {
  return &tl::cpu::kPlugin;
}
