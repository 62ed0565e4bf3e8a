// The tnpu target's table entry. Option `chip` names the chip config (sim/configs/*.json) the
// code is compiled for; without it, TL_NPUSIM_CONFIG (the chip the npusim device simulates),
// else the default chip. The config decides the scratchpad and accumulator budgets, the matrix
// unit's R x C and the DMA engines used, so two chips get two different programs. Option `asm`
// writes the programs' assembly text too (a path, or - for stdout).
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/target.h"
#include "tl/backends/tnpu.h"
#include "tl/npu/assembler.h"
#include "tl/npu/default_chip.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace {

/// The chip config compiled for: option `chip`, else TL_NPUSIM_CONFIG, else the default chip.
std::string chip_path(const tl::backends::TargetOptions &options) {
  if (auto it = options.find("chip"); it != options.end() && !it->second.empty())
    return it->second;
  const char *env = std::getenv("TL_NPUSIM_CONFIG");
  return env && *env ? env : tl::npu::default_config_path();
}

/// The lowering's budgets for the chosen chip; "" or an error naming the config problem.
std::string options_for(const tl::backends::TargetOptions &options, tl::tnpu::CompileOptions &o) {
  if (std::string e = tl::backends::check_option_names("tnpu", options, {"chip", "asm"});
      !e.empty())
    return e;
  const std::string chip = chip_path(options);
  try {
    o = tl::tnpu::options_from_chip(chip); // throws with the file and field
  } catch (const std::exception &e) {
    return e.what();
  }
  return {};
}

/// Option `asm=<path>` ("-": stdout): each kernel's program as assembly text, for the
/// lowering's FileCheck tests and for reading what a kernel became; "" or the error.
std::string write_asm(const tl::ir::Module &module, const std::vector<uint8_t> &code,
                      const std::string &path) {
  std::vector<tl::tnpu::Kernel> kernels;
  std::string error;
  if (!tl::tnpu::parse_code(code.data(), code.size(), kernels, error))
    return "tnpu: " + error;
  std::ostringstream text;
  for (size_t i = 0; i < kernels.size(); ++i)
    text << "# kernel @" << module.kernels().at(i)->name() << "\n"
         << tl::npu::isa::disassemble(kernels[i].program);
  if (path == "-") {
    std::cout << text.str();
    return {};
  }
  std::ofstream f(path, std::ios::binary);
  if (!(f << text.str()))
    return "tnpu: cannot write the assembly to '" + path + "'";
  return {};
}

std::string emit(const tl::ir::Module &module, const tl::backends::TargetOptions &options,
                 std::vector<uint8_t> &code) {
  tl::tnpu::CompileOptions o;
  if (std::string e = options_for(options, o); !e.empty())
    return e;
  o.planned = true; // compile::optimize ran the planning passes: the emitter only reads them
  try {
    if (std::string e = tl::tnpu::compile(module, o, code); !e.empty())
      return e;
  } catch (const std::exception &e) {
    return std::string("tnpu: ") + e.what();
  }
  if (auto it = options.find("asm"); it != options.end() && !it->second.empty())
    return write_asm(module, code, it->second);
  return {};
}

std::string planning(const tl::backends::TargetOptions &options,
                     std::vector<tl::passes::PassInfo> &out) {
  tl::tnpu::CompileOptions o;
  if (std::string e = options_for(options, o); !e.empty())
    return e;
  out = tl::tnpu::planning_passes(o);
  return {};
}

/// The chip config's content (not its path: the same file edited compiles differently).
std::string identity(const tl::backends::TargetOptions &options) {
  const std::string path = chip_path(options);
  std::ifstream in(path, std::ios::binary);
  return "tnpu chip " + path + ":\n" + std::string(std::istreambuf_iterator<char>(in), {});
}

} // namespace

TL_BUILTIN_TARGET(tnpu) {
  static const tl::backends::Target target{
      "tnpu",
      "TNPU programs for the npusim device (option chip=<config.json>; default: the chip npusim "
      "simulates; option asm=<path or -> writes the assembly too)",
      planning, emit, identity};
  return target;
}
