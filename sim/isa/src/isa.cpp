// The TNPU opcode table, operand validation, the 64-bit encoding and program files.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/isa.h"

#include <cassert>
#include <cstring>

namespace tl::npu::isa {
namespace {

constexpr Unit unit_of(const char *mnemonic) {
  auto starts = [](const char *s, const char *p) {
    for (; *p != 0; ++s, ++p)
      if (*s != *p)
        return false;
    return true;
  };
  if (starts(mnemonic, "dma."))
    return Unit::Dma;
  if (starts(mnemonic, "mx."))
    return Unit::Matrix;
  if (starts(mnemonic, "v."))
    return Unit::Vector;
  if (starts(mnemonic, "sem.") || starts(mnemonic, "fence") || starts(mnemonic, "barrier"))
    return Unit::Sync;
  return Unit::Scalar;
}

const OpInfo kOps[] = {
#define TL_NPU_INFO(name, mnemonic, operands) {Opcode::name, mnemonic, operands, unit_of(mnemonic)},
    TL_NPU_OPCODES(TL_NPU_INFO)
#undef TL_NPU_INFO
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == static_cast<size_t>(Opcode::Count));

const char *const kDmaFields[] = {"esize", "n0", "n1",  "n2",  "hs1", "hs2", "ls1", "ls2", "v0",
                                  "v1",    "v2", "pad", "isz", "adt", "oob", "l0",  "l1",  "l2"};
const char *const kMxFields[] = {"mode", "m", "k", "n", "lda", "ldw", "ldc"};
const char *const kVecFields[] = {"n", "rows", "sd", "sa", "sb", "src", "dst",
                                  "t", "u",    "rm", "sc", "ea", "ed"};
static_assert(sizeof(kDmaFields) / sizeof(char *) == static_cast<size_t>(DmaField::Count));
static_assert(sizeof(kMxFields) / sizeof(char *) == static_cast<size_t>(MxField::Count));
static_assert(sizeof(kVecFields) / sizeof(char *) == static_cast<size_t>(VecField::Count));

constexpr char kMagic[8] = {'T', 'N', 'P', 'U', 1, 0, 0, 0};

/// Whether `v` is a valid value for an operand of kind `kind` of `info`.
bool slot_valid(const OpInfo &info, char kind, int v) {
  switch (kind) {
  case 'r':
    return v < kNumRegs;
  case 's':
    return v < kNumSemaphores;
  case 'f':
    return v < field_count(info.unit);
  case 'q':
    if (queue_name(v) == nullptr)
      return false;
    return info.unit != Unit::Dma || v >= static_cast<int>(Queue::Dma0);
  default:
    return false;
  }
}

} // namespace

bool Instr::operator==(const Instr &o) const {
  return op == o.op && std::memcmp(slot, o.slot, sizeof slot) == 0 && imm == o.imm;
}

const OpInfo &op_info(Opcode op) {
  assert(op < Opcode::Count);
  return kOps[static_cast<int>(op)];
}

const OpInfo *find_op(const std::string &mnemonic) {
  for (const OpInfo &i : kOps)
    if (mnemonic == i.mnemonic)
      return &i;
  return nullptr;
}

int field_count(Unit unit) {
  switch (unit) {
  case Unit::Dma:
    return static_cast<int>(DmaField::Count);
  case Unit::Matrix:
    return static_cast<int>(MxField::Count);
  case Unit::Vector:
    return static_cast<int>(VecField::Count);
  default:
    return 0;
  }
}

const char *field_name(Unit unit, int field) {
  if (field < 0 || field >= field_count(unit))
    return nullptr;
  switch (unit) {
  case Unit::Dma:
    return kDmaFields[field];
  case Unit::Matrix:
    return kMxFields[field];
  default:
    return kVecFields[field];
  }
}

const char *queue_name(int q) {
  static const char *const kDma[] = {"dma0", "dma1", "dma2", "dma3",
                                     "dma4", "dma5", "dma6", "dma7"};
  switch (q) {
  case 0:
    return "cp";
  case 1:
    return "mx";
  case 2:
    return "vec";
  default:
    return q >= 8 && q < 8 + kMaxDmaQueues ? kDma[q - 8] : nullptr;
  }
}

uint64_t encode(const Instr &in) {
  uint64_t w = static_cast<uint8_t>(in.op);
  for (int i = 0; i < 4; ++i) {
    assert(in.slot[i] < 64 && "slot value out of range");
    w |= static_cast<uint64_t>(in.slot[i] & 63) << (8 + 6 * i);
  }
  return w | static_cast<uint64_t>(static_cast<uint32_t>(in.imm)) << 32;
}

bool decode(uint64_t word, Instr &out, std::string &error) {
  const unsigned opc = word & 0xff;
  if (opc >= static_cast<unsigned>(Opcode::Count)) {
    error = "unknown opcode " + std::to_string(opc);
    return false;
  }
  out = Instr{};
  out.op = static_cast<Opcode>(opc);
  out.imm = static_cast<int32_t>(static_cast<uint32_t>(word >> 32));
  for (int i = 0; i < 4; ++i)
    out.slot[i] = static_cast<uint8_t>((word >> (8 + 6 * i)) & 63);
  const OpInfo &info = op_info(out.op);
  int slot = 0;
  bool uses_imm = false;
  for (const char *k = info.operands; *k != 0; ++k) {
    if (*k == ',')
      continue;
    if (*k == 'i' || *k == 'l') {
      uses_imm = true;
      continue;
    }
    if (!slot_valid(info, *k, out.slot[slot])) {
      error = std::string(info.mnemonic) + ": operand " + std::to_string(slot + 1) +
              " has invalid value " + std::to_string(out.slot[slot]);
      return false;
    }
    ++slot;
  }
  for (int i = slot; i < 4; ++i) {
    if (out.slot[i] != 0) {
      error = std::string(info.mnemonic) + ": unused operand bits are set";
      return false;
    }
  }
  if (!uses_imm && out.imm != 0) {
    error = std::string(info.mnemonic) + ": unused immediate bits are set";
    return false;
  }
  return true;
}

std::vector<uint8_t> to_binary(const std::vector<Instr> &code) {
  std::vector<uint8_t> out(16 + 8 * code.size());
  std::memcpy(out.data(), kMagic, 8);
  uint64_t n = code.size();
  std::memcpy(out.data() + 8, &n, 8);
  for (size_t i = 0; i < code.size(); ++i) {
    uint64_t w = encode(code[i]);
    std::memcpy(out.data() + 16 + 8 * i, &w, 8);
  }
  return out;
}

bool from_binary(const std::vector<uint8_t> &bytes, std::vector<Instr> &code, std::string &error) {
  if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    error = "not a TNPU program (bad magic)";
    return false;
  }
  uint64_t n;
  std::memcpy(&n, bytes.data() + 8, 8);
  if (n > (bytes.size() - 16) / 8 || bytes.size() != 16 + 8 * n) {
    error = "program size does not match its instruction count " + std::to_string(n);
    return false;
  }
  code.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + 16 + 8 * i, 8);
    std::string why;
    if (!decode(w, code[i], why)) {
      error = "instruction " + std::to_string(i) + ": " + why;
      return false;
    }
  }
  return true;
}

} // namespace tl::npu::isa
