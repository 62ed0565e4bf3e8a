# CFFI (ABI mode) bindings over libtl_compiler.so and libtl_hal.so: declarations, library lookup.
# SPDX-License-Identifier: Apache-2.0
"""Low-level bindings: ``ffi``, ``compiler()`` and ``hal()`` (the loaded C libraries).

The libraries are found, in order, in ``$TL_LIB_DIR``, in ``tl/_lib`` inside the installed
package (``pip install ./python`` copies them there), and in ``build/lib`` of the source tree the
package sits in. Nothing is compiled at import time (CFFI's ABI mode).
"""
import os
import pathlib

import cffi

ffi = cffi.FFI()
ffi.cdef(r"""
/* ---- tl/compiler.h ---- */
typedef struct tl_cstatus_s *tl_cstatus;
const char *tl_cstatus_message(tl_cstatus status);
void tl_cstatus_free(tl_cstatus status);
void tl_compiler_free(void *ptr);
uint32_t tl_compiler_api_version(void);
const char *tl_compiler_version(void);
typedef struct tl_ir_type {
  uint32_t kind; uint32_t dtype; uint32_t rank; int64_t shape[8];
} tl_ir_type;
const char *tl_ir_dtype_name(uint32_t dtype);
typedef struct tl_module_s *tl_module;
typedef struct tl_kernel_s *tl_kernel;
typedef struct tl_ir_op_s *tl_ir_op;
typedef struct tl_ir_block_s *tl_ir_block;
typedef struct tl_ir_value_s *tl_ir_value;
tl_cstatus tl_module_create(tl_module *out_module);
void tl_module_destroy(tl_module module);
tl_cstatus tl_module_parse(const char *text, const char *filename, tl_module *out_module);
tl_cstatus tl_module_verify(tl_module module);
tl_cstatus tl_module_print(tl_module module, char **out_text);
tl_cstatus tl_module_compile(tl_module module, const char *target, const char *producer,
                             void **out_data, size_t *out_size);
tl_cstatus tl_module_compile_with_options(tl_module module, const char *target, const char *options,
                                          const char *producer, void **out_data, size_t *out_size);
const char *tl_compiler_targets(void);
tl_cstatus tl_compiler_target_for_device(const char *preferred, const char *targets, char *out_target, size_t out_size);
tl_cstatus tl_kernel_create(tl_module module, const char *name, tl_kernel *out_kernel);
void tl_kernel_set_location(tl_kernel kernel, const char *file, int32_t line, int32_t col);
tl_cstatus tl_kernel_add_arg(tl_kernel kernel, const char *name, const tl_ir_type *type,
                             tl_ir_value *out_value);
tl_cstatus tl_kernel_add_constexpr(tl_kernel kernel, const char *name, uint32_t dtype, int64_t i,
                                   double f);
void tl_kernel_set_insertion_block(tl_kernel kernel, tl_ir_block block);
typedef struct tl_ir_attr {
  const char *name; uint32_t kind; int64_t i; double f; const char *s; const int64_t *ints;
  size_t ints_len; tl_ir_type type;
} tl_ir_attr;
tl_cstatus tl_ir_op_create(tl_kernel kernel, const char *name, const tl_ir_value *operands,
                           size_t operand_count, const tl_ir_attr *attrs, size_t attr_count,
                           const tl_ir_type *result_types, size_t result_count, tl_ir_op *out_op);
size_t tl_ir_op_result_count(tl_ir_op op);
tl_ir_value tl_ir_op_result(tl_ir_op op, size_t index);
tl_ir_block tl_ir_op_region(tl_ir_op op, size_t index);
tl_cstatus tl_ir_if_add_result(tl_ir_op op, const tl_ir_type *type, tl_ir_value *out_value);
size_t tl_ir_block_arg_count(tl_ir_block block);
tl_ir_value tl_ir_block_arg(tl_ir_block block, size_t index);
void tl_ir_value_type(tl_ir_value value, tl_ir_type *out_type);
void tl_ir_value_set_name(tl_ir_value value, const char *name);

/* ---- tl/hal.h ---- */
typedef struct tl_status_s *tl_status;
int tl_status_get_code(tl_status status);
const char *tl_status_get_message(tl_status status);
void tl_status_free(tl_status status);
typedef struct tl_runtime_s *tl_runtime;
typedef struct tl_device_s *tl_device;
typedef struct tl_buffer_s *tl_buffer;
typedef struct tl_stream_s *tl_stream;
typedef struct tl_event_s *tl_event;
typedef struct tl_executable_s *tl_executable;
typedef struct tl_runtime_options {
  size_t struct_size; const char *plugin_path; int32_t validation;
} tl_runtime_options;
tl_status tl_runtime_create(const tl_runtime_options *options, tl_runtime *out_runtime);
tl_status tl_runtime_destroy(tl_runtime runtime);
tl_status tl_runtime_device_count(tl_runtime runtime, uint32_t *out_count);
tl_status tl_runtime_device_get(tl_runtime runtime, uint32_t index, tl_device *out_device);
tl_status tl_runtime_device_find(tl_runtime runtime, const char *name, tl_device *out_device);
typedef struct tl_device_info {
  size_t struct_size;
  char name[128]; char vendor[64]; char driver_version[64]; char plugin[64]; char target[64];
  char targets[256];
  uint64_t memory_bytes; uint64_t onchip_memory_bytes; uint32_t compute_units; uint32_t clock_mhz;
  uint64_t max_grid[3]; double peak_bandwidth_bytes_per_s; double peak_flops[14];
  uint64_t supported_dtypes;
  double link_bandwidth_bytes_per_s; uint32_t flags;
  char target_options[128];
} tl_device_info;
tl_status tl_device_query(tl_device device, tl_device_info *out_info);
typedef struct tl_buffer_desc { size_t struct_size; uint64_t size_bytes; uint32_t flags; } tl_buffer_desc;
tl_status tl_buffer_create(tl_device device, const tl_buffer_desc *desc, tl_buffer *out_buffer);
tl_status tl_buffer_release(tl_buffer buffer);
typedef struct tl_buffer_import_desc {
  size_t struct_size; void *pointer; uint64_t size_bytes; uint32_t flags;
} tl_buffer_import_desc;
tl_status tl_buffer_import(tl_device device, const tl_buffer_import_desc *desc,
                           tl_buffer *out_buffer);
tl_status tl_stream_import(tl_device device, void *native_stream, tl_stream *out_stream);
tl_status tl_stream_create(tl_device device, tl_stream *out_stream);
tl_status tl_stream_release(tl_stream stream);
tl_status tl_stream_synchronize(tl_stream stream);
tl_status tl_stream_copy_to_device(tl_stream stream, const void *src, tl_buffer dst,
                                   uint64_t dst_offset, uint64_t size_bytes);
tl_status tl_stream_copy_to_host(tl_stream stream, tl_buffer src, uint64_t src_offset, void *dst,
                                 uint64_t size_bytes);
tl_status tl_event_create(tl_device device, tl_event *out_event);
tl_status tl_event_release(tl_event event);
tl_status tl_stream_record_event(tl_stream stream, tl_event event);
tl_status tl_event_synchronize(tl_event event);
tl_status tl_event_elapsed_ms(tl_event start, tl_event end, double *out_ms);
tl_status tl_executable_load(tl_device device, const void *data, size_t size_bytes,
                             tl_executable *out_executable);
tl_status tl_executable_release(tl_executable executable);
tl_status tl_executable_find_kernel(tl_executable executable, const char *name,
                                    uint32_t *out_kernel);
typedef struct tl_arg {
  size_t struct_size; uint32_t kind; uint32_t dtype; tl_buffer buffer; uint64_t offset_bytes;
  uint32_t rank; int64_t shape[8]; int64_t strides[8]; int64_t i; double f;
} tl_arg;
typedef struct tl_launch_desc {
  size_t struct_size; uint32_t kernel; uint64_t grid[3]; const tl_arg *args; uint32_t arg_count;
} tl_launch_desc;
tl_status tl_stream_launch(tl_stream stream, tl_executable executable,
                           const tl_launch_desc *launch);
""")

INFER = ffi.cast("size_t", -1)

_libs = {}


def lib_dirs():
    """The directories searched for the TL shared libraries, in order."""
    dirs = []
    if os.environ.get("TL_LIB_DIR"):
        dirs.append(pathlib.Path(os.environ["TL_LIB_DIR"]))
    here = pathlib.Path(__file__).resolve().parent
    dirs.append(here / "_lib")
    dirs.append(here.parent.parent / "build" / "lib")  # a source checkout: python/tl -> build/lib
    return dirs


def _load(name):
    if name not in _libs:
        tried = []
        for d in lib_dirs():
            path = d / name
            tried.append(str(path))
            if path.exists():
                _libs[name] = ffi.dlopen(str(path))
                break
        else:
            raise ImportError(f"tl: cannot find {name} (tried {', '.join(tried)}); build TL "
                              "(ninja -C build) or set TL_LIB_DIR to its lib directory")
    return _libs[name]


def compiler():
    return _load("libtl_compiler.so")


def hal():
    return _load("libtl_hal.so")
