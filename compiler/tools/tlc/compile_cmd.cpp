// tlc compile: optimizes a module and packages it for one target as a TL executable (.tlx).
// SPDX-License-Identifier: Apache-2.0
#include "tlc.h"

#include "tl/backends/llvm_cpu.h"

#include "tl/executable/executable.h"
#include "tl/ir/printer.h"
#include "tl/passes/pass_manager.h"

#include <boost/program_options.hpp>

#include <iostream>

namespace po = boost::program_options;

namespace tl::tlc {
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

// One row per target; nvptx and tnpu join here with their code generators.
const Target kTargets[] = {
    {"tlir", "portable: the optimized module as .tlir text, run by the reference interpreter",
     codegen_tlir},
    {"llvm-cpu", "native object code for this host's CPU (LLVM 19, vectorized for its features)",
     codegen_llvm_cpu},
};

const Target *find_target(const std::string &name) {
  for (const Target &t : kTargets)
    if (name == t.name)
      return &t;
  return nullptr;
}

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

/// Builds the executable; returns an error (a kernel the format cannot describe) or "".
std::string package(const ir::Module &module, const Target &target, exe::Executable &out) {
  out.target = target.name;
  out.producer = "tlc " TL_VERSION;
  for (const auto &kernel : module.kernels())
    out.kernels.push_back(exe::kernel_info(*kernel));
  if (std::string e = target.codegen(module, out.code); !e.empty())
    return e;
  // Reading it back applies every check a loader will (ranks, unique names, ...).
  const std::vector<uint8_t> bytes = exe::serialize(out);
  exe::LoadResult check = exe::deserialize(bytes.data(), bytes.size());
  return check.ok ? std::string() : "cannot package the module: " + check.error;
}

} // namespace

std::vector<uint8_t> build_executable(ir::Module &module, const std::string &target_name,
                                      std::string *error) {
  const Target *target = find_target(target_name);
  if (!target) {
    *error = "unknown target '" + target_name + "' (known targets: " + known_targets() + ")";
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
  if (std::string e = package(module, *target, out); !e.empty()) {
    *error = e;
    return {};
  }
  return exe::serialize(out);
}

int cmd_compile(int argc, char **argv) {
  std::string input, output, target_name, pipeline = passes::default_pipeline();
  passes::PassManagerOptions pm_opts;
  po::options_description desc("tlc compile options");
  desc.add_options()("help,h", "show this help")("input", po::value(&input), "input .tlir")(
      "target,t", po::value(&target_name), ("target to compile for: " + known_targets()).c_str())(
      "passes,p", po::value(&pipeline),
      ("comma-separated pass pipeline (default: " + pipeline + ")").c_str())(
      "print-after-all", po::bool_switch(&pm_opts.print_after_all),
      "print the IR to stderr after every pass")("output,o", po::value(&output),
                                                 "the executable (.tlx) to write");
  po::positional_options_description pos;
  pos.add("input", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: tlc compile --target T [options] <file.tlir | -> -o out.tlx\n"
              << desc << targets_help();
    return 0;
  }
  if (target_name.empty())
    throw std::runtime_error("no target (use --target; known targets: " + known_targets() + ")");
  const Target *target = find_target(target_name);
  if (!target)
    throw std::runtime_error("unknown target '" + target_name +
                             "' (known targets: " + known_targets() + ")");
  if (input.empty())
    throw std::runtime_error("no input file (use - for standard input)");
  if (output.empty())
    throw std::runtime_error("no output file (use -o out.tlx)");
  auto module = load_module(input);
  if (!module)
    return 1;
  passes::PassManager pm(pm_opts);
  if (passes::Status s = pm.add_pipeline(pipeline); !s) {
    std::cerr << "tlc compile: error: " << s.message << "\n";
    return 2;
  }
  if (passes::Status s = pm.run(*module); !s) {
    std::cerr << "tlc compile: error: " << s.message << "\n";
    return 1;
  }
  exe::Executable executable;
  std::string error = package(*module, *target, executable);
  if (error.empty())
    exe::save_file(output, executable, &error);
  if (!error.empty()) {
    std::cerr << "tlc compile: error: " << error << "\n";
    return 1;
  }
  return 0;
}

} // namespace tl::tlc
