// Opening libcuda.so.1 and resolving the driver API by versioned name; CUresult naming.
// SPDX-License-Identifier: Apache-2.0
#include "driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace tl::cuda {
namespace {

/// The oldest driver whose API has every entry point below (cuEventElapsedTime_v2 came in 12.8).
constexpr int kMinVersion = 12080;

template <class Fn> bool resolve(void *lib, const char *symbol, Fn &out, std::string &reason) {
  out = reinterpret_cast<Fn>(dlsym(lib, symbol));
  if (!out && reason.empty())
    reason = std::string("the driver lacks ") + symbol;
  return out != nullptr;
}

void open(Driver &d) {
  const char *env = std::getenv("TL_CUDA_LIBRARY");
  const char *path = env && *env ? env : "libcuda.so.1";
  // RTLD_LOCAL: nothing of the driver leaks into the symbols other libraries see.
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    d.reason = why ? why : (std::string(path) + " not found");
    return;
  }
  // Kept open for the process: modules and contexts may outlive any one runtime.
  std::string missing;
  resolve(lib, "cuGetErrorName", d.cuGetErrorName, missing);
  resolve(lib, "cuGetErrorString", d.cuGetErrorString, missing);
  resolve(lib, "cuInit", d.cuInit, missing);
  resolve(lib, "cuDriverGetVersion", d.cuDriverGetVersion, missing);
  if (!missing.empty()) {
    d.reason = std::string(path) + " is not a CUDA driver: " + missing;
    return;
  }
  if (CUresult r = d.cuInit(0); r != CUDA_SUCCESS) {
    d.reason = "cuInit failed: " + d.name(r);
    return;
  }
  d.cuDriverGetVersion(&d.version);
#define TL_CUDA_RESOLVE(name) resolve(lib, TL_CUDA_SYMBOL(name), d.name, missing);
  TL_CUDA_FUNCTIONS(TL_CUDA_RESOLVE)
#undef TL_CUDA_RESOLVE
  if (!missing.empty() || d.version < kMinVersion) {
    d.reason = "driver too old: CUDA " + version_string(d.version) + " (need " +
               version_string(kMinVersion) + " or newer)" + (missing.empty() ? "" : "; " + missing);
    return;
  }
  if (CUresult r = d.cuDeviceGetCount(&d.devices); r != CUDA_SUCCESS) {
    d.reason = "cuDeviceGetCount failed: " + d.name(r);
    return;
  }
  if (d.devices == 0)
    d.reason = "the driver (CUDA " + version_string(d.version) + ") sees no GPU";
}

tl_status_code code_of(CUresult r) {
  switch (r) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    return TL_STATUS_RESOURCE_EXHAUSTED;
  case CUDA_ERROR_INVALID_VALUE:
  case CUDA_ERROR_INVALID_HANDLE:
    return TL_STATUS_INVALID_ARGUMENT;
  case CUDA_ERROR_NOT_FOUND:
    return TL_STATUS_NOT_FOUND;
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    return TL_STATUS_INCOMPATIBLE;
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
    return TL_STATUS_ABORTED;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    return TL_STATUS_RESOURCE_EXHAUSTED;
  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_NOT_INITIALIZED:
  case CUDA_ERROR_DEINITIALIZED:
    return TL_STATUS_UNAVAILABLE;
  default:
    return TL_STATUS_INTERNAL;
  }
}

} // namespace

std::string Driver::name(CUresult r) const {
  const char *n = nullptr, *s = nullptr;
  if (cuGetErrorName)
    cuGetErrorName(r, &n);
  if (cuGetErrorString)
    cuGetErrorString(r, &s);
  std::string out = n ? n : "CUresult " + std::to_string(static_cast<int>(r));
  if (s)
    out += std::string(" (") + s + ")";
  return out;
}

Error Driver::error(CUresult r, const char *call, const std::string &context) const {
  return {code_of(r),
          std::string(call) + " failed: " + name(r) + (context.empty() ? "" : ": " + context)};
}

const Driver &driver() {
  static Driver d;
  static std::once_flag once;
  std::call_once(once, [] { open(d); });
  return d;
}

std::string version_string(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

} // namespace tl::cuda
