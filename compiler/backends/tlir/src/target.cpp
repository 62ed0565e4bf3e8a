// The tlir target: the optimized module as .tlir text (the portable form; tlc run and the
// reference interpreter execute it, no device plugin does).
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/target.h"
#include "tl/ir/printer.h"

namespace {

std::string emit(const tl::ir::Module &module, const tl::backends::TargetOptions &options,
                 std::vector<uint8_t> &code) {
  if (std::string e = tl::backends::check_option_names("tlir", options, {}); !e.empty())
    return e;
  const std::string text = tl::ir::print(module);
  code.assign(text.begin(), text.end());
  return {};
}

} // namespace

TL_BUILTIN_TARGET(tlir) {
  static const tl::backends::Target target{
      "tlir", "portable: the optimized module as .tlir text, run by the reference interpreter",
      nullptr, emit, nullptr};
  return target;
}
