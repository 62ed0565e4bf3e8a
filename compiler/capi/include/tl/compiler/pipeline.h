// The compile pipeline shared by tlc and the C API: default passes, then one target's packaging.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/executable/executable.h"
#include "tl/ir/ir.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tl::compile {

/// Targets are built in (tlir, llvm-cpu) or compiler-target plugins found at run time
/// (vendors/sdk/include/tl/target.h: TL_TARGET_PATH, beside libtl_compiler.so, the build's lib/).
/// `options_json` is a JSON object of strings for a plugin target (e.g. {"chip": "edge.json"}).

/// Whether `target` names a known compiler target ("tlir", "llvm-cpu", ...).
bool has_target(const std::string &target);
/// "unknown target 'x' (known targets: ...)" plus why each target plugin that failed did.
std::string unknown_target(const std::string &target);
/// The known targets, comma-separated.
std::string known_targets();
/// One line per target with its summary (for --help).
std::string targets_help();

/// Packages an already optimized, verified module for `target` into `out` (code generation,
/// kernel table, a read-back check); returns an error or "".
std::string package(const ir::Module &module, const std::string &target,
                    const std::string &producer, exe::Executable &out,
                    const std::string &options_json = "{}");

/// Runs the default pass pipeline over `module`, then packages it for `target` and serializes
/// the executable. An empty result sets `error`.
std::vector<uint8_t> build_executable(ir::Module &module, const std::string &target,
                                      const std::string &producer, std::string *error,
                                      const std::string &options_json = "{}");

} // namespace tl::compile
