/* The element types every layer of TL names the same way: the one enumeration of the compiler
 * (ir::ScalarKind), the executable format, the HAL, the plugins and the Python front end.
 * SPDX-License-Identifier: Apache-2.0
 *
 * The numbering is part of every ABI and file format: values are only ever added at the end.
 * Integers wrap on overflow (two's complement); floats are IEEE 754; f8e4m3 is the OCP "fn"
 * variant (no infinities, max 448), f8e5m2 the OCP e5m2.
 */
#ifndef TL_DTYPE_H_
#define TL_DTYPE_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tl_dtype {
  TL_DTYPE_I1 = 0,
  TL_DTYPE_I8,
  TL_DTYPE_I16,
  TL_DTYPE_I32,
  TL_DTYPE_I64,
  TL_DTYPE_U8,
  TL_DTYPE_U16,
  TL_DTYPE_U32,
  TL_DTYPE_F16,
  TL_DTYPE_BF16,
  TL_DTYPE_F32,
  TL_DTYPE_F64,
  TL_DTYPE_F8E4M3,
  TL_DTYPE_F8E5M2,
  TL_DTYPE_COUNT
} tl_dtype;

/* The spelling in .tlir, Python and reports ("f32", "bf16", ...); NULL for an invalid dtype. */
static inline const char *tl_dtype_spelling(unsigned dtype) {
  static const char *const names[TL_DTYPE_COUNT] = {"i1",  "i8",  "i16",    "i32",   "i64",
                                                    "u8",  "u16", "u32",    "f16",   "bf16",
                                                    "f32", "f64", "f8e4m3", "f8e5m2"};
  return dtype < TL_DTYPE_COUNT ? names[dtype] : NULL;
}

/* Storage bytes of one element (i1 takes one byte); 0 for an invalid dtype. */
static inline size_t tl_dtype_bytes(unsigned dtype) {
  static const unsigned char bytes[TL_DTYPE_COUNT] = {1, 1, 2, 4, 8, 1, 2, 4, 2, 2, 4, 8, 1, 1};
  return dtype < TL_DTYPE_COUNT ? bytes[dtype] : 0;
}

#ifdef __cplusplus
}
#endif

#endif /* TL_DTYPE_H_ */
