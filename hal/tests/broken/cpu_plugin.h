// The test plugins that wrap the cpu plugin (hal10, late_error) load it here: dlopen the path the
// build gives (TL_CPU_PLUGIN) and take its table for the host's ABI; null when that fails.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/vendor.h"

#include <dlfcn.h>

inline const tl_vendor_plugin *load_cpu_plugin(uint32_t host_major) {
  void *lib = dlopen(TL_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
  auto entry = lib ? reinterpret_cast<tl_vendor_plugin_entry_fn>(dlsym(lib, TL_VENDOR_ENTRY_POINT))
                   : nullptr;
  return entry ? entry(host_major) : nullptr;
}
