// The compile pipeline: the target table, packaging, and default-pipeline compilation.
// SPDX-License-Identifier: Apache-2.0
#include "tl/compiler/pipeline.h"

#include "tl/backends/llvm_cpu.h"
#ifdef TL_HAVE_TNPU
#include "tl/backends/tnpu.h"
#endif
#include "tl/ir/printer.h"
#include "tl/passes/pass_manager.h"

namespace tl::compile {
namespace {

/// Turns an optimized, verified module into the target's code blob; returns an error or "".
using CodegenFn = std::string (*)(const ir::Module &module, std::vector<uint8_t> &code);

struct Target {
  const char *name;
  const char *summary;
  CodegenFn codegen;
};

std::string codegen_tlir(const ir::Module &module, std::vector<uint8_t> &code) {
  const std::string text = ir::print(module);
  code.assign(text.begin(), text.end());
  return {};
}

std::string codegen_llvm_cpu(const ir::Module &module, std::vector<uint8_t> &code) {
  std::string error;
  code = llvm_cpu::compile_object(module, llvm_cpu::CompileOptions{}, &error);
  return code.empty() ? error : std::string();
}

#ifdef TL_HAVE_TNPU
std::string codegen_tnpu(const ir::Module &module, std::vector<uint8_t> &code) {
  return tnpu::compile(module, tnpu::CompileOptions{}, code);
}
#endif

// One row per target; nvptx joins here with its code generator.
const Target kTargets[] = {
    {"tlir", "portable: the optimized module as .tlir text, run by the reference interpreter",
     codegen_tlir},
    {"llvm-cpu", "native object code for this host's CPU (LLVM 19, vectorized for its features)",
     codegen_llvm_cpu},
#ifdef TL_HAVE_TNPU
    {"tnpu", "TNPU programs for the simulated NPU (npusim); a subset of Tile IR, see "
             "compiler/backends/tnpu", codegen_tnpu},
#endif
};

const Target *find_target(const std::string &name) {
  for (const Target &t : kTargets)
    if (name == t.name)
      return &t;
  return nullptr;
}

} // namespace

bool has_target(const std::string &target) { return find_target(target) != nullptr; }

std::string known_targets() {
  std::string names;
  for (const Target &t : kTargets)
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  return names;
}

std::string targets_help() {
  std::string help = "targets:\n";
  for (const Target &t : kTargets)
    help += "  " + std::string(t.name) + "  " + t.summary + "\n";
  return help;
}

std::string package(const ir::Module &module, const std::string &target_name,
                    const std::string &producer, exe::Executable &out) {
  const Target *target = find_target(target_name);
  if (!target)
    return "unknown target '" + target_name + "' (known targets: " + known_targets() + ")";
  out.target = target->name;
  out.producer = producer;
  for (const auto &kernel : module.kernels())
    out.kernels.push_back(exe::kernel_info(*kernel));
  if (std::string e = target->codegen(module, out.code); !e.empty())
    return e;
  // Reading it back applies every check a loader will (ranks, unique names, ...).
  const std::vector<uint8_t> bytes = exe::serialize(out);
  exe::LoadResult check = exe::deserialize(bytes.data(), bytes.size());
  return check.ok ? std::string() : "cannot package the module: " + check.error;
}

std::vector<uint8_t> build_executable(ir::Module &module, const std::string &target,
                                      const std::string &producer, std::string *error) {
  if (!has_target(target)) {
    *error = "unknown target '" + target + "' (known targets: " + known_targets() + ")";
    return {};
  }
  passes::PassManager pm;
  if (passes::Status s = pm.add_pipeline(passes::default_pipeline()); !s) {
    *error = s.message;
    return {};
  }
  if (passes::Status s = pm.run(module); !s) {
    *error = s.message;
    return {};
  }
  exe::Executable out;
  if (std::string e = package(module, target, producer, out); !e.empty()) {
    *error = e;
    return {};
  }
  return exe::serialize(out);
}

} // namespace tl::compile
