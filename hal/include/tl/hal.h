/* TL HAL: the vendor-neutral C API that frameworks call to run TL executables on any device.
 * SPDX-License-Identifier: Apache-2.0
 *
 * Conventions (the same for every call):
 * - Every function returns a tl_status: NULL means success; otherwise an object holding a code and
 *   a message that the caller frees with tl_status_free().
 * - Handles are opaque. Objects made by _create/_load are owned by the caller and freed with the
 *   matching _release (buffers, streams, events, executables) or _destroy (runtime).
 * - Output parameters are named out_* and are set to zero/NULL first, so that they never hold
 *   garbage on failure.
 * - Structs passed in begin with `struct_size` (set it to sizeof the struct); fields are only
 *   appended, so an older caller's smaller struct stays valid.
 * - Stream operations are asynchronous and ordered within their stream; host memory passed to a
 *   stream copy must stay valid until the copy completes (synchronize the stream or an event).
 * - Handles are always checked (null, foreign, wrong type, released: INVALID_ARGUMENT). With
 *   validation on (TL_HAL_VALIDATE=1 or tl_runtime_options.validation = 1) every bound, device
 *   match and launch argument is checked too and misuse returns an error instead of undefined
 *   behaviour; with validation off those checks are skipped and misuse is undefined.
 */
#ifndef TL_HAL_H_
#define TL_HAL_H_

#include "tl/dtype.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TL_HAL_API_VERSION_MAJOR 1
#define TL_HAL_API_VERSION_MINOR 3
#define TL_HAL_MAX_RANK 8

#if defined(__GNUC__)
#define TL_HAL_EXPORT __attribute__((visibility("default")))
#else
#define TL_HAL_EXPORT
#endif

/* ---- status ---------------------------------------------------------------------------------- */

typedef enum tl_status_code {
  TL_STATUS_OK = 0,
  TL_STATUS_INVALID_ARGUMENT = 1,    /* the caller passed something wrong */
  TL_STATUS_NOT_FOUND = 2,           /* no such device, kernel or plugin */
  TL_STATUS_OUT_OF_RANGE = 3,        /* an index, offset or size beyond its object */
  TL_STATUS_FAILED_PRECONDITION = 4, /* the object is not in a state that allows the call */
  TL_STATUS_UNAVAILABLE = 5,         /* the device or plugin is not usable */
  TL_STATUS_UNIMPLEMENTED = 6,       /* the device does not support the operation */
  TL_STATUS_RESOURCE_EXHAUSTED = 7,  /* out of device or host memory */
  TL_STATUS_INCOMPATIBLE = 8,        /* version or target mismatch */
  TL_STATUS_DATA_LOSS = 9,           /* a corrupt or truncated executable */
  TL_STATUS_INTERNAL = 10,           /* a bug in TL or a plugin */
  TL_STATUS_ABORTED = 11,            /* a kernel failed at run time (e.g. a failed assert) */
} tl_status_code;

typedef struct tl_status_s *tl_status;

TL_HAL_EXPORT tl_status_code tl_status_get_code(tl_status status);
/* The message, valid until tl_status_free; "" for NULL. */
TL_HAL_EXPORT const char *tl_status_get_message(tl_status status);
TL_HAL_EXPORT void tl_status_free(tl_status status);
TL_HAL_EXPORT const char *tl_status_code_name(tl_status_code code);
/* Makes a status (for plugins and wrappers); TL_STATUS_OK gives NULL. */
TL_HAL_EXPORT tl_status tl_status_make(tl_status_code code, const char *message);

/* ---- element types -----------------------------------------------------------------------------
 */

/* tl_dtype: tl/dtype.h (the format layer's one enumeration), included above. */

/* Storage bytes of one element (i1 is one byte); 0 for an invalid dtype. */
TL_HAL_EXPORT size_t tl_dtype_size(tl_dtype dtype);
TL_HAL_EXPORT const char *tl_dtype_name(tl_dtype dtype);

/* ---- handles --------------------------------------------------------------------------------- */

typedef struct tl_runtime_s *tl_runtime;
typedef struct tl_device_s *tl_device; /* owned by the runtime */
typedef struct tl_buffer_s *tl_buffer;
typedef struct tl_stream_s *tl_stream;
typedef struct tl_event_s *tl_event;
typedef struct tl_executable_s *tl_executable;

/* ---- runtime and plugins -----------------------------------------------------------------------
 */

typedef struct tl_runtime_options {
  size_t struct_size;
  /* Extra plugin search path (':'-separated files or directories), searched before
   * TL_PLUGIN_PATH, the manifest directory and the plugins beside the runtime. May be NULL. */
  const char *plugin_path;
  /* 1: validate every call; 0: do not; -1: TL_HAL_VALIDATE decides (unset: on in builds with
   * assertions, off in NDEBUG builds). */
  int32_t validation;
} tl_runtime_options;

TL_HAL_EXPORT void tl_runtime_get_api_version(uint32_t *out_major, uint32_t *out_minor);
TL_HAL_EXPORT tl_status tl_runtime_create(const tl_runtime_options *options,
                                          tl_runtime *out_runtime);
/* Releases the runtime; every object made from it must be released first (validation checks). */
TL_HAL_EXPORT tl_status tl_runtime_destroy(tl_runtime runtime);

typedef struct tl_plugin_info {
  size_t struct_size;
  const char *name;    /* the plugin's name, or the library file name if it did not load */
  const char *path;    /* the shared library */
  const char *version; /* the plugin's own version string ("" if not loaded) */
  int32_t available;   /* 1: loaded and initialized */
  const char *reason;  /* why it is unavailable ("" when available) */
  uint32_t abi_major, abi_minor;
  uint32_t device_count;
} tl_plugin_info;

TL_HAL_EXPORT tl_status tl_runtime_plugin_count(tl_runtime runtime, uint32_t *out_count);
/* Strings stay valid for the runtime's lifetime. */
TL_HAL_EXPORT tl_status tl_runtime_plugin_info(tl_runtime runtime, uint32_t index,
                                               tl_plugin_info *out_info);
TL_HAL_EXPORT tl_status tl_runtime_device_count(tl_runtime runtime, uint32_t *out_count);
TL_HAL_EXPORT tl_status tl_runtime_device_get(tl_runtime runtime, uint32_t index,
                                              tl_device *out_device);
/* Finds a device by name prefix or by its plugin's name ("cpu", "npusim:0"). */
TL_HAL_EXPORT tl_status tl_runtime_device_find(tl_runtime runtime, const char *name,
                                               tl_device *out_device);

/* ---- devices -----------------------------------------------------------------------------------
 */

typedef struct tl_device_info {
  size_t struct_size;
  char name[128];
  char vendor[64];
  char driver_version[64];
  char plugin[64];   /* the plugin that provides the device */
  char target[64];   /* the compiler target it prefers, e.g. "tlir" */
  char targets[256]; /* every target it accepts, comma-separated */
  uint64_t memory_bytes;
  uint64_t onchip_memory_bytes; /* per compute unit (shared memory, scratchpad) */
  uint32_t compute_units;
  uint32_t clock_mhz;
  uint64_t max_grid[3];
  double peak_bandwidth_bytes_per_s;
  double peak_flops[TL_DTYPE_COUNT]; /* per input dtype; 0 where unsupported */
  uint64_t supported_dtypes;         /* bit (1 << tl_dtype) per supported dtype */
  /* 1.1: a 1.0 plugin or caller has a shorter struct; these fields then read as 0. */
  double link_bandwidth_bytes_per_s; /* host<->device link peak, per direction; 0 = unknown or
                                        not modelled (e.g. device memory is host memory) */
  uint32_t flags;                    /* tl_device_flags */
  /* 1.3: the options of `target` that build for exactly this device, as a JSON object of strings
   * with the keys of `tlc compile --target-option` (cuda on an H200: {"arch":"sm_90a"}); "" when
   * none. A compiler that builds for this device alone (a JIT) passes them: one image instead
   * of one per architecture the target knows. */
  char target_options[128];
} tl_device_info;

typedef enum tl_device_flags {
  /* Event timestamps are simulated time, not wall time (a simulator): a device interval may be
   * shorter or longer than the host's wall clock for it. */
  TL_DEVICE_SIMULATED_TIME = 1,
} tl_device_flags;

TL_HAL_EXPORT tl_status tl_device_query(tl_device device, tl_device_info *out_info);

/* ---- buffers ------------------------------------------------------------------------------------
 */

/* HOST_VISIBLE alone asks for host memory the device reaches (on a GPU, pinned memory): host
 * copies from or to its mapped memory then run at the link's speed. With DEVICE_LOCAL too, the
 * memory suits the device first and is still mappable (on a GPU, managed memory). */
typedef enum tl_buffer_flags {
  TL_BUFFER_DEVICE_LOCAL = 1, /* fastest for the device */
  TL_BUFFER_HOST_VISIBLE = 2, /* can be mapped into host memory */
} tl_buffer_flags;

typedef struct tl_buffer_desc {
  size_t struct_size;
  uint64_t size_bytes; /* > 0 */
  uint32_t flags;      /* tl_buffer_flags */
} tl_buffer_desc;

TL_HAL_EXPORT tl_status tl_buffer_create(tl_device device, const tl_buffer_desc *desc,
                                         tl_buffer *out_buffer);
TL_HAL_EXPORT tl_status tl_buffer_release(tl_buffer buffer);
TL_HAL_EXPORT tl_status tl_buffer_size(tl_buffer buffer, uint64_t *out_size_bytes);
/* Host pointer to a TL_BUFFER_HOST_VISIBLE buffer; valid until the buffer is released. Access it
 * only while no stream operation on the buffer is pending. */
TL_HAL_EXPORT tl_status tl_buffer_map(tl_buffer buffer, void **out_host_ptr);

/* 1.2: wraps memory the caller owns as a buffer, without a copy: a device address of `device`
 * (cuda: a CUdeviceptr, e.g. a PyTorch tensor's data_ptr()) or, on devices whose memory is host
 * memory (cpu), a host pointer (a numpy array's data). The buffer does not own the memory:
 * releasing it leaves the memory alone; the memory must outlive the buffer and the work queued on
 * it. The pointer must be aligned for the element types launched on it. Errors: INVALID_ARGUMENT
 * (null pointer, zero size, unknown flags), UNIMPLEMENTED (the device cannot import, e.g. npusim,
 * whose memory lives in the simulator). */
typedef struct tl_buffer_import_desc {
  size_t struct_size;
  void *pointer;       /* start of the memory; not null */
  uint64_t size_bytes; /* > 0 */
  uint32_t flags;      /* tl_buffer_flags the memory has (HOST_VISIBLE: tl_buffer_map works) */
} tl_buffer_import_desc;

TL_HAL_EXPORT tl_status tl_buffer_import(tl_device device, const tl_buffer_import_desc *desc,
                                         tl_buffer *out_buffer);

/* ---- streams and events
 * --------------------------------------------------------------------------- */

TL_HAL_EXPORT tl_status tl_stream_create(tl_device device, tl_stream *out_stream);
/* Waits for pending work, then releases. */
TL_HAL_EXPORT tl_status tl_stream_release(tl_stream stream);
/* 1.2: wraps a native stream of `device` (cuda: a CUstream, e.g. PyTorch's
 * torch.cuda.current_stream().cuda_stream) so TL work is ordered with the framework's.
 * Releasing it synchronizes but does not destroy the native stream. UNIMPLEMENTED on devices
 * without native streams (cpu, npusim). */
TL_HAL_EXPORT tl_status tl_stream_import(tl_device device, void *native_stream,
                                         tl_stream *out_stream);
/* Waits for every operation queued so far; returns the first error any of them hit. */
TL_HAL_EXPORT tl_status tl_stream_synchronize(tl_stream stream);

TL_HAL_EXPORT tl_status tl_stream_copy_to_device(tl_stream stream, const void *src, tl_buffer dst,
                                                 uint64_t dst_offset, uint64_t size_bytes);
TL_HAL_EXPORT tl_status tl_stream_copy_to_host(tl_stream stream, tl_buffer src, uint64_t src_offset,
                                               void *dst, uint64_t size_bytes);
TL_HAL_EXPORT tl_status tl_stream_copy_buffer(tl_stream stream, tl_buffer src, uint64_t src_offset,
                                              tl_buffer dst, uint64_t dst_offset,
                                              uint64_t size_bytes);
/* Repeats a 1, 2 or 4 byte pattern; offset and size must be multiples of pattern_size. */
TL_HAL_EXPORT tl_status tl_stream_fill(tl_stream stream, tl_buffer dst, uint64_t offset,
                                       uint64_t size_bytes, const void *pattern,
                                       uint32_t pattern_size);

TL_HAL_EXPORT tl_status tl_event_create(tl_device device, tl_event *out_event);
TL_HAL_EXPORT tl_status tl_event_release(tl_event event);
/* The event completes when the stream reaches it; re-recording resets it. */
TL_HAL_EXPORT tl_status tl_stream_record_event(tl_stream stream, tl_event event);
/* Later work on `stream` waits until `event` completes (events of the same device only). */
TL_HAL_EXPORT tl_status tl_stream_wait_event(tl_stream stream, tl_event event);
/* out_done: 1 when completed; FAILED_PRECONDITION if never recorded. */
TL_HAL_EXPORT tl_status tl_event_query(tl_event event, int32_t *out_done);
TL_HAL_EXPORT tl_status tl_event_synchronize(tl_event event);
/* Milliseconds between two completed events of one device (device timestamps). */
TL_HAL_EXPORT tl_status tl_event_elapsed_ms(tl_event start, tl_event end, double *out_ms);

/* ---- executables and launches -------------------------------------------------------------------
 */

typedef enum tl_param_kind { TL_PARAM_TENSOR = 0, TL_PARAM_SCALAR = 1 } tl_param_kind;

typedef struct tl_param_info {
  size_t struct_size;
  const char *name;
  uint32_t kind;  /* tl_param_kind */
  uint32_t dtype; /* tl_dtype */
  uint32_t rank;  /* 0 for scalars */
} tl_param_info;

typedef struct tl_kernel_info {
  size_t struct_size;
  const char *name;
  uint32_t param_count;
  uint32_t grid_rank; /* program_id axes the kernel uses (1..3) */
  uint64_t onchip_memory_bytes;
} tl_kernel_info;

/* Loads a TL executable container (as written by `tlc compile`). Errors: DATA_LOSS for a
 * truncated or corrupt blob, INCOMPATIBLE for another target or a newer format. The runtime
 * copies what it needs: `data` may be freed after the call. */
TL_HAL_EXPORT tl_status tl_executable_load(tl_device device, const void *data, size_t size_bytes,
                                           tl_executable *out_executable);
TL_HAL_EXPORT tl_status tl_executable_release(tl_executable executable);
TL_HAL_EXPORT tl_status tl_executable_kernel_count(tl_executable executable, uint32_t *out_count);
/* Strings stay valid while the executable lives. */
TL_HAL_EXPORT tl_status tl_executable_kernel_info(tl_executable executable, uint32_t kernel,
                                                  tl_kernel_info *out_info);
TL_HAL_EXPORT tl_status tl_executable_param_info(tl_executable executable, uint32_t kernel,
                                                 uint32_t param, tl_param_info *out_info);
TL_HAL_EXPORT tl_status tl_executable_find_kernel(tl_executable executable, const char *name,
                                                  uint32_t *out_kernel);

typedef struct tl_arg {
  size_t struct_size;
  uint32_t kind; /* tl_param_kind */
  uint32_t dtype;
  /* tensors: elements start at `offset_bytes` into `buffer`; strides are in elements */
  tl_buffer buffer;
  uint64_t offset_bytes;
  uint32_t rank;
  int64_t shape[TL_HAL_MAX_RANK];
  int64_t strides[TL_HAL_MAX_RANK];
  /* scalars: integers in `i`, floats in `f` */
  int64_t i;
  double f;
} tl_arg;

typedef struct tl_launch_desc {
  size_t struct_size;
  uint32_t kernel;
  uint64_t grid[3]; /* programs per axis; 0 in any axis launches nothing */
  const tl_arg *args;
  uint32_t arg_count;
} tl_launch_desc;

/* Queues a launch; the arguments are copied, the buffers must live until it completes. Run-time
 * failures of the kernel (e.g. a failed assert) surface at the next synchronize as ABORTED. */
TL_HAL_EXPORT tl_status tl_stream_launch(tl_stream stream, tl_executable executable,
                                         const tl_launch_desc *launch);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TL_HAL_H_ */
