// The tnpu target's table entry. Option `chip` names the chip config (sim/configs/*.json) the
// code is compiled for; without it, TL_NPUSIM_CONFIG (the chip the npusim device simulates),
// else the default chip. The config decides the scratchpad and accumulator budgets, the matrix
// unit's R x C and the DMA engines used, so two chips get two different programs.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/target.h"
#include "tl/backends/tnpu.h"

#include <cstdlib>
#include <stdexcept>

namespace {

/// The lowering's budgets for the chosen chip; "" or an error naming the config problem.
std::string options_for(const tl::backends::TargetOptions &options, tl::tnpu::CompileOptions &o) {
  if (std::string e = tl::backends::check_option_names("tnpu", options, {"chip"}); !e.empty())
    return e;
  std::string chip = options.count("chip") ? options.at("chip") : "";
  if (chip.empty()) {
    const char *env = std::getenv("TL_NPUSIM_CONFIG");
    chip = env && *env ? env : TL_NPUSIM_DEFAULT_CONFIG;
  }
  try {
    o = tl::tnpu::options_from_chip(chip); // throws with the file and field
  } catch (const std::exception &e) {
    return e.what();
  }
  return {};
}

std::string emit(const tl::ir::Module &module, const tl::backends::TargetOptions &options,
                 std::vector<uint8_t> &code) {
  tl::tnpu::CompileOptions o;
  if (std::string e = options_for(options, o); !e.empty())
    return e;
  try {
    return tl::tnpu::compile(module, o, code);
  } catch (const std::exception &e) {
    return std::string("tnpu: ") + e.what();
  }
}

std::string planning(const tl::backends::TargetOptions &options,
                     std::vector<tl::passes::PassInfo> &out) {
  tl::tnpu::CompileOptions o;
  if (std::string e = options_for(options, o); !e.empty())
    return e;
  out = tl::tnpu::planning_passes(o);
  return {};
}

} // namespace

TL_BUILTIN_TARGET(tnpu) {
  static const tl::backends::Target target{
      "tnpu",
      "TNPU programs for the npusim device (option chip=<config.json>; default: the chip npusim "
      "simulates)",
      planning, emit};
  return target;
}
