// The llvm-cpu backend: Tile IR -> LLVM 19 IR -> native code for the host CPU (vectorized for
// its AVX2/AVX-512 features), as a relocatable object or loaded through ORC LLJIT.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/format/llvm_cpu_loader.h"
#include "tl/ir/ir.h"
#include "tl/passes/pass_registry.h"

#include <memory>
#include <string>
#include <vector>

namespace tl::llvm_cpu {

struct CompileOptions {
  std::string cpu = "host"; // an LLVM CPU name, or "host"
  std::string features;     // extra "+avx512f,..." features; host features when cpu is "host"
  int opt_level = 3;
  /// The module already carries planning_passes()' decisions (the compiler's pipeline ran them,
  /// as for every target): lower it as it is instead of planning a copy first.
  bool planned = false;
};

/// The backend's planning steps, in order, to run after the default passes: each records its
/// decisions (fusion, lane inlining, views, prefetching, streaming stores) as `cpu.*` attributes
/// on ops, which the code generator reads. compile_object, emit_llvm_ir and compile_and_load run
/// them on a copy of the module; `tlc opt --target llvm-cpu` shows their output.
std::vector<passes::PassInfo> planning_passes(const CompileOptions &options);

/// Compiles a verified module to an ELF relocatable object for the chosen CPU. Returns an empty
/// vector and sets `error` for what the backend cannot lower (named with its location).
std::vector<uint8_t> compile_object(const ir::Module &module, const CompileOptions &options,
                                    std::string *error);

/// The LLVM IR of a module after optimization (for tests and `tlc compile --emit=llvm`).
std::string emit_llvm_ir(const ir::Module &module, const CompileOptions &options,
                         std::string *error);

/// What besides the module decides compile_object's output for `options`: the CPU and features,
/// the optimization level, the code generator's source hash, LLVM's version (a cache key part);
/// "" with `error` when the target machine cannot be made.
std::string target_identity(const CompileOptions &options, std::string *error);

/// Compiles `module` and loads it (the JIT path), through the compile cache (tl/support/
/// blob_cache.h, kind "llvm-cpu") keyed by the module's text and target_identity().
std::unique_ptr<LoadedProgram> compile_and_load(const ir::Module &module,
                                                const CompileOptions &options, std::string *error);

} // namespace tl::llvm_cpu
