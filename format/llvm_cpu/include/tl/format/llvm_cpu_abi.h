/* The llvm-cpu code blob: an ELF relocatable object for the host CPU, and the calling convention
 * between its code (written by compiler/backends/llvm_cpu) and the host that runs it (the loader
 * beside this header, used by the cpu device).
 * SPDX-License-Identifier: Apache-2.0
 *
 * Each kernel K becomes `int32_t tl_kernel_K(const tl_cpu_launch *launch, int64_t x, int64_t y,
 * int64_t z)`, running program (x, y, z) of the grid; it returns 0, or nonzero after calling
 * tl_cpu_report_error (which the host defines) for a run-time fault: an out-of-bounds gather or
 * scatter, a failed assert, integer division by zero.
 *
 * Large stores may be non-temporal (x86 streaming stores), which are weakly ordered and not
 * fenced by the kernel: a host that runs programs on one thread and reads their results on
 * another executes a store fence (x86 `sfence`) on the running thread after its programs and
 * before it signals them done (the cpu device does, once per range of programs). The thread
 * that ran a program always sees its stores.
 */
#ifndef TL_FORMAT_LLVM_CPU_ABI_H_
#define TL_FORMAT_LLVM_CPU_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TL_CPU_MAX_RANK 8

/* The object defines this symbol: a C string of the x86 features its code needs, as LLVM names
 * them, comma-separated with a leading '+' ("+avx,+avx2,+avx512f,..."). The loader refuses an
 * object whose features the host lacks (an object compiled on another machine would stop at an
 * illegal instruction). Objects without it (before session 17) load unchecked. */
#define TL_CPU_FEATURES_SYMBOL "tl_cpu_features"

/* Vectorized math calls resolve to SLEEF (Debian's libsleef3), loaded by the host at link time. */
#define TL_CPU_VECTOR_MATH_LIBRARY "libsleef.so.3"

/* One kernel argument: tensors use data/shape/strides (strides in elements); integer scalars
 * use i, floating-point scalars f. */
typedef struct tl_cpu_arg {
  void *data;
  int64_t shape[TL_CPU_MAX_RANK];
  int64_t strides[TL_CPU_MAX_RANK];
  int64_t i;
  double f;
} tl_cpu_arg;

typedef struct tl_cpu_launch {
  const tl_cpu_arg *args;
  int64_t grid[3];
  void *host; /* passed back to tl_cpu_report_error */
} tl_cpu_launch;

typedef int32_t (*tl_cpu_kernel_fn)(const tl_cpu_launch *launch, int64_t x, int64_t y, int64_t z);

/* Defined by the host: records a fault of program (x, y, z); `message` names the op and its
 * source location; lane and index say where (-1 when not applicable). */
void tl_cpu_report_error(void *host, const char *message, int64_t x, int64_t y, int64_t z,
                         int64_t lane, int64_t index);

/* Defined by the host: the `print` op. kind: 0 signed integer, 1 unsigned integer, 2 float;
 * `values` holds n elements widened to int64_t (kinds 0, 1) or double (kind 2). */
void tl_cpu_print(void *host, const char *prefix, int32_t kind, const void *values, int64_t n,
                  int32_t is_tile, int64_t x, int64_t y, int64_t z);

/* Defined by the host: fp8 conversions (format: 0 f8e4m3, 1 f8e5m2; mode: 0 nearest even,
 * 1 toward zero, 2 down, 3 up), with the semantics of reference/numerics. */
double tl_cpu_f8_round(int32_t format, int32_t mode, double x);
int32_t tl_cpu_f8_encode(int32_t format, double x); /* x already representable */
double tl_cpu_f8_decode(int32_t format, int32_t bits);

#ifdef __cplusplus
}
#endif

#endif
