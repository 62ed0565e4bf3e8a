// The registry of compiler targets: the built-in ones (linked in) and the plugins found at run
// time (this is the loader of the plugin ABI, tl/target.h), behind one lookup.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/backends/target.h"

struct tl_target_plugin;

#include <string>
#include <vector>

namespace tl::compile {

using backends::Target;
using backends::TargetOptions;

/// A target the compiler can use: a built-in one (the module in memory) or a plugin's table
/// (tl/target.h: the module crosses as .tlir text, its errors mapped back to the user's locations).
class RegisteredTarget {
public:
  std::string name, summary;
  std::string plugin_path; ///< empty for built-in targets

  /// The target's planning passes (none for a plugin); "" or an error about the options.
  std::string planning_passes(const TargetOptions &options,
                              std::vector<passes::PassInfo> &out) const;
  /// The code blob of a planned module; "" or an error naming the user's source location.
  std::string emit(const ir::Module &module, const TargetOptions &options,
                   std::vector<uint8_t> &code) const;
  /// What besides the module and options decides the blob (Target::identity; for a plugin, its
  /// library's path, size and modification time).
  std::string identity(const TargetOptions &options) const;

  const Target *builtin = nullptr;
  const ::tl_target_plugin *plugin = nullptr;
};

/// Built-in targets first (a built-in name always wins), then every plugin that loaded.
const std::vector<RegisteredTarget> &targets();
/// The target called `name`, or null.
const RegisteredTarget *find_target(const std::string &name);
/// "unknown target 'x' (known targets: ...)" plus why each plugin that failed did.
std::string unknown_target(const std::string &name);
/// The known targets, comma-separated.
std::string known_targets();
/// One line per target with its summary (for --help), then the plugins that failed to load.
std::string targets_help();

/// The target a device should get, from what the HAL reports of it (tl_device_info's `target`
/// and comma-separated `targets`): its preferred target when the compiler has it, else the first
/// of its other targets the compiler has. Returns "" and sets *error when it has none.
std::string target_for_device(const std::string &preferred, const std::string &targets,
                              std::string *error);

} // namespace tl::compile
