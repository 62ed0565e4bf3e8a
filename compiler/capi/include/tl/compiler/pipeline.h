// The compile pipeline shared by tlc, the C API, tl-conform and the benchmarks: the default
// passes, the target's planning passes, then its code blob packaged as an executable.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/compiler/targets.h"
#include "tl/format/executable.h"
#include "tl/ir/ir.h"
#include "tl/passes/pass_manager.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tl::compile {

/// The kernel table entry of an IR kernel: parameters from its arguments, grid_rank from the
/// program_id/num_programs axes anywhere in its body, onchip_memory_bytes 0.
exe::KernelInfo kernel_info(const ir::Kernel &kernel);

/// Appends `target`'s planning passes to `pm`; "" or an error (unknown target, bad options).
std::string add_planning_passes(passes::PassManager &pm, const std::string &target,
                                const TargetOptions &options);

/// Runs the default pass pipeline, then `target`'s planning passes, over `module` in place.
/// Returns "" or an error (an unknown target, bad options, a pass failing).
std::string optimize(ir::Module &module, const std::string &target, const TargetOptions &options,
                     const passes::PassManagerOptions &pm_options = {});

/// Packages a module optimize() has run over for `target` into `out` (code generation, kernel
/// table, a read-back check); returns "" or an error.
std::string package(const ir::Module &module, const std::string &target,
                    const std::string &producer, exe::Executable &out,
                    const TargetOptions &options = {});

/// Runs optimize() then package() and serializes the executable. An empty result sets `error`.
std::vector<uint8_t> build_executable(ir::Module &module, const std::string &target,
                                      const std::string &producer, std::string *error,
                                      const TargetOptions &options = {});

} // namespace tl::compile
