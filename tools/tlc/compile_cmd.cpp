// tlc compile: optimizes a module and packages it for one target as a TL executable (.tlx).
// SPDX-License-Identifier: Apache-2.0
#include "tlc.h"

#include "tl/backends/llvm_cpu.h"
#include "tl/backends/nvptx.h"
#include "tl/compiler/pipeline.h"
#include "tl/format/executable.h"
#include "tl/passes/pass_manager.h"

#include <boost/program_options.hpp>

#include <fstream>
#include <iostream>

namespace po = boost::program_options;

namespace tl::tlc {

std::vector<uint8_t> build_executable(ir::Module &module, const std::string &target_name,
                                      std::string *error) {
  return compile::build_executable(module, target_name, "tlc " TL_VERSION, error);
}

compile::TargetOptions parse_target_options(const std::vector<std::string> &key_values) {
  compile::TargetOptions options;
  for (const std::string &kv : key_values) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::runtime_error("--target-option '" + kv + "' is not key=value");
    // A repeated key would silently keep only its last value (arch=sm_80 then arch=sm_90a
    // compiles sm_90a alone): a list goes in one value, as the target documents.
    if (!options.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second)
      throw std::runtime_error("--target-option '" + kv.substr(0, eq) +
                               "' is given twice (a list is one value, e.g. arch=sm_80,sm_90a)");
  }
  return options;
}

namespace {

/// --emit-llvm: the optimized LLVM IR of a module the pipeline planned, for the LLVM CPU `cpu`
/// ("host" or a name such as znver3), to `path` ("-": stdout); "" or the code generator's error.
std::string write_llvm_ir(const ir::Module &module, const std::string &cpu,
                          const std::string &path) {
  llvm_cpu::CompileOptions options;
  options.planned = true;
  options.cpu = cpu;
  std::string error;
  const std::string ir = llvm_cpu::emit_llvm_ir(module, options, &error);
  if (!error.empty())
    return error;
  if (path == "-") {
    std::cout << ir;
    return {};
  }
  std::ofstream f(path, std::ios::binary);
  if (!(f << ir))
    throw std::runtime_error("cannot write '" + path + "'");
  return {};
}

/// --emit-ptx: the PTX of a module the pipeline planned, for the first `arch` of the options,
/// to `path` ("-": stdout); "" or the code generator's error.
std::string write_ptx(const ir::Module &module, const compile::TargetOptions &target_options,
                      const std::string &path) {
  nvptx::CompileOptions options;
  if (std::string e = nvptx::parse_options(target_options, options); !e.empty())
    return e;
  options.planned = true;
  std::string error;
  const std::string ptx = nvptx::emit_ptx(module, options, options.archs.front(), &error);
  if (!error.empty())
    return error;
  if (path == "-") {
    std::cout << ptx;
    return {};
  }
  std::ofstream f(path, std::ios::binary);
  if (!(f << ptx))
    throw std::runtime_error("cannot write '" + path + "'");
  return {};
}

} // namespace

int cmd_compile(int argc, char **argv) {
  std::string input, output, target_name, emit_llvm, emit_llvm_cpu = "host", emit_ptx,
                                                     pipeline = passes::default_pipeline();
  std::vector<std::string> target_options;
  passes::PassManagerOptions pm_opts;
  po::options_description desc("tlc compile options");
  desc.add_options()("help,h", "show this help")("input", po::value(&input), "input .tlir")(
      "target,t", po::value(&target_name),
      ("target to compile for: " + compile::known_targets()).c_str())(
      "passes,p", po::value(&pipeline),
      ("comma-separated pass pipeline (default: " + pipeline + ")").c_str())(
      "print-after-all", po::bool_switch(&pm_opts.print_after_all),
      "print the IR to stderr after every pass")("output,o", po::value(&output),
                                                 "the executable (.tlx) to write")(
      "target-option", po::value(&target_options)->composing(),
      "key=value for the target, repeatable (tnpu: chip=sim/configs/edge.json)")(
      "emit-llvm", po::value(&emit_llvm),
      "llvm-cpu only: also write the optimized LLVM IR to this file (- for stdout)")(
      "emit-llvm-cpu", po::value(&emit_llvm_cpu),
      "the LLVM CPU --emit-llvm generates for (default host; e.g. znver3, x86-64-v3): tests "
      "pin one; the .tlx is always for the host")(
      "emit-ptx", po::value(&emit_ptx),
      "nvptx only: also write the PTX (first arch= of the options) to this file (- for stdout)");
  if (!parse_options(argc, argv, desc,
                     "usage: tlc compile --target T [options] <file.tlir | -> -o out.tlx\n",
                     compile::targets_help()))
    return 0;
  if (target_name.empty())
    throw std::runtime_error("no target (use --target; known targets: " + compile::known_targets() +
                             ")");
  if (!compile::find_target(target_name))
    throw std::runtime_error(compile::unknown_target(target_name));
  if (input.empty())
    throw std::runtime_error("no input file (use - for standard input)");
  if (output.empty())
    throw std::runtime_error("no output file (use -o out.tlx)");
  auto module = load_module(input);
  if (!module)
    return 1;
  const compile::TargetOptions options = parse_target_options(target_options);
  passes::PassManager pm(pm_opts);
  if (passes::Status s = pm.add_pipeline(pipeline); !s) {
    std::cerr << "tlc compile: error: " << s.message << "\n";
    return 2;
  }
  if (std::string e = compile::add_planning_passes(pm, target_name, options); !e.empty()) {
    std::cerr << "tlc compile: error: " << e << "\n";
    return 1;
  }
  if (passes::Status s = pm.run(*module); !s) {
    std::cerr << "tlc compile: error: " << s.message << "\n";
    return 1;
  }
  if (!emit_llvm.empty()) {
    if (target_name != "llvm-cpu")
      throw std::runtime_error("--emit-llvm needs --target llvm-cpu");
    if (std::string e = write_llvm_ir(*module, emit_llvm_cpu, emit_llvm); !e.empty()) {
      std::cerr << "tlc compile: error: " << e << "\n";
      return 1;
    }
  }
  if (!emit_ptx.empty()) {
    if (target_name != "nvptx")
      throw std::runtime_error("--emit-ptx needs --target nvptx");
    if (std::string e = write_ptx(*module, options, emit_ptx); !e.empty()) {
      std::cerr << "tlc compile: error: " << e << "\n";
      return 1;
    }
  }
  exe::Executable executable;
  std::string error =
      compile::package(*module, target_name, "tlc " TL_VERSION, executable, options);
  if (error.empty())
    exe::save_file(output, executable, &error);
  if (!error.empty()) {
    std::cerr << "tlc compile: error: " << error << "\n";
    return 1;
  }
  return 0;
}

} // namespace tl::tlc
