// The npusim plugin's table and entry point: lifetime, the device (chip config) and its query.
// SPDX-License-Identifier: Apache-2.0
#include "npusim_plugin.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#ifndef TL_NPUSIM_DEFAULT_CONFIG
#define TL_NPUSIM_DEFAULT_CONFIG "default.json"
#endif

namespace tl::npusim {

void Plugin::log(int32_t level, const std::string &message) const {
  if (host && host->struct_size >= offsetof(tl_vendor_host_api, log) + sizeof(host->log) &&
      host->log)
    host->log(level, kPluginName, message.c_str());
}

namespace {

/// The simulator process lives beside the plugin (TL_NPUSIM_WORKER overrides).
std::string worker_path() {
  if (const char *env = std::getenv("TL_NPUSIM_WORKER"); env && *env)
    return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&worker_path), &info) && info.dli_fname)
    return (std::filesystem::path(info.dli_fname).parent_path() / "tl-npusim-worker").string();
  return "tl-npusim-worker";
}

tl_status initialize(const tl_vendor_host_api *host, void **out_state) {
  if (out_state)
    *out_state = nullptr;
  if (!host || !host->make_status || !out_state)
    return nullptr;
  Plugin probe{host};
  if (host->abi_major != TL_VENDOR_ABI_MAJOR)
    return probe.status(TL_STATUS_INCOMPATIBLE,
                        "plugin speaks vendor ABI " + std::to_string(TL_VENDOR_ABI_MAJOR) +
                            ", host speaks " + std::to_string(host->abi_major));
  return guarded(probe, [&]() -> tl_status {
    *out_state = new Plugin{host};
    return nullptr;
  });
}

void shutdown(void *state) { delete static_cast<Plugin *>(state); }

tl_status device_count(void *, uint32_t *out_count) {
  *out_count = 1; // one simulated chip per process, described by TL_NPUSIM_CONFIG
  return nullptr;
}

tl_status device_open(void *state, uint32_t index, void **out_device) {
  auto *plugin = static_cast<Plugin *>(state);
  *out_device = nullptr;
  if (index != 0)
    return plugin->status(TL_STATUS_NOT_FOUND,
                          "no device " + std::to_string(index) + " (the plugin has 1)");
  auto device = std::make_unique<Device>();
  device->plugin = plugin;
  const char *env = std::getenv("TL_NPUSIM_CONFIG");
  device->config_path = env && *env ? env : TL_NPUSIM_DEFAULT_CONFIG;
  try {
    device->config = npu::load_config(device->config_path);
  } catch (const std::exception &e) {
    return plugin->status(TL_STATUS_UNAVAILABLE, std::string("chip config: ") + e.what());
  }
  device->worker_path = worker_path();
  if (access(device->worker_path.c_str(), X_OK) != 0)
    return plugin->status(TL_STATUS_UNAVAILABLE,
                          "simulator process " + device->worker_path + " is missing");
  if (const char *trace = std::getenv("TL_NPUSIM_TRACE"); trace && *trace) {
    device->trace_dir = trace;
    std::error_code ec;
    std::filesystem::create_directories(device->trace_dir, ec);
    if (ec)
      return plugin->status(TL_STATUS_INVALID_ARGUMENT,
                            "TL_NPUSIM_TRACE: cannot create " + device->trace_dir);
  }
  return guarded(*plugin, [&]() -> tl_status {
    device->hbm = std::make_unique<Hbm>(device->config.hbm.size);
    *out_device = device.release();
    return nullptr;
  });
}

void device_close(void *device) { delete static_cast<Device *>(device); }

template <size_t N> void copy_str(char (&dst)[N], const std::string &src) {
  std::snprintf(dst, N, "%s", src.c_str());
}

void fill_info(const Device &d, tl_device_info &info) {
  const npu::ChipConfig &c = d.config;
  copy_str(info.name, "TNPU " + c.name + " (SystemC)");
  copy_str(info.vendor, "TL reference NPU");
  copy_str(info.driver_version, kPluginVersion);
  copy_str(info.plugin, kPluginName);
  copy_str(info.target, tnpu::kTarget);
  copy_str(info.targets, tnpu::kTarget);
  info.memory_bytes = c.hbm.size - kHbmReserved;
  info.onchip_memory_bytes = c.core.sram.size;
  info.compute_units = static_cast<uint32_t>(c.cores);
  info.clock_mhz = static_cast<uint32_t>(c.clock / 1e6 + 0.5);
  info.max_grid[0] = info.max_grid[1] = info.max_grid[2] = (uint64_t(1) << 31) - 1;
  info.peak_bandwidth_bytes_per_s = c.hbm.bandwidth;
  // The matrix units: R x C MACs per cycle per core (2 FLOPs each); f32 takes fp32_passes.
  const double mx = 2.0 * c.core.matrix.rows * c.core.matrix.cols * c.clock * c.cores;
  info.peak_flops[TL_DTYPE_BF16] = info.peak_flops[TL_DTYPE_F16] = mx;
  info.peak_flops[TL_DTYPE_I8] = mx;
  info.peak_flops[TL_DTYPE_F32] = mx / std::max(1, c.core.matrix.fp32_passes);
  for (auto dt : {TL_DTYPE_I8, TL_DTYPE_I32, TL_DTYPE_F16, TL_DTYPE_BF16, TL_DTYPE_F32})
    info.supported_dtypes |= uint64_t(1) << dt;
}

} // namespace

tl_status device_query(void *device, tl_device_info *out_info) {
  auto *d = static_cast<Device *>(device);
  return guarded(*d->plugin, [&]() -> tl_status {
    size_t size = out_info->struct_size == 0 ? sizeof(tl_device_info) : out_info->struct_size;
    if (size < sizeof(size_t))
      return d->plugin->status(TL_STATUS_INVALID_ARGUMENT, "tl_device_info.struct_size too small");
    tl_device_info info{};
    fill_info(*d, info);
    info.struct_size = size;
    std::memcpy(out_info, &info, std::min(size, sizeof(info)));
    return nullptr;
  });
}

namespace {

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
} // namespace tl::npusim

extern "C" TL_VENDOR_EXPORT const tl_vendor_plugin *tl_vendor_plugin_entry(uint32_t) {
  return &tl::npusim::kPlugin;
}
