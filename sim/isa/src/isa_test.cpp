// ISA tests: encode/decode and binary/text round trips for every opcode, diagnostics, README
// coverage of every instruction.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/assembler.h"
#include "tl/npu/isa.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

namespace tl::npu::isa {
namespace {

/// A random valid instruction of opcode `op`; branch offsets stay inside [0, size].
Instr random_instr(Opcode op, std::mt19937 &gen, int64_t pc, int64_t size) {
  const OpInfo &info = op_info(op);
  Instr in;
  in.op = op;
  int slot = 0;
  for (const char *k = info.operands; *k != 0; ++k) {
    switch (*k) {
    case 'r':
      in.slot[slot++] = gen() % kNumRegs;
      break;
    case 's':
      in.slot[slot++] = gen() % kNumSemaphores;
      break;
    case 'f':
      in.slot[slot++] = gen() % field_count(info.unit);
      break;
    case 'q': {
      int q = 8 + gen() % kMaxDmaQueues;
      if (info.unit != Unit::Dma && gen() % 2)
        q = gen() % 3;
      in.slot[slot++] = static_cast<uint8_t>(q);
      break;
    }
    case 'i':
      in.imm = static_cast<int32_t>(gen());
      break;
    case 'l':
      in.imm = static_cast<int32_t>(static_cast<int64_t>(gen() % (size + 1)) - pc);
      break;
    }
  }
  return in;
}

std::vector<Instr> random_program(std::mt19937 &gen, int64_t size) {
  std::vector<Instr> code;
  for (int64_t pc = 0; pc < size; ++pc)
    code.push_back(
        random_instr(static_cast<Opcode>(gen() % static_cast<int>(Opcode::Count)), gen, pc, size));
  return code;
}

TEST(IsaEncoding, EveryOpcodeRoundTrips) {
  std::mt19937 gen(1);
  for (int o = 0; o < static_cast<int>(Opcode::Count); ++o) {
    for (int trial = 0; trial < 200; ++trial) {
      Instr in = random_instr(static_cast<Opcode>(o), gen, 5, 10);
      Instr back;
      std::string err;
      ASSERT_TRUE(decode(encode(in), back, err)) << op_info(in.op).mnemonic << ": " << err;
      ASSERT_EQ(back, in);
    }
  }
}

TEST(IsaEncoding, DecodeRejectsNonCanonicalWords) {
  std::string err;
  Instr out;
  EXPECT_FALSE(decode(0xff, out, err));
  EXPECT_NE(err.find("unknown opcode"), std::string::npos);
  EXPECT_FALSE(decode(static_cast<uint64_t>(Opcode::Halt) | uint64_t{1} << 40, out, err));
  EXPECT_NE(err.find("immediate"), std::string::npos);
  EXPECT_FALSE(decode(static_cast<uint64_t>(Opcode::Nop) | 1 << 8, out, err));
  // dma.ld with the mx queue.
  EXPECT_FALSE(decode(static_cast<uint64_t>(Opcode::DmaLd) | 1 << 8, out, err));
  EXPECT_NE(err.find("invalid value"), std::string::npos);
  // mx.cfg with field 40.
  EXPECT_FALSE(decode(static_cast<uint64_t>(Opcode::MxCfg) | 40 << 8, out, err));
}

TEST(IsaRoundTrip, BinaryTextBinary) {
  std::mt19937 gen(2);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Instr> code = random_program(gen, 1 + gen() % 300);
    std::vector<uint8_t> bin = to_binary(code);
    std::vector<Instr> decoded;
    std::string err;
    ASSERT_TRUE(from_binary(bin, decoded, err)) << err;
    ASSERT_EQ(decoded, code);
    std::string text = disassemble(decoded);
    Assembly a = assemble(text);
    ASSERT_TRUE(a.ok()) << format_diagnostics("dis", a.errors) << text;
    ASSERT_EQ(a.code, code);
    ASSERT_EQ(to_binary(a.code), bin);
    ASSERT_EQ(disassemble(a.code), text); // canonical text is a fixed point
  }
}

TEST(IsaRoundTrip, OutOfRangeBranchesUseRelativeForm) {
  for (int32_t off : {-7, 9}) {
    Instr j;
    j.op = Opcode::Jmp;
    j.imm = off;
    std::string text = disassemble({j});
    EXPECT_NE(text.find(off < 0 ? "jmp .-7" : "jmp .+9"), std::string::npos) << text;
    Assembly a = assemble(text);
    ASSERT_TRUE(a.ok()) << format_diagnostics("t", a.errors);
    EXPECT_EQ(a.code[0], j);
  }
}

TEST(IsaAssembler, NewOperandsAndSymbols) {
  Assembly a = assemble("  v.cfgi rm, rtz\n  v.cfgi t, i32\n  v.fma r1, r2, r3, r4\n"
                        "  dma.gather dma2, r5, r6, r7\n  ld r1, r2, -8\n  trap 3\n");
  ASSERT_TRUE(a.ok()) << format_diagnostics("t", a.errors);
  EXPECT_EQ(a.code[0].slot[0], static_cast<int>(VecField::Rm));
  EXPECT_EQ(a.code[0].imm, 1);
  EXPECT_EQ(a.code[1].imm, 4);
  EXPECT_EQ(a.code[2].slot[3], 4);
  EXPECT_EQ(a.code[3].slot[0], 10);
  EXPECT_EQ(a.code[3].slot[3], 7);
  EXPECT_EQ(a.code[4].imm, -8);
  EXPECT_EQ(a.code[5].op, Opcode::Trap);
  // Opcodes of the first release keep their numbers (programs and the compiler depend on them).
  EXPECT_EQ(static_cast<int>(Opcode::VFill), 56);
  EXPECT_EQ(static_cast<int>(Opcode::Ld), 57);
}

TEST(IsaAssembler, ExpressionsSymbolsAndWideConstants) {
  Assembly a = assemble(R"(
    .equ TILE, 128
    .equ BYTES, TILE * TILE * 2   # comment
  top:  li r1, BYTES + (1 << 4) - 0x10
    li r2, ACC + 64 ; the accumulator
    li r3, 1.5f
    mx.cfgi mode, bf16
    dma.cfgi pad, -1
    sem.sig dma1, s7, 2
    dbnz r1, top
    halt
  )");
  ASSERT_TRUE(a.ok()) << format_diagnostics("t", a.errors);
  ASSERT_EQ(a.code.size(), 9u); // li r2 is two words
  EXPECT_EQ(a.code[0].imm, 32768);
  EXPECT_EQ(a.code[1].op, Opcode::Li);
  EXPECT_EQ(a.code[1].imm, 64);
  EXPECT_EQ(a.code[2].op, Opcode::Lih);
  EXPECT_EQ(a.code[2].imm, 1);
  EXPECT_EQ(static_cast<uint32_t>(a.code[3].imm), 0x3fc00000u);
  EXPECT_EQ(a.code[4].imm, 0);
  EXPECT_EQ(a.code[6].slot[0], 9);
  EXPECT_EQ(a.code[6].slot[1], 7);
  EXPECT_EQ(a.code[7].imm, -7);
}

TEST(IsaAssembler, DiagnosticsNameLineAndColumn) {
  Assembly a = assemble("  nop\n  frob r1\n  add r1, r2\n  li r40, 3\n  jmp nowhere\n"
                        "  dma.ld mx, r1, r2\n  mx.cfgi depth, 3\n  li r1, 1 +\nx: nop\nx: nop\n"
                        "  li r1, FOO\n  li r1, 0x1ffffffffffffffff\n");
  std::string d = format_diagnostics("p.s", a.errors);
  EXPECT_NE(d.find("p.s:2:3: error: unknown instruction 'frob'"), std::string::npos) << d;
  EXPECT_NE(d.find("p.s:3:3: error: add takes 3 operand(s), got 2"), std::string::npos) << d;
  EXPECT_NE(d.find("p.s:4:6: error: no register 'r40'"), std::string::npos) << d;
  EXPECT_NE(d.find("p.s:5:7: error: unknown label 'nowhere'"), std::string::npos) << d;
  EXPECT_NE(d.find("p.s:6:10: error: dma.ld needs a DMA queue"), std::string::npos) << d;
  EXPECT_NE(d.find("p.s:7:11: error: unknown field 'depth' for mx.cfgi"), std::string::npos) << d;
  EXPECT_NE(d.find("p.s:8:13: error: expected an expression"), std::string::npos) << d;
  EXPECT_NE(d.find("p.s:10:1: error: label 'x' is already defined"), std::string::npos) << d;
  EXPECT_NE(d.find("p.s:11:10: error: unknown symbol 'FOO'"), std::string::npos) << d;
  EXPECT_NE(d.find("p.s:12:10: error: malformed number"), std::string::npos) << d;
}

TEST(IsaAssembler, ExpressionOverflowIsALocatedError) {
  // Each line overflows int64 one way (before: undefined behaviour, UBSan's report; found by
  // tnpu_asm_fuzzer); the last two fit and assemble.
  Assembly a = assemble("  li r1, 77777777777777777 * 256\n"
                        "  li r1, 9223372036854775807 + 1\n"
                        "  li r1, -9223372036854775807 - 2\n"
                        "  li r1, (-9223372036854775807 - 1) / -1\n"
                        "  li r1, (-9223372036854775807 - 1) % -1\n"
                        "  li r1, -(-9223372036854775807 - 1)\n"
                        "  li r1, 4 * 8 - 1\n"
                        "  li r1, -(3 - 10)\n");
  std::string d = format_diagnostics("p.s", a.errors);
  EXPECT_EQ(a.errors.size(), 6u) << d;
  // at the operator that overflows
  const char *where[] = {
      "p.s:1:28: ", "p.s:2:30: ", "p.s:3:31: ", "p.s:4:37: ", "p.s:5:37: ", "p.s:6:10: "};
  for (const char *w : where)
    EXPECT_NE(d.find(std::string(w) + "error: integer overflow: the value does not fit 64 bits"),
              std::string::npos)
        << w << d;
}

TEST(IsaDocs, ReadmeDocumentsEveryInstruction) {
  std::ifstream f(TL_NPU_ISA_README);
  ASSERT_TRUE(f) << TL_NPU_ISA_README;
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  for (int o = 0; o < static_cast<int>(Opcode::Count); ++o) {
    std::string m = std::string("`") + op_info(static_cast<Opcode>(o)).mnemonic + " ";
    std::string bare = std::string("`") + op_info(static_cast<Opcode>(o)).mnemonic + "`";
    EXPECT_TRUE(text.find(m) != std::string::npos || text.find(bare) != std::string::npos)
        << "README lacks " << op_info(static_cast<Opcode>(o)).mnemonic;
  }
}

} // namespace
} // namespace tl::npu::isa
