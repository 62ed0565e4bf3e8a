// libFuzzer target: any bytes through the whole compiler. A module that parses and verifies runs
// the default passes, each built-in target's planning passes and its code generator (llvm-cpu's
// LLVM lowering and object emission, tnpu's scheduling and assembly when built), exactly as
// `tlc compile --target T` does. Errors are fine; a crash, a sanitizer report or a hang is not.
// SPDX-License-Identifier: Apache-2.0
#include "tl/compiler/pipeline.h"
#include "tl/compiler/targets.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string_view text(reinterpret_cast<const char *>(data), size);
  for (const tl::compile::RegisteredTarget &target : tl::compile::targets()) {
    if (!target.builtin)
      continue; // plugins found at run time are not what this binary tests
    tl::ir::Diagnostics diags;
    auto module = tl::ir::parse(text, "fuzz.tlir", diags);
    if (!module || !tl::ir::verify(*module, diags))
      return 0;
    std::string error;
    (void)tl::compile::build_executable(*module, target.name, "tl-fuzz", &error);
  }
  return 0;
}
