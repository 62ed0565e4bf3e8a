// HAL benchmarks: launch overhead of an empty kernel and copy bandwidth against memcpy, measured
// in the same run; prints `name: value` summary lines after Google Benchmark's table.
// SPDX-License-Identifier: Apache-2.0
#include "tl/compiler/pipeline.h"
#include "tl/hal.hpp"
#include "tl/ir/parser.h"
#include "tl/ir/printer.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

namespace {

using namespace tl::hal;

constexpr size_t kCopyBytes = size_t(64) << 20;

std::vector<uint8_t> empty_kernel_executable() {
  tl::ir::Diagnostics d;
  auto m = tl::ir::parse("kernel @empty() {\n  return\n}\n", "bench.tlir", d);
  std::string error;
  auto blob = tl::compile::build_executable(*m, "llvm-cpu", "hal_bench", &error);
  if (blob.empty())
    throw std::runtime_error(error);
  return blob;
}

/// One runtime per validation setting, made on first use and kept for the whole run.
struct Env {
  Runtime rt;
  Device dev;
  Stream stream;
  Executable exe;
  Buffer a, b;
  std::vector<uint8_t> host;
  explicit Env(int validation)
      : rt(nullptr, validation), dev(rt.device("cpu")), stream(dev.stream()), exe([&] {
          auto blob = empty_kernel_executable();
          return dev.load(blob.data(), blob.size());
        }()),
        a(dev.buffer(kCopyBytes)), b(dev.buffer(kCopyBytes)), host(kCopyBytes, 1) {
    stream.copy_to_device(host.data(), a, kCopyBytes); // touch every page before timing
    stream.copy_to_device(host.data(), b, kCopyBytes);
    stream.synchronize();
  }
};

Env &env(int validation) {
  static std::map<int, std::unique_ptr<Env>> envs;
  auto &e = envs[validation];
  if (!e)
    e = std::make_unique<Env>(validation);
  return *e;
}

void BM_Memcpy(benchmark::State &state) {
  std::vector<uint8_t> src(kCopyBytes, 1), dst(kCopyBytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kCopyBytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kCopyBytes);
}

void BM_CopyToDevice(benchmark::State &state) {
  Env &e = env(0);
  for (auto _ : state) {
    e.stream.copy_to_device(e.host.data(), e.a, kCopyBytes);
    e.stream.synchronize();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kCopyBytes);
}

void BM_CopyToHost(benchmark::State &state) {
  Env &e = env(0);
  for (auto _ : state) {
    e.stream.copy_to_host(e.a, e.host.data(), kCopyBytes);
    e.stream.synchronize();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kCopyBytes);
}

void BM_CopyDeviceToDevice(benchmark::State &state) {
  Env &e = env(0);
  for (auto _ : state) {
    e.stream.copy(e.a, e.b, kCopyBytes);
    e.stream.synchronize();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * kCopyBytes);
}

/// One empty launch and a synchronize per iteration: the round-trip latency.
void BM_LaunchEmptySync(benchmark::State &state) {
  Env &e = env(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    e.stream.launch(e.exe, 0, {1, 1, 1}, {});
    e.stream.synchronize();
  }
}

/// 256 queued empty launches per synchronize: the per-launch cost when the queue is kept full.
void BM_LaunchEmptyQueued(benchmark::State &state) {
  Env &e = env(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    for (int i = 0; i < 256; ++i)
      e.stream.launch(e.exe, 0, {1, 1, 1}, {});
    e.stream.synchronize();
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * 256);
}

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CopyToDevice)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CopyToHost)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_CopyDeviceToDevice)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LaunchEmptySync)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("validation")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_LaunchEmptyQueued)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("validation")
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

/// Keeps every run's figures so that the ratios can be printed after the table.
class Collector : public benchmark::ConsoleReporter {
public:
  std::map<std::string, Run> runs;
  void ReportRuns(const std::vector<Run> &report) override {
    ConsoleReporter::ReportRuns(report);
    for (const Run &r : report)
      runs[r.benchmark_name()] = r;
  }
};

double bytes_per_s(const benchmark::BenchmarkReporter::Run &r) {
  auto it = r.counters.find("bytes_per_second");
  return it == r.counters.end() ? 0 : it->second.value;
}

double us_per_iteration(const benchmark::BenchmarkReporter::Run &r) {
  return r.GetAdjustedRealTime() * (r.time_unit == benchmark::kMillisecond ? 1e3 : 1.0);
}

} // namespace

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  auto &runs = collector.runs;
  // With --benchmark_repetitions the median aggregate stands for the benchmark.
  auto get = [&](const char *n) -> const benchmark::BenchmarkReporter::Run * {
    for (std::string key : {std::string(n) + "_median", std::string(n)})
      if (runs.count(key))
        return &runs[key];
    return nullptr;
  };
  const auto *memcpy_run = get("BM_Memcpy/real_time");
  std::printf("\n");
  if (memcpy_run) {
    const double base = bytes_per_s(*memcpy_run);
    std::printf("memcpy_gb_per_s: %.2f\n", base / 1e9);
    for (auto [name, key] : {std::pair{"copy_to_device", "BM_CopyToDevice/real_time"},
                             std::pair{"copy_to_host", "BM_CopyToHost/real_time"},
                             std::pair{"copy_device_to_device", "BM_CopyDeviceToDevice/real_time"}})
      if (auto *r = get(key)) {
        std::printf("%s_gb_per_s: %.2f\n", name, bytes_per_s(*r) / 1e9);
        std::printf("%s_vs_memcpy: %.3f\n", name, bytes_per_s(*r) / base);
      }
  }
  for (int v : {0, 1}) {
    const std::string sync = "BM_LaunchEmptySync/validation:" + std::to_string(v) + "/real_time";
    const std::string queued =
        "BM_LaunchEmptyQueued/validation:" + std::to_string(v) + "/real_time";
    if (auto *r = get(sync.c_str()))
      std::printf("launch_empty_sync_us_validation%d: %.2f\n", v, us_per_iteration(*r));
    if (auto *r = get(queued.c_str()))
      std::printf("launch_empty_queued_us_validation%d: %.3f\n", v, us_per_iteration(*r) / 256);
  }
  benchmark::Shutdown();
  return 0;
}
