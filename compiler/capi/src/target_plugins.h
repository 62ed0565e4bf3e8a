// Compiler-target plugins found at run time (vendors/sdk/include/tl/target.h).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <cstdint>
#include <string>
#include <vector>

struct tl_target_plugin;

namespace tl::compile {

struct PluginTarget {
  std::string path;
  std::string name, summary;          // set when loaded
  const tl_target_plugin *table = nullptr;
  std::string problem;                // why it is not usable ("" when loaded)
};

/// Every candidate library (TL_TARGET_PATH, beside this code, the build's lib/), loaded once.
const std::vector<PluginTarget> &plugin_targets();

/// Compiles through a loaded plugin; "" or the plugin's error with locations mapped back.
std::string compile_with_plugin(const PluginTarget &target, const ir::Module &module,
                                const std::string &options_json, std::vector<uint8_t> &code);

} // namespace tl::compile
