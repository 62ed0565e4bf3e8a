// The llvm-cpu target's table entry.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/target.h"
#include "tl/backends/llvm_cpu.h"

namespace {

std::string emit(const tl::ir::Module &module, const tl::backends::TargetOptions &options,
                 std::vector<uint8_t> &code) {
  if (std::string e = tl::backends::check_option_names("llvm-cpu", options, {}); !e.empty())
    return e;
  std::string error;
  tl::llvm_cpu::CompileOptions o;
  o.planned = true; // compile::optimize ran the planning passes: the emitter only reads them
  code = tl::llvm_cpu::compile_object(module, o, &error);
  return code.empty() ? error : std::string();
}

std::string planning(const tl::backends::TargetOptions &options,
                     std::vector<tl::passes::PassInfo> &out) {
  if (std::string e = tl::backends::check_option_names("llvm-cpu", options, {}); !e.empty())
    return e;
  out = tl::llvm_cpu::planning_passes(tl::llvm_cpu::CompileOptions{});
  return {};
}

std::string identity(const tl::backends::TargetOptions &) {
  // The host does not change within a process: one target machine for the first compile, not
  // one per cache lookup.
  static const std::string id = [] {
    std::string error;
    const std::string s = tl::llvm_cpu::target_identity(tl::llvm_cpu::CompileOptions{}, &error);
    return s.empty() ? "llvm-cpu: no target machine: " + error : s;
  }();
  return id;
}

} // namespace

TL_BUILTIN_TARGET(llvm_cpu) {
  static const tl::backends::Target target{
      "llvm-cpu", "native object code for this host's CPU (LLVM 19, vectorized for its features)",
      planning, emit, identity};
  return target;
}
