// Shared pieces of the tlc driver's subcommands.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/compiler/targets.h"
#include "tl/ir/diagnostics.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace boost::program_options {
class options_description;
} // namespace boost::program_options

namespace tl::tlc {

/// Parses a subcommand's options, `input` (and `rest`, when named, for all further words) as
/// positional; on --help prints `usage`, the options and `more_help`, and returns false.
bool parse_options(int argc, char **argv, const boost::program_options::options_description &desc,
                   const std::string &usage, const std::string &more_help = "",
                   const char *rest = nullptr);

/// Reads a whole file ("-" is standard input); prints an error and returns nothing on failure.
std::optional<std::string> read_input(const std::string &path);
/// Parses and verifies `path`; prints diagnostics to stderr and returns null on any error.
std::unique_ptr<ir::Module> load_module(const std::string &path);

/// Optimizes `module` with the default pipeline and packages it for `target` (tlc compile's
/// path); an empty result sets `error`.
std::vector<uint8_t> build_executable(ir::Module &module, const std::string &target,
                                      std::string *error);

/// `--target-option key=value` strings as target options; throws on a malformed one.
compile::TargetOptions parse_target_options(const std::vector<std::string> &key_values);

int cmd_verify(int argc, char **argv);
int cmd_print(int argc, char **argv);
int cmd_opt(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_inspect(int argc, char **argv);

} // namespace tl::tlc
