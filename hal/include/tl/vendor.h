/* TL vendor plugin ABI: what a device plugin (a shared library) implements for the TL runtime.
 * SPDX-License-Identifier: Apache-2.0
 *
 * A plugin exports one symbol, TL_VENDOR_ENTRY_POINT ("tl_vendor_plugin_entry"), returning a
 * table of functions. The runtime passes the ABI major version it speaks; the plugin returns its
 * table (whose abi_major must equal it, or the runtime refuses the plugin with a message naming
 * both versions). Tables only grow: new functions are appended and guarded by struct_size and
 * abi_minor; `reserved` keeps room.
 *
 * Objects on the plugin side (devices, buffers, streams, events, executables) are opaque pointers
 * the runtime stores in its own handles. The runtime validates every argument before calling the
 * plugin (handles, bounds, launch arguments against kernel metadata), so a plugin may assume
 * well-formed calls. Errors are returned as tl_status made with the host's make_status.
 * Plugins must not throw across this boundary or call exit().
 *
 * Further rules: make_status and log may be called from any plugin thread; output structs are
 * filled only up to the caller's struct_size; stream_wait_event waits for the newest record of the
 * event queued before the wait (the runtime refuses waits on never-recorded events); copies
 * within one buffer never overlap (the runtime checks); void functions report problems through
 * log only.
 */
#ifndef TL_VENDOR_H_
#define TL_VENDOR_H_

#include "tl/hal.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TL_VENDOR_ABI_MAJOR 1
/* 1.1: tl_device_info's link bandwidth and flags. 1.2: buffer_import, stream_import and
 * event_elapsed_ms, optional, in what were the first reserved slots (an older plugin's are null).
 */
#define TL_VENDOR_ABI_MINOR 2
#define TL_VENDOR_ENTRY_POINT "tl_vendor_plugin_entry"

/* Services the runtime offers to a plugin. */
typedef struct tl_vendor_host_api {
  size_t struct_size;
  uint32_t abi_major, abi_minor;
  tl_status (*make_status)(tl_status_code code, const char *message);
  /* level: 0 error, 1 warning, 2 info, 3 debug */
  void (*log)(int32_t level, const char *plugin, const char *message);
} tl_vendor_host_api;

/* A loaded executable as the plugin sees it: the runtime has verified the container's hash,
 * version and target; `code` is the target-specific blob. Valid for the duration of
 * executable_load only (copy what you keep). */
typedef struct tl_vendor_param {
  const char *name;
  uint32_t kind;  /* tl_param_kind */
  uint32_t dtype; /* tl_dtype */
  uint32_t rank;
} tl_vendor_param;

typedef struct tl_vendor_kernel {
  const char *name;
  const tl_vendor_param *params;
  uint32_t param_count;
  uint32_t grid_rank;
  uint64_t onchip_memory_bytes;
} tl_vendor_kernel;

typedef struct tl_vendor_executable_image {
  size_t struct_size;
  const char *target;
  const void *code;
  uint64_t code_size;
  const tl_vendor_kernel *kernels;
  uint32_t kernel_count;
} tl_vendor_executable_image;

/* A launch argument with the buffer already resolved to the plugin's buffer object. */
typedef struct tl_vendor_arg {
  uint32_t kind;
  uint32_t dtype;
  void *buffer;
  uint64_t offset_bytes;
  uint32_t rank;
  int64_t shape[TL_HAL_MAX_RANK];
  int64_t strides[TL_HAL_MAX_RANK];
  int64_t i;
  double f;
} tl_vendor_arg;

typedef struct tl_vendor_launch {
  size_t struct_size;
  uint32_t kernel;
  uint64_t grid[3];
  const tl_vendor_arg *args;
  uint32_t arg_count;
} tl_vendor_launch;

typedef struct tl_vendor_plugin {
  size_t struct_size;
  uint32_t abi_major, abi_minor;
  const char *name;    /* short, e.g. "cpu" */
  const char *version; /* the plugin's own version */

  /* Lifetime. initialize may fail (UNAVAILABLE with a reason: no driver, no device, ...). */
  tl_status (*initialize)(const tl_vendor_host_api *host, void **out_state);
  void (*shutdown)(void *state);

  /* Devices. */
  tl_status (*device_count)(void *state, uint32_t *out_count);
  tl_status (*device_open)(void *state, uint32_t index, void **out_device);
  void (*device_close)(void *device);
  tl_status (*device_query)(void *device, tl_device_info *out_info);

  /* Buffers. */
  tl_status (*buffer_allocate)(void *device, const tl_buffer_desc *desc, void **out_buffer);
  void (*buffer_free)(void *device, void *buffer);
  tl_status (*buffer_map)(void *device, void *buffer, void **out_host_ptr);

  /* Streams: ordered queues. Copies name host pointers or (buffer, offset) pairs. */
  tl_status (*stream_create)(void *device, void **out_stream);
  void (*stream_destroy)(void *device, void *stream); /* after stream_synchronize */
  tl_status (*stream_synchronize)(void *stream);
  tl_status (*stream_copy_to_device)(void *stream, const void *src, void *dst, uint64_t dst_offset,
                                     uint64_t size);
  tl_status (*stream_copy_to_host)(void *stream, void *src, uint64_t src_offset, void *dst,
                                   uint64_t size);
  tl_status (*stream_copy_buffer)(void *stream, void *src, uint64_t src_offset, void *dst,
                                  uint64_t dst_offset, uint64_t size);
  tl_status (*stream_fill)(void *stream, void *dst, uint64_t offset, uint64_t size,
                           const void *pattern, uint32_t pattern_size);
  tl_status (*stream_launch)(void *stream, void *executable, const tl_vendor_launch *launch);

  /* Events: completed when their stream reaches them; timestamps in device nanoseconds. */
  tl_status (*event_create)(void *device, void **out_event);
  void (*event_destroy)(void *device, void *event);
  tl_status (*stream_record_event)(void *stream, void *event);
  tl_status (*stream_wait_event)(void *stream, void *event);
  tl_status (*event_query)(void *event, int32_t *out_done);
  tl_status (*event_synchronize)(void *event);
  tl_status (*event_timestamp_ns)(void *event, uint64_t *out_ns);

  /* Executables for the device's target. */
  tl_status (*executable_load)(void *device, const tl_vendor_executable_image *image,
                               void **out_executable);
  void (*executable_free)(void *device, void *executable);

  /* 1.2, optional (null: the runtime answers UNIMPLEMENTED, or computes elapsed time from
   * event_timestamp_ns). buffer_import wraps memory the caller owns (desc->pointer is a device
   * address of this device, e.g. a CUdeviceptr, or a host pointer where device memory is host
   * memory); buffer_free of such a buffer must leave the memory alone. stream_import wraps a
   * native queue (e.g. a CUstream) that stream_destroy must not destroy. event_elapsed_ms is for
   * devices whose events have no absolute timestamp (CUDA's cuEventElapsedTime). */
  tl_status (*buffer_import)(void *device, const tl_buffer_import_desc *desc, void **out_buffer);
  tl_status (*stream_import)(void *device, void *native_stream, void **out_stream);
  tl_status (*event_elapsed_ms)(void *start, void *end, double *out_ms);

  void *reserved[13];
} tl_vendor_plugin;

/* The one entry point: returns the plugin's table for the host's ABI major (or NULL). */
typedef const tl_vendor_plugin *(*tl_vendor_plugin_entry_fn)(uint32_t host_abi_major);

#if defined(__GNUC__)
#define TL_VENDOR_EXPORT __attribute__((visibility("default")))
#else
#define TL_VENDOR_EXPORT
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TL_VENDOR_H_ */
