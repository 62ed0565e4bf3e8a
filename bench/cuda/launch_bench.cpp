// Launch overhead on the cuda device: an empty TL kernel through the HAL (tl_stream_launch)
// against a raw cuLaunchKernel of an empty kernel with the same parameter count, same process,
// same GPU; prints `name: value` lines (microseconds per launch).
// SPDX-License-Identifier: Apache-2.0
#include "tl/compiler/pipeline.h"
#include "tl/hal.hpp"
#include "tl/ir/parser.h"

#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <dlfcn.h>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

template <class F> F sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p)
    throw std::runtime_error(std::string("libcuda.so.1 lacks ") + name);
  return reinterpret_cast<F>(p);
}

#define CU(call)                                                                                   \
  do {                                                                                             \
    if (CUresult r = (call); r != CUDA_SUCCESS)                                                    \
      throw std::runtime_error(std::string(#call) + " failed: CUresult " + std::to_string(r));     \
  } while (0)

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

// An empty kernel with one 64-bit parameter, as TL's empty kernel has (its status word).
constexpr const char *kRawPtx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry raw_empty(.param .u64 status) { ret; }
)";

// The same with what a kernel of one 1-D tensor takes: its address, extent and stride, then
// the status word.
constexpr const char *kRawTensorPtx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry raw_tensor(.param .u64 data, .param .u64 shape, .param .u64 stride,
                           .param .u64 status) { ret; }
)";

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

  // Raw: the driver API on the same primary context the cuda device uses.
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    throw std::runtime_error(dlerror());
  auto cuInit_ = sym<decltype(&cuInit)>(lib, "cuInit");
  auto cuDeviceGet_ = sym<decltype(&cuDeviceGet)>(lib, "cuDeviceGet");
  auto retain = sym<decltype(&cuDevicePrimaryCtxRetain)>(lib, "cuDevicePrimaryCtxRetain");
  auto set_ctx = sym<decltype(&cuCtxSetCurrent)>(lib, "cuCtxSetCurrent");
  auto load = sym<decltype(&cuModuleLoadData)>(lib, "cuModuleLoadData");
  auto get_fn = sym<decltype(&cuModuleGetFunction)>(lib, "cuModuleGetFunction");
  auto stream_create = sym<decltype(&cuStreamCreate)>(lib, "cuStreamCreate");
  auto stream_sync = sym<decltype(&cuStreamSynchronize)>(lib, "cuStreamSynchronize");
  auto launch = sym<decltype(&cuLaunchKernel)>(lib, "cuLaunchKernel");
  CU(cuInit_(0));
  CUdevice cu_dev;
  CU(cuDeviceGet_(&cu_dev, 0));
  CUcontext ctx;
  CU(retain(&ctx, cu_dev));
  CU(set_ctx(ctx));
  CUmodule mod;
  CU(load(&mod, kRawPtx));
  CUfunction fn;
  CU(get_fn(&fn, mod, "raw_empty"));
  CUstream s;
  CU(stream_create(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr status = 0;
  void *params[] = {&status};
  auto raw_launch = [&] { CU(launch(fn, 1, 1, 1, 32, 1, 1, 0, s, params, nullptr)); };
  CUmodule mod1;
  CU(load(&mod1, kRawTensorPtx));
  CUfunction fn1;
  CU(get_fn(&fn1, mod1, "raw_tensor"));
  uint64_t cells[4] = {0, 1024, 1, 0};
  void *params1[] = {&cells[0], &cells[1], &cells[2], &cells[3]};
  auto raw_launch1 = [&] { CU(launch(fn1, 1, 1, 1, 32, 1, 1, 0, s, params1, nullptr)); };
  auto raw_sync = [&] { CU(stream_sync(s)); };

  constexpr int kQueued = 2000, kRounds = 9;
  // Interleaved, twice, so that clock or queue drift shows as a spread between the two.
  for (int pass = 0; pass < 2; ++pass) {
    const double raw_q = per_launch_us(raw_launch, raw_sync, kQueued, kRounds);
    const double tl_q = per_launch_us(tl_launch, tl_sync, kQueued, kRounds);
    const double raw_s = per_launch_us(raw_launch, raw_sync, 1, 2000);
    const double tl_s = per_launch_us(tl_launch, tl_sync, 1, 2000);
    std::printf("launch_empty_raw_queued_us_pass%d: %.3f\n", pass, raw_q);
    std::printf("launch_empty_tl_queued_us_pass%d: %.3f\n", pass, tl_q);
    std::printf("launch_empty_tl_minus_raw_queued_us_pass%d: %.3f\n", pass, tl_q - raw_q);
    std::printf("launch_empty_raw_sync_us_pass%d: %.2f\n", pass, raw_s);
    std::printf("launch_empty_tl_sync_us_pass%d: %.2f\n", pass, tl_s);
    const double raw1_q = per_launch_us(raw_launch1, raw_sync, kQueued, kRounds);
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
