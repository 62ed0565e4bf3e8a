// The nvptx backend: Tile IR -> NVVM IR (LLVM 19) -> PTX for NVIDIA GPUs (sm_80, sm_90a), with
// libdevice linked for math; cubins through the CUDA toolkit's ptxas where it is installed.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"
#include "tl/passes/pass_registry.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tl::nvptx {

struct CompileOptions {
  /// GPU architectures to build PTX for ("sm_80", "sm_90a", ...): one image each.
  std::vector<std::string> archs = {"sm_80", "sm_90a"};
  /// Threads per program = 32 * num_warps; 0 ("auto"): chosen per kernel from its largest tile.
  int num_warps = 0;
  /// libdevice bitcode; empty: $TL_CUDA_PATH or /usr/local/cuda, nvvm/libdevice/libdevice.10.bc.
  std::string libdevice;
  /// Cubins next to the PTX: "auto" (when the toolkit's ptxas is installed), "on", "off".
  std::string cubin = "auto";
  /// The module carries planning_passes()' decisions already.
  bool planned = false;
};

/// Parses the target options (arch=sm_80,sm_90a; num_warps=auto|N;
/// libdevice=PATH) into `out`;
/// returns "" or the error.
std::string parse_options(const std::map<std::string, std::string> &options, CompileOptions &out);

/// The planning steps (layout assignment: `nvptx.layout` / `nvptx.convert` on ops).
std::vector<passes::PassInfo> planning_passes(const CompileOptions &options);

/// PTX text of the module for one architecture (kernels as .entry functions named as the
/// kernels); "" with `error` set (located) when a kernel does not lower.
std::string emit_ptx(const ir::Module &module, const CompileOptions &options,
                     const std::string &arch, std::string *error);

/// The code blob (format/nvptx) for all of options.archs; empty with `error` on failure.
std::vector<uint8_t> compile(const ir::Module &module, const CompileOptions &options,
                             std::string *error);

/// What besides the module decides the blob: LLVM's version, the code generator's source hash,
/// libdevice's path and size, the options (a compile-cache key part).
std::string target_identity(const CompileOptions &options);

} // namespace tl::nvptx
