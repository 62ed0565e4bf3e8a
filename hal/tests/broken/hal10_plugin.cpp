// A plugin as built against HAL 1.0 (vendor ABI 1.0): it wraps the cpu plugin and fills only the
// 1.0 tl_device_info, as the 1.0 SDK did. The runtime must load it and read the 1.1 fields as 0.
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"
#include "tl/vendor.h"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace {

const tl_vendor_plugin *real = nullptr;
tl_vendor_plugin table;

/// The 1.0 struct ended at supported_dtypes: nothing past it is written, whatever the caller's
/// struct_size (the 1.0 SDK copied min(struct_size, its sizeof)).
constexpr size_t kHal10InfoSize = offsetof(tl_device_info, link_bandwidth_bytes_per_s);

tl_status device_query(void *device, tl_device_info *out_info) {
  tl_device_info full;
  std::memset(&full, 0xab, sizeof full); // what a 1.0 plugin never writes must not leak
  full.struct_size = sizeof full;
  if (tl_status s = real->device_query(device, &full))
    return s;
  const size_t size = out_info->struct_size;
  std::memcpy(reinterpret_cast<char *>(out_info) + sizeof(size_t),
              reinterpret_cast<const char *>(&full) + sizeof(size_t),
              (size < kHal10InfoSize ? size : kHal10InfoSize) - sizeof(size_t));
  return nullptr;
}

} // namespace

extern "C" TL_VENDOR_EXPORT const tl_vendor_plugin *tl_vendor_plugin_entry(uint32_t host_major) {
  if (!real) {
    real = load_cpu_plugin(host_major);
    if (!real)
      return nullptr;
    table = *real;
    table.name = "hal10";
    table.abi_minor = 0;
    table.device_query = device_query;
    // A table of before 1.2 ends where buffer_import begins; poison what follows, so that a
    // runtime reading past struct_size crashes instead of passing.
    table.struct_size = offsetof(tl_vendor_plugin, buffer_import);
    const auto poison = reinterpret_cast<void *>(uintptr_t(1));
    table.buffer_import = reinterpret_cast<decltype(table.buffer_import)>(poison);
    table.stream_import = reinterpret_cast<decltype(table.stream_import)>(poison);
    table.event_elapsed_ms = reinterpret_cast<decltype(table.event_elapsed_ms)>(poison);
  }
  return &table;
}
