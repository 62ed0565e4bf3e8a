/* A stand-in for libcuda.so.1 with the failures of real machines, picked by FAKE_CUDA_MODE:
 * "nodevice": cuInit fails with CUDA_ERROR_NO_DEVICE (a driver but no GPU);
 * "old": a CUDA 11.4 driver lacking the newer entry points.
 * SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

typedef int CUresult; /* the real values, without cuda.h */
enum { kSuccess = 0, kNoDevice = 100, kUnknown = 999 };

static const char *mode(void) {
  const char *m = getenv("FAKE_CUDA_MODE");
  return m ? m : "";
}

__attribute__((visibility("default"))) CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == kNoDevice ? "CUDA_ERROR_NO_DEVICE" : r == kSuccess ? "CUDA_SUCCESS" : 0;
  return *s ? kSuccess : 1;
}

__attribute__((visibility("default"))) CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == kNoDevice ? "no CUDA-capable device is detected" : 0;
  return *s ? kSuccess : 1;
}

__attribute__((visibility("default"))) CUresult cuInit(unsigned flags) {
  (void)flags;
  return strcmp(mode(), "nodevice") == 0 ? kNoDevice : kSuccess;
}

__attribute__((visibility("default"))) CUresult cuDriverGetVersion(int *v) {
  *v = strcmp(mode(), "old") == 0 ? 11040 : 13000;
  return kSuccess;
}
