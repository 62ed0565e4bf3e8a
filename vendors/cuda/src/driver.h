// The CUDA driver API as the cuda plugin sees it: libcuda.so.1 opened with dlopen and every entry
// point resolved by its versioned name, so the plugin has no link-time CUDA dependency.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/vendor_support.hpp"

#include <cuda.h> // types and the versioned names (cuMemAlloc -> cuMemAlloc_v2) only

#include <string>

namespace tl::cuda {

using vendor::Error;

// X(name): each driver function the plugin calls; `name` is the header's spelling, whose macro
// expansion is the versioned symbol the driver exports (cuMemAlloc -> "cuMemAlloc_v2").
#define TL_CUDA_FUNCTIONS(X)                                                                       \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceTotalMem)                                                                              \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDeviceGetPCIBusId)                                                                           \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease)                                                                     \
  X(cuCtxSetCurrent)                                                                               \
  X(cuCtxGetCurrent)                                                                               \
  X(cuMemAlloc)                                                                                    \
  X(cuMemAllocManaged)                                                                             \
  X(cuMemFree)                                                                                     \
  X(cuMemHostAlloc)                                                                                \
  X(cuMemFreeHost)                                                                                 \
  X(cuMemHostGetDevicePointer)                                                                     \
  X(cuMemcpyHtoDAsync)                                                                             \
  X(cuMemcpyDtoHAsync)                                                                             \
  X(cuMemcpyDtoDAsync)                                                                             \
  X(cuMemsetD8Async)                                                                               \
  X(cuMemsetD16Async)                                                                              \
  X(cuMemsetD32Async)                                                                              \
  X(cuPointerGetAttribute)                                                                         \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy)                                                                               \
  X(cuStreamSynchronize)                                                                           \
  X(cuStreamWaitEvent)                                                                             \
  X(cuStreamGetCtx)                                                                                \
  X(cuEventCreate)                                                                                 \
  X(cuEventDestroy)                                                                                \
  X(cuEventRecord)                                                                                 \
  X(cuEventQuery)                                                                                  \
  X(cuEventSynchronize)                                                                            \
  X(cuEventElapsedTime)                                                                            \
  X(cuModuleLoadData)                                                                              \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncSetAttribute)                                                                            \
  X(cuLaunchKernel)

/// The resolved driver; `ok()` false with `reason` when the plugin can list no device.
struct Driver {
#define TL_CUDA_POINTER(name) decltype(&::name) name = nullptr;
  TL_CUDA_FUNCTIONS(TL_CUDA_POINTER)
#undef TL_CUDA_POINTER
  decltype(&::cuInit) cuInit = nullptr;
  decltype(&::cuDriverGetVersion) cuDriverGetVersion = nullptr;
  decltype(&::cuGetErrorName) cuGetErrorName = nullptr;
  decltype(&::cuGetErrorString) cuGetErrorString = nullptr;

  int version = 0;    ///< cuDriverGetVersion: 13000 is CUDA 13.0
  int devices = 0;    ///< cuDeviceGetCount
  std::string reason; ///< why there is no device ("" when devices > 0)
  bool ok() const { return reason.empty(); }

  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)", or the number when the driver has no name.
  std::string name(CUresult r) const;
  /// An Error "<call> failed: <CUresult name> (<description>)<context>" with a HAL code that
  /// matches the CUresult (out of memory: RESOURCE_EXHAUSTED, a device assert: ABORTED, ...).
  Error error(CUresult r, const char *call, const std::string &context = "") const;
};

/// The process's driver, opened on first use (TL_CUDA_LIBRARY names another library than
/// libcuda.so.1: tests use it to load a stand-in).
const Driver &driver();

/// "12.4" for 12040.
std::string version_string(int version);

} // namespace tl::cuda

/// Calls driver function `name` (e.g. TL_CU(cuMemAlloc, &p, n)) and returns its Error when it
/// fails; the message names the versioned entry point and the CUresult.
#define TL_CU_CHECK(context, name, ...)                                                            \
  do {                                                                                             \
    const ::tl::cuda::Driver &tl_cu_d_ = ::tl::cuda::driver();                                     \
    if (CUresult tl_cu_r_ = tl_cu_d_.name(__VA_ARGS__); tl_cu_r_ != CUDA_SUCCESS)                  \
      return tl_cu_d_.error(tl_cu_r_, TL_CUDA_SYMBOL(name), context);                              \
  } while (0)
#define TL_CUDA_SYMBOL_(x) #x
#define TL_CUDA_SYMBOL(x) TL_CUDA_SYMBOL_(x)
