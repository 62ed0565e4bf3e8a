// The nvptx target's table entry.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/target.h"
#include "tl/backends/nvptx.h"

namespace {

std::string emit(const tl::ir::Module &module, const tl::backends::TargetOptions &options,
                 std::vector<uint8_t> &code) {
  tl::nvptx::CompileOptions o;
  if (std::string e = tl::nvptx::parse_options(options, o); !e.empty())
    return e;
  o.planned = true; // compile::optimize ran the planning passes: the emitter only reads them
  std::string error;
  code = tl::nvptx::compile(module, o, &error);
  return code.empty() ? error : std::string();
}

std::string planning(const tl::backends::TargetOptions &options,
                     std::vector<tl::passes::PassInfo> &out) {
  tl::nvptx::CompileOptions o;
  if (std::string e = tl::nvptx::parse_options(options, o); !e.empty())
    return e;
  out = tl::nvptx::planning_passes(o);
  return {};
}

std::string identity(const tl::backends::TargetOptions &options) {
  tl::nvptx::CompileOptions o;
  if (std::string e = tl::nvptx::parse_options(options, o); !e.empty())
    return e;
  return tl::nvptx::target_identity(o);
}

} // namespace

TL_BUILTIN_TARGET(nvptx) {
  static const tl::backends::Target target{
      "nvptx",
      "PTX for NVIDIA GPUs (sm_80, sm_90a; LLVM 19 + libdevice; options arch=, num_warps=)",
      planning, emit, identity};
  return target;
}
