// The tnpu compiler target as a plugin (libtl_target_tnpu.so), written against the SDK's target
// ABI (tl/target.h, tl/target_support.hpp) exactly as an outside vendor would: TL's compiler
// finds it at run time; nothing in compiler/ names TNPU.
//
// Option `chip` names the chip config (sim/configs/*.json) the code is compiled for; without it,
// TL_NPUSIM_CONFIG (the chip the npusim device simulates), else the default chip. The config
// decides the scratchpad and accumulator budgets, the matrix unit's R x C and the DMA engines
// used, so two chips get two different programs.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/tnpu.h"
#include "tl/target_support.hpp"

#include <cstdlib>
#include <stdexcept>

namespace {

tl::tnpu::CompileOptions options_for(const tl::sdk::TargetOptions &options) {
  std::string chip;
  for (const auto &[key, value] : options) {
    if (key != "chip")
      throw std::invalid_argument("tnpu: unknown target option '" + key + "' (known: chip)");
    chip = value;
  }
  if (chip.empty()) {
    const char *env = std::getenv("TL_NPUSIM_CONFIG");
    chip = env && *env ? env : TL_NPUSIM_DEFAULT_CONFIG;
  }
  return tl::tnpu::options_from_chip(chip); // throws with the file and field
}

class TnpuTarget : public tl::sdk::CompilerTarget {
public:
  std::string compile(const tl::ir::Module &module, const tl::sdk::TargetOptions &options,
                      std::vector<uint8_t> &code) override {
    return tl::tnpu::compile(module, options_for(options), code);
  }
};

} // namespace

TL_DEFINE_COMPILER_TARGET("tnpu",
                          "TNPU programs for the npusim device (option chip=<config.json>; "
                          "default: the chip npusim simulates)",
                          TnpuTarget)
