// Compiler-target plugins (vendors/sdk/include/tl/target.h): discovery, loading, and compiling
// through them with errors mapped back to the user's source.
// SPDX-License-Identifier: Apache-2.0
#include "target_plugins.h"

#include "tl/ir/printer.h"
#include "tl/support/search_path.hpp"
#include "tl/target.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <regex>
#include <set>

namespace fs = std::filesystem;

namespace tl::compile {
namespace {

/// The directory of the library (or executable) holding this code.
fs::path own_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&own_dir), &info) && info.dli_fname)
    return fs::path(info.dli_fname).parent_path();
  return {};
}

std::vector<std::string> candidates() {
  std::vector<std::string> dirs_and_files = support::split_search_path(std::getenv("TL_TARGET_PATH"));
  if (!std::getenv("TL_TARGET_NO_DEFAULTS")) {
    dirs_and_files.push_back(own_dir().string());
#ifdef TL_TARGET_DEFAULT_DIR
    dirs_and_files.push_back(TL_TARGET_DEFAULT_DIR); // the build's lib/ (tlc is not beside it)
#endif
  }
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (const std::string &e : dirs_and_files) {
    std::error_code ec;
    std::vector<std::string> found = fs::is_directory(e, ec)
                                         ? support::plugin_files(e, "libtl_target_")
                                         : std::vector<std::string>{e};
    for (const std::string &f : found) {
      fs::path canon = fs::weakly_canonical(f, ec);
      if (seen.insert(ec ? f : canon.string()).second)
        files.push_back(f);
    }
  }
  return files;
}

PluginTarget load(const std::string &path) {
  PluginTarget t;
  t.path = path;
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    t.problem = e ? e : "cannot be loaded";
    return t;
  }
  auto entry = reinterpret_cast<tl_target_plugin_entry_fn>(dlsym(lib, TL_TARGET_PLUGIN_ENTRY));
  if (!entry) {
    t.problem = "exports no " TL_TARGET_PLUGIN_ENTRY;
    return t; // kept loaded: unloading a library that may have run constructors buys nothing
  }
  const tl_target_plugin *table = entry(TL_TARGET_ABI_MAJOR);
  if (!table) {
    t.problem = "returned no target table";
  } else if (table->abi_major != TL_TARGET_ABI_MAJOR) {
    t.problem = "target ABI " + std::to_string(table->abi_major) + "." +
                std::to_string(table->abi_minor) + ", this compiler speaks " +
                std::to_string(TL_TARGET_ABI_MAJOR) + "." + std::to_string(TL_TARGET_ABI_MINOR);
  } else if (table->struct_size < sizeof(tl_target_plugin) || !table->name || !*table->name ||
             !table->compile || !table->release) {
    t.problem = "incomplete target table (name, compile and release are required)";
  } else {
    t.name = table->name;
    t.summary = table->summary ? table->summary : "";
    t.table = table;
  }
  return t;
}

} // namespace

const std::vector<PluginTarget> &plugin_targets() {
  static std::once_flag once;
  static std::vector<PluginTarget> *all = new std::vector<PluginTarget>();
  std::call_once(once, [] {
    for (const std::string &f : candidates())
      all->push_back(load(f));
  });
  return *all;
}

std::string compile_with_plugin(const PluginTarget &target, const ir::Module &module,
                                const std::string &options_json, std::vector<uint8_t> &code) {
  std::vector<ir::Location> locs;
  const std::string text = ir::print(module, &locs);
  const char *file = "<tl-target-input>";
  uint8_t *blob = nullptr;
  size_t size = 0;
  char *error = nullptr;
  const int32_t rc = target.table->compile(text.data(), text.size(), file, options_json.c_str(),
                                           &blob, &size, &error);
  if (rc == 0 && blob) {
    code.assign(blob, blob + size);
    target.table->release(blob);
    return {};
  }
  std::string message = error ? error : "target '" + target.name + "' failed without a message";
  if (error)
    target.table->release(error);
  if (blob)
    target.table->release(blob);
  // "<tl-target-input>:L:C" -> the source location of the op printed on line L.
  static const std::regex at("<tl-target-input>:([0-9]+):([0-9]+)");
  std::string mapped;
  auto begin = std::sregex_iterator(message.begin(), message.end(), at);
  size_t last = 0;
  for (auto it = begin; it != std::sregex_iterator(); ++it) {
    const size_t line = std::stoul((*it)[1]) - 1;
    mapped += message.substr(last, it->position() - last);
    mapped += line < locs.size() && locs[line].file ? locs[line].str() : it->str();
    last = it->position() + it->length();
  }
  mapped += message.substr(last);
  while (!mapped.empty() && mapped.back() == '\n')
    mapped.pop_back();
  return mapped;
}

} // namespace tl::compile
