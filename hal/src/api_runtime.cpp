// C API: runtime creation, plugin listing, device enumeration and queries.
// SPDX-License-Identifier: Apache-2.0
#include "api_util.h"

#include <cstdlib>
#include <cstring>

using namespace tl::hal;

namespace tl::hal {
std::string Runtime::live_objects_summary() {
  std::lock_guard<std::mutex> lock(mutex);
  std::string s;
  auto add = [&](size_t n, const char *what) {
    if (n)
      s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(buffers.size(), "buffer(s)");
  add(streams.size(), "stream(s)");
  add(events.size(), "event(s)");
  add(executables.size(), "executable(s)");
  return s;
}
} // namespace tl::hal

extern "C" {

void tl_runtime_get_api_version(uint32_t *out_major, uint32_t *out_minor) {
  if (out_major)
    *out_major = TL_HAL_API_VERSION_MAJOR;
  if (out_minor)
    *out_minor = TL_HAL_API_VERSION_MINOR;
}

tl_status tl_runtime_create(const tl_runtime_options *options, tl_runtime *out_runtime) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_runtime)
      return invalid(kFn, "out_runtime is null");
    *out_runtime = nullptr;
    if (options)
      TL_RETURN_IF_ERROR(check_struct(kFn, "options", options, sizeof(tl_runtime_options)));
    auto rt = std::make_unique<Runtime>();
    int32_t v = options ? options->validation : -1;
    if (v < 0) { // TL_HAL_VALIDATE decides; unset: on in builds with assertions
      const char *env = std::getenv("TL_HAL_VALIDATE");
#ifdef NDEBUG
      v = env && *env && std::strcmp(env, "0") != 0;
#else
      v = !env || !*env || std::strcmp(env, "0") != 0;
#endif
    }
    rt->validate = v != 0;
    load_plugins(*rt, options ? options->plugin_path : nullptr);
    rt->handle = HandleTable::global().insert(HandleType::Runtime, rt.get());
    *out_runtime = to_handle<tl_runtime>(rt->handle);
    rt.release();
    return nullptr;
  });
}

tl_status tl_runtime_destroy(tl_runtime runtime) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    Runtime *rt;
    TL_RETURN_IF_ERROR(resolve(kFn, "runtime", runtime, HandleType::Runtime, &rt));
    std::string live = rt->live_objects_summary();
    if (!live.empty())
      return invalid(kFn, "release every object first; still live: " + live,
                     TL_STATUS_FAILED_PRECONDITION);
    std::string why;
    HandleTable::global().remove(rt->handle, HandleType::Runtime, &why);
    unload_plugins(*rt);
    delete rt;
    return nullptr;
  });
}

tl_status tl_runtime_plugin_count(tl_runtime runtime, uint32_t *out_count) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_count)
      return invalid(kFn, "out_count is null");
    *out_count = 0;
    Runtime *rt;
    TL_RETURN_IF_ERROR(resolve(kFn, "runtime", runtime, HandleType::Runtime, &rt));
    *out_count = static_cast<uint32_t>(rt->plugins.size());
    return nullptr;
  });
}

tl_status tl_runtime_plugin_info(tl_runtime runtime, uint32_t index, tl_plugin_info *out_info) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    TL_RETURN_IF_ERROR(check_struct(kFn, "out_info", out_info, sizeof(tl_plugin_info)));
    Runtime *rt;
    TL_RETURN_IF_ERROR(resolve(kFn, "runtime", runtime, HandleType::Runtime, &rt));
    if (index >= rt->plugins.size())
      return invalid(kFn,
                     "plugin index " + std::to_string(index) + " is out of range (" +
                         std::to_string(rt->plugins.size()) + " plugins)",
                     TL_STATUS_OUT_OF_RANGE);
    const Plugin &p = *rt->plugins[index];
    tl_plugin_info info{};
    info.struct_size = sizeof(tl_plugin_info);
    info.name = p.name.c_str();
    info.path = p.path.c_str();
    info.version = p.version.c_str();
    info.available = p.available;
    info.reason = p.reason.c_str();
    info.abi_major = p.abi_major;
    info.abi_minor = p.abi_minor;
    info.device_count = p.available ? p.device_count : 0;
    *out_info = info;
    return nullptr;
  });
}

tl_status tl_runtime_device_count(tl_runtime runtime, uint32_t *out_count) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_count)
      return invalid(kFn, "out_count is null");
    *out_count = 0;
    Runtime *rt;
    TL_RETURN_IF_ERROR(resolve(kFn, "runtime", runtime, HandleType::Runtime, &rt));
    *out_count = static_cast<uint32_t>(rt->devices.size());
    return nullptr;
  });
}

tl_status tl_runtime_device_get(tl_runtime runtime, uint32_t index, tl_device *out_device) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_device)
      return invalid(kFn, "out_device is null");
    *out_device = nullptr;
    Runtime *rt;
    TL_RETURN_IF_ERROR(resolve(kFn, "runtime", runtime, HandleType::Runtime, &rt));
    if (index >= rt->devices.size())
      return invalid(kFn,
                     "device index " + std::to_string(index) + " is out of range (" +
                         std::to_string(rt->devices.size()) + " devices)",
                     TL_STATUS_OUT_OF_RANGE);
    *out_device = to_handle<tl_device>(rt->devices[index]->handle);
    return nullptr;
  });
}

tl_status tl_runtime_device_find(tl_runtime runtime, const char *name, tl_device *out_device) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_device)
      return invalid(kFn, "out_device is null");
    *out_device = nullptr;
    if (!name)
      return invalid(kFn, "name is null");
    Runtime *rt;
    TL_RETURN_IF_ERROR(resolve(kFn, "runtime", runtime, HandleType::Runtime, &rt));
    const std::string want = name;
    std::string known;
    for (auto &d : rt->devices) {
      const std::string id = d->plugin->name + ":" + std::to_string(d->index);
      if (want == d->plugin->name || want == id ||
          (!want.empty() && std::string(d->info.name).rfind(want, 0) == 0)) {
        *out_device = to_handle<tl_device>(d->handle);
        return nullptr;
      }
      known += (known.empty() ? "" : ", ") + id;
    }
    return invalid(kFn,
                   "no device '" + want + "' (devices: " + (known.empty() ? "none" : known) + ")",
                   TL_STATUS_NOT_FOUND);
  });
}

tl_status tl_device_query(tl_device device, tl_device_info *out_info) {
  const char *const kFn = __func__; // kFn inside the lambda would be "operator()"
  return guard(kFn, [&]() -> tl_status {
    if (!out_info)
      return invalid(kFn, "out_info is null");
    const size_t size = out_info->struct_size;
    if (size < offsetof(tl_device_info, supported_dtypes))
      return invalid(kFn, "out_info->struct_size is " + std::to_string(size) +
                              ", expected at least " +
                              std::to_string(offsetof(tl_device_info, supported_dtypes)));
    Device *d;
    TL_RETURN_IF_ERROR(resolve(kFn, "device", device, HandleType::Device, &d));
    // Copy only what the caller's (possibly older, smaller) struct holds.
    std::memcpy(reinterpret_cast<char *>(out_info) + sizeof(size_t),
                reinterpret_cast<const char *>(&d->info) + sizeof(size_t),
                std::min(size, sizeof(tl_device_info)) - sizeof(size_t));
    return nullptr;
  });
}

} // extern "C"
