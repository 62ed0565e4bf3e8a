// Plugin discovery and loading: explicit paths, TL_PLUGIN_PATH, JSON manifests and the plugins
// beside the runtime; every failure is recorded as the plugin's reason, never fatal.
// SPDX-License-Identifier: Apache-2.0
#include "runtime.h"

#include "tl/support/plugin_library.hpp"

#include <nlohmann/json.hpp>

#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>

namespace fs = std::filesystem;

namespace tl::hal {
namespace {

/// The directory holding this runtime library (plugins installed beside it are found there).
fs::path runtime_dir() { return support::library_dir(reinterpret_cast<void *>(&load_plugins)); }

struct Candidate {
  std::string path;
  std::string reason; // set when the candidate is already known to be unusable (bad manifest)
};

void add_entry(const std::string &entry, std::vector<Candidate> &out) {
  std::error_code ec;
  if (fs::is_directory(entry, ec)) {
    for (auto &f : support::plugin_files(entry, "libtl_plugin_"))
      out.push_back({f, ""});
  } else {
    out.push_back({entry, fs::exists(entry, ec) ? "" : "no such file"});
  }
}

/// Manifests (OpenCL-ICD style): {"library": "path.so"}, relative paths from the manifest's dir.
void add_manifests(const fs::path &dir, std::vector<Candidate> &out) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return;
  std::vector<fs::path> files;
  for (auto &f : fs::directory_iterator(dir, ec))
    if (f.path().extension() == ".json")
      files.push_back(f.path());
  std::sort(files.begin(), files.end());
  for (const fs::path &f : files) {
    try {
      std::ifstream in(f);
      nlohmann::json j = nlohmann::json::parse(in);
      fs::path lib = j.at("library").get<std::string>();
      if (lib.is_relative())
        lib = f.parent_path() / lib;
      out.push_back({lib.string(), ""});
    } catch (const std::exception &e) {
      out.push_back({f.string(), std::string("bad manifest: ") + e.what()});
    }
  }
}

std::vector<Candidate> discover(const char *extra_path) {
  std::vector<Candidate> found;
  for (auto &e : support::split_search_path(extra_path))
    add_entry(e, found);
  for (auto &e : support::split_search_path(std::getenv("TL_PLUGIN_PATH")))
    add_entry(e, found);
  const fs::path here = runtime_dir();
  const char *manifest_dir = std::getenv("TL_PLUGIN_MANIFEST_DIR");
  add_manifests(manifest_dir ? fs::path(manifest_dir) : here / ".." / "share" / "tl" / "plugins.d",
                found);
  if (!here.empty() && !std::getenv("TL_PLUGIN_NO_DEFAULTS"))
    add_entry(here.string(), found);
  // The same library through two routes loads once.
  std::vector<Candidate> unique;
  std::set<std::string> seen;
  for (auto &c : found) {
    std::error_code ec;
    fs::path canon = fs::weakly_canonical(c.path, ec);
    if (seen.insert(ec ? c.path : canon.string()).second)
      unique.push_back(c);
  }
  return unique;
}

/// The first function of the table the runtime calls that the plugin left null, or null.
const char *missing_function(const tl_vendor_plugin &t) {
  const std::pair<bool, const char *> required[] = {
      {t.initialize != nullptr, "initialize"},
      {t.shutdown != nullptr, "shutdown"},
      {t.device_count != nullptr, "device_count"},
      {t.device_open != nullptr, "device_open"},
      {t.device_close != nullptr, "device_close"},
      {t.device_query != nullptr, "device_query"},
      {t.buffer_allocate != nullptr, "buffer_allocate"},
      {t.buffer_free != nullptr, "buffer_free"},
      {t.buffer_map != nullptr, "buffer_map"},
      {t.stream_create != nullptr, "stream_create"},
      {t.stream_destroy != nullptr, "stream_destroy"},
      {t.stream_synchronize != nullptr, "stream_synchronize"},
      {t.stream_copy_to_device != nullptr, "stream_copy_to_device"},
      {t.stream_copy_to_host != nullptr, "stream_copy_to_host"},
      {t.stream_copy_buffer != nullptr, "stream_copy_buffer"},
      {t.stream_fill != nullptr, "stream_fill"},
      {t.stream_launch != nullptr, "stream_launch"},
      {t.event_create != nullptr, "event_create"},
      {t.event_destroy != nullptr, "event_destroy"},
      {t.stream_record_event != nullptr, "stream_record_event"},
      {t.stream_wait_event != nullptr, "stream_wait_event"},
      {t.event_query != nullptr, "event_query"},
      {t.event_synchronize != nullptr, "event_synchronize"},
      {t.event_timestamp_ns != nullptr, "event_timestamp_ns"},
      {t.executable_load != nullptr, "executable_load"},
      {t.executable_free != nullptr, "executable_free"},
  };
  for (const auto &[present, name] : required)
    if (!present)
      return name;
  return nullptr;
}

void host_log(int32_t level, const char *plugin, const char *message) {
  const char *env = std::getenv("TL_HAL_LOG");
  const int max_level = env ? std::atoi(env) : 1;
  if (level <= max_level)
    std::fprintf(stderr, "tl-hal [%s] %s\n", plugin ? plugin : "?", message ? message : "");
}

const tl_vendor_host_api kHostApi = {sizeof(tl_vendor_host_api), TL_VENDOR_ABI_MAJOR,
                                     TL_VENDOR_ABI_MINOR, tl_status_make, host_log};

std::string take_message(tl_status s) {
  std::string m = tl_status_get_message(s);
  tl_status_free(s);
  return m;
}

/// dlopen, entry point, ABI, table, initialize; on failure `p.reason` says which step and why.
void open_plugin(Plugin &p) {
  auto entry = reinterpret_cast<tl_vendor_plugin_entry_fn>(
      support::open_plugin_entry(p.path, TL_VENDOR_ENTRY_POINT, &p.reason));
  if (!entry)
    return;
  const tl_vendor_plugin *t = entry(TL_VENDOR_ABI_MAJOR);
  if (!t) {
    p.reason =
        "entry point returned no function table for ABI " + std::to_string(TL_VENDOR_ABI_MAJOR);
    return;
  }
  // The 1.1 table ends before buffer_import; the 1.2 functions are optional (see optional_fn).
  if (t->struct_size >= offsetof(tl_vendor_plugin, buffer_import)) {
    p.abi_major = t->abi_major;
    p.abi_minor = t->abi_minor;
  }
  p.reason = support::check_plugin_abi("runtime", t->struct_size,
                                       offsetof(tl_vendor_plugin, buffer_import), t->abi_major,
                                       t->abi_minor, TL_VENDOR_ABI_MAJOR, TL_VENDOR_ABI_MINOR);
  if (!p.reason.empty())
    return;
  if (const char *fn = missing_function(*t)) {
    p.reason = std::string("function table lacks ") + fn;
    return;
  }
  p.name = t->name && *t->name ? t->name : fs::path(p.path).stem().string();
  p.version = t->version ? t->version : "";
  if (tl_status s = t->initialize(&kHostApi, &p.state)) {
    p.reason = "initialize failed: " + take_message(s);
    return;
  }
  p.table = t;
  if (tl_status s = t->device_count(p.state, &p.device_count)) {
    p.reason = "device_count failed: " + take_message(s);
    t->shutdown(p.state);
    p.table = nullptr;
    return;
  }
  p.available = true;
}

void open_devices(Runtime &rt, Plugin &p) {
  for (uint32_t i = 0; i < p.device_count; ++i) {
    auto d = std::make_unique<Device>();
    d->runtime = &rt;
    d->plugin = &p;
    d->index = i;
    if (tl_status s = p.table->device_open(p.state, i, &d->object)) {
      host_log(1, p.name.c_str(),
               ("device " + std::to_string(i) + " unavailable: " + take_message(s)).c_str());
      continue;
    }
    d->info.struct_size = sizeof(tl_device_info);
    if (tl_status s = p.table->device_query(d->object, &d->info)) {
      host_log(1, p.name.c_str(),
               ("device " + std::to_string(i) + " query failed: " + take_message(s)).c_str());
      p.table->device_close(d->object);
      continue;
    }
    d->info.name[sizeof d->info.name - 1] = 0;
    d->info.targets[sizeof d->info.targets - 1] = 0;
    d->info.target_options[sizeof d->info.target_options - 1] = 0;
    std::snprintf(d->info.plugin, sizeof d->info.plugin, "%s", p.name.c_str());
    std::string list = d->info.targets[0] ? d->info.targets : d->info.target;
    size_t pos = 0;
    while (pos <= list.size()) {
      size_t q = list.find(',', pos);
      if (q == std::string::npos)
        q = list.size();
      if (q > pos)
        d->targets.push_back(list.substr(pos, q - pos));
      pos = q + 1;
    }
    d->handle = HandleTable::global().insert(HandleType::Device, d.get());
    rt.devices.push_back(std::move(d));
  }
}

} // namespace

void load_plugins(Runtime &rt, const char *extra_path) {
  std::set<std::string> names;
  for (const Candidate &c : discover(extra_path)) {
    auto p = std::make_unique<Plugin>();
    p->path = c.path;
    p->name = fs::path(c.path).filename().string();
    p->reason = c.reason;
    if (p->reason.empty())
      open_plugin(*p);
    if (p->available && !names.insert(p->name).second) {
      p->reason = "another plugin named '" + p->name + "' was loaded first";
      p->available = false;
      p->table->shutdown(p->state);
      p->table = nullptr;
    }
    if (p->available)
      open_devices(rt, *p);
    rt.plugins.push_back(std::move(p));
  }
}

void unload_plugins(Runtime &rt) {
  for (auto &d : rt.devices) {
    std::string why;
    HandleTable::global().remove(d->handle, HandleType::Device, &why);
    d->plugin->table->device_close(d->object);
  }
  rt.devices.clear();
  for (auto &p : rt.plugins) {
    if (p->table)
      p->table->shutdown(p->state);
    // Libraries stay loaded: a plugin's threads or atexit handlers may still reference its code.
  }
  rt.plugins.clear();
}

} // namespace tl::hal
