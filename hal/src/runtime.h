// The HAL runtime's own objects behind the C handles: runtime, plugins, devices, buffers, streams,
// events and executables, each pointing at its plugin-side object.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "handles.h"
#include "tl/hal.h"
#include "tl/vendor.h"

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tl::hal {

struct Plugin {
  std::string name, path, version, reason;
  void *library = nullptr;
  const tl_vendor_plugin *table = nullptr;
  void *state = nullptr;
  bool available = false;
  uint32_t abi_major = 0, abi_minor = 0;
  uint32_t device_count = 0;
};

struct Runtime;

/// A 1.2 table function of plugin table `t`, or null where the table ends before it (an older
/// plugin) or leaves it null.
#define TL_OPTIONAL_FN(t, field)                                                                   \
  ((t).struct_size >= offsetof(tl_vendor_plugin, field) + sizeof((t).field) ? (t).field : nullptr)

struct Device {
  Runtime *runtime = nullptr;
  Plugin *plugin = nullptr;
  uint32_t index = 0; // within its plugin
  void *object = nullptr;
  uint64_t handle = 0;
  tl_device_info info{};
  std::vector<std::string> targets;
};

struct Stream;

/// Live objects of one runtime; its lock guards the sets (calls on one object are not serialized).
struct Runtime {
  uint64_t handle = 0;
  bool validate = false;
  std::vector<std::unique_ptr<Plugin>> plugins;
  std::vector<std::unique_ptr<Device>> devices;
  std::mutex mutex;
  std::set<uint64_t> buffers, events, executables;
  // Streams are shared with drain_device, which may synchronize a stream while another thread
  // releases it: the last owner frees it.
  std::map<uint64_t, std::shared_ptr<Stream>> streams;
  std::string live_objects_summary();
};

struct Buffer {
  Device *device;
  void *object;
  uint64_t size;
  uint32_t flags;
  uint64_t handle = 0;
  bool imported = false; // tl_buffer_import: the caller owns the memory
};

struct Stream {
  Device *device;
  void *object;
  uint64_t handle = 0;
  // Held around every synchronize of the plugin stream and what is done with its error
  // (tl_stream_synchronize, drain_device, tl_stream_release) and while the object is destroyed:
  // a plugin reports a launch's error once, so taking it and storing or returning it must be one
  // step, or a concurrent caller sees neither the error nor the deferred copy.
  std::mutex use_mutex;
  tl_status deferred_error = nullptr; // an error a drain took, for the stream's next synchronize
  bool destroyed = false;
};

struct Event {
  Device *device;
  void *object;
  uint64_t handle = 0;
  bool recorded = false;
};

struct KernelMeta {
  std::string name;
  std::vector<std::string> param_names;
  std::vector<tl_vendor_param> params;
  uint32_t grid_rank = 1;
  uint64_t onchip_memory_bytes = 0;
};

struct Executable {
  Device *device;
  void *object;
  uint64_t handle = 0;
  std::string target;
  std::vector<KernelMeta> kernels;
};

/// Finds, loads and initializes plugins (plugin_loader.cpp).
void load_plugins(Runtime &rt, const char *extra_path);
void unload_plugins(Runtime &rt);

/// Waits for every stream of `device` (errors are kept for the streams' next synchronize), so
/// that memory or code used by queued work can be freed.
void drain_device(Device &device);

tl_status make_status(tl_status_code code, std::string message);

} // namespace tl::hal
