// The npusim plugin's entry point and its device: the chip config, the simulator process, HBM.
// SPDX-License-Identifier: Apache-2.0
#include "npusim_plugin.h"

#include "tl/npu/default_chip.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace tl::npusim {

namespace {

/// The simulator process lives beside the plugin (TL_NPUSIM_WORKER overrides).
std::string find_worker() {
  if (const char *env = std::getenv("TL_NPUSIM_WORKER"); env && *env)
    return env;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&find_worker), &info) && info.dli_fname)
    return (std::filesystem::path(info.dli_fname).parent_path() / "tl-npusim-worker").string();
  return "tl-npusim-worker";
}

} // namespace

Error Device::count(const Host &, uint32_t &out) {
  out = 1; // one simulated chip per process, described by TL_NPUSIM_CONFIG
  return {};
}

Error Device::open(const Host &host, uint32_t, std::unique_ptr<Device> &out) {
  auto device = std::make_unique<Device>(host);
  const char *env = std::getenv("TL_NPUSIM_CONFIG");
  device->config_path = env && *env ? env : npu::default_config_path();
  try {
    device->config = npu::load_config(device->config_path);
  } catch (const std::exception &e) {
    return {TL_STATUS_UNAVAILABLE, std::string("chip config: ") + e.what()};
  }
  device->worker_path = find_worker();
  if (access(device->worker_path.c_str(), X_OK) != 0)
    return {TL_STATUS_UNAVAILABLE, "simulator process " + device->worker_path + " is missing"};
  if (const char *trace = std::getenv("TL_NPUSIM_TRACE"); trace && *trace) {
    device->trace_dir = trace;
    std::error_code ec;
    std::filesystem::create_directories(device->trace_dir, ec);
    if (ec)
      return {TL_STATUS_INVALID_ARGUMENT, "TL_NPUSIM_TRACE: cannot create " + device->trace_dir};
  }
  device->hbm = std::make_unique<Hbm>(device->config.hbm.size);
  out = std::move(device);
  return {};
}

Error Device::query(tl_device_info &info) {
  using vendor::copy_string;
  const npu::ChipConfig &c = config;
  copy_string(info.name, "TNPU " + c.name + " (SystemC)");
  copy_string(info.vendor, "TL reference NPU");
  copy_string(info.driver_version, kVersion);
  copy_string(info.plugin, kName);
  copy_string(info.target, tnpu::kTarget);
  copy_string(info.targets, tnpu::kTarget);
  info.memory_bytes = c.hbm.size - kHbmReserved;
  info.onchip_memory_bytes = c.core.sram.size;
  info.compute_units = static_cast<uint32_t>(c.cores);
  info.clock_mhz = static_cast<uint32_t>(c.clock / 1e6 + 0.5);
  info.max_grid[0] = info.max_grid[1] = info.max_grid[2] = (uint64_t(1) << 31) - 1;
  info.peak_bandwidth_bytes_per_s = c.hbm.bandwidth;
  info.link_bandwidth_bytes_per_s = c.host_link.bandwidth;
  info.flags = TL_DEVICE_SIMULATED_TIME; // events read the simulated timeline (memory.cpp)
  // The matrix units: R x C MACs per cycle per core (2 FLOPs each); f32 takes fp32_passes.
  const double mx = 2.0 * c.core.matrix.rows * c.core.matrix.cols * c.clock * c.cores;
  info.peak_flops[TL_DTYPE_BF16] = info.peak_flops[TL_DTYPE_F16] = mx;
  info.peak_flops[TL_DTYPE_I8] = mx;
  info.peak_flops[TL_DTYPE_F32] = mx / std::max(1, c.core.matrix.fp32_passes);
  for (auto dt : {TL_DTYPE_I8, TL_DTYPE_I32, TL_DTYPE_F16, TL_DTYPE_BF16, TL_DTYPE_F32})
    info.supported_dtypes |= uint64_t(1) << dt;
  return {};
}

} // namespace tl::npusim

TL_DEFINE_VENDOR_PLUGIN(tl::npusim::Device)
