// The compile pipeline shared by tlc and the C API: default passes, then one target's packaging.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/executable/executable.h"
#include "tl/ir/ir.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tl::compile {

/// Whether `target` names a known compiler target ("tlir", "llvm-cpu", ...).
bool has_target(const std::string &target);
/// The known targets, comma-separated.
std::string known_targets();
/// One line per target with its summary (for --help).
std::string targets_help();

/// Packages an already optimized, verified module for `target` into `out` (code generation,
/// kernel table, a read-back check); returns an error or "".
std::string package(const ir::Module &module, const std::string &target,
                    const std::string &producer, exe::Executable &out);

/// Runs the default pass pipeline over `module`, then packages it for `target` and serializes
/// the executable. An empty result sets `error`.
std::vector<uint8_t> build_executable(ir::Module &module, const std::string &target,
                                      const std::string &producer, std::string *error);

} // namespace tl::compile
