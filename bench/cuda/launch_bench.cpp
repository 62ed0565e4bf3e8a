// Launch overhead on the cuda device: an empty TL kernel through the HAL (tl_stream_launch)
// against a raw cuLaunchKernel of an empty kernel with the same parameter count (raw_launch.cpp),
// same process, same GPU; prints `name: value` lines (microseconds per launch).
// SPDX-License-Identifier: Apache-2.0
#include "tl/compiler/pipeline.h"
#include "tl/hal.hpp"
#include "tl/ir/parser.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

/// The median over `rounds` of the microseconds per launch of `launch` (`per_round` launches
/// queued, then `sync`).
template <class L, class S> double per_launch_us(L launch, S sync, int per_round, int rounds) {
  std::vector<double> t;
  for (int r = 0; r < rounds + 1; ++r) { // the first round warms up
    const auto t0 = Clock::now();
    for (int i = 0; i < per_round; ++i)
      launch();
    sync();
    if (r)
      t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / per_round);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

extern "C" double tl_bench_raw_launch_us(int device, int per_round, int rounds, int with_tensor,
                                         int own_stream, uintptr_t stream);
extern "C" const char *tl_bench_raw_launch_error();

/// Raw cuLaunchKernel (raw_launch.cpp: its own non-blocking stream on the primary context).
double raw_us(int per_round, int rounds, bool with_tensor) {
  const double us = tl_bench_raw_launch_us(0, per_round, rounds, with_tensor, 1, 0);
  if (us < 0)
    throw std::runtime_error(std::string("raw launch: ") + tl_bench_raw_launch_error());
  return us;
}

} // namespace

int main() try {
  // TL: compile the empty kernel for nvptx and launch it through the HAL's cuda device.
  tl::ir::Diagnostics d;
  auto m = tl::ir::parse("kernel @empty() {\n  return\n}\n", "bench.tlir", d);
  std::string error;
  auto blob = tl::compile::build_executable(*m, "nvptx", "launch_bench", &error);
  if (blob.empty())
    throw std::runtime_error(error);
  tl::hal::Runtime rt(nullptr, 0);
  tl::hal::Device dev = rt.device("cuda");
  tl::hal::Stream stream = dev.stream();
  tl::hal::Executable exe = dev.load(blob.data(), blob.size());
  auto tl_launch = [&] { stream.launch(exe, 0, {1, 1, 1}, {}); };
  // One tensor argument (a device buffer): what a Python launch on a torch tensor passes.
  auto m1 = tl::ir::parse("kernel @one(%x: tensor<?xf32>) {\n  return\n}\n", "bench.tlir", d);
  auto blob1 = tl::compile::build_executable(*m1, "nvptx", "launch_bench", &error);
  if (blob1.empty())
    throw std::runtime_error(error);
  tl::hal::Executable exe1 = dev.load(blob1.data(), blob1.size());
  tl::hal::Buffer x = dev.buffer(4096, TL_BUFFER_DEVICE_LOCAL);
  const std::vector<tl_arg> args1 = {tl::hal::tensor_arg(x, TL_DTYPE_F32, {1024})};
  auto tl_launch1 = [&] { stream.launch(exe1, 0, {1, 1, 1}, args1); };
  auto tl_sync = [&] { stream.synchronize(); };

  constexpr int kQueued = 2000, kRounds = 9;
  // Interleaved, twice, so that clock or queue drift shows as a spread between the two.
  for (int pass = 0; pass < 2; ++pass) {
    const double raw_q = raw_us(kQueued, kRounds, false);
    const double tl_q = per_launch_us(tl_launch, tl_sync, kQueued, kRounds);
    const double raw_s = raw_us(1, 2000, false);
    const double tl_s = per_launch_us(tl_launch, tl_sync, 1, 2000);
    std::printf("launch_empty_raw_queued_us_pass%d: %.3f\n", pass, raw_q);
    std::printf("launch_empty_tl_queued_us_pass%d: %.3f\n", pass, tl_q);
    std::printf("launch_empty_tl_minus_raw_queued_us_pass%d: %.3f\n", pass, tl_q - raw_q);
    std::printf("launch_empty_raw_sync_us_pass%d: %.2f\n", pass, raw_s);
    std::printf("launch_empty_tl_sync_us_pass%d: %.2f\n", pass, tl_s);
    const double raw1_q = raw_us(kQueued, kRounds, true);
    const double tl1_q = per_launch_us(tl_launch1, tl_sync, kQueued, kRounds);
    std::printf("launch_tensor_raw_queued_us_pass%d: %.3f\n", pass, raw1_q);
    std::printf("launch_tensor_tl_queued_us_pass%d: %.3f\n", pass, tl1_q);
    std::printf("launch_tensor_tl_minus_raw_queued_us_pass%d: %.3f\n", pass, tl1_q - raw1_q);
  }
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "launch_bench: %s\n", e.what());
  return 1;
}
