// The nvptx code blob: one PTX image per architecture and each kernel's launch metadata.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/nvptx.h"

#include "codegen.h"

namespace tl::nvptx {

std::vector<uint8_t> compile(const ir::Module &module, const CompileOptions &options,
                             std::string *error) {
  // Until format/nvptx lands: PTX of the first architecture only.
  std::vector<KernelInfo> infos;
  const std::string ptx = emit_ptx_with_info(module, options, options.archs.front(), &infos, error);
  if (ptx.empty())
    return {};
  return std::vector<uint8_t>(ptx.begin(), ptx.end());
}

} // namespace tl::nvptx
