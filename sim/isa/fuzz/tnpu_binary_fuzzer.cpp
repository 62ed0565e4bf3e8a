// libFuzzer target: any bytes as a TNPU program file (isa::from_binary, what tl-sim run and the
// tnpu blob read). An accepted program must disassemble, assemble back to the same instructions
// and encode to the same bytes. A crash or a sanitizer report is a finding.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/assembler.h"
#include "tl/npu/isa.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace isa = tl::npu::isa;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::vector<uint8_t> bytes(data, data + size);
  std::vector<isa::Instr> code;
  std::string error;
  if (!isa::from_binary(bytes, code, error))
    return 0;
  if (isa::to_binary(code) != bytes) {
    std::fprintf(stderr, "an accepted program file does not encode back to its bytes\n");
    std::abort();
  }
  const std::string text = isa::disassemble(code);
  const isa::Assembly again = isa::assemble(text);
  if (!again.ok() || !(again.code == code)) {
    std::fprintf(stderr, "disassembly does not assemble back:\n%s\n%s\n", text.c_str(),
                 isa::format_diagnostics("disassembly", again.errors).c_str());
    std::abort();
  }
  return 0;
}
