// The compile pipeline: the target table, packaging, and default-pipeline compilation.
// SPDX-License-Identifier: Apache-2.0
#include "tl/compiler/pipeline.h"

#include "target_plugins.h"
#include "tl/backends/llvm_cpu.h"
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

// The built-in targets; vendors' targets are plugins (target_plugins.h), like tnpu.
const Target kTargets[] = {
    {"tlir", "portable: the optimized module as .tlir text, run by the reference interpreter",
     codegen_tlir},
    {"llvm-cpu", "native object code for this host's CPU (LLVM 19, vectorized for its features)",
     codegen_llvm_cpu},
};

const Target *find_builtin(const std::string &name) {
  for (const Target &t : kTargets)
    if (name == t.name)
      return &t;
  return nullptr;
}

/// The first loaded plugin of that name (a built-in name always wins).
const PluginTarget *find_plugin(const std::string &name) {
  if (find_builtin(name))
    return nullptr;
  for (const PluginTarget &p : plugin_targets())
    if (p.table && p.name == name)
      return &p;
  return nullptr;
}

} // namespace

std::string unknown_target(const std::string &name) {
  std::string e = "unknown target '" + name + "' (known targets: " + known_targets() + ")";
  for (const PluginTarget &p : plugin_targets())
    if (!p.table)
      e += "; target plugin " + p.path + " not loaded: " + p.problem;
  return e;
}

bool has_target(const std::string &target) {
  return find_builtin(target) != nullptr || find_plugin(target) != nullptr;
}

std::string known_targets() {
  std::string names;
  for (const Target &t : kTargets)
    names += (names.empty() ? "" : ", ") + std::string(t.name);
  for (const PluginTarget &p : plugin_targets())
    if (p.table && find_plugin(p.name) == &p)
      names += ", " + p.name;
  return names;
}

std::string targets_help() {
  std::string help = "targets:\n";
  for (const Target &t : kTargets)
    help += "  " + std::string(t.name) + "  " + t.summary + "\n";
  for (const PluginTarget &p : plugin_targets()) {
    if (p.table && find_plugin(p.name) == &p)
      help += "  " + p.name + "  " + p.summary + " (plugin " + p.path + ")\n";
    else if (!p.table)
      help += "  (not loaded: " + p.path + ": " + p.problem + ")\n";
  }
  return help;
}

std::string package(const ir::Module &module, const std::string &target_name,
                    const std::string &producer, exe::Executable &out,
                    const std::string &options_json) {
  const Target *builtin = find_builtin(target_name);
  const PluginTarget *plugin = builtin ? nullptr : find_plugin(target_name);
  if (!builtin && !plugin)
    return unknown_target(target_name);
  if (builtin && options_json != "{}" && !options_json.empty())
    return "target '" + target_name + "' takes no target options";
  out.target = target_name;
  out.producer = producer;
  for (const auto &kernel : module.kernels())
    out.kernels.push_back(exe::kernel_info(*kernel));
  if (std::string e = builtin ? builtin->codegen(module, out.code)
                              : compile_with_plugin(*plugin, module, options_json, out.code);
      !e.empty())
    return e;
  // Reading it back applies every check a loader will (ranks, unique names, ...).
  const std::vector<uint8_t> bytes = exe::serialize(out);
  exe::LoadResult check = exe::deserialize(bytes.data(), bytes.size());
  return check.ok ? std::string() : "cannot package the module: " + check.error;
}

std::vector<uint8_t> build_executable(ir::Module &module, const std::string &target,
                                      const std::string &producer, std::string *error,
                                      const std::string &options_json) {
  if (!has_target(target)) {
    *error = unknown_target(target);
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
  if (std::string e = package(module, target, producer, out, options_json); !e.empty()) {
    *error = e;
    return {};
  }
  return exe::serialize(out);
}

} // namespace tl::compile
