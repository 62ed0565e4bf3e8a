// The TNPU instruction set: opcodes, operands, the 64-bit binary encoding and program files.
// SPDX-License-Identifier: Apache-2.0
//
// Shared by the simulator and the compiler's tnpu backend, so it is plain C++17: no SystemC.
// Every instruction is one 64-bit little-endian word:
//   bits  0..7   opcode
//   bits  8..13  slot 0  -+
//   bits 14..19  slot 1   |  register (r0..r31), queue, semaphore or config field, in the order
//   bits 20..25  slot 2   |  the operand signature lists them (see OpInfo::operands)
//   bits 26..31  slot 3  -+
//   bits 32..63  imm      signed 32-bit immediate, or a branch offset in instructions from this one
// Unused slots and an unused immediate are zero; decode() rejects anything else, so every program
// has exactly one encoding and binary -> text -> binary is the identity. sim/isa/README.md
// documents every instruction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::npu::isa {

#define TL_NPU_OPCODES(X)                                                                          \
  X(Nop, "nop", "")                                                                                \
  X(Halt, "halt", "")                                                                              \
  X(Li, "li", "r,i")                                                                               \
  X(Lih, "lih", "r,i")                                                                             \
  X(Mov, "mov", "r,r")                                                                             \
  X(Add, "add", "r,r,r")                                                                           \
  X(Sub, "sub", "r,r,r")                                                                           \
  X(Mul, "mul", "r,r,r")                                                                           \
  X(And, "and", "r,r,r")                                                                           \
  X(Or, "or", "r,r,r")                                                                             \
  X(Xor, "xor", "r,r,r")                                                                           \
  X(Shl, "shl", "r,r,r")                                                                           \
  X(Shr, "shr", "r,r,r")                                                                           \
  X(Min, "min", "r,r,r")                                                                           \
  X(Max, "max", "r,r,r")                                                                           \
  X(Addi, "addi", "r,r,i")                                                                         \
  X(Muli, "muli", "r,r,i")                                                                         \
  X(Andi, "andi", "r,r,i")                                                                         \
  X(Shli, "shli", "r,r,i")                                                                         \
  X(Shri, "shri", "r,r,i")                                                                         \
  X(Beq, "beq", "r,r,l")                                                                           \
  X(Bne, "bne", "r,r,l")                                                                           \
  X(Blt, "blt", "r,r,l")                                                                           \
  X(Bge, "bge", "r,r,l")                                                                           \
  X(Jmp, "jmp", "l")                                                                               \
  X(Dbnz, "dbnz", "r,l")                                                                           \
  X(CoreId, "coreid", "r")                                                                         \
  X(NCores, "ncores", "r")                                                                         \
  X(SemSig, "sem.sig", "q,s,i")                                                                    \
  X(SemWait, "sem.wait", "q,s,i")                                                                  \
  X(Fence, "fence", "")                                                                            \
  X(Barrier, "barrier", "")                                                                        \
  X(DmaCfg, "dma.cfg", "f,r")                                                                      \
  X(DmaCfgi, "dma.cfgi", "f,i")                                                                    \
  X(DmaLd, "dma.ld", "q,r,r")                                                                      \
  X(DmaSt, "dma.st", "q,r,r")                                                                      \
  X(MxCfg, "mx.cfg", "f,r")                                                                        \
  X(MxCfgi, "mx.cfgi", "f,i")                                                                      \
  X(MxPre, "mx.pre", "r")                                                                          \
  X(MxMm, "mx.mm", "r,r")                                                                          \
  X(MxMma, "mx.mma", "r,r")                                                                        \
  X(VCfg, "v.cfg", "f,r")                                                                          \
  X(VCfgi, "v.cfgi", "f,i")                                                                        \
  X(VAdd, "v.add", "r,r,r")                                                                        \
  X(VSub, "v.sub", "r,r,r")                                                                        \
  X(VMul, "v.mul", "r,r,r")                                                                        \
  X(VMax, "v.max", "r,r,r")                                                                        \
  X(VMin, "v.min", "r,r,r")                                                                        \
  X(VAdds, "v.adds", "r,r,r")                                                                      \
  X(VMuls, "v.muls", "r,r,r")                                                                      \
  X(VMaxs, "v.maxs", "r,r,r")                                                                      \
  X(VExp, "v.exp", "r,r")                                                                          \
  X(VCopy, "v.copy", "r,r")                                                                        \
  X(VCvt, "v.cvt", "r,r")                                                                          \
  X(VRsum, "v.rsum", "r,r")                                                                        \
  X(VRmax, "v.rmax", "r,r")                                                                        \
  X(VFill, "v.fill", "r,r")                                                                        \
  /* Appended after the first release: earlier opcodes keep their numbers. */                      \
  X(Ld, "ld", "r,r,i")                                                                             \
  X(Ldw, "ldw", "r,r,i")                                                                           \
  X(Ldb, "ldb", "r,r,i")                                                                           \
  X(St, "st", "r,r,i")                                                                             \
  X(Stw, "stw", "r,r,i")                                                                           \
  X(Stb, "stb", "r,r,i")                                                                           \
  X(Div, "div", "r,r,r")                                                                           \
  X(Rem, "rem", "r,r,r")                                                                           \
  X(Sra, "sra", "r,r,r")                                                                           \
  X(DmaGather, "dma.gather", "q,r,r,r")                                                            \
  X(DmaScatter, "dma.scatter", "q,r,r,r")                                                          \
  X(DmaAtAdd, "dma.atadd", "q,r,r,r")                                                              \
  X(VDiv, "v.div", "r,r,r")                                                                        \
  X(VRem, "v.rem", "r,r,r")                                                                        \
  X(VAnd, "v.and", "r,r,r")                                                                        \
  X(VOr, "v.or", "r,r,r")                                                                          \
  X(VXor, "v.xor", "r,r,r")                                                                        \
  X(VShl, "v.shl", "r,r,r")                                                                        \
  X(VShr, "v.shr", "r,r,r")                                                                        \
  X(VPow, "v.pow", "r,r,r")                                                                        \
  X(VCeq, "v.ceq", "r,r,r")                                                                        \
  X(VCne, "v.cne", "r,r,r")                                                                        \
  X(VClt, "v.clt", "r,r,r")                                                                        \
  X(VCle, "v.cle", "r,r,r")                                                                        \
  X(VCgt, "v.cgt", "r,r,r")                                                                        \
  X(VCge, "v.cge", "r,r,r")                                                                        \
  X(VNeg, "v.neg", "r,r")                                                                          \
  X(VAbs, "v.abs", "r,r")                                                                          \
  X(VNot, "v.not", "r,r")                                                                          \
  X(VSqrt, "v.sqrt", "r,r")                                                                        \
  X(VRsqrt, "v.rsqrt", "r,r")                                                                      \
  X(VExp2, "v.exp2", "r,r")                                                                        \
  X(VLog, "v.log", "r,r")                                                                          \
  X(VLog2, "v.log2", "r,r")                                                                        \
  X(VTanh, "v.tanh", "r,r")                                                                        \
  X(VErf, "v.erf", "r,r")                                                                          \
  X(VSigmoid, "v.sigmoid", "r,r")                                                                  \
  X(VSin, "v.sin", "r,r")                                                                          \
  X(VCos, "v.cos", "r,r")                                                                          \
  X(VFma, "v.fma", "r,r,r,r")                                                                      \
  X(VSel, "v.sel", "r,r,r,r")                                                                      \
  X(VIota, "v.iota", "r,r,r")                                                                      \
  X(VIcvt, "v.icvt", "r,r")                                                                        \
  X(VScopy, "v.scopy", "r,r")                                                                      \
  X(VRmin, "v.rmin", "r,r")                                                                        \
  X(VRargmax, "v.rargmax", "r,r")                                                                  \
  X(VCsum, "v.csum", "r,r")                                                                        \
  X(VCmax, "v.cmax", "r,r")                                                                        \
  X(VCmin, "v.cmin", "r,r")                                                                        \
  X(VCargmax, "v.cargmax", "r,r")                                                                  \
  X(VCumsum, "v.cumsum", "r,r")                                                                    \
  X(VCummax, "v.cummax", "r,r")                                                                    \
  X(VCummin, "v.cummin", "r,r")                                                                    \
  X(Bltu, "bltu", "r,r,l")                                                                         \
  X(Bgeu, "bgeu", "r,r,l")                                                                         \
  X(Divu, "divu", "r,r,r")                                                                         \
  X(Remu, "remu", "r,r,r")                                                                         \
  X(Trap, "trap", "i")                                                                             \
  X(VTan, "v.tan", "r,r")                                                                          \
  X(VAsin, "v.asin", "r,r")                                                                        \
  X(VAcos, "v.acos", "r,r")                                                                        \
  X(VAtan, "v.atan", "r,r")                                                                        \
  X(VSinh, "v.sinh", "r,r")                                                                        \
  X(VCosh, "v.cosh", "r,r")                                                                        \
  X(VLog1p, "v.log1p", "r,r")                                                                      \
  X(VExpm1, "v.expm1", "r,r")                                                                      \
  X(VErfinv, "v.erfinv", "r,r")                                                                    \
  X(VRint, "v.rint", "r,r")                                                                        \
  X(VFloor, "v.floor", "r,r")                                                                      \
  X(VCeil, "v.ceil", "r,r")                                                                        \
  X(VTrunc, "v.trunc", "r,r")                                                                      \
  X(VIsnan, "v.isnan", "r,r")                                                                      \
  X(VIsinf, "v.isinf", "r,r")                                                                      \
  X(VIsfinite, "v.isfinite", "r,r")                                                                \
  X(VPopcnt, "v.popcnt", "r,r")                                                                    \
  X(VClz, "v.clz", "r,r")                                                                          \
  X(VMaxnum, "v.maxnum", "r,r,r")                                                                  \
  X(VMinnum, "v.minnum", "r,r,r")                                                                  \
  X(VAtan2, "v.atan2", "r,r,r")                                                                    \
  X(VFmod, "v.fmod", "r,r,r")                                                                      \
  X(VCopysign, "v.copysign", "r,r,r")                                                              \
  X(VNdtr, "v.ndtr", "r,r")

enum class Opcode : uint8_t {
#define TL_NPU_ENUM(name, mnemonic, operands) name,
  TL_NPU_OPCODES(TL_NPU_ENUM)
#undef TL_NPU_ENUM
      Count
};

/// Which part of a core executes an instruction.
enum class Unit : uint8_t { Scalar, Sync, Dma, Matrix, Vector };

/// Queues a command can be placed on. Values are the encoding of a `q` operand.
enum class Queue : uint8_t { Cp = 0, Mx = 1, Vec = 2, Dma0 = 8 };
constexpr int kMaxDmaQueues = 8;
constexpr int kNumRegs = 32;
constexpr int kNumSemaphores = 64;

/// Configuration registers of the DMA descriptor (dma.cfg): element size in bytes; box extents in
/// elements (n0 innermost); HBM and local strides in bytes of dimensions 1 and 2; valid extents
/// (elements at or beyond them read as `pad` and are not written); the pad bit pattern.
/// Indexed commands (dma.gather / dma.scatter / dma.atadd) add: index bytes (4 or 8), the dtype of
/// dma.atadd (f32 or i32), and what an out-of-bounds index does (0 fault, 1 pad / skip, 2 negative
/// indices pad / skip and the others fault).
enum class DmaField : uint8_t {
  ESize,
  N0,
  N1,
  N2,
  HS1,
  HS2,
  LS1,
  LS2,
  V0,
  V1,
  V2,
  Pad,
  ISz,
  ADt,
  Oob,
  L0, ///< first valid index of each dimension (dma.ld / dma.st; default 0)
  L1,
  L2,
  Count
};
/// Matrix unit configuration (mx.cfg): input mode (a DType value: bf16, f16, i8, f32), streamed
/// rows m, reduction depth k, output columns n, and row strides in bytes of A, W and C.
enum class MxField : uint8_t { Mode, M, K, N, Lda, Ldw, Ldc, Count };
/// Vector unit configuration (v.cfg): elements per row n, rows, row strides in bytes of the
/// destination and the two sources, the source / destination dtypes of v.cvt; then the element
/// dtype of arithmetic `t`, unsigned integers `u`, the rounding direction of v.cvt `rm`, the third
/// source's row stride `sc`, and the element strides in bytes of v.scopy's source and destination.
enum class VecField : uint8_t { N, Rows, Sd, Sa, Sb, Src, Dst, T, U, Rm, Sc, Ea, Ed, Count };

/// Local addresses at or above this are in the accumulator SRAM; below, the scratchpad SRAM.
constexpr uint64_t kAccBase = uint64_t{1} << 32;

struct OpInfo {
  Opcode op;
  const char *mnemonic;
  /// Comma-separated operand kinds: r register, i immediate, l label (branch target), q queue,
  /// s semaphore, f config field of the instruction's unit.
  const char *operands;
  Unit unit;
};

const OpInfo &op_info(Opcode op);
/// nullptr if no instruction has this mnemonic.
const OpInfo *find_op(const std::string &mnemonic);

/// Name of a config field of `unit` (Dma, Matrix or Vector), or nullptr if out of range.
const char *field_name(Unit unit, int field);
int field_count(Unit unit);
/// Queue name ("cp", "mx", "vec", "dma0".."dma7") or nullptr if not a queue encoding.
const char *queue_name(int q);

/// One decoded instruction: slots hold operands in signature order (immediates live in imm).
struct Instr {
  Opcode op = Opcode::Nop;
  uint8_t slot[4] = {0, 0, 0, 0};
  int32_t imm = 0;
  bool operator==(const Instr &o) const;
};

uint64_t encode(const Instr &in);
/// Decodes one word; on failure returns false and sets `error` (what is wrong with the word).
bool decode(uint64_t word, Instr &out, std::string &error);

/// Program file: 8-byte magic "TNPU\1\0\0\0", u64 instruction count, then the words.
std::vector<uint8_t> to_binary(const std::vector<Instr> &code);
/// Parses a program file; on failure returns false and sets `error` (naming the word index).
bool from_binary(const std::vector<uint8_t> &bytes, std::vector<Instr> &code, std::string &error);

} // namespace tl::npu::isa
