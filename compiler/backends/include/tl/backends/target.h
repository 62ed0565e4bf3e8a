// The target table: what every compiler target exports, built in or loaded as a plugin.
// SPDX-License-Identifier: Apache-2.0
//
// A target is one folder, compiler/backends/<target>/, whose target.cpp defines one `Target`
// with TL_BUILTIN_TARGET and whose CMakeLists.txt builds library tl_backend_<target>; listing the
// folder in TL_BUILTIN_TARGETS (compiler/backends/CMakeLists.txt) links it in and registers it.
// A vendor's target built outside TL implements tl/target.h (the plugin ABI beside the compiler's
// C API); the registry wraps such a plugin into the same table (see registry.h).
#pragma once

#include "tl/ir/ir.h"
#include "tl/passes/pass_registry.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tl::backends {

/// Target options: `tlc --target-option key=value`, a JSON object of strings in the C API.
using TargetOptions = std::map<std::string, std::string>;

struct Target {
  const char *name;    ///< recorded in executables, named by devices ("llvm-cpu")
  const char *summary; ///< one line for `tlc compile --help`
  /// The target's planning steps, run after the default pipeline: passes that record their
  /// decisions as `<target>.*` attributes, so that `tlc opt --target` shows them. Returns "" or
  /// an error about the options. Null when the target plans nothing.
  std::string (*planning_passes)(const TargetOptions &options, std::vector<passes::PassInfo> &out);
  /// Lowers an optimized, verified (and planned) module into the target's code blob, kernel
  /// order kept. Returns "" or an error `file:line:col: error: <target>: ...`.
  std::string (*emit)(const ir::Module &module, const TargetOptions &options,
                      std::vector<uint8_t> &code);
  /// What besides the module and the options decides the blob (the host CPU it compiles for,
  /// the content of the chip config it reads), as text: part of the compile cache's key. Null
  /// when nothing does.
  std::string (*identity)(const TargetOptions &options);
};

/// "unknown target option 'k' (known: a, b)" when `options` has a key not in `known`, else "".
std::string check_option_names(const char *target, const TargetOptions &options,
                               const std::vector<std::string> &known);

} // namespace tl::backends

/// Defines the built-in target `id` (the folder name, an identifier) for the registry.
#define TL_BUILTIN_TARGET(id) const ::tl::backends::Target &tl_builtin_target_##id()
