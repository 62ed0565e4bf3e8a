// The TNPU disassembler: canonical text that assembles back to the same words.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/assembler.h"

#include <set>

namespace tl::npu::isa {
namespace {

bool is_branch(const OpInfo &info) {
  for (const char *k = info.operands; *k != 0; ++k)
    if (*k == 'l')
      return true;
  return false;
}

std::string operand_text(const OpInfo &info, char kind, const Instr &in, int slot, int64_t pc,
                         int64_t size) {
  switch (kind) {
  case 'r':
    return "r" + std::to_string(in.slot[slot]);
  case 's':
    return "s" + std::to_string(in.slot[slot]);
  case 'q':
    return queue_name(in.slot[slot]);
  case 'f':
    return field_name(info.unit, in.slot[slot]);
  case 'i':
    return std::to_string(in.imm);
  default: { // 'l'
    int64_t t = pc + in.imm;
    if (t >= 0 && t <= size)
      return "L" + std::to_string(t);
    return in.imm >= 0 ? ".+" + std::to_string(in.imm) : ".-" + std::to_string(-int64_t{in.imm});
  }
  }
}

} // namespace

std::string disassemble(const std::vector<Instr> &code) {
  const int64_t size = static_cast<int64_t>(code.size());
  std::set<int64_t> targets;
  for (int64_t pc = 0; pc < size; ++pc) {
    const OpInfo &info = op_info(code[pc].op);
    int64_t t = pc + code[pc].imm;
    if (is_branch(info) && t >= 0 && t <= size)
      targets.insert(t);
  }
  std::string out;
  for (int64_t pc = 0; pc <= size; ++pc) {
    if (targets.count(pc) != 0)
      out += "L" + std::to_string(pc) + ":\n";
    if (pc == size)
      break;
    const Instr &in = code[pc];
    const OpInfo &info = op_info(in.op);
    out += "  ";
    out += info.mnemonic;
    int slot = 0;
    bool first = true;
    for (const char *k = info.operands; *k != 0; ++k) {
      if (*k == ',')
        continue;
      out += first ? " " : ", ";
      first = false;
      out += operand_text(info, *k, in, slot, pc, size);
      if (*k != 'i' && *k != 'l')
        ++slot;
    }
    out += "\n";
  }
  return out;
}

} // namespace tl::npu::isa
