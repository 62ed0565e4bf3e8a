// Opening a TL plugin library: dlopen, its one entry point, and the version rule every plugin ABI
// of TL follows (the vendor runtime ABI, tl/vendor.h, and the compiler-target ABI, tl/target.h).
// Shared by the HAL's plugin loader and the compiler's target registry.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/support/search_path.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace tl::support {

/// The directory of the shared library (or executable) holding `address` ("" if unknown).
inline std::filesystem::path library_dir(const void *address) {
  Dl_info info{};
  if (dladdr(address, &info) && info.dli_fname)
    return std::filesystem::path(info.dli_fname).parent_path();
  return {};
}

/// The plugin files `entries` name, in order: a file as given, a directory's lib<prefix>*.so
/// sorted; a library reached through two routes appears once (by canonical path).
inline std::vector<std::string> plugin_candidates(const std::vector<std::string> &entries,
                                                  const std::string &prefix) {
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const std::string &e : entries) {
    std::error_code ec;
    const std::vector<std::string> found = std::filesystem::is_directory(e, ec)
                                               ? plugin_files(e, prefix)
                                               : std::vector<std::string>{e};
    for (const std::string &f : found) {
      const std::filesystem::path canon = std::filesystem::weakly_canonical(f, ec);
      if (seen.insert(ec ? f : canon.string()).second)
        files.push_back(f);
    }
  }
  return files;
}

/// dlopen(path) and its entry point `entry`; null with *reason ("cannot load library: ...",
/// "library does not export the entry point ..."). A library without the entry point stays
/// loaded: unloading one that may have run constructors buys nothing.
inline void *open_plugin_entry(const std::string &path, const char *entry, std::string *reason) {
  dlerror();
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *err = dlerror();
    *reason = std::string("cannot load library: ") + (err ? err : "unknown dlopen error");
    return nullptr;
  }
  void *fn = dlsym(library, entry);
  if (!fn)
    *reason = std::string("library does not export the entry point ") + entry;
  return fn;
}

/// The version rule of every TL plugin ABI: the plugin's table must be at least as large as the
/// fields the host reads (`needed` bytes), and its major version must equal the host's (a minor
/// version only adds fields at the end). Returns "" or why the plugin is refused; `host` names
/// the loader ("runtime", "compiler").
inline std::string check_plugin_abi(const char *host, size_t table_size, size_t needed,
                                    uint32_t major, uint32_t minor, uint32_t host_major,
                                    uint32_t host_minor) {
  if (table_size < needed)
    return "function table is too small (" + std::to_string(table_size) + " bytes, need " +
           std::to_string(needed) + ")";
  if (major != host_major)
    return "plugin ABI " + std::to_string(major) + "." + std::to_string(minor) +
           " does not match the " + host + "'s ABI " + std::to_string(host_major) + "." +
           std::to_string(host_minor) + " (major versions must be equal)";
  return {};
}

} // namespace tl::support
