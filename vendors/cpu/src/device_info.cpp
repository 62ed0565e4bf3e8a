// device_query for the cpu plugin: CPU identity from /proc and /sys, memory, and peak estimates.
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <unistd.h>

namespace tl::cpu {
namespace {

/// The value of the first `key : value` line of /proc/cpuinfo whose key is `key` ("" if none).
std::string cpuinfo_field(const std::string &key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::string k = line.substr(0, colon);
    k.erase(k.find_last_not_of(" \t") + 1);
    if (k != key)
      continue;
    size_t v = line.find_first_not_of(" \t", colon + 1);
    return v == std::string::npos ? "" : line.substr(v);
  }
  return "";
}

std::string read_line(const std::string &path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string vendor_name() {
  std::string id = cpuinfo_field("vendor_id");
  if (id == "GenuineIntel")
    return "Intel";
  if (id == "AuthenticAMD")
    return "AMD";
  if (id == "HygonGenuine")
    return "Hygon";
  if (!id.empty())
    return id;
  std::string implementer = cpuinfo_field("CPU implementer"); // Arm: e.g. 0x41
  return implementer.empty() ? "unknown" : "Arm implementer " + implementer;
}

uint32_t clock_mhz() {
  // cpuinfo_max_freq is in kHz; virtual machines often lack cpufreq, then /proc/cpuinfo has it.
  std::string khz = read_line("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (!khz.empty())
    return static_cast<uint32_t>(std::strtoull(khz.c_str(), nullptr, 10) / 1000);
  std::string mhz = cpuinfo_field("cpu MHz");
  return mhz.empty() ? 0 : static_cast<uint32_t>(std::strtod(mhz.c_str(), nullptr) + 0.5);
}

/// "1024K" / "2M" / "512" from /sys cache size files, in bytes.
uint64_t parse_cache_size(const std::string &s) {
  char *end = nullptr;
  uint64_t v = std::strtoull(s.c_str(), &end, 10);
  if (end && (*end == 'K' || *end == 'k'))
    v <<= 10;
  else if (end && (*end == 'M' || *end == 'm'))
    v <<= 20;
  return v;
}

uint64_t l2_cache_bytes() {
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l2 > 0)
    return static_cast<uint64_t>(l2);
  for (int i = 0; i < 8; ++i) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    if (read_line(dir + "level") == "2" && read_line(dir + "type") != "Instruction")
      return parse_cache_size(read_line(dir + "size"));
  }
  return 0;
}

uint64_t physical_memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

/// f32 FLOPs per cycle per core: 2 (an FMA is two FLOPs) x 2 FMA ports x vector lanes.
double f32_flops_per_cycle() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return 2 * 2 * 16;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return 2 * 2 * 8;
#endif
  return 2 * 2 * 4; // 128-bit vectors (SSE, NEON)
}

/// Best of 5 multi-threaded copies of a 64 MiB buffer, counting bytes read plus bytes written.
double measure_copy_bandwidth(tbb::task_arena &arena) {
  constexpr uint64_t kBytes = uint64_t(64) << 20;
  std::unique_ptr<char[]> src(new (std::nothrow) char[kBytes]);
  std::unique_ptr<char[]> dst(new (std::nothrow) char[kBytes]);
  if (!src || !dst)
    return 0;
  // Touch every page first so that page faults are not timed.
  arena.execute([&] {
    tbb::parallel_for(tbb::blocked_range<uint64_t>(0, kBytes, uint64_t(1) << 20),
                      [&](const tbb::blocked_range<uint64_t> &r) {
                        std::memset(src.get() + r.begin(), 1, r.size());
                        std::memset(dst.get() + r.begin(), 0, r.size());
                      });
  });
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    parallel_copy(arena, dst.get(), src.get(), kBytes);
    std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    if (dt.count() > 0)
      best = std::max(best, 2.0 * double(kBytes) / dt.count());
  }
  return best;
}

/// TL_CPU_PEAK_BANDWIDTH (bytes/s) if set, else measured once per process.
double peak_bandwidth(tbb::task_arena &arena) {
  static std::once_flag once;
  static double value = 0;
  std::call_once(once, [&] {
    if (const char *env = std::getenv("TL_CPU_PEAK_BANDWIDTH"); env && *env)
      value = std::strtod(env, nullptr);
    else
      value = measure_copy_bandwidth(arena);
  });
  return value;
}

} // namespace

Error Device::query(tl_device_info &info) {
  using vendor::copy_string;
  std::string model = cpuinfo_field("model name");
  copy_string(info.name, model.empty() ? "host CPU" : model);
  copy_string(info.vendor, vendor_name());
  copy_string(info.driver_version, kVersion);
  copy_string(info.plugin, kName);
  copy_string(info.target, "llvm-cpu");
  copy_string(info.targets, "llvm-cpu");
  info.memory_bytes = physical_memory_bytes();
  info.onchip_memory_bytes = l2_cache_bytes();
  info.compute_units = compute_units;
  info.clock_mhz = clock_mhz();
  // Program ids are i32 on every axis (the workers count programs in i64).
  info.max_grid[0] = info.max_grid[1] = info.max_grid[2] = (uint64_t(1) << 31) - 1;
  info.peak_bandwidth_bytes_per_s = peak_bandwidth(*arena);
  // Estimates of the hardware: f16/bf16/f8 are counted at the f32 rate (converted to f32 and
  // computed there); f64 runs at half of f32; integer peaks are unknown (0).
  double f32 = double(info.compute_units) * info.clock_mhz * 1e6 * f32_flops_per_cycle();
  for (auto dt : {TL_DTYPE_F16, TL_DTYPE_BF16, TL_DTYPE_F32, TL_DTYPE_F8E4M3, TL_DTYPE_F8E5M2})
    info.peak_flops[dt] = f32;
  info.peak_flops[TL_DTYPE_F64] = f32 / 2;
  info.supported_dtypes = (uint64_t(1) << TL_DTYPE_COUNT) - 1;
  // The device's memory is host memory: there is no link to model, and events are wall time.
  info.link_bandwidth_bytes_per_s = 0;
  info.flags = 0;
  return {};
}

} // namespace tl::cpu
