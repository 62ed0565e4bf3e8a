// Search paths for run-time plugins: ':'-separated lists of files and directories, and the
// plugin files (lib<prefix>*.so) a directory holds. Shared by the HAL's runtime-plugin loader and
// the compiler's target-plugin loader.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

namespace tl::support {

/// The non-empty entries of a ':'-separated list (null: none).
inline std::vector<std::string> split_search_path(const char *list) {
  std::vector<std::string> out;
  const std::string all = list ? list : "";
  size_t p = 0;
  while (p <= all.size()) {
    size_t q = all.find(':', p);
    if (q == std::string::npos)
      q = all.size();
    if (q > p)
      out.push_back(all.substr(p, q - p));
    p = q + 1;
  }
  return out;
}

/// Whether `path` names a plugin library: `<prefix>*.so` (prefix e.g. "libtl_plugin_").
inline bool is_plugin_file(const std::filesystem::path &path, const std::string &prefix) {
  return path.filename().string().rfind(prefix, 0) == 0 && path.extension() == ".so";
}

/// The plugin files of `dir`, sorted (none if it is not a directory).
inline std::vector<std::string> plugin_files(const std::filesystem::path &dir,
                                             const std::string &prefix) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return files;
  for (auto &f : std::filesystem::directory_iterator(dir, ec))
    if (is_plugin_file(f.path(), prefix))
      files.push_back(f.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace tl::support
