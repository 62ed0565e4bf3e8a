// Bit-exact integer models of the arithmetic the TNPU units perform (see sim/numerics/SPEC.md).
// SPDX-License-Identifier: Apache-2.0
//
// Semantics this header promises (SPEC.md has the full text):
//  - Values travel as raw bit patterns (uint16_t for bf16/f16, uint32_t for f32); no host
//    floating-point operation is used, so no result depends on the host's FPU or rounding mode —
//    except the math functions log, log2, exp2, tanh, erf, sigmoid, sin, cos, pow, tan, asin,
//    acos, atan, atan2, sinh, cosh, log1p, expm1, erfinv and ndtr, which round the host C
//    library's double result once (SPEC.md bounds the error; erfinv refines a host-double
//    estimate).
//  - The matrix unit's MAC is fused: the product of two inputs is exact, and product + accumulator
//    is rounded once to f32, round-to-nearest-even. Integer MACs wrap modulo 2^32.
//  - Subnormals are kept everywhere (no flush to zero), on inputs and outputs.
//  - Any NaN operand gives the canonical quiet NaN (f32 0x7fc00000, bf16 0x7fc0, f16 0x7e00);
//    inf * 0 and inf - inf give it too. Exact zero sums are +0 (x + -x), except -0 + -0 = -0.
//  - Narrowing conversions (f32 -> bf16 / f16) round to nearest even with IEEE overflow to inf;
//    f32 -> i8 rounds to nearest even and saturates (NaN -> 0).
//  - Plain C++17 (it is built into the C++17 SystemC model too).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tl::npu::num {

/// Element types the units read and write.
enum class DType : uint8_t { BF16 = 0, F16 = 1, F32 = 2, I8 = 3, I32 = 4 };

/// Rounding direction of a conversion (the vector unit's `rm` field; arithmetic always rounds to
/// nearest even).
enum class Round : uint8_t { NearestEven = 0, TowardZero = 1, Down = 2, Up = 3 };

/// Bytes per element.
int dtype_size(DType t);
/// Lower-case name ("bf16", "f16", "f32", "i8", "i32").
const char *dtype_name(DType t);

constexpr uint32_t kF32CanonicalNaN = 0x7fc00000u;
constexpr uint16_t kBF16CanonicalNaN = 0x7fc0u;
constexpr uint16_t kF16CanonicalNaN = 0x7e00u;
constexpr uint32_t kF32NegZero = 0x80000000u;

// --- conversions --------------------------------------------------------------------------------
uint32_t bf16_to_f32(uint16_t x); ///< exact
uint32_t f16_to_f32(uint16_t x);  ///< exact
uint16_t f32_to_bf16(uint32_t x); ///< nearest even, overflow to inf, NaN canonical
uint16_t f32_to_f16(uint32_t x);  ///< nearest even, subnormals kept, overflow to inf
int8_t f32_to_i8(uint32_t x);     ///< nearest even, saturating to [-128, 127], NaN -> 0
uint32_t i32_to_f32(int32_t x);   ///< nearest even
int32_t f32_to_i32(uint32_t x);   ///< nearest even, saturating, NaN -> 0

// --- f32 arithmetic (all with one rounding, nearest even) ----------------------------------------
uint32_t f32_fma(uint32_t a, uint32_t b, uint32_t c); ///< a * b + c, rounded once
uint32_t f32_add(uint32_t a, uint32_t b);
uint32_t f32_sub(uint32_t a, uint32_t b);
uint32_t f32_mul(uint32_t a, uint32_t b);
uint32_t f32_max(uint32_t a, uint32_t b); ///< NaN if either is NaN; -0 < +0
uint32_t f32_min(uint32_t a, uint32_t b); ///< NaN if either is NaN; -0 < +0
/// e^x by the vector unit's algorithm (SPEC.md, "exp"): range reduction by ln 2 in two parts,
/// a degree-6 polynomial and an exact power-of-two scale. At most 2 ulp from the true value.
uint32_t f32_exp(uint32_t x);

/// The vector unit's element conversion `from` -> `to` (v.cvt). Float results and float -> integer
/// conversions round in direction `r`; float -> integer saturates (NaN -> 0). Integer -> integer
/// narrowing saturates. `is_unsigned` reads and writes the integer side as u8 / u32.
uint32_t convert(DType from, DType to, uint32_t bits, Round r = Round::NearestEven,
                 bool is_unsigned = false);
/// Integer -> integer with wrap-around (v.icvt): narrowing keeps the low bits, widening sign-
/// extends (zero-extends if `is_unsigned`).
uint32_t int_resize(DType from, DType to, uint32_t bits, bool is_unsigned);

// --- typed elementwise operations of the vector unit (its `t` field) -----------------------------
// Float dtypes (BF16, F16, F32): the exact result is rounded once to t, nearest even; inputs and
// results are t's bit patterns in the low bits. Integer dtypes (I8, I32): operands are sign-
// extended (zero-extended if `is_unsigned`), the operation is exact, the result wraps to t's width.

/// (MaxNum, MinNum, Atan2, Fmod, Copysign appended after the first release: floats only.)
enum class BinOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Rem,
  Max,
  Min,
  And,
  Or,
  Xor,
  Shl,
  Shr,
  Pow,
  MaxNum,
  MinNum,
  Atan2,
  Fmod,
  Copysign
};
enum class UnOp : uint8_t {
  Neg,
  Abs,
  Not,
  Sqrt,
  Rsqrt,
  Exp,
  Exp2,
  Log,
  Log2,
  Tanh,
  Erf,
  Sigmoid,
  Sin,
  Cos,
  // Appended: floats only except Popcount and Clz (integers only).
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Log1p,
  Expm1,
  Erfinv,
  Rint,
  Floor,
  Ceil,
  Trunc,
  Popcount,
  Clz,
  Ndtr // appended after the integer-only pair: floats only
};
enum class CmpOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };
/// Class tests of a float (the vector unit writes them as byte masks, like compares).
enum class ClassOp : uint8_t { IsNan, IsInf, IsFinite };

bool is_float(DType t);
/// Whether `op` is defined on dtype t (Rem and the bit operations are integer only, Pow and the
/// math functions float only).
bool defined_on(BinOp op, DType t);
bool defined_on(UnOp op, DType t);
/// a op b. Integer Div / Rem by zero give all ones / a (the vector unit faults before that);
/// INT_MIN / -1 wraps (remainder 0); Shl / Shr shift by b mod the width, Shr is arithmetic for
/// signed and logical for unsigned operands. Float Max / Min as f32_max / f32_min; MaxNum /
/// MinNum ignore one NaN operand; Fmod and Copysign are exact; Rint / Floor / Ceil / Trunc are
/// exact (integer arithmetic on the bits); Erfinv is SPEC.md's Newton refinement; Pow, Atan2 and
/// the other math functions of UnOp are SPEC.md's "host double, rounded once" functions.
/// Popcount / Clz count the bits of t's width (Clz(0) = the width).
uint32_t binary(BinOp op, DType t, uint32_t a, uint32_t b, bool is_unsigned = false);
uint32_t unary(UnOp op, DType t, uint32_t a, bool is_unsigned = false);
/// Whether float `a` of dtype t is in the class (t must be a float dtype).
bool classify(ClassOp op, DType t, uint32_t a);
/// a * b + c rounded once to t (integers: wrapping).
uint32_t fma(DType t, uint32_t a, uint32_t b, uint32_t c);
/// Float: IEEE comparisons (-0 == +0; with a NaN operand only Ne is true). Integer: signed or
/// unsigned per `is_unsigned`.
bool compare(CmpOp op, DType t, uint32_t a, uint32_t b, bool is_unsigned = false);
/// a / b, sqrt(a) and 1 / sqrt(a) in f32, correctly rounded (integer arithmetic on the bits).
uint32_t f32_div(uint32_t a, uint32_t b);
uint32_t f32_sqrt(uint32_t a);
uint32_t f32_rsqrt(uint32_t a);

// --- the matrix unit's multiply-accumulate
// --------------------------------------------------------
/// acc + a * b for inputs of type `in` (BF16, F16 or F32 bit patterns in the low bits), fused.
uint32_t mac_f32(DType in, uint32_t a, uint32_t b, uint32_t acc);
/// acc + a * b for int8 inputs, wrapping modulo 2^32.
int32_t mac_i8(int8_t a, int8_t b, int32_t acc);

/// The reference GEMM in the matrix unit's accumulation order: for each (i, j), starting from
/// `init` (the accumulator's value, or -0.0 / 0 for an overwriting first pass), it applies the MAC
/// for k = 0, 1, ..., K-1 in that order. A is M x K (row stride lda elements), B is K x N (ldb),
/// C is M x N f32 / i32 bit patterns (ldc). Element bits are read from byte buffers of dtype `in`.
void gemm_reference(DType in, int M, int N, int K, const uint8_t *A, size_t lda, const uint8_t *B,
                    size_t ldb, uint32_t *C, size_t ldc, bool accumulate);

/// Reads element `i` of a byte buffer of type `t` as its bit pattern (sign-extended for I8/I32 is
/// not applied: the raw bits, zero-extended).
uint32_t load_bits(DType t, const uint8_t *base, size_t i);
/// Writes the low bits of `bits` as element `i` of type `t`.
void store_bits(DType t, uint8_t *base, size_t i, uint32_t bits);

} // namespace tl::npu::num
