// The raw anchor of launch overhead: cuLaunchKernel of an empty kernel, straight through the
// driver API, timed in the caller's process (tl_cuda_launch_bench, and bench_rows.py through
// ctypes, so that a Python launch and its anchor share the process and the moment).
// SPDX-License-Identifier: Apache-2.0
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <dlfcn.h>
#include <string>
#include <vector>

namespace {

// Empty kernels with the parameters TL's launches pass: none but the status word, or one 1-D
// tensor's address, extent and stride and then the status word.
constexpr const char *kRawPtx = R"(.version 8.0
.target sm_90
.address_size 64
.visible .entry raw_empty(.param .u64 status) { ret; }
.visible .entry raw_tensor(.param .u64 data, .param .u64 shape, .param .u64 stride,
                           .param .u64 status) { ret; }
)";

std::string g_error;

template <class F> F sym(void *lib, const char *name) {
  void *p = lib ? dlsym(lib, name) : nullptr;
  if (!p)
    g_error = std::string("libcuda.so.1 lacks ") + name;
  return reinterpret_cast<F>(p);
}

struct Driver {
  decltype(&cuInit) init = nullptr;
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDevicePrimaryCtxRetain) retain = nullptr;
  decltype(&cuCtxSetCurrent) set_current = nullptr;
  decltype(&cuModuleLoadData) load = nullptr;
  decltype(&cuModuleGetFunction) get_function = nullptr;
  decltype(&cuStreamCreate) stream_create = nullptr;
  decltype(&cuStreamSynchronize) stream_sync = nullptr;
  decltype(&cuLaunchKernel) launch = nullptr;
  CUfunction empty = nullptr, tensor = nullptr;
  CUstream own_stream = nullptr;
};

bool check(CUresult r, const char *what) {
  if (r != CUDA_SUCCESS)
    g_error = std::string(what) + " failed: CUresult " + std::to_string(r);
  return r == CUDA_SUCCESS;
}

/// The driver, the device's primary context (the one TL's cuda device and PyTorch use) and the
/// two kernels, once per process; null after an error (tl_bench_raw_launch_error says which).
Driver *driver(int device) {
  static Driver d;
  static bool ready = false;
  if (ready)
    return &d;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    g_error = dlerror();
    return nullptr;
  }
  d.init = sym<decltype(&cuInit)>(lib, "cuInit");
  d.device_get = sym<decltype(&cuDeviceGet)>(lib, "cuDeviceGet");
  d.retain = sym<decltype(&cuDevicePrimaryCtxRetain)>(lib, "cuDevicePrimaryCtxRetain");
  d.set_current = sym<decltype(&cuCtxSetCurrent)>(lib, "cuCtxSetCurrent");
  d.load = sym<decltype(&cuModuleLoadData)>(lib, "cuModuleLoadData");
  d.get_function = sym<decltype(&cuModuleGetFunction)>(lib, "cuModuleGetFunction");
  d.stream_create = sym<decltype(&cuStreamCreate)>(lib, "cuStreamCreate");
  d.stream_sync = sym<decltype(&cuStreamSynchronize)>(lib, "cuStreamSynchronize");
  d.launch = sym<decltype(&cuLaunchKernel)>(lib, "cuLaunchKernel");
  if (!d.launch || !d.stream_sync || !d.stream_create || !d.get_function || !d.load ||
      !d.set_current || !d.retain || !d.device_get || !d.init)
    return nullptr;
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  if (!check(d.init(0), "cuInit") || !check(d.device_get(&dev, device), "cuDeviceGet") ||
      !check(d.retain(&ctx, dev), "cuDevicePrimaryCtxRetain") ||
      !check(d.set_current(ctx), "cuCtxSetCurrent") ||
      !check(d.load(&mod, kRawPtx), "cuModuleLoadData") ||
      !check(d.get_function(&d.empty, mod, "raw_empty"), "cuModuleGetFunction") ||
      !check(d.get_function(&d.tensor, mod, "raw_tensor"), "cuModuleGetFunction") ||
      !check(d.stream_create(&d.own_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"))
    return nullptr;
  ready = true;
  return &d;
}

} // namespace

extern "C" {

/// Why the last call returned a negative value.
const char *tl_bench_raw_launch_error() { return g_error.c_str(); }

/// Microseconds per raw launch: the median over `rounds` of `per_round` launches queued, then
/// one synchronize, after one round of warm-up. The stream: a non-blocking one of its own with
/// `own_stream`, else `stream` (a CUstream; 0 is the legacy default stream, PyTorch's default).
/// `with_tensor`: the one-tensor kernel, else the empty one. -1 on an error.
double tl_bench_raw_launch_us(int device, int per_round, int rounds, int with_tensor,
                              int own_stream, uintptr_t stream) {
  Driver *d = driver(device);
  if (!d || per_round < 1 || rounds < 1)
    return -1;
  CUstream s = own_stream ? d->own_stream : reinterpret_cast<CUstream>(stream);
  uint64_t cells[4] = {0, 1024, 1, 0};
  void *tensor_params[] = {&cells[0], &cells[1], &cells[2], &cells[3]};
  void *empty_params[] = {&cells[3]};
  CUfunction f = with_tensor ? d->tensor : d->empty;
  void **params = with_tensor ? tensor_params : empty_params;
  std::vector<double> t;
  for (int r = 0; r <= rounds; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < per_round; ++i)
      if (!check(d->launch(f, 1, 1, 1, 32, 1, 1, 0, s, params, nullptr), "cuLaunchKernel"))
        return -1;
    if (!check(d->stream_sync(s), "cuStreamSynchronize"))
      return -1;
    if (r) // the first round warms up
      t.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          per_round);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
}
