// What the cuda plugin reports about a GPU: the driver's attributes, peaks derived from them, and
// the PCIe link from sysfs (the driver API has no link attributes).
// SPDX-License-Identifier: Apache-2.0
#include "cuda_plugin.h"
#include "tl/vendor_plugin.hpp" // copy_string

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>

namespace tl::cuda {
namespace {

/// Dense throughput per SM per clock (flops, one FMA = 2) by input dtype, from NVIDIA's
/// architecture whitepapers (A100, H100): f16/bf16/i8/fp8 on tensor cores, f32 and f64 on the
/// CUDA cores (TL's fp32 contract does not allow tf32). 0: unknown or unsupported.
struct Rates {
  double f16, f32, f64, i8, f8;
};
Rates rates_for(int sm) {
  if (sm >= 90)
    return {4096, 256, 128, 8192, 8192};
  if (sm == 89)
    return {1024, 256, 4, 2048, 2048};
  if (sm >= 80)
    return {2048, sm == 80 ? 128.0 : 256.0, sm == 80 ? 64.0 : 4.0, 4096, 0};
  return {0, 128, 0, 0, 0};
}

std::string read_line(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

/// Bytes per second per direction of the GPU's PCIe link: the speed the device can train to
/// (max_link_speed, e.g. "32.0 GT/s PCIe"; the current speed drops when idle) times the
/// negotiated width, less the line code (8b/10b up to 5 GT/s, 128b/130b above). 0 if sysfs does
/// not say (containers without /sys/bus/pci, NVLink-C2C hosts).
double link_bandwidth(const Driver &drv, CUdevice device) {
  char bus[32] = {};
  if (drv.cuDeviceGetPCIBusId(bus, sizeof bus, device) != CUDA_SUCCESS)
    return 0;
  std::string id(bus);
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::string dir = "/sys/bus/pci/devices/" + id + "/";
  double gts = 0;
  int width = 0;
  std::sscanf(read_line(dir + "max_link_speed").c_str(), "%lf", &gts);
  std::sscanf(read_line(dir + "current_link_width").c_str(), "%d", &width);
  if (width <= 0)
    std::sscanf(read_line(dir + "max_link_width").c_str(), "%d", &width);
  if (gts <= 0 || width <= 0)
    return 0;
  const double code = gts > 5.0 ? 128.0 / 130.0 : 8.0 / 10.0;
  return gts * 1e9 * width * code / 8.0;
}

} // namespace

Error query_device(Device &d) {
  const Driver &drv = driver();
  auto attr = [&](CUdevice_attribute a, int &out) -> Error {
    TL_CU_CHECK("attribute " + std::to_string(static_cast<int>(a)), cuDeviceGetAttribute, &out, a,
                d.device);
    return {};
  };
  int major = 0, minor = 0, sms = 0, clock_khz = 0, mem_khz = 0, bus_bits = 0, smem_optin = 0;
  int grid[3] = {};
  for (auto [a, out] : {std::pair{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major},
                        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor},
                        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms},
                        {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &clock_khz},
                        {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &mem_khz},
                        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &bus_bits},
                        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &smem_optin},
                        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &grid[0]},
                        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &grid[1]},
                        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &grid[2]}})
    if (Error e = attr(a, *out); !e.ok())
      return e;
  d.sm = major * 10 + minor;

  tl_device_info &info = d.info;
  info = tl_device_info{};
  info.struct_size = sizeof info;
  char name[128] = {};
  TL_CU_CHECK("", cuDeviceGetName, name, sizeof name, d.device);
  vendor::copy_string(info.name, std::string(name) + " (cuda:" + std::to_string(d.ordinal) + ")");
  vendor::copy_string(info.vendor, "NVIDIA");
  vendor::copy_string(info.driver_version,
                      "CUDA " + version_string(drv.version) + ", sm_" + std::to_string(d.sm));
  vendor::copy_string(info.plugin, "cuda");
  vendor::copy_string(info.target, nvptx::kTarget);
  vendor::copy_string(info.targets, nvptx::kTarget);
  // A JIT then builds this GPU's image alone (one ptxas run, not one per architecture).
  if (const std::string arch = nvptx::exact_arch(static_cast<uint32_t>(d.sm)); !arch.empty())
    vendor::copy_string(info.target_options, "{\"arch\":\"" + arch + "\"}");
  size_t bytes = 0;
  TL_CU_CHECK("", cuDeviceTotalMem, &bytes, d.device);
  info.memory_bytes = bytes;
  info.onchip_memory_bytes = static_cast<uint64_t>(smem_optin); // shared memory per block
  info.compute_units = static_cast<uint32_t>(sms);
  info.clock_mhz = static_cast<uint32_t>(clock_khz / 1000);
  // Axes y and z past the hardware's programs (65535) run as several launches (executables.cpp:
  // launch), up to program ids of i32.
  for (int i = 0; i < 3; ++i) {
    d.launch_grid[i] = static_cast<uint64_t>(grid[i]);
    info.max_grid[i] = i == 0 ? d.launch_grid[0] : (uint64_t(1) << 31) - 1;
  }
  // HBM is double data rate: two transfers per memory clock over the whole bus.
  info.peak_bandwidth_bytes_per_s = 2.0 * mem_khz * 1e3 * bus_bits / 8.0;
  const Rates r = rates_for(d.sm);
  const double per_clock = static_cast<double>(sms) * clock_khz * 1e3;
  info.peak_flops[TL_DTYPE_F16] = info.peak_flops[TL_DTYPE_BF16] = r.f16 * per_clock;
  info.peak_flops[TL_DTYPE_F32] = r.f32 * per_clock;
  info.peak_flops[TL_DTYPE_F64] = r.f64 * per_clock;
  info.peak_flops[TL_DTYPE_I8] = info.peak_flops[TL_DTYPE_U8] = r.i8 * per_clock;
  info.peak_flops[TL_DTYPE_F8E4M3] = info.peak_flops[TL_DTYPE_F8E5M2] = r.f8 * per_clock;
  for (uint32_t t = 0; t < TL_DTYPE_COUNT; ++t)
    if ((t != TL_DTYPE_F8E4M3 && t != TL_DTYPE_F8E5M2) || d.sm >= 89)
      info.supported_dtypes |= uint64_t(1) << t;
  info.link_bandwidth_bytes_per_s = link_bandwidth(drv, d.device);
  return {};
}

} // namespace tl::cuda
