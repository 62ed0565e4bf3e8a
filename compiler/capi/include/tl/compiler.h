/* TL compiler C API: build, parse, verify, print and compile Tile IR from any language.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Conventions (those of the HAL, tl/hal.h):
 * - Every fallible function returns a tl_cstatus: NULL means success; otherwise an object with a
 *   message (`file:line:col: error: ...` when it is about the user's IR) freed with
 *   tl_cstatus_free().
 * - Handles are opaque. A module owns its kernels, ops, blocks and values: they live until
 *   tl_module_destroy(). Output parameters are named out_* and are zeroed first.
 * - Ops are made by their Tile IR name ("add", "load", "for", ...; see tl/ir/ops.def) with the
 *   same operands and attributes as in the `.tlir` text form. Every op is checked as it is made;
 *   a broken rule is an error naming the current source location (tl_kernel_set_location), so a
 *   front end's diagnostics point at its own source line.
 * - No C++ type or exception crosses this boundary.
 */
#ifndef TL_COMPILER_H_
#define TL_COMPILER_H_

#include "tl/dtype.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TL_COMPILER_EXPORT __attribute__((visibility("default")))
#else
#define TL_COMPILER_EXPORT
#endif

#define TL_COMPILER_API_VERSION 2 /* 2: tl_module_compile_with_options, tl_compiler_version */
#define TL_IR_MAX_RANK 8

/* ---- status ---------------------------------------------------------------------------------- */

typedef struct tl_cstatus_s *tl_cstatus;
/* The message, valid until tl_cstatus_free; "" for NULL. */
TL_COMPILER_EXPORT const char *tl_cstatus_message(tl_cstatus status);
TL_COMPILER_EXPORT void tl_cstatus_free(tl_cstatus status);
/* Frees memory this API returned (printed text, executable blobs). */
TL_COMPILER_EXPORT void tl_compiler_free(void *ptr);
TL_COMPILER_EXPORT uint32_t tl_compiler_api_version(void);
/* This build's identity: the hash of the sources that decide the code it makes (the one its
 * compile cache keys on), static storage. Caches of choices made by timing compiled code (the
 * Python autotuner's) key on it. */
TL_COMPILER_EXPORT const char *tl_compiler_version(void);

/* ---- types ------------------------------------------------------------------------------------
 */

/* Element types: tl_dtype (tl/dtype.h), the one enumeration the compiler, the executable format,
 * the HAL and the plugins share. */

typedef enum tl_ir_type_kind {
  TL_IR_SCALAR = 0,
  TL_IR_TILE = 1,   /* static shape, every dimension >= 1 */
  TL_IR_TENSOR = 2, /* a kernel argument: rank known, shape and strides at run time */
} tl_ir_type_kind;

typedef struct tl_ir_type {
  uint32_t kind;                 /* tl_ir_type_kind */
  uint32_t dtype;                /* tl_dtype */
  uint32_t rank;                 /* 0 for scalars */
  int64_t shape[TL_IR_MAX_RANK]; /* tiles only; -1 for tensors */
} tl_ir_type;

/* "f32", "bf16", ...; NULL for an invalid dtype. */
TL_COMPILER_EXPORT const char *tl_ir_dtype_name(uint32_t dtype);

/* ---- handles ----------------------------------------------------------------------------------
 */

typedef struct tl_module_s *tl_module;
typedef struct tl_kernel_s *tl_kernel;
typedef struct tl_ir_op_s *tl_ir_op;
typedef struct tl_ir_block_s *tl_ir_block;
typedef struct tl_ir_value_s *tl_ir_value;

/* ---- modules ----------------------------------------------------------------------------------
 */

TL_COMPILER_EXPORT tl_cstatus tl_module_create(tl_module *out_module);
TL_COMPILER_EXPORT void tl_module_destroy(tl_module module);
/* Parses `.tlir` text (named `filename` in diagnostics) and verifies it. */
TL_COMPILER_EXPORT tl_cstatus tl_module_parse(const char *text, const char *filename,
                                              tl_module *out_module);
/* Runs the verifier; the status lists every diagnostic, one per line. */
TL_COMPILER_EXPORT tl_cstatus tl_module_verify(tl_module module);
/* The module as `.tlir` text; free with tl_compiler_free. */
TL_COMPILER_EXPORT tl_cstatus tl_module_print(tl_module module, char **out_text);

/* Verifies, optimizes (the default pass pipeline, in place) and packages the module for `target`
 * ("tlir", "llvm-cpu", ...) as a TL executable container, ready for tl_executable_load.
 * `producer` (may be NULL) is recorded in it. Free *out_data with tl_compiler_free. */
TL_COMPILER_EXPORT tl_cstatus tl_module_compile(tl_module module, const char *target,
                                                const char *producer, void **out_data,
                                                size_t *out_size);
/* Version 2: tl_module_compile with target options, a JSON object of strings with the keys of
 * `tlc compile --target-option` (nvptx: {"arch":"sm_90a"}; a device's tl_device_info
 * target_options are such an object); NULL or "" for none. An option the target does not know,
 * or a bad value, is an error naming it. */
TL_COMPILER_EXPORT tl_cstatus tl_module_compile_with_options(tl_module module, const char *target,
                                                             const char *options,
                                                             const char *producer, void **out_data,
                                                             size_t *out_size);
/* The known targets, comma-separated (static storage). */
TL_COMPILER_EXPORT const char *tl_compiler_targets(void);
/* The target to compile for a device, from tl_device_info's `target` (preferred) and `targets`
 * (comma-separated): the preferred one when this compiler has it, else the first of the others
 * it has. Writes it NUL-terminated into out_target (out_size bytes); an error names the device's
 * targets and the known ones when the compiler has none of them. Python, tlc and tl-conform
 * choose targets through this one rule. */
TL_COMPILER_EXPORT tl_cstatus tl_compiler_target_for_device(const char *preferred,
                                                            const char *targets, char *out_target,
                                                            size_t out_size);

/* ---- kernels ----------------------------------------------------------------------------------
 */

TL_COMPILER_EXPORT tl_cstatus tl_kernel_create(tl_module module, const char *name,
                                               tl_kernel *out_kernel);
/* The location stamped on every op made from now on (and named in build errors). */
TL_COMPILER_EXPORT void tl_kernel_set_location(tl_kernel kernel, const char *file, int32_t line,
                                               int32_t col);
/* A kernel argument: a tensor (kind TL_IR_TENSOR: dtype and rank) or a scalar. */
TL_COMPILER_EXPORT tl_cstatus tl_kernel_add_arg(tl_kernel kernel, const char *name,
                                                const tl_ir_type *type, tl_ir_value *out_value);
/* A constexpr parameter of the kernel's signature; integers (and i1) use `i`, floats `f`. */
TL_COMPILER_EXPORT tl_cstatus tl_kernel_add_constexpr(tl_kernel kernel, const char *name,
                                                      uint32_t dtype, int64_t i, double f);
/* New ops are appended to `block` (NULL: the kernel body). */
TL_COMPILER_EXPORT void tl_kernel_set_insertion_block(tl_kernel kernel, tl_ir_block block);

/* ---- ops --------------------------------------------------------------------------------------
 */

typedef enum tl_ir_attr_kind {
  TL_IR_ATTR_BOOL = 0,
  TL_IR_ATTR_INT,
  TL_IR_ATTR_FLOAT,
  TL_IR_ATTR_STRING,
  TL_IR_ATTR_INTS,
  TL_IR_ATTR_TYPE,
} tl_ir_attr_kind;

/* One attribute, as in the text form (`{axis = 0, kind = "sum"}`). */
typedef struct tl_ir_attr {
  const char *name;
  uint32_t kind;       /* tl_ir_attr_kind */
  int64_t i;           /* BOOL (0/1), INT */
  double f;            /* FLOAT */
  const char *s;       /* STRING */
  const int64_t *ints; /* INTS */
  size_t ints_len;
  tl_ir_type type; /* TYPE */
} tl_ir_attr;

/* Pass as result_count to let the builder infer the result types (every op whose result type
 * follows from its operands and attributes: elementwise ops, cmp, dot, reduce, scan, gather,
 * atomic_add, program_id, num_programs, dim, stride, transpose, expand_dims, constexpr, for, and
 * ops without results). Ops whose result type is a choice (constant, full, arange, splat,
 * broadcast, reshape, slice, load, cast, bitcast, if) take explicit types. */
#define TL_IR_INFER ((size_t)-1)

/* Makes op `name` at the insertion point. `for` gets its body region with the induction variable
 * and one argument per carried value (operands lb, ub, step, inits...). `if` takes the attribute
 * `with_else` (BOOL) to get an else region; its results may also be added later with
 * tl_ir_if_add_result, once the branches show their types. */
TL_COMPILER_EXPORT tl_cstatus tl_ir_op_create(tl_kernel kernel, const char *name,
                                              const tl_ir_value *operands, size_t operand_count,
                                              const tl_ir_attr *attrs, size_t attr_count,
                                              const tl_ir_type *result_types, size_t result_count,
                                              tl_ir_op *out_op);
TL_COMPILER_EXPORT size_t tl_ir_op_result_count(tl_ir_op op);
TL_COMPILER_EXPORT tl_ir_value tl_ir_op_result(tl_ir_op op, size_t index); /* NULL out of range */
TL_COMPILER_EXPORT tl_ir_block tl_ir_op_region(tl_ir_op op, size_t index); /* NULL out of range */
/* Adds a result to an `if` op (checked with the rest of the if by tl_module_verify). */
TL_COMPILER_EXPORT tl_cstatus tl_ir_if_add_result(tl_ir_op op, const tl_ir_type *type,
                                                  tl_ir_value *out_value);
TL_COMPILER_EXPORT size_t tl_ir_block_arg_count(tl_ir_block block);
TL_COMPILER_EXPORT tl_ir_value tl_ir_block_arg(tl_ir_block block, size_t index);

/* ---- values -----------------------------------------------------------------------------------
 */

TL_COMPILER_EXPORT void tl_ir_value_type(tl_ir_value value, tl_ir_type *out_type);
/* A name hint used by the printer. */
TL_COMPILER_EXPORT void tl_ir_value_set_name(tl_ir_value value, const char *name);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TL_COMPILER_H_ */
