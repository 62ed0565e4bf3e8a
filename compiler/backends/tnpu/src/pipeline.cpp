// The tnpu backend's table of contents: the planning passes in order, then the emitter.
// SPDX-License-Identifier: Apache-2.0
//
// compile(module)
//   clone the module (the caller's stays as it was)
//   tnpu-plan-pipelining  which loads each innermost loop prefetches (and the grid loop of a
//                         loop-free kernel: persistent), the scalars a prefetch recomputes,
//                         loops whose DMA engines wait for each other   (plan_pipelining.h)
//   tnpu-plan-memory      tile addresses by liveness in the scratchpad / accumulator, buffer
//                         strides, overflow errors, peaks                (plan_memory.h)
//   lower each kernel     reads those attributes: registers, unit commands, semaphores
//                         (lower.h, lowering.h, sync.h)
//   a persistent kernel that runs out of registers: planned and lowered again without
//   persistent kernels
//   serialize_code        the blob (code.cpp)
// `tlc opt --target tnpu --print-after-all` shows the module after each planning pass.
#include "tl/backends/tnpu.h"

#include "lower.h"
#include "plan_memory.h"
#include "plan_pipelining.h"
#include "tl/ir/clone.h"
#include "tl/npu/config.h"

namespace tl::tnpu {
namespace {

/// A copy of `module` with the planning passes' decisions recorded.
std::unique_ptr<ir::Module> plan(const ir::Module &module, const CompileOptions &options) {
  std::unique_ptr<ir::Module> planned = ir::clone(module);
  for (const passes::PassInfo &pass : planning_passes(options))
    for (auto &kernel : planned->kernels())
      pass.run(*kernel);
  return planned;
}

} // namespace

std::vector<passes::PassInfo> planning_passes(const CompileOptions &options) {
  return {
      {"tnpu-plan-pipelining",
       "tnpu: loads prefetched by innermost loops and persistent kernels (tnpu.buffers)",
       [options](ir::Kernel &k) { return plan_pipelining(k, options); }},
      {"tnpu-plan-memory", "tnpu: tile addresses by liveness (tnpu.addr, tnpu.mem, tnpu.stride)",
       [options](ir::Kernel &k) { return plan_memory(k, options); }},
  };
}

std::string compile(const ir::Module &module, const CompileOptions &options,
                    std::vector<uint8_t> &code) {
  // The compiler's pipeline has planned the module already (options.planned); else plan a copy.
  const std::unique_ptr<ir::Module> copy = options.planned ? nullptr : plan(module, options);
  const ir::Module *planned = copy ? copy.get() : &module;
  std::unique_ptr<ir::Module> plain; // planned without persistent kernels, when one needs it
  CompileOptions plain_options = options;
  plain_options.persistent = false;
  std::vector<Kernel> kernels(module.kernels().size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string error = detail::lower_kernel(*planned->kernels()[i], options, kernels[i]);
    if (!error.empty() && options.persistent) { // a persistent kernel needs more registers
      if (!plain)
        plain = plan(module, plain_options);
      error = detail::lower_kernel(*plain->kernels()[i], plain_options, kernels[i]);
    }
    if (!error.empty())
      return error;
  }
  code = serialize_code(kernels);
  return {};
}

CompileOptions options_from_chip(const std::string &path) {
  const npu::ChipConfig c = npu::load_config(path); // throws with the file and field
  CompileOptions o;
  o.sram_bytes = c.core.sram.size;
  o.accumulator_bytes = c.core.accumulator;
  o.matrix_rows = c.core.matrix.rows;
  o.matrix_cols = c.core.matrix.cols;
  o.dma_engines = c.core.dma.engines; // the lowering uses up to what its semaphores allow
  o.vector_lanes = c.core.vector.lanes;
  o.vector_depth = c.core.vector.pipeline_depth;
  return o;
}

} // namespace tl::tnpu
