// The default chip's config file, found beside the binary that holds this code.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/default_chip.h"

#include <dlfcn.h>

#include <filesystem>

namespace tl::npu {
namespace {

/// An address in this binary; internal linkage, so that another library's copy of this code
/// (the plugin's and the compiler's, in one process) cannot interpose it.
void anchor() {}

} // namespace

std::string default_config_path() {
  // An installed package (tl/_lib) and the build's lib/ ship the configs in chips/ beside the
  // libraries, so neither depends on the source tree; executables elsewhere in the build (tlc,
  // tests) fall back to the source tree's copy.
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&anchor), &info) && info.dli_fname) {
    const auto beside =
        std::filesystem::path(info.dli_fname).parent_path() / "chips" / "default.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(beside, ec))
      return beside.string();
  }
  return TL_NPU_SOURCE_CONFIGS "/default.json";
}

} // namespace tl::npu
