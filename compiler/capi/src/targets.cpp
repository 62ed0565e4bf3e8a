// The target registry: built-in targets (builtin_targets.inc, generated from TL_BUILTIN_TARGETS)
// and compiler-target plugins (tl/target.h): discovery, loading, and compiling through them with
// errors mapped back to the user's source.
// SPDX-License-Identifier: Apache-2.0
#include "tl/compiler/targets.h"

#include "tl/ir/printer.h"
#include "tl/support/plugin_library.hpp"
#include "tl/target.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

// Declares tl_builtin_target_<id>() of every folder in TL_BUILTIN_TARGETS.
#define TL_TARGET_ENTRY(id) TL_BUILTIN_TARGET(id);
#include "builtin_targets.inc"
#undef TL_TARGET_ENTRY

namespace tl::compile {
namespace {

std::vector<std::string> candidates() {
  std::vector<std::string> entries = support::split_search_path(std::getenv("TL_TARGET_PATH"));
  if (!std::getenv("TL_TARGET_NO_DEFAULTS")) {
    // Beside the library holding this code (libtl_compiler.so), then the build's lib/.
    entries.push_back(support::library_dir(reinterpret_cast<void *>(&candidates)).string());
#ifdef TL_TARGET_DEFAULT_DIR
    entries.push_back(TL_TARGET_DEFAULT_DIR); // the build's lib/ (tlc is not beside it)
#endif
  }
  return support::plugin_candidates(entries, "libtl_target_");
}

/// A plugin library: its registered target, or why it is not usable.
struct PluginLoad {
  RegisteredTarget target;
  std::string problem;
};

PluginLoad load(const std::string &path) {
  PluginLoad t;
  t.target.plugin_path = path;
  auto entry = reinterpret_cast<tl_target_plugin_entry_fn>(
      support::open_plugin_entry(path, TL_TARGET_PLUGIN_ENTRY, &t.problem));
  if (!entry)
    return t;
  const tl_target_plugin *table = entry(TL_TARGET_ABI_MAJOR);
  if (!table) {
    t.problem = "returned no target table";
  } else if (std::string e = support::check_plugin_abi(
                 "compiler", table->struct_size, sizeof(tl_target_plugin), table->abi_major,
                 table->abi_minor, TL_TARGET_ABI_MAJOR, TL_TARGET_ABI_MINOR);
             !e.empty()) {
    t.problem = e;
  } else if (!table->name || !*table->name || !table->compile || !table->release) {
    t.problem = "incomplete target table (name, compile and release are required)";
  } else {
    t.target.name = table->name;
    t.target.summary = table->summary ? table->summary : "";
    t.target.plugin = table;
  }
  return t;
}

const RegisteredTarget *find_in(const std::vector<RegisteredTarget> &all, const std::string &name) {
  for (const RegisteredTarget &t : all)
    if (t.name == name)
      return &t;
  return nullptr;
}

std::string compile_with_plugin(const tl_target_plugin &table, const std::string &name,
                                const ir::Module &module, const TargetOptions &options,
                                std::vector<uint8_t> &code) {
  const std::string options_json = nlohmann::json(options).dump();
  std::vector<ir::Location> locs;
  const std::string text = ir::print(module, &locs);
  const char *file = "<tl-target-input>";
  uint8_t *blob = nullptr;
  size_t size = 0;
  char *error = nullptr;
  const int32_t rc =
      table.compile(text.data(), text.size(), file, options_json.c_str(), &blob, &size, &error);
  if (rc == 0 && blob) {
    code.assign(blob, blob + size);
    table.release(blob);
    return {};
  }
  std::string message = error ? error : "target '" + name + "' failed without a message";
  if (error)
    table.release(error);
  if (blob)
    table.release(blob);
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

struct Registry {
  std::vector<RegisteredTarget> targets;
  std::vector<std::pair<std::string, std::string>> failed; // plugin path, problem
};

const Registry &registry() {
  static const Registry *r = [] {
    auto *reg = new Registry();
    for (const Target *t : {
#define TL_TARGET_ENTRY(id) &tl_builtin_target_##id(),
#include "builtin_targets.inc"
#undef TL_TARGET_ENTRY
         }) {
      RegisteredTarget rt;
      rt.name = t->name;
      rt.summary = t->summary;
      rt.builtin = t;
      reg->targets.push_back(std::move(rt));
    }
    for (const std::string &f : candidates()) {
      PluginLoad p = load(f);
      if (!p.problem.empty())
        reg->failed.emplace_back(f, p.problem);
      else if (!find_in(reg->targets, p.target.name)) // the first of a name wins
        reg->targets.push_back(std::move(p.target));
    }
    return reg;
  }();
  return *r;
}

} // namespace

std::string RegisteredTarget::planning_passes(const TargetOptions &options,
                                              std::vector<passes::PassInfo> &out) const {
  if (builtin && builtin->planning_passes)
    return builtin->planning_passes(options, out);
  return {};
}

std::string RegisteredTarget::emit(const ir::Module &module, const TargetOptions &options,
                                   std::vector<uint8_t> &code) const {
  if (builtin)
    return builtin->emit(module, options, code);
  return compile_with_plugin(*plugin, name, module, options, code);
}

std::string RegisteredTarget::identity(const TargetOptions &options) const {
  if (builtin)
    return builtin->identity ? builtin->identity(options) : std::string();
  std::error_code ec;
  const auto size = fs::file_size(plugin_path, ec);
  const auto time = fs::last_write_time(plugin_path, ec).time_since_epoch().count();
  return "plugin " + plugin_path + " " + std::to_string(size) + " " + std::to_string(time);
}

const std::vector<RegisteredTarget> &targets() { return registry().targets; }

const RegisteredTarget *find_target(const std::string &name) {
  return find_in(registry().targets, name);
}

std::string unknown_target(const std::string &name) {
  std::string e = "unknown target '" + name + "' (known targets: " + known_targets() + ")";
  for (const auto &[path, problem] : registry().failed)
    e += "; target plugin " + path + " not loaded: " + problem;
  return e;
}

std::string known_targets() {
  std::string names;
  for (const RegisteredTarget &t : targets())
    names += (names.empty() ? "" : ", ") + t.name;
  return names;
}

std::string targets_help() {
  std::string help = "targets:\n";
  for (const RegisteredTarget &t : targets())
    help += "  " + t.name + "  " + t.summary +
            (t.plugin_path.empty() ? "" : " (plugin " + t.plugin_path + ")") + "\n";
  for (const auto &[path, problem] : registry().failed)
    help += "  (not loaded: " + path + ": " + problem + ")\n";
  return help;
}

std::string target_for_device(const std::string &preferred, const std::string &targets,
                              std::string *error) {
  // The device's order: its preferred target, then the others it accepts as it lists them.
  std::vector<std::string> device_targets;
  if (!preferred.empty())
    device_targets.push_back(preferred);
  std::stringstream list(targets);
  for (std::string t; std::getline(list, t, ',');)
    if (!t.empty() && t != preferred)
      device_targets.push_back(t);
  for (const std::string &t : device_targets)
    if (find_target(t))
      return t;
  std::string listed;
  for (const std::string &t : device_targets)
    listed += (listed.empty() ? "" : ", ") + t;
  *error = "the compiler has none of the device's targets (" +
           (listed.empty() ? std::string("none reported") : listed) +
           "); known targets: " + known_targets();
  return {};
}

} // namespace tl::compile
