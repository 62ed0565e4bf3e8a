/* A C program over tl/compiler.h: builds a vector add, checks errors are located, compiles it.
 * SPDX-License-Identifier: Apache-2.0 */
#define _GNU_SOURCE /* memmem */
#include "tl/compiler.h"

#include <stdio.h>
#include <string.h>

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)
#define OK(call)                                                                                   \
  do {                                                                                             \
    tl_cstatus s_ = (call);                                                                        \
    if (s_) {                                                                                      \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, tl_cstatus_message(s_));                  \
      tl_cstatus_free(s_);                                                                         \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static tl_ir_value result0(tl_ir_op op) { return tl_ir_op_result(op, 0); }

int main(void) {
  CHECK(strlen(tl_compiler_version()) == 64); /* the source hash, hex */
  tl_module m;
  tl_kernel k;
  OK(tl_module_create(&m));
  OK(tl_kernel_create(m, "vadd", &k));
  tl_kernel_set_location(k, "vadd.py", 3, 5);
  tl_ir_type t = {TL_IR_TENSOR, TL_DTYPE_F32, 1, {0}};
  tl_ir_value x, y, z;
  OK(tl_kernel_add_arg(k, "x", &t, &x));
  OK(tl_kernel_add_arg(k, "y", &t, &y));
  OK(tl_kernel_add_arg(k, "z", &t, &z));
  tl_ir_attr axis = {"axis", TL_IR_ATTR_INT, 0, 0, NULL, NULL, 0, {0}};
  tl_ir_op pid, c, off, lx, ly, sum, st, ret;
  OK(tl_ir_op_create(k, "program_id", NULL, 0, &axis, 1, NULL, TL_IR_INFER, &pid));
  tl_ir_type i32 = {TL_IR_SCALAR, TL_DTYPE_I32, 0, {0}};
  tl_ir_attr value = {"value", TL_IR_ATTR_INT, 64, 0, NULL, NULL, 0, {0}};
  OK(tl_ir_op_create(k, "constant", NULL, 0, &value, 1, &i32, 1, &c));
  tl_ir_value mul_in[2] = {result0(pid), result0(c)};
  OK(tl_ir_op_create(k, "mul", mul_in, 2, NULL, 0, NULL, TL_IR_INFER, &off));
  tl_ir_type tile = {TL_IR_TILE, TL_DTYPE_F32, 1, {64}};
  tl_ir_value lx_in[2] = {x, result0(off)}, ly_in[2] = {y, result0(off)};
  OK(tl_ir_op_create(k, "load", lx_in, 2, NULL, 0, &tile, 1, &lx));
  OK(tl_ir_op_create(k, "load", ly_in, 2, NULL, 0, &tile, 1, &ly));
  tl_ir_value add_in[2] = {result0(lx), result0(ly)};
  OK(tl_ir_op_create(k, "add", add_in, 2, NULL, 0, NULL, TL_IR_INFER, &sum));

  /* A type error names the front end's location. */
  tl_kernel_set_location(k, "vadd.py", 7, 9);
  tl_ir_value bad_in[2] = {result0(lx), result0(pid)};
  tl_ir_op bad;
  tl_cstatus s = tl_ir_op_create(k, "add", bad_in, 2, NULL, 0, NULL, TL_IR_INFER, &bad);
  CHECK(s != NULL);
  CHECK(strstr(tl_cstatus_message(s), "vadd.py:7:9: error: 'add'") != NULL);
  tl_cstatus_free(s);

  tl_ir_value st_in[3] = {z, result0(off), result0(sum)};
  OK(tl_ir_op_create(k, "store", st_in, 3, NULL, 0, NULL, TL_IR_INFER, &st));
  OK(tl_ir_op_create(k, "return", NULL, 0, NULL, 0, NULL, TL_IR_INFER, &ret));
  OK(tl_module_verify(m));

  char *text;
  OK(tl_module_print(m, &text));
  CHECK(strstr(text, "%5 = add %3, %4 : tile<64xf32>") != NULL || strstr(text, "add") != NULL);
  tl_module m2;
  OK(tl_module_parse(text, "printed.tlir", &m2));
  tl_compiler_free(text);
  tl_module_destroy(m2);

  void *blob;
  size_t size;
  OK(tl_module_compile(m, "tlir", "capi_test", &blob, &size));
  CHECK(size > 0);
  tl_compiler_free(blob);
  s = tl_module_compile(m, "no-such-target", NULL, &blob, &size);
  CHECK(s != NULL && blob == NULL);
  tl_cstatus_free(s);

  /* Target options: a JSON object of strings; anything else is an error that names it. */
  CHECK(tl_compiler_api_version() >= 2);
  s = tl_module_compile_with_options(m, "tlir", "[1]", NULL, &blob, &size);
  CHECK(s != NULL && strstr(tl_cstatus_message(s), "not a JSON object") != NULL && blob == NULL);
  tl_cstatus_free(s);
  s = tl_module_compile_with_options(m, "tlir", "{\"arch\": 90}", NULL, &blob, &size);
  CHECK(s != NULL && strstr(tl_cstatus_message(s), "'arch' is not a string") != NULL);
  tl_cstatus_free(s);
  s = tl_module_compile_with_options(m, "tlir", "{\"bogus\": \"1\"}", NULL, &blob, &size);
  CHECK(s != NULL && strstr(tl_cstatus_message(s), "bogus") != NULL);
  tl_cstatus_free(s);
  if (strstr(tl_compiler_targets(), "nvptx")) {
    /* A device's exact architecture builds its image alone; the default builds sm_80 and
     * sm_90a (PTX only here: no ptxas run). */
    OK(tl_module_compile_with_options(m, "nvptx", "{\"arch\": \"sm_86\", \"cubin\": \"off\"}", NULL,
                                      &blob, &size));
    CHECK(memmem(blob, size, ".target sm_86", 13) != NULL);
    CHECK(memmem(blob, size, ".target sm_80", 13) == NULL);
    CHECK(memmem(blob, size, ".target sm_90a", 14) == NULL);
    tl_compiler_free(blob);
    OK(tl_module_compile_with_options(m, "nvptx", "{\"cubin\": \"off\"}", NULL, &blob, &size));
    CHECK(memmem(blob, size, ".target sm_80", 13) != NULL);
    CHECK(memmem(blob, size, ".target sm_90a", 14) != NULL);
    tl_compiler_free(blob);
    s = tl_module_compile_with_options(m, "nvptx", "{\"arch\": \"sm_100\"}", NULL, &blob, &size);
    CHECK(s != NULL && strstr(tl_cstatus_message(s), "'sm_100' is not one") != NULL);
    tl_cstatus_free(s);
  }
  tl_module_destroy(m);
  printf("ok\n");
  return 0;
}
