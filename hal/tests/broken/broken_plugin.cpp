// Purpose-built broken plugins for the loader tests; BROKEN_<KIND> selects how each one fails.
// SPDX-License-Identifier: Apache-2.0
#include "tl/vendor.h"

namespace {

const tl_vendor_host_api *host = nullptr;

tl_status unimplemented() {
  return host->make_status(TL_STATUS_UNIMPLEMENTED, "broken test plugin");
}

tl_status initialize(const tl_vendor_host_api *h, void **out_state) {
  host = h;
  *out_state = nullptr;
#ifdef BROKEN_INIT_FAILS
  return h->make_status(TL_STATUS_UNAVAILABLE, "no accelerator attached");
#else
  return nullptr;
#endif
}
void shutdown(void *) {}
tl_status device_count(void *, uint32_t *out) {
  *out = 0;
#ifdef BROKEN_DEVICE_COUNT_FAILS
  return host->make_status(TL_STATUS_INTERNAL, "driver query failed");
#else
  return nullptr;
#endif
}
tl_status device_open(void *, uint32_t, void **) { return unimplemented(); }
void device_close(void *) {}
tl_status device_query(void *, tl_device_info *) { return unimplemented(); }
tl_status buffer_allocate(void *, const tl_buffer_desc *, void **) { return unimplemented(); }
void buffer_free(void *, void *) {}
tl_status buffer_map(void *, void *, void **) { return unimplemented(); }
tl_status stream_create(void *, void **) { return unimplemented(); }
void stream_destroy(void *, void *) {}
tl_status stream_synchronize(void *) { return unimplemented(); }
tl_status copy_to_device(void *, const void *, void *, uint64_t, uint64_t) {
  return unimplemented();
}
tl_status copy_to_host(void *, void *, uint64_t, void *, uint64_t) { return unimplemented(); }
tl_status copy_buffer(void *, void *, uint64_t, void *, uint64_t, uint64_t) {
  return unimplemented();
}
tl_status fill(void *, void *, uint64_t, uint64_t, const void *, uint32_t) {
  return unimplemented();
}
tl_status launch(void *, void *, const tl_vendor_launch *) { return unimplemented(); }
tl_status event_create(void *, void **) { return unimplemented(); }
void event_destroy(void *, void *) {}
tl_status record(void *, void *) { return unimplemented(); }
tl_status wait(void *, void *) { return unimplemented(); }
tl_status query(void *, int32_t *) { return unimplemented(); }
tl_status event_sync(void *) { return unimplemented(); }
tl_status timestamp(void *, uint64_t *) { return unimplemented(); }
tl_status executable_load(void *, const tl_vendor_executable_image *, void **) {
  return unimplemented();
}
void executable_free(void *, void *) {}

tl_vendor_plugin make_table() {
  tl_vendor_plugin t = {sizeof(tl_vendor_plugin),
                        TL_VENDOR_ABI_MAJOR,
                        TL_VENDOR_ABI_MINOR,
                        BROKEN_NAME,
                        "0.0.1",
                        initialize,
                        shutdown,
                        device_count,
                        device_open,
                        device_close,
                        device_query,
                        buffer_allocate,
                        buffer_free,
                        buffer_map,
                        stream_create,
                        stream_destroy,
                        stream_synchronize,
                        copy_to_device,
                        copy_to_host,
                        copy_buffer,
                        fill,
                        launch,
                        event_create,
                        event_destroy,
                        record,
                        wait,
                        query,
                        event_sync,
                        timestamp,
                        executable_load,
                        executable_free,
                        {}};
#ifdef BROKEN_WRONG_MAJOR
  t.abi_major = 99;
  t.abi_minor = 3;
#endif
#ifdef BROKEN_SMALL_TABLE
  t.struct_size = 16;
#endif
#ifdef BROKEN_MISSING_FUNCTION
  t.stream_launch = nullptr;
#endif
  return t;
}

} // namespace

#ifdef BROKEN_UNRESOLVED
extern "C" void tl_symbol_that_does_not_exist();
#endif

#ifndef BROKEN_NO_ENTRY
extern "C" TL_VENDOR_EXPORT const tl_vendor_plugin *tl_vendor_plugin_entry(uint32_t) {
#ifdef BROKEN_UNRESOLVED
  tl_symbol_that_does_not_exist();
#endif
#ifdef BROKEN_NULL_TABLE
  return nullptr;
#else
  static const tl_vendor_plugin table = make_table();
  return &table;
#endif
}
#else
extern "C" TL_VENDOR_EXPORT int tl_some_other_symbol() { return 0; }
#endif
