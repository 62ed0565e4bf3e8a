// nvptx lowering of values: types, memory formats, constants, elementwise ops and casts.
// Exact against the reference interpreter where the IR says exact (no fast-math, no FMA
// contraction: div.rn and sqrt.rn); transcendental math calls libdevice (linked as bitcode), whose
// documented error bounds sit inside tl-conform's table.
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"
#include "tl/backends/llvm_round_to_odd.h"
#include "tl/reference/numerics.h"

#include <llvm/IR/Intrinsics.h>

#include <cmath>
#include <limits>

namespace tl::nvptx {
using ir::Opcode;
using ir::ScalarKind;

llvm::Type *KernelEmitter::value_type(ScalarKind k, const ir::Operation &where) {
  switch (k) {
  case ScalarKind::I1:
    return b_.getInt1Ty();
  case ScalarKind::I8:
  case ScalarKind::U8:
    return b_.getInt8Ty();
  case ScalarKind::I16:
  case ScalarKind::U16:
    return b_.getInt16Ty();
  case ScalarKind::I32:
  case ScalarKind::U32:
    return b_.getInt32Ty();
  case ScalarKind::I64:
    return b_.getInt64Ty();
  case ScalarKind::F8E4M3:
  case ScalarKind::F8E5M2:
  case ScalarKind::F16:
  case ScalarKind::BF16:
  case ScalarKind::F32:
    return b_.getFloatTy();
  case ScalarKind::F64:
    return b_.getDoubleTy();
  default:
    unsupported(where, std::string(ir::scalar_name(k)) + " is not supported yet");
  }
}

llvm::Type *KernelEmitter::memory_type(ScalarKind k) {
  switch (k) {
  case ScalarKind::I1:
    return b_.getInt8Ty();
  case ScalarKind::F16:
  case ScalarKind::BF16:
    return b_.getInt16Ty();
  case ScalarKind::F32:
    return b_.getFloatTy();
  case ScalarKind::F64:
    return b_.getDoubleTy();
  default:
    return b_.getIntNTy(static_cast<unsigned>(ir::bit_width(k)));
  }
}

llvm::Value *KernelEmitter::from_memory(ScalarKind k, llvm::Value *bits) {
  switch (k) {
  case ScalarKind::I1:
    return b_.CreateICmpNE(bits, b_.getInt8(0));
  case ScalarKind::F16:
    return b_.CreateFPExt(b_.CreateBitCast(bits, b_.getHalfTy()), b_.getFloatTy());
  case ScalarKind::BF16: // bf16 is the high half of an f32
    return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(bits, b_.getInt32Ty()), 16),
                            b_.getFloatTy());
  case ScalarKind::F8E4M3:
  case ScalarKind::F8E5M2:
    return f8_decode(k, bits);
  default:
    return bits;
  }
}

llvm::Value *KernelEmitter::to_memory(ScalarKind k, llvm::Value *v) {
  switch (k) {
  case ScalarKind::I1:
    return b_.CreateZExt(v, b_.getInt8Ty());
  case ScalarKind::F16: // exact: the value is an f16 already
    return b_.CreateBitCast(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getInt16Ty());
  case ScalarKind::BF16:
    return b_.CreateTrunc(b_.CreateLShr(b_.CreateBitCast(v, b_.getInt32Ty()), 16), b_.getInt16Ty());
  case ScalarKind::F8E4M3:
  case ScalarKind::F8E5M2:
    return f8_encode(k, v);
  default:
    return v;
  }
}

llvm::Value *KernelEmitter::bf16_bits(llvm::Value *f32) {
  // Round to nearest even on the bits; NaN becomes the canonical quiet NaN.
  llvm::Value *bits = b_.CreateBitCast(f32, b_.getInt32Ty());
  llvm::Value *lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), b_.getInt32(1));
  llvm::Value *rounded =
      b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(lsb, b_.getInt32(0x7fff))), 16);
  llvm::Value *nan = b_.CreateFCmpUNO(f32, f32);
  return b_.CreateTrunc(b_.CreateSelect(nan, b_.getInt32(0x7fc0), rounded), b_.getInt16Ty());
}

llvm::Value *KernelEmitter::bf16_from_f64(llvm::Value *d) {
  // Round to odd into f32 first (the sticky bit survives), then to nearest even: one correct
  // rounding overall.
  llvm::Value *f = b_.CreateFPTrunc(d, b_.getFloatTy());
  llvm::Value *back = b_.CreateFPExt(f, b_.getDoubleTy());
  llvm::Value *bits = b_.CreateBitCast(f, b_.getInt32Ty());
  llvm::Value *inexact = b_.CreateFCmpONE(back, d);
  llvm::Value *even = b_.CreateICmpEQ(b_.CreateAnd(bits, b_.getInt32(1)), b_.getInt32(0));
  llvm::Value *away = b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                       b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
  llvm::Value *odd =
      b_.CreateSelect(away, b_.CreateSub(bits, b_.getInt32(1)), b_.CreateAdd(bits, b_.getInt32(1)));
  bits = b_.CreateSelect(b_.CreateAnd(inexact, even), odd, bits);
  return round_to(ScalarKind::BF16, b_.CreateBitCast(bits, b_.getFloatTy()));
}

namespace {

/// An fp8 format as reference/numerics describes it: `m` fraction bits, exponent bias, no
/// infinities for e4m3 (the OCP "fn" variant: all ones is NaN, max 448).
struct F8Format {
  int m, bias;
  bool has_inf;
  double max_finite;
  uint32_t nan_bits;
};

F8Format f8_format(ScalarKind k) {
  return k == ScalarKind::F8E4M3 ? F8Format{3, 7, false, 448.0, 0x7f}
                                 : F8Format{2, 15, true, 57344.0, 0x7e};
}

} // namespace

llvm::Value *KernelEmitter::f8_round(ScalarKind k, llvm::Value *v, const std::string &mode) {
  // In f64, where every step below is exact: the quantum q of x's binade in the format
  // (subnormals share the smallest normal binade's), x / q rounded to an integer by the mode, times
  // q. Then infinities, NaN and overflow as reference/numerics round_to says.
  const F8Format f = f8_format(k);
  const int emin = 1 - f.bias;
  llvm::Type *d = b_.getDoubleTy(), *i64 = b_.getInt64Ty();
  llvm::Value *x = v->getType()->isDoubleTy() ? v : b_.CreateFPExt(v, d);
  llvm::Value *a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value *e = b_.CreateSub(b_.CreateLShr(b_.CreateBitCast(a, i64), 52), b_.getInt64(1023));
  e = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, e, b_.getInt64(emin));
  llvm::Value *q =
      b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, b_.getInt64(1023 - f.m)), b_.getInt64(52)), d);
  const llvm::Intrinsic::ID id = mode == "rtz"  ? llvm::Intrinsic::trunc
                                 : mode == "rd" ? llvm::Intrinsic::floor
                                 : mode == "ru" ? llvm::Intrinsic::ceil
                                                : llvm::Intrinsic::rint;
  llvm::Value *r = b_.CreateFMul(b_.CreateUnaryIntrinsic(id, b_.CreateFDiv(x, q)), q);
  llvm::Value *negative = b_.CreateICmpSLT(b_.CreateBitCast(x, i64), b_.getInt64(0));
  // Overflow: toward a finite value (rtz; rd of a positive, ru of a negative) gives the largest
  // finite value, else infinity (e5m2) or NaN (e4m3).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double big = f.has_inf ? std::numeric_limits<double>::infinity() : nan;
  llvm::Value *toward_finite = mode == "rtz"  ? b_.getTrue()
                               : mode == "rd" ? b_.CreateNot(negative)
                               : mode == "ru" ? negative
                                              : b_.getFalse();
  llvm::Value *over_mag = b_.CreateSelect(toward_finite, llvm::ConstantFP::get(d, f.max_finite),
                                          llvm::ConstantFP::get(d, big));
  llvm::Value *over =
      b_.CreateSelect(negative, b_.CreateFNeg(over_mag), over_mag); // -NaN is still NaN
  llvm::Value *too_big = b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, r),
                                          llvm::ConstantFP::get(d, f.max_finite));
  r = b_.CreateSelect(too_big, over, r);
  // An infinite x: itself where the format has infinities, else NaN; NaN stays NaN.
  llvm::Value *is_inf = b_.CreateFCmpOEQ(a, llvm::ConstantFP::getInfinity(d));
  r = b_.CreateSelect(is_inf, f.has_inf ? x : llvm::ConstantFP::get(d, nan), r);
  r = b_.CreateSelect(b_.CreateFCmpUNO(x, x), llvm::ConstantFP::get(d, nan), r);
  return b_.CreateFPTrunc(r, b_.getFloatTy()); // exact: an f8 value
}

llvm::Value *KernelEmitter::f8_encode(ScalarKind k, llvm::Value *v) {
  // v is an f8 value held as f32 (a normal f32 unless zero, infinite or NaN).
  const F8Format f = f8_format(k);
  const int emin = 1 - f.bias;
  llvm::Type *i32 = b_.getInt32Ty();
  llvm::Value *bits = b_.CreateBitCast(v, i32);
  llvm::Value *sign = b_.CreateAnd(b_.CreateLShr(bits, 24), b_.getInt32(0x80));
  llvm::Value *a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v);
  llvm::Value *abits = b_.CreateBitCast(a, i32);
  llvm::Value *e = b_.CreateSub(b_.CreateLShr(abits, 23), b_.getInt32(127));
  llvm::Value *normal =
      b_.CreateOr(b_.CreateShl(b_.CreateAdd(e, b_.getInt32(f.bias)), b_.getInt32(f.m)),
                  b_.CreateAnd(b_.CreateLShr(abits, 23 - f.m), b_.getInt32((1 << f.m) - 1)));
  // Below the normal range: a whole number of the smallest subnormal (0 included).
  llvm::Value *sub = b_.CreateFPToUI(
      b_.CreateFMul(a, llvm::ConstantFP::get(b_.getFloatTy(), std::ldexp(1.0, f.m - emin))), i32);
  llvm::Value *mag = b_.CreateSelect(b_.CreateICmpSLT(e, b_.getInt32(emin)), sub, normal);
  if (f.has_inf)
    mag = b_.CreateSelect(b_.CreateFCmpOEQ(a, llvm::ConstantFP::getInfinity(b_.getFloatTy())),
                          b_.getInt32(0x7c), mag);
  llvm::Value *out = b_.CreateOr(sign, mag);
  out = b_.CreateSelect(b_.CreateFCmpUNO(v, v), b_.getInt32(f.nan_bits), out);
  return b_.CreateTrunc(out, b_.getInt8Ty());
}

llvm::Value *KernelEmitter::f8_decode(ScalarKind k, llvm::Value *byte) {
  const F8Format f = f8_format(k);
  const int emin = 1 - f.bias, ebits = 7 - f.m;
  llvm::Type *i32 = b_.getInt32Ty(), *fl = b_.getFloatTy();
  llvm::Value *bits = b_.CreateZExt(byte, i32);
  llvm::Value *field = b_.CreateAnd(b_.CreateLShr(bits, f.m), b_.getInt32((1 << ebits) - 1));
  llvm::Value *frac = b_.CreateAnd(bits, b_.getInt32((1 << f.m) - 1));
  // Normal: rebias the exponent into f32's; subnormal: frac smallest-subnormals.
  llvm::Value *normal = b_.CreateBitCast(
      b_.CreateOr(b_.CreateShl(b_.CreateAdd(field, b_.getInt32(127 - f.bias)), b_.getInt32(23)),
                  b_.CreateShl(frac, b_.getInt32(23 - f.m))),
      fl);
  llvm::Value *sub = b_.CreateFMul(b_.CreateUIToFP(frac, fl),
                                   llvm::ConstantFP::get(fl, std::ldexp(1.0, emin - f.m)));
  llvm::Value *mag = b_.CreateSelect(b_.CreateICmpEQ(field, b_.getInt32(0)), sub, normal);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  llvm::Value *all_ones = b_.CreateICmpEQ(field, b_.getInt32((1 << ebits) - 1));
  if (f.has_inf) // e5m2: exponent all ones is infinity (frac 0) or NaN
    mag = b_.CreateSelect(all_ones,
                          b_.CreateSelect(b_.CreateICmpEQ(frac, b_.getInt32(0)),
                                          llvm::ConstantFP::getInfinity(fl),
                                          llvm::ConstantFP::get(fl, nan)),
                          mag);
  else // e4m3fn: only all ones is NaN
    mag = b_.CreateSelect(b_.CreateAnd(all_ones, b_.CreateICmpEQ(frac, b_.getInt32(7))),
                          llvm::ConstantFP::get(fl, nan), mag);
  llvm::Value *negative = b_.CreateICmpNE(b_.CreateAnd(bits, b_.getInt32(0x80)), b_.getInt32(0));
  return b_.CreateSelect(negative, b_.CreateFNeg(mag), mag);
}

llvm::Value *KernelEmitter::round_to(ScalarKind k, llvm::Value *v) {
  if (k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2)
    return f8_round(k, v, "rne");
  if (k == ScalarKind::F16)
    return b_.CreateFPExt(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getFloatTy());
  if (k == ScalarKind::BF16)
    return from_memory(k, bf16_bits(v));
  return v;
}

llvm::Value *KernelEmitter::constant(ScalarKind k, const ir::Attr &a, const ir::Operation &where) {
  llvm::Type *t = value_type(k, where);
  if (ir::is_float(k)) {
    double d = std::holds_alternative<double>(a) ? std::get<double>(a)
               : std::holds_alternative<bool>(a) ? double(std::get<bool>(a))
                                                 : double(std::get<int64_t>(a));
    if (k == ScalarKind::F16)
      d = numerics::round_to(numerics::FloatFormat::F16, d);
    else if (k == ScalarKind::BF16)
      d = numerics::round_to(numerics::FloatFormat::BF16, d);
    else if (k == ScalarKind::F32)
      d = numerics::round_to(numerics::FloatFormat::F32, d);
    else if (k == ScalarKind::F8E4M3)
      d = numerics::round_to(numerics::FloatFormat::F8E4M3, d);
    else if (k == ScalarKind::F8E5M2)
      d = numerics::round_to(numerics::FloatFormat::F8E5M2, d);
    return llvm::ConstantFP::get(t, d);
  }
  const int64_t v = std::holds_alternative<bool>(a)     ? int64_t(std::get<bool>(a))
                    : std::holds_alternative<double>(a) ? int64_t(std::get<double>(a))
                                                        : std::get<int64_t>(a);
  return llvm::ConstantInt::get(t, static_cast<uint64_t>(v), /*IsSigned=*/true);
}

llvm::Value *KernelEmitter::libdevice(const char *name, ScalarKind k,
                                      const std::vector<llvm::Value *> &a) {
  // libdevice names: __nv_<fn>f for f32 (f16/bf16 compute in f32), __nv_<fn> for f64.
  const bool f64 = k == ScalarKind::F64;
  const std::string fn = std::string("__nv_") + name + (f64 ? "" : "f");
  llvm::Type *t = f64 ? b_.getDoubleTy() : b_.getFloatTy();
  std::vector<llvm::Type *> params(a.size(), t);
  llvm::FunctionCallee callee =
      module_.getOrInsertFunction(fn, llvm::FunctionType::get(t, params, false));
  return b_.CreateCall(callee, a);
}

llvm::Value *KernelEmitter::float_min_max(bool is_max, bool propagate_nan, llvm::Value *x,
                                          llvm::Value *y) {
  // -0 < +0 for both forms (ir.h); llvm.minimum/maximum order zeros and propagate NaN.
  llvm::Value *r = is_max ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, x, y)
                          : b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, x, y);
  if (propagate_nan)
    return r;
  // minimumNumber: a NaN operand yields the other.
  r = b_.CreateSelect(b_.CreateFCmpUNO(x, x), y, r);
  return b_.CreateSelect(b_.CreateFCmpUNO(y, y), x, r);
}

llvm::Value *KernelEmitter::elementwise(const ir::Operation &op,
                                        const std::vector<llvm::Value *> &a) {
  const ScalarKind k = op.operand(op.opcode() == Opcode::Select ? 1 : 0)->type().elem();
  switch (op.opcode()) {
  case Opcode::Select:
    return b_.CreateSelect(a[0], a[1], a[2]);
  case Opcode::Cast:
    return cast(op, a[0]);
  case Opcode::Bitcast: { // through the memory bits, so f16/bf16 reinterpret exactly
    const ScalarKind to = op.result()->type().elem();
    value_type(to, op);
    return from_memory(to, b_.CreateBitCast(to_memory(k, a[0]), memory_type(to)));
  }
  case Opcode::Cmp: {
    const std::string &p = *op.attr_as<std::string>("pred");
    if (ir::is_float(k)) {
      auto pred = p == "eq"   ? llvm::CmpInst::FCMP_OEQ
                  : p == "ne" ? llvm::CmpInst::FCMP_UNE
                  : p == "lt" ? llvm::CmpInst::FCMP_OLT
                  : p == "le" ? llvm::CmpInst::FCMP_OLE
                  : p == "gt" ? llvm::CmpInst::FCMP_OGT
                              : llvm::CmpInst::FCMP_OGE;
      return b_.CreateFCmp(pred, a[0], a[1]);
    }
    const bool s = ir::is_signed(k);
    auto pred = p == "eq"   ? llvm::CmpInst::ICMP_EQ
                : p == "ne" ? llvm::CmpInst::ICMP_NE
                : p == "lt" ? (s ? llvm::CmpInst::ICMP_SLT : llvm::CmpInst::ICMP_ULT)
                : p == "le" ? (s ? llvm::CmpInst::ICMP_SLE : llvm::CmpInst::ICMP_ULE)
                : p == "gt" ? (s ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_UGT)
                            : (s ? llvm::CmpInst::ICMP_SGE : llvm::CmpInst::ICMP_UGE);
    return b_.CreateICmp(pred, a[0], a[1]);
  }
  case Opcode::IsNan:
    return b_.CreateFCmpUNO(a[0], a[0]);
  case Opcode::IsInf:
    return b_.CreateFCmpOEQ(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a[0]),
                            llvm::ConstantFP::getInfinity(a[0]->getType()));
  case Opcode::IsFinite:
    return b_.CreateFCmpOLT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a[0]),
                            llvm::ConstantFP::getInfinity(a[0]->getType()));
  default:
    value_type(k, op);
    if (!ir::is_float(k))
      return int_op(op, k, a);
    return round_to(k, float_op(op, k, a));
  }
}

llvm::Value *KernelEmitter::float_op(const ir::Operation &op, ScalarKind k,
                                     const std::vector<llvm::Value *> &a) {
  llvm::Type *t = a[0]->getType();
  auto unary = [&](llvm::Intrinsic::ID id) { return b_.CreateUnaryIntrinsic(id, a[0]); };
  auto one = [&] { return llvm::ConstantFP::get(t, 1.0); };
  switch (op.opcode()) {
  case Opcode::Add:
    return b_.CreateFAdd(a[0], a[1]);
  case Opcode::Sub:
    return b_.CreateFSub(a[0], a[1]);
  case Opcode::Mul:
    return b_.CreateFMul(a[0], a[1]);
  case Opcode::Div:
    return b_.CreateFDiv(a[0], a[1]); // div.rn: correctly rounded
  case Opcode::Min:
  case Opcode::Max:
    return float_min_max(op.opcode() == Opcode::Max, true, a[0], a[1]);
  case Opcode::MinNum:
  case Opcode::MaxNum:
    return float_min_max(op.opcode() == Opcode::MaxNum, false, a[0], a[1]);
  case Opcode::Clamp:
    return float_min_max(false, true, float_min_max(true, true, a[0], a[1]), a[2]);
  case Opcode::Neg:
    return b_.CreateFNeg(a[0]);
  case Opcode::Abs:
    return unary(llvm::Intrinsic::fabs);
  case Opcode::Sqrt:
    return unary(llvm::Intrinsic::sqrt); // sqrt.rn
  case Opcode::Rsqrt:
    return b_.CreateFDiv(one(), unary(llvm::Intrinsic::sqrt));
  case Opcode::Fma:
    if (k == ScalarKind::F16 || k == ScalarKind::BF16 || k == ScalarKind::F8E4M3 ||
        k == ScalarKind::F8E5M2) {
      // Rounded once to the type, as the interpreter: a b + c rounded to odd in f64 first (in
      // f32 the sum rounded twice, to f32 and then to the type, and f64's round to nearest too
      // where c lies far below a b: one ulp off past a midpoint).
      llvm::Type *f64 = b_.getDoubleTy();
      llvm::Value *d = backends::f64_fma_round_to_odd(
          b_, b_.CreateFPExt(a[0], f64), b_.CreateFPExt(a[1], f64), b_.CreateFPExt(a[2], f64));
      if (k == ScalarKind::F16)
        return b_.CreateFPExt(b_.CreateFPTrunc(d, b_.getHalfTy()), b_.getFloatTy());
      if (k == ScalarKind::BF16)
        return bf16_from_f64(d);
      return f8_round(k, d, "rne");
    }
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {a[0], a[1], a[2]});
  case Opcode::Rint:
    return unary(llvm::Intrinsic::roundeven);
  case Opcode::Floor:
    return unary(llvm::Intrinsic::floor);
  case Opcode::Ceil:
    return unary(llvm::Intrinsic::ceil);
  case Opcode::Trunc:
    return unary(llvm::Intrinsic::trunc);
  case Opcode::Copysign:
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, a[0], a[1]);
  case Opcode::Sigmoid: {
    llvm::Value *e = libdevice("exp", k, {b_.CreateFNeg(a[0])});
    return b_.CreateFDiv(one(), b_.CreateFAdd(one(), e));
  }
  default:
    break;
  }
  static const std::pair<Opcode, const char *> kLibdevice[] = {
      {Opcode::Exp, "exp"},     {Opcode::Exp2, "exp2"},   {Opcode::Log, "log"},
      {Opcode::Log2, "log2"},   {Opcode::Tanh, "tanh"},   {Opcode::Erf, "erf"},
      {Opcode::Sin, "sin"},     {Opcode::Cos, "cos"},     {Opcode::Pow, "pow"},
      {Opcode::Tan, "tan"},     {Opcode::Asin, "asin"},   {Opcode::Acos, "acos"},
      {Opcode::Atan, "atan"},   {Opcode::Sinh, "sinh"},   {Opcode::Cosh, "cosh"},
      {Opcode::Log1p, "log1p"}, {Opcode::Expm1, "expm1"}, {Opcode::Erfinv, "erfinv"},
      {Opcode::Atan2, "atan2"}, {Opcode::Fmod, "fmod"}, // fmod: exact, C's special values
      {Opcode::Ndtr, "normcdf"}};                       // Phi: CUDA's normcdff / normcdf (5 ulp)
  for (auto [code, name] : kLibdevice)
    if (code == op.opcode()) {
      llvm::Value *r = libdevice(name, k, a);
      // fmod's result has x's sign, zeros included (libdevice gives +0 for fmod(-2, 2)).
      return op.opcode() == Opcode::Fmod
                 ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, a[0])
                 : r;
    }
  unsupported(op, "no floating-point form");
}

llvm::Value *KernelEmitter::int_op(const ir::Operation &op, ScalarKind k,
                                   const std::vector<llvm::Value *> &a) {
  const bool s = ir::is_signed(k);
  llvm::Type *t = a[0]->getType();
  const unsigned bits = t->getIntegerBitWidth();
  auto smin = [&](bool is_max, llvm::Value *x, llvm::Value *y) {
    const llvm::Intrinsic::ID id = is_max ? (s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax)
                                          : (s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
    return b_.CreateBinaryIntrinsic(id, x, y);
  };
  switch (op.opcode()) {
  case Opcode::Add:
    return b_.CreateAdd(a[0], a[1]);
  case Opcode::Sub:
    return b_.CreateSub(a[0], a[1]);
  case Opcode::Mul:
    return b_.CreateMul(a[0], a[1]);
  case Opcode::And:
    return b_.CreateAnd(a[0], a[1]);
  case Opcode::Or:
    return b_.CreateOr(a[0], a[1]);
  case Opcode::Xor:
    return b_.CreateXor(a[0], a[1]);
  case Opcode::Not:
    return b_.CreateNot(a[0]);
  case Opcode::Neg:
    return b_.CreateNeg(a[0]);
  case Opcode::Shl: // the amount is taken modulo the bit width
    return b_.CreateShl(a[0], b_.CreateURem(a[1], llvm::ConstantInt::get(t, bits)));
  case Opcode::Shr: {
    llvm::Value *amount = b_.CreateURem(a[1], llvm::ConstantInt::get(t, bits));
    return s ? b_.CreateAShr(a[0], amount) : b_.CreateLShr(a[0], amount);
  }
  case Opcode::Min:
  case Opcode::Max:
    return smin(op.opcode() == Opcode::Max, a[0], a[1]);
  case Opcode::Clamp:
    return smin(false, smin(true, a[0], a[1]), a[2]);
  case Opcode::Abs:
    return s ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a[0], b_.getFalse()) : a[0];
  case Opcode::Popcount:
    return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, a[0]);
  case Opcode::Clz:
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, a[0], b_.getFalse());
  case Opcode::Div:
  case Opcode::Rem: {
    // Division by zero is an error in the interpreter; here it is recorded, and the lane gets
    // a defined value (the divisor forced to 1). INT_MIN / -1 wraps as the interpreter's.
    llvm::Value *zero = llvm::ConstantInt::get(t, 0);
    llvm::Value *by_zero = b_.CreateICmpEQ(a[1], zero);
    record_error(op, "integer division by zero", by_zero);
    llvm::Value *d = b_.CreateSelect(by_zero, llvm::ConstantInt::get(t, 1), a[1]);
    const bool div = op.opcode() == Opcode::Div;
    if (!s)
      return div ? b_.CreateUDiv(a[0], d) : b_.CreateURem(a[0], d);
    llvm::Value *overflow = b_.CreateAnd(
        b_.CreateICmpEQ(a[0], llvm::ConstantInt::get(t, llvm::APInt::getSignedMinValue(bits))),
        b_.CreateICmpEQ(d, llvm::ConstantInt::getSigned(t, -1)));
    d = b_.CreateSelect(overflow, llvm::ConstantInt::get(t, 1), d);
    llvm::Value *r = div ? b_.CreateSDiv(a[0], d) : b_.CreateSRem(a[0], d);
    return div ? r : b_.CreateSelect(overflow, zero, r);
  }
  default:
    unsupported(op, "no integer form");
  }
}

llvm::Value *KernelEmitter::cast(const ir::Operation &op, llvm::Value *v) {
  const ScalarKind from = op.operand(0)->type().elem(), to = op.result()->type().elem();
  value_type(from, op);
  llvm::Type *t = value_type(to, op);
  const std::string mode(ir::cast_rounding(op));
  if (to == ScalarKind::I1) // x != 0 whatever the mode (NaN: 0)
    return ir::is_float(from) ? b_.CreateFCmpONE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                              : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  const bool to_f8 = to == ScalarKind::F8E4M3 || to == ScalarKind::F8E5M2;
  if (ir::is_float(from) && ir::is_float(to)) {
    if (to_f8) // one rounding from the source, whatever its width (f8 <-> f8 included)
      return from == to ? v : f8_round(to, v, mode);
    if (to == ScalarKind::F64)
      return b_.CreateFPExt(v, t);
    if (from != ScalarKind::F64 && ir::bit_width(to) >= ir::bit_width(from) &&
        to != ScalarKind::BF16 && from != ScalarKind::BF16)
      return v; // widening among f16 -> f32 (held as f32): exact
    return narrow(v, from, to, mode);
  }
  if (ir::is_float(from)) { // float -> integer: round by the mode, then saturate (NaN: 0)
    const llvm::Intrinsic::ID id = mode == "rne"  ? llvm::Intrinsic::roundeven
                                   : mode == "rd" ? llvm::Intrinsic::floor
                                   : mode == "ru" ? llvm::Intrinsic::ceil
                                                  : llvm::Intrinsic::trunc;
    llvm::Value *r = b_.CreateUnaryIntrinsic(id, v);
    return b_.CreateIntrinsic(ir::is_signed(to) ? llvm::Intrinsic::fptosi_sat
                                                : llvm::Intrinsic::fptoui_sat,
                              {t, r->getType()}, {r});
  }
  if (ir::is_float(to)) { // integer -> float: one rounding to the target type
    const bool s = ir::is_signed(from);
    if (mode != "rne") { // exact in f64, then rounded by the mode (it was ignored)
      if (ir::bit_width(from) > 32)
        unsupported(op, "rounding mode '" + mode + "' for i64 to float");
      llvm::Value *d =
          s ? b_.CreateSIToFP(v, b_.getDoubleTy()) : b_.CreateUIToFP(v, b_.getDoubleTy());
      if (to == ScalarKind::F64)
        return d;
      return to_f8 ? f8_round(to, d, mode) : narrow(d, ScalarKind::F64, to, mode);
    }
    if (to_f8) // exact in f64 up to 2^53; anything larger overflows f8 in any rounding
      return f8_round(
          to, s ? b_.CreateSIToFP(v, b_.getDoubleTy()) : b_.CreateUIToFP(v, b_.getDoubleTy()),
          "rne");
    if (to == ScalarKind::F16) {
      llvm::Value *h = s ? b_.CreateSIToFP(v, b_.getHalfTy()) : b_.CreateUIToFP(v, b_.getHalfTy());
      return b_.CreateFPExt(h, t);
    }
    if (to == ScalarKind::BF16 && ir::bit_width(from) > 16) {
      // Through f64: exact for 32-bit integers.
      llvm::Value *d =
          s ? b_.CreateSIToFP(v, b_.getDoubleTy()) : b_.CreateUIToFP(v, b_.getDoubleTy());
      if (ir::bit_width(from) > 32)
        unsupported(op, "64-bit integer to bf16 is not supported yet");
      return bf16_from_f64(d);
    }
    llvm::Value *f = s ? b_.CreateSIToFP(v, t) : b_.CreateUIToFP(v, t);
    return round_to(to, f); // bf16 from <= 16 bits: exact in f32, one rounding
  }
  // integer -> integer: extend by the source's signedness, or wrap.
  const unsigned fb = v->getType()->getIntegerBitWidth(), tb = t->getIntegerBitWidth();
  if (tb < fb)
    return b_.CreateTrunc(v, t);
  if (tb > fb)
    return ir::is_signed(from) ? b_.CreateSExt(v, t) : b_.CreateZExt(v, t);
  return v;
}

llvm::Value *KernelEmitter::narrow(llvm::Value *v, ScalarKind from, ScalarKind to,
                                   const std::string &mode) {
  // To nearest even first, in one rounding from the source.
  llvm::Value *r;
  if (from == ScalarKind::F64)
    r = to == ScalarKind::F32 ? b_.CreateFPTrunc(v, b_.getFloatTy())
        : to == ScalarKind::F16
            ? b_.CreateFPExt(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getFloatTy())
            : bf16_from_f64(v);
  else
    r = round_to(to, v);
  if (mode == "rne")
    return r;
  // A directed mode moves the nearest value one step when it went the wrong way: the step is
  // +-1 on the target's bits (sign-magnitude), which also turns an overflow to infinity into the
  // largest finite value and an underflow to zero into the smallest subnormal, as IEEE says.
  llvm::Type *wide = v->getType();
  llvm::Value *back = r->getType() == wide ? r : b_.CreateFPExt(r, wide);
  llvm::Value *magnitude_up = b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                               b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v));
  llvm::Value *toward_zero, *away;
  if (mode == "rtz") {
    toward_zero = magnitude_up;
    away = b_.getFalse();
  } else {
    // rd: too high (r > x) steps down; ru: too low steps up. Down is toward zero for a positive r.
    llvm::Value *high = b_.CreateFCmpOGT(back, v), *low = b_.CreateFCmpOLT(back, v);
    llvm::Value *negative = b_.CreateICmpSLT(
        b_.CreateBitCast(r, r->getType()->isFloatTy() ? b_.getInt32Ty() : b_.getInt64Ty()),
        llvm::ConstantInt::get(r->getType()->isFloatTy() ? b_.getInt32Ty() : b_.getInt64Ty(), 0));
    llvm::Value *wrong = mode == "rd" ? high : low;
    // rd on a positive (ru on a negative) result moves toward zero; else away from it.
    llvm::Value *to_zero_side = mode == "rd" ? b_.CreateNot(negative) : negative;
    toward_zero = b_.CreateAnd(wrong, to_zero_side);
    away = b_.CreateAnd(wrong, b_.CreateNot(to_zero_side));
  }
  // Step on the target format's bits.
  llvm::Type *bits_t = to == ScalarKind::F32 ? b_.getInt32Ty() : b_.getInt16Ty();
  llvm::Value *bits = to == ScalarKind::F32   ? b_.CreateBitCast(r, bits_t)
                      : to == ScalarKind::F16 ? to_memory(ScalarKind::F16, r)
                                              : to_memory(ScalarKind::BF16, r);
  llvm::Value *one = llvm::ConstantInt::get(bits_t, 1);
  bits = b_.CreateSelect(toward_zero, b_.CreateSub(bits, one),
                         b_.CreateSelect(away, b_.CreateAdd(bits, one), bits));
  return to == ScalarKind::F32 ? b_.CreateBitCast(bits, b_.getFloatTy()) : from_memory(to, bits);
}

llvm::Value *KernelEmitter::combine(const std::string &kind, ScalarKind k, llvm::Value *acc,
                                    llvm::Value *x) {
  if (kind == "sum")
    return ir::is_float(k) ? round_to(k, b_.CreateFAdd(acc, x)) : b_.CreateAdd(acc, x);
  const bool is_max = kind == "max";
  if (ir::is_float(k))
    return float_min_max(is_max, true, acc, x);
  const bool s = ir::is_signed(k);
  const llvm::Intrinsic::ID id = is_max ? (s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax)
                                        : (s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
  return b_.CreateBinaryIntrinsic(id, acc, x);
}

} // namespace tl::nvptx
