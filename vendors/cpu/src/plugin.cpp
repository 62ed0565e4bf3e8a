// The cpu plugin's entry point and its devices: count, open (the worker pool) and the clock.
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace tl::cpu {

Error Device::count(const Host &, uint32_t &out) {
  out = 1; // the host CPU, all of its cores as one device
  return {};
}

Error Device::open(const Host &host, uint32_t, std::unique_ptr<Device> &out) {
  auto device = std::make_unique<Device>(host);
  device->compute_units = std::max(1u, std::thread::hardware_concurrency());
  // TL_CPU_THREADS limits the worker pool (benchmarks on 1 thread, sharing a machine).
  if (const char *env = std::getenv("TL_CPU_THREADS")) {
    char *end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (*env == '\0' || *end != '\0' || n < 1 || n > 4096)
      return {TL_STATUS_INVALID_ARGUMENT,
              std::string("TL_CPU_THREADS must be a positive integer, got '") + env + "'"};
    device->compute_units = static_cast<unsigned>(n);
  }
  device->arena = std::make_unique<tbb::task_arena>(static_cast<int>(device->compute_units));
  out = std::move(device);
  return {};
}

uint64_t Device::now_ns() {
  auto t = std::chrono::steady_clock::now().time_since_epoch();
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t).count());
}

} // namespace tl::cpu

TL_DEFINE_VENDOR_PLUGIN(tl::cpu::Device)
