// libFuzzer target: any text through the TNPU assembler (tl-sim asm, hand-written tnpu kernels),
// with a define as tl-sim -D passes them. Errors are diagnostics; an assembled program must
// disassemble and assemble back to the same instructions. A crash or a sanitizer report is a
// finding.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/assembler.h"
#include "tl/npu/isa.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace isa = tl::npu::isa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  const isa::Assembly a = isa::assemble(text, {{"N", 256}, {"A", 0x1000}});
  if (!a.ok()) {
    (void)isa::format_diagnostics("fuzz.s", a.errors);
    return 0;
  }
  const std::string listing = isa::disassemble(a.code);
  const isa::Assembly again = isa::assemble(listing);
  if (!again.ok() || !(again.code == a.code)) {
    std::fprintf(stderr, "disassembly does not assemble back:\n%s\n%s\n", listing.c_str(),
                 isa::format_diagnostics("disassembly", again.errors).c_str());
    std::abort();
  }
  return 0;
}
