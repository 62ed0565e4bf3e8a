/* A stand-in for libcuda.so.1 with the failures of real machines, picked by FAKE_CUDA_MODE:
 * "nodevice": cuInit fails with CUDA_ERROR_NO_DEVICE (a driver but no GPU);
 * "old": a CUDA 11.4 driver lacking the newer entry points.
 * SPDX-License-Identifier: Apache-2.0 */
#include <cuda.h> /* the real prototypes: a call through the plugin's pointers has their type */
#include <stdlib.h>
#include <string.h>

static const char *mode(void) {
  const char *m = getenv("FAKE_CUDA_MODE");
  return m ? m : "";
}

__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : r == CUDA_SUCCESS ? "CUDA_SUCCESS" : 0;
  return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

__attribute__((visibility("default"))) CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == CUDA_ERROR_NO_DEVICE ? "no CUDA-capable device is detected" : 0;
  return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags) {
  (void)flags;
  return strcmp(mode(), "nodevice") == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int *v) {
  *v = strcmp(mode(), "old") == 0 ? 11040 : 13000;
  return CUDA_SUCCESS;
}
