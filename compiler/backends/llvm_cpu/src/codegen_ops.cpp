// llvm-cpu lowering of value ops: sources, shapes, elementwise arithmetic, casts, dot, reduce.
// Every op is exact against the reference interpreter except transcendental math (SLEEF and the
// inline exp, within 1 ulp): no fast-math flags, no FMA contraction, reductions in ascending
// index order.
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"
#include "vector_math.h"

#include <limits>

#include <llvm/IR/Intrinsics.h>

namespace tl::llvm_cpu {
using ir::Opcode;
using ir::ScalarKind;

namespace {
std::vector<int64_t> strides_of(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}
} // namespace

void KernelCodegen::lower_source(const ir::Operation &op) {
  const ir::Type &t = op.result()->type();
  Slot &out = slot(op.result());
  auto fill = [&](llvm::Value *v) {
    loop(out.n, [&](llvm::Value *i) { b_.CreateStore(v, elem_ptr(out, i)); });
  };
  auto constant = [&](const ir::Attr *a) { return attr_constant(t.elem(), *a); };
  switch (op.opcode()) {
  case Opcode::ProgramId:
    return fill(b_.CreateTrunc(pid_[*op.attr_as<int64_t>("axis")], out.elem));
  case Opcode::NumPrograms: {
    auto *lt = llvm::StructType::get(ctx_, {b_.getPtrTy(), llvm::ArrayType::get(b_.getInt64Ty(), 3),
                                            b_.getPtrTy()});
    llvm::Value *g = b_.CreateInBoundsGEP(
        lt, launch_, {i64(0), b_.getInt32(1), i64(*op.attr_as<int64_t>("axis"))});
    return fill(b_.CreateTrunc(b_.CreateLoad(b_.getInt64Ty(), g), out.elem));
  }
  case Opcode::Constant: case Opcode::Full:
    return fill(constant(op.attr("value")));
  case Opcode::Constexpr: {
    const ir::ConstexprParam *p = kernel_.find_constexpr(*op.attr_as<std::string>("name"));
    ir::Attr a = std::visit([](auto v) { return ir::Attr(v); }, p->value);
    return fill(constant(&a));
  }
  case Opcode::TensorDim: case Opcode::TensorStride:
    return fill(arg_field(arg_index_.at(op.operand(0)), op.opcode() == Opcode::TensorDim ? 1 : 2,
                          i64(*op.attr_as<int64_t>("axis"))));
  case Opcode::Arange: {
    const int64_t start = *op.attr_as<int64_t>("start");
    return loop(out.n, [&](llvm::Value *i) {
      b_.CreateStore(b_.CreateTrunc(b_.CreateAdd(i, i64(start)), out.elem), elem_ptr(out, i));
    });
  }
  default:
    unsupported(op, "unknown op");
  }
}

void KernelCodegen::lower_shape(const ir::Operation &op) {
  const ir::Type &in_t = op.operand(0)->type(), &out_t = op.result()->type();
  if (op.opcode() == Opcode::Reshape || op.opcode() == Opcode::ExpandDims) {
    slots_[op.result()] = slot(op.operand(0)); // same elements in the same order: share storage
    return;
  }
  Slot src = slot(op.operand(0)), &out = slot(op.result());
  if (op.opcode() == Opcode::Splat) {
    llvm::Value *v = b_.CreateLoad(src.elem, src.ptr);
    return loop(out.n, [&](llvm::Value *i) { b_.CreateStore(v, elem_ptr(out, i)); });
  }
  // broadcast and transpose: out[idx] = in[map(idx)], walking out's multi-index by division.
  const std::vector<int64_t> in_strides = strides_of(in_t.shape());
  const std::vector<int64_t> out_strides = strides_of(out_t.shape());
  std::vector<int64_t> src_stride_of_dim(out_t.rank());
  if (op.opcode() == Opcode::Broadcast) {
    for (int d = 0; d < out_t.rank(); ++d)
      src_stride_of_dim[d] = in_t.shape()[d] == 1 ? 0 : in_strides[d];
  } else {
    const auto &perm = *op.attr_as<std::vector<int64_t>>("perm");
    for (int d = 0; d < out_t.rank(); ++d)
      src_stride_of_dim[d] = in_strides[perm[d]];
  }
  loop(out.n, [&](llvm::Value *i) {
    llvm::Value *src_index = i64(0);
    for (int d = 0; d < out_t.rank(); ++d) {
      llvm::Value *coord = b_.CreateURem(b_.CreateUDiv(i, i64(out_strides[d])), i64(out_t.shape()[d]));
      src_index = b_.CreateAdd(src_index, b_.CreateMul(coord, i64(src_stride_of_dim[d])));
    }
    b_.CreateStore(b_.CreateLoad(src.elem, elem_ptr(src, src_index)), elem_ptr(out, i));
  });
}

void KernelCodegen::lower_elementwise(const ir::Operation &op) {
  Slot &out = slot(op.result());
  // Full reductions of this result accumulate in the same loop (plan_reduce_fusion).
  std::vector<const ir::Operation *> reduces;
  if (auto it = fused_reduces_.find(&op); it != fused_reduces_.end())
    reduces = it->second;
  const ScalarKind k = op.result()->type().elem();
  for (const ir::Operation *r : reduces) {
    Slot &acc = slot(r->result());
    b_.CreateStore(reduce_identity(*r->attr_as<std::string>("kind"), k, acc.elem), acc.ptr);
  }
  auto body = [&](llvm::Value *i) {
    std::vector<llvm::Value *> a;
    for (const ir::Value *v : op.operands())
      a.push_back(lane_value(v, i));
    llvm::Value *v = elementwise_value(op, a, i);
    b_.CreateStore(v, elem_ptr(out, i));
    for (const ir::Operation *r : reduces) {
      Slot &acc = slot(r->result());
      const std::string &kind = *r->attr_as<std::string>("kind");
      llvm::Value *next = round_to(k, combine(kind, k, b_.CreateLoad(acc.elem, acc.ptr), v));
      if (kind == "sum" && (k == ScalarKind::F32 || k == ScalarKind::F64))
        llvm::cast<llvm::Instruction>(next)->setHasAllowReassoc(true);
      b_.CreateStore(next, acc.ptr);
    }
  };
  lane_loop(out.n, body);
}

llvm::Value *KernelCodegen::elementwise_value(const ir::Operation &op, std::vector<llvm::Value *> a,
                                              llvm::Value *lane) {
  llvm::Value *r = elementwise_lane(op, std::move(a), lane);
  const ScalarKind rk = op.result()->type().elem();
  const bool narrow_float = rk == ScalarKind::F16 || rk == ScalarKind::BF16 ||
                            rk == ScalarKind::F8E4M3 || rk == ScalarKind::F8E5M2;
  if (narrow_float && op.opcode() != Opcode::Select && op.opcode() != Opcode::Bitcast &&
      op.opcode() != Opcode::Cast)
    r = round_to(rk, r); // values of narrow types are held as f32 rounded to the type
  return r;
}

llvm::Value *KernelCodegen::elementwise_lane(const ir::Operation &op, std::vector<llvm::Value *> a,
                                             llvm::Value *lane) {
  const ScalarKind k = op.operand(op.opcode() == Opcode::Select ? 1 : 0)->type().elem();
  switch (op.opcode()) {
  case Opcode::Select:
    return b_.CreateSelect(a[0], a[1], a[2]);
  case Opcode::Cast:
    return cast_lane(op, a[0]);
  case Opcode::Bitcast: { // through the storage bits, so that f16/bf16 values reinterpret exactly
    const ScalarKind to = op.result()->type().elem();
    llvm::Value *bits = b_.CreateBitCast(to_storage(k, a[0]), storage_type(to));
    return from_storage(to, bits);
  }
  case Opcode::Cmp: {
    const std::string &p = *op.attr_as<std::string>("pred");
    if (ir::is_float(k)) {
      auto pred = p == "eq" ? llvm::CmpInst::FCMP_OEQ : p == "ne" ? llvm::CmpInst::FCMP_UNE
                : p == "lt" ? llvm::CmpInst::FCMP_OLT : p == "le" ? llvm::CmpInst::FCMP_OLE
                : p == "gt" ? llvm::CmpInst::FCMP_OGT : llvm::CmpInst::FCMP_OGE;
      return b_.CreateFCmp(pred, a[0], a[1]);
    }
    const bool s = ir::is_signed(k);
    auto pred = p == "eq" ? llvm::CmpInst::ICMP_EQ : p == "ne" ? llvm::CmpInst::ICMP_NE
              : p == "lt" ? (s ? llvm::CmpInst::ICMP_SLT : llvm::CmpInst::ICMP_ULT)
              : p == "le" ? (s ? llvm::CmpInst::ICMP_SLE : llvm::CmpInst::ICMP_ULE)
              : p == "gt" ? (s ? llvm::CmpInst::ICMP_SGT : llvm::CmpInst::ICMP_UGT)
                          : (s ? llvm::CmpInst::ICMP_SGE : llvm::CmpInst::ICMP_UGE);
    return b_.CreateICmp(pred, a[0], a[1]);
  }
  default:
    return ir::is_float(k) ? float_lane(op, k, a) : int_lane(op, k, a, lane);
  }
}

llvm::Value *KernelCodegen::float_lane(const ir::Operation &op, ScalarKind k,
                                       std::vector<llvm::Value *> a) {
  llvm::Type *t = a[0]->getType();
  auto sleef = [&](const char *fn) { // 1.0 ulp, vectorized (vector_math.h)
    return sleef_call(b_, module_, fn, a, vector_bits_);
  };
  auto unary = [&](llvm::Intrinsic::ID id) { return b_.CreateUnaryIntrinsic(id, a[0]); };
  switch (op.opcode()) {
  case Opcode::Add: return b_.CreateFAdd(a[0], a[1]);
  case Opcode::Sub: return b_.CreateFSub(a[0], a[1]);
  case Opcode::Mul: return b_.CreateFMul(a[0], a[1]);
  case Opcode::Div: return b_.CreateFDiv(a[0], a[1]);
  case Opcode::Min: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, a[0], a[1]);
  case Opcode::Max: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a[0], a[1]);
  case Opcode::Pow: return sleef("pow");
  case Opcode::Neg: return b_.CreateFNeg(a[0]);
  case Opcode::Abs: return unary(llvm::Intrinsic::fabs);
  case Opcode::Exp: return t->isFloatTy() ? exp_f32(a[0]) : sleef("exp");
  case Opcode::Exp2: return sleef("exp2");
  case Opcode::Log: return sleef("log");
  case Opcode::Log2: return sleef("log2");
  case Opcode::Sqrt: return unary(llvm::Intrinsic::sqrt);
  case Opcode::Sin: return sleef("sin");
  case Opcode::Cos: return sleef("cos");
  case Opcode::Rsqrt:
    return b_.CreateFDiv(llvm::ConstantFP::get(t, 1.0), unary(llvm::Intrinsic::sqrt));
  case Opcode::Tanh: return sleef("tanh");
  case Opcode::Erf: return sleef("erf");
  case Opcode::Sigmoid: {
    a[0] = b_.CreateFNeg(a[0]);
    llvm::Value *e = t->isFloatTy() ? exp_f32(a[0]) : sleef("exp");
    llvm::Value *one = llvm::ConstantFP::get(t, 1.0);
    return b_.CreateFDiv(one, b_.CreateFAdd(one, e));
  }
  case Opcode::Fma:
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {a[0], a[1], a[2]});
  default:
    unsupported(op, "no floating-point form");
  }
}

// exp of an f32 inline, so that the loop vectorizer widens it to the full SIMD width without a
// call (softmax's hot loop; other math calls SLEEF): x = n ln2 + r with |r| <= ln2/2 (Cody-Waite,
// ln2 split in two so that n ln2 is exact to 32 bits), e^r by a degree-6 polynomial (relative
// error 3.1e-9), scaled by 2^n rounding once for subnormal results: vscalefps with AVX-512, else
// two exact powers of two. Measured: see LlvmCpu.ExpF32IsWithinTwoUlps (4M f32 across the
// range); the conformance bound for exp is 3 ulp.
llvm::Value *KernelCodegen::exp_f32(llvm::Value *x) {
  llvm::Type *t = x->getType(), *it = b_.getInt32Ty();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto fma = [&](llvm::Value *p, llvm::Value *q, llvm::Value *r) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, q, r});
  };
  // Clamp where e^x is already 0 or inf in f32; ordered compares keep a NaN, which then flows
  // through the polynomial (its n is frozen: any integer, the product stays NaN).
  llvm::Value *xc = b_.CreateSelect(b_.CreateFCmpOLT(x, c(-104.0)), c(-104.0), x);
  xc = b_.CreateSelect(b_.CreateFCmpOGT(xc, c(89.0)), c(89.0), xc);
  llvm::Value *nf = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven,
                                            b_.CreateFMul(xc, c(1.44269504088896341)));
  llvm::Value *r = fma(nf, c(-0.693145751953125), xc);    // ln2 high part: 16 bits, exact product
  r = fma(nf, c(-1.4286068203094172e-06), r);             // ln2 - high part
  // e^r = 1 + r + r^2 q(r), q of degree 4 fitted for the relative error of e^r over the range
  // (weighted least squares on Chebyshev nodes: 3.1e-9, against 1.2e-7 for the degree-6 Taylor
  // polynomial), so one FMA less than the degree-7 Taylor polynomial.
  llvm::Value *p = c(0.0013814590638503432);
  for (double k : {0.008368711918592453, 0.04166838899254799, 0.1666652113199234,
                   0.4999999403953552, 1.0, 1.0})
    p = fma(p, r, c(k));
  if (isa_.avx512f && !t->isVectorTy()) // vscalefps: one instruction (x86_isa.h)
    return x86::scalef(b_, module_, isa_, p, nf);
  llvm::Value *n = b_.CreateFreeze(b_.CreateFPToSI(nf, it)); // in [-150, 129]; NaN: any
  llvm::Value *n1 = b_.CreateAShr(n, 1), *n2 = b_.CreateSub(n, n1);
  auto pow2 = [&](llvm::Value *e) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, b_.getInt32(127)), 23), t);
  };
  return b_.CreateFMul(b_.CreateFMul(p, pow2(n1)), pow2(n2));
}

llvm::Value *KernelCodegen::int_lane(const ir::Operation &op, ScalarKind k,
                                     std::vector<llvm::Value *> a, llvm::Value *lane) {
  const bool s = ir::is_signed(k);
  llvm::Type *t = a[0]->getType();
  const unsigned bits = t->getIntegerBitWidth();
  switch (op.opcode()) {
  case Opcode::Add: return b_.CreateAdd(a[0], a[1]);
  case Opcode::Sub: return b_.CreateSub(a[0], a[1]);
  case Opcode::Mul: return b_.CreateMul(a[0], a[1]);
  case Opcode::And: return b_.CreateAnd(a[0], a[1]);
  case Opcode::Or: return b_.CreateOr(a[0], a[1]);
  case Opcode::Xor: return b_.CreateXor(a[0], a[1]);
  case Opcode::Not: return b_.CreateNot(a[0]);
  case Opcode::Neg: return b_.CreateNeg(a[0]);
  case Opcode::Shl: // the amount is taken modulo the bit width
    return b_.CreateShl(a[0], b_.CreateURem(a[1], llvm::ConstantInt::get(t, bits)));
  case Opcode::Shr: {
    llvm::Value *amt = b_.CreateURem(a[1], llvm::ConstantInt::get(t, bits));
    return s ? b_.CreateAShr(a[0], amt) : b_.CreateLShr(a[0], amt);
  }
  case Opcode::Min:
    return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a[0], a[1]);
  case Opcode::Max:
    return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a[0], a[1]);
  case Opcode::Abs:
    return s ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a[0], b_.getFalse()) : a[0];
  case Opcode::Div: case Opcode::Rem: {
    llvm::Value *zero = llvm::ConstantInt::get(t, 0);
    fail_if(b_.CreateICmpEQ(a[1], zero), op, "integer division by zero", lane, nullptr);
    const bool div = op.opcode() == Opcode::Div;
    if (!s)
      return div ? b_.CreateUDiv(a[0], a[1]) : b_.CreateURem(a[0], a[1]);
    // MIN / -1 wraps to MIN (remainder 0) instead of trapping.
    llvm::Value *minus_one = b_.CreateICmpEQ(a[1], llvm::ConstantInt::getSigned(t, -1));
    llvm::Value *safe = b_.CreateSelect(minus_one, llvm::ConstantInt::get(t, 1), a[1]);
    llvm::Value *q = div ? b_.CreateSDiv(a[0], safe) : b_.CreateSRem(a[0], safe);
    return b_.CreateSelect(minus_one, div ? b_.CreateNeg(a[0]) : zero, q);
  }
  default:
    unsupported(op, "no integer form");
  }
}

/// Rounds f32 to tf32 (10 mantissa bits) to nearest even; inf and NaN pass unchanged.
llvm::Value *KernelCodegen::round_tf32(llvm::Value *x) {
  llvm::Value *bits = b_.CreateBitCast(x, b_.getInt32Ty());
  llvm::Value *lsb = b_.CreateAnd(b_.CreateLShr(bits, 13), b_.getInt32(1));
  llvm::Value *r = b_.CreateAnd(b_.CreateAdd(bits, b_.CreateAdd(b_.getInt32(0xfff), lsb)),
                                b_.getInt32(~0x1fff));
  llvm::Value *finite = b_.CreateFCmpONE(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x),
                                         llvm::ConstantFP::getInfinity(b_.getFloatTy()));
  return b_.CreateSelect(finite, b_.CreateBitCast(r, b_.getFloatTy()), x);
}

/// Float narrowing with a rounding mode: round to nearest even, then step one unit toward the
/// mode's direction when that result lies on the wrong side of the exact value (NaN unchanged).
llvm::Value *KernelCodegen::narrow(llvm::Value *x, ScalarKind from, ScalarKind to,
                                   const std::string &mode) {
  llvm::Type *wide = x->getType();
  llvm::Value *bits, *back;
  if (to == ScalarKind::F32) { // from f64
    bits = b_.CreateBitCast(b_.CreateFPTrunc(x, b_.getFloatTy()), b_.getInt32Ty());
    back = b_.CreateFPExt(b_.CreateBitCast(bits, b_.getFloatTy()), wide);
  } else { // f32 (or f16/bf16 held as f32) to f16/bf16
    bits = to_storage(to, x);
    back = from_storage(to, bits);
  }
  if (mode != "rne") {
    llvm::Type *it = bits->getType();
    llvm::Value *one = llvm::ConstantInt::get(it, 1);
    llvm::Value *negative = b_.CreateICmpSLT(bits, llvm::ConstantInt::get(it, 0));
    llvm::Value *abs_back = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back);
    llvm::Value *abs_x = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
    llvm::Value *shrink; // step the magnitude down (bits - 1), or else up (bits + 1)
    llvm::Value *step;
    if (mode == "rtz") {
      step = b_.CreateFCmpOGT(abs_back, abs_x);
      shrink = b_.getTrue();
    } else if (mode == "rd") {
      step = b_.CreateFCmpOGT(back, x);
      shrink = b_.CreateNot(negative);
    } else { // ru
      step = b_.CreateFCmpOLT(back, x);
      shrink = negative;
    }
    llvm::Value *stepped = b_.CreateSelect(shrink, b_.CreateSub(bits, one), b_.CreateAdd(bits, one));
    bits = b_.CreateSelect(step, stepped, bits);
  }
  if (to == ScalarKind::F32)
    return b_.CreateBitCast(bits, b_.getFloatTy());
  return from_storage(to, bits);
}

llvm::Value *KernelCodegen::cast_lane(const ir::Operation &op, llvm::Value *v) {
  const ScalarKind from = op.operand(0)->type().elem(), to = op.result()->type().elem();
  llvm::Type *t = llvm_type(to, &op);
  const std::string *rounding = op.attr_as<std::string>("rounding");
  const bool rne = !rounding || *rounding == "rne";
  if (ir::is_float(from) && ir::is_float(to)) {
    if (ir::bit_width(to) >= ir::bit_width(from) && from != ScalarKind::BF16 && to != ScalarKind::BF16)
      return b_.CreateFPCast(v, t); // widening is exact
    if (to == ScalarKind::F8E4M3 || to == ScalarKind::F8E5M2) { // one rounding, from the source
      const std::string m = rne ? "rne" : *rounding;
      const int mode = m == "rtz" ? 1 : m == "rd" ? 2 : m == "ru" ? 3 : 0;
      llvm::Value *format = b_.getInt32(to == ScalarKind::F8E4M3 ? 0 : 1);
      llvm::Value *r = f8_call("tl_cpu_f8_round",
                               {format, b_.getInt32(mode), b_.CreateFPCast(v, b_.getDoubleTy())},
                               b_.getDoubleTy());
      return b_.CreateFPTrunc(r, b_.getFloatTy());
    }
    if (from == ScalarKind::F64 && (to == ScalarKind::F16 || to == ScalarKind::BF16))
      unsupported(op, "f64 to " + std::string(ir::scalar_name(to)) + " (f64 -> f32 -> " +
                          std::string(ir::scalar_name(to)) + " would round twice)");
    if (from != ScalarKind::F64 && to == ScalarKind::F32)
      return v; // f16/bf16/f8 values are f32 already, exactly
    if (ir::bit_width(to) >= ir::bit_width(from) && to != ScalarKind::F64)
      return round_to(to, v); // f8 -> f16/bf16: exact for e5m2->f16; rounds e4m3 only if needed
    return narrow(v, from, to, rne ? "rne" : *rounding);
  }
  if (ir::is_float(from)) { // toward zero, saturating, NaN -> 0
    if (to == ScalarKind::I1)
      return b_.CreateFCmpONE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b_.CreateIntrinsic(ir::is_signed(to) ? llvm::Intrinsic::fptosi_sat
                                                : llvm::Intrinsic::fptoui_sat,
                              {t, v->getType()}, {v});
  }
  if (ir::is_float(to)) {
    if (!rne && ir::bit_width(from) > 24)
      unsupported(op, "rounding mode '" + *rounding + "' for integer to float");
    if ((to == ScalarKind::F16 || to == ScalarKind::BF16 || ir::bit_width(to) == 8) &&
        ir::bit_width(from) > 16)
      unsupported(op, "integers wider than 16 bits to " + std::string(ir::scalar_name(to)));
    return round_to(to, ir::is_signed(from) ? b_.CreateSIToFP(v, t) : b_.CreateUIToFP(v, t));
  }
  if (to == ScalarKind::I1)
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  return b_.CreateIntCast(v, t, ir::is_signed(from));
}

void KernelCodegen::lower_dot(const ir::Operation &op) {
  const ir::Type &at = op.operand(0)->type(), &bt = op.operand(1)->type();
  const int64_t M = at.shape()[0], K = at.shape()[1], N = bt.shape()[1];
  Slot a = slot(op.operand(0)), bs = slot(op.operand(1)), &c = slot(op.result());
  const ScalarKind acc = op.result()->type().elem();
  if (const std::string *p = op.attr_as<std::string>("input_precision"); p && *p != "ieee") {
    // Round copies of the inputs first (the verifier allows this for f32 inputs only).
    auto rounded = [&](const Slot &src) {
      Slot r = new_slot(ir::Type::tile(ScalarKind::F32, {src.n}));
      loop(src.n, [&](llvm::Value *i) {
        llvm::Value *x = b_.CreateLoad(src.elem, elem_ptr(src, i));
        b_.CreateStore(*p == "bf16" ? round_to(ScalarKind::BF16, x) : round_tf32(x), elem_ptr(r, i));
      }, "prec");
      return r;
    };
    a = rounded(a);
    bs = rounded(bs);
  }
  const uint64_t bytes = module_.getDataLayout().getTypeAllocSize(c.elem) * c.n;
  if (op.num_operands() == 3) {
    Slot init = slot(op.operand(2));
    if (init.ptr != c.ptr) // in place when the accumulator is a loop-carried value (lower_for)
      b_.CreateMemCpy(c.ptr, llvm::MaybeAlign(64), init.ptr, llvm::MaybeAlign(64), bytes);
  } else {
    b_.CreateMemSet(c.ptr, b_.getInt8(0), bytes, llvm::MaybeAlign(64));
  }
  const bool fl = ir::is_float(acc);
  int64_t m_done = 0, n_done = 0;
  // f16 / bf16 / f8 inputs are held as the f32 values they are, so with an f32 (or f64)
  // accumulator every step is the same fma as for f32 inputs: the micro-kernel applies as is.
  // (avx512_bf16's vdpbf16ps is not used: it adds each pair of products in the opposite order
  // and flushes subnormals, where the IR's dot is one fma per k in ascending order.)
  if (fl && (acc == ScalarKind::F32 || acc == ScalarKind::F64) && a.elem == c.elem &&
      bs.elem == c.elem)
    dot_microkernel(a, bs, c, M, K, N, &m_done, &n_done);
  auto widen = [&](llvm::Value *x, ScalarKind from) {
    return fl ? b_.CreateFPCast(x, c.elem) : b_.CreateIntCast(x, c.elem, ir::is_signed(from));
  };
  // What the micro-kernel left (all of it for integers): the rows below m_done, and the columns
  // right of n_done. i-k-j order: each c[i][j] still accumulates k in ascending order.
  auto rest = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (i0 >= i1 || j0 >= j1)
      return;
    loop(i64(i0), i64(i1), [&](llvm::Value *i) {
      loop(K, [&](llvm::Value *k) {
        llvm::Value *aik = widen(b_.CreateLoad(a.elem, elem_ptr(a, b_.CreateAdd(b_.CreateMul(i, i64(K)), k))),
                                 at.elem());
        loop(i64(j0), i64(j1), [&](llvm::Value *j) {
          llvm::Value *bkj = widen(b_.CreateLoad(bs.elem, elem_ptr(bs, b_.CreateAdd(b_.CreateMul(k, i64(N)), j))),
                                   bt.elem());
          llvm::Value *cp = elem_ptr(c, b_.CreateAdd(b_.CreateMul(i, i64(N)), j));
          llvm::Value *cij = b_.CreateLoad(c.elem, cp);
          llvm::Value *sum = fl ? b_.CreateIntrinsic(llvm::Intrinsic::fma, {c.elem}, {aik, bkj, cij})
                                : b_.CreateAdd(cij, b_.CreateMul(aik, bkj));
          b_.CreateStore(round_to(acc, sum), cp);
        }, "j");
      }, "k");
    }, "i");
  };
  rest(0, m_done, n_done, N);
  rest(m_done, M, 0, N);
}

/// The register-blocked micro-kernel: MR x NR blocks of c held in vector registers across the
/// whole k loop (one broadcast of a and NR/VL loads of b per k and row block, one fma each).
void KernelCodegen::dot_microkernel(const Slot &a, const Slot &bs, const Slot &c, int64_t M,
                                    int64_t K, int64_t N, int64_t *m_done, int64_t *n_done) {
  const unsigned elem_bits = c.elem->getPrimitiveSizeInBits();
  const unsigned VL = std::max(1u, vector_bits_ / elem_bits);
  const int64_t NV = 2, NR = NV * VL, MR = vector_bits_ >= 512 ? 8 : 4;
  const int64_t mb = M / MR, nb = N / NR;
  if (mb == 0 || nb == 0 || VL < 2)
    return;
  *m_done = mb * MR;
  *n_done = nb * NR;
  auto *vt = llvm::FixedVectorType::get(c.elem, VL);
  const llvm::Align align(c.elem->getPrimitiveSizeInBits() / 8);
  loop(mb, [&](llvm::Value *ib) {
    llvm::Value *i0 = b_.CreateMul(ib, i64(MR));
    loop(nb, [&](llvm::Value *jb) {
      llvm::Value *j0 = b_.CreateMul(jb, i64(NR));
      auto cptr = [&](int64_t r, int64_t v) {
        return elem_ptr(c, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(i0, i64(r)), i64(N)),
                                        b_.CreateAdd(j0, i64(v * VL))));
      };
      std::vector<llvm::Value *> init;
      for (int64_t r = 0; r < MR; ++r)
        for (int64_t v = 0; v < NV; ++v)
          init.push_back(b_.CreateAlignedLoad(vt, cptr(r, v), align));
      llvm::BasicBlock *pre = b_.GetInsertBlock();
      auto *body = llvm::BasicBlock::Create(ctx_, "mk.k", fn_);
      auto *exit = llvm::BasicBlock::Create(ctx_, "mk.exit", fn_);
      b_.CreateBr(body);
      b_.SetInsertPoint(body);
      llvm::PHINode *k = b_.CreatePHI(b_.getInt64Ty(), 2, "k");
      k->addIncoming(i64(0), pre);
      std::vector<llvm::PHINode *> accs;
      for (llvm::Value *v : init) {
        accs.push_back(b_.CreatePHI(vt, 2));
        accs.back()->addIncoming(v, pre);
      }
      std::vector<llvm::Value *> bv;
      for (int64_t v = 0; v < NV; ++v)
        bv.push_back(b_.CreateAlignedLoad(
            vt, elem_ptr(bs, b_.CreateAdd(b_.CreateMul(k, i64(N)), b_.CreateAdd(j0, i64(v * VL)))),
            align));
      std::vector<llvm::Value *> next(accs.size());
      for (int64_t r = 0; r < MR; ++r) {
        llvm::Value *ar = b_.CreateLoad(
            a.elem, elem_ptr(a, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(i0, i64(r)), i64(K)), k)));
        llvm::Value *splat = b_.CreateVectorSplat(VL, ar);
        for (int64_t v = 0; v < NV; ++v)
          next[r * NV + v] = b_.CreateIntrinsic(llvm::Intrinsic::fma, {vt},
                                                {splat, bv[v], accs[r * NV + v]});
      }
      llvm::Value *k1 = b_.CreateAdd(k, i64(1));
      for (size_t x = 0; x < accs.size(); ++x)
        accs[x]->addIncoming(next[x], b_.GetInsertBlock());
      k->addIncoming(k1, b_.GetInsertBlock());
      b_.CreateCondBr(b_.CreateICmpSLT(k1, i64(K)), body, exit);
      b_.SetInsertPoint(exit);
      for (int64_t r = 0; r < MR; ++r)
        for (int64_t v = 0; v < NV; ++v)
          b_.CreateAlignedStore(next[r * NV + v], cptr(r, v), align);
    }, "jb");
  }, "ib");
}

llvm::Value *KernelCodegen::combine(const std::string &kind, ScalarKind k, llvm::Value *acc,
                                    llvm::Value *x) {
  const bool fl = ir::is_float(k), s = ir::is_signed(k);
  if (kind == "sum")
    return fl ? b_.CreateFAdd(acc, x) : b_.CreateAdd(acc, x);
  if (kind == "max")
    return b_.CreateBinaryIntrinsic(fl ? llvm::Intrinsic::maximum
                                       : s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, acc, x);
  return b_.CreateBinaryIntrinsic(fl ? llvm::Intrinsic::minimum
                                     : s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, acc, x);
}

/// x with combine(kind, identity, x) == x for every x of type `k` (NaN included).
llvm::Value *KernelCodegen::reduce_identity(const std::string &kind, ScalarKind k, llvm::Type *t) {
  if (ir::is_float(k)) {
    const double inf = std::numeric_limits<double>::infinity();
    return llvm::ConstantFP::get(t, kind == "sum" ? -0.0 : kind == "max" ? -inf : inf);
  }
  const unsigned bits = t->getIntegerBitWidth();
  if (kind == "sum")
    return llvm::ConstantInt::get(t, 0);
  const bool s = ir::is_signed(k), max = kind == "max";
  return llvm::ConstantInt::get(t->getContext(), s ? (max ? llvm::APInt::getSignedMinValue(bits)
                                                          : llvm::APInt::getSignedMaxValue(bits))
                                                   : (max ? llvm::APInt::getMinValue(bits)
                                                          : llvm::APInt::getMaxValue(bits)));
}

/// reduce/scan along `axis`: outer x len x inner. The k loop is outside the inner loop so that
/// the inner loop vectorizes while each element still combines in ascending k.
void KernelCodegen::lower_reduce_scan(const ir::Operation &op) {
  const ir::Type &t = op.operand(0)->type();
  const int64_t axis = *op.attr_as<int64_t>("axis");
  const std::string &kind = *op.attr_as<std::string>("kind");
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < t.rank(); ++d)
    (d < axis ? outer : inner) *= d == axis ? 1 : t.shape()[d];
  const int64_t len = t.shape()[axis];
  Slot &out = slot(op.result());
  const ir::Value *x = op.operand(0);
  const bool scan = op.opcode() == Opcode::Scan, argmax = kind == "argmax";
  auto at = [&](llvm::Value *o, llvm::Value *k, llvm::Value *in) {
    return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(o, i64(len)), k), i64(inner)), in);
  };
  auto dst = [&](llvm::Value *o, llvm::Value *k, llvm::Value *in) {
    return scan ? at(o, k, in) : b_.CreateAdd(b_.CreateMul(o, i64(inner)), in);
  };
  if (!scan && !argmax && outer == 1 && inner == 1) {
    // One accumulator over all lanes, from the kind's identity (the same result as starting
    // from element 0, and the loads stay aligned).
    llvm::Value *acc = elem_ptr(out, i64(0));
    b_.CreateStore(reduce_identity(kind, t.elem(), out.elem), acc);
    loop(len, [&](llvm::Value *k) {
      llvm::Value *next = round_to(t.elem(), combine(kind, t.elem(), b_.CreateLoad(out.elem, acc),
                                                     lane_value(x, k)));
      if (kind == "sum" && (t.elem() == ScalarKind::F32 || t.elem() == ScalarKind::F64))
        llvm::cast<llvm::Instruction>(next)->setHasAllowReassoc(true);
      b_.CreateStore(next, acc);
    });
    return;
  }
  Slot best = argmax ? new_slot(ir::Type::tile(t.elem(), {inner})) : Slot{};
  loop(outer, [&](llvm::Value *o) {
    loop(inner, [&](llvm::Value *in) { // element 0 starts every combination
      llvm::Value *x0 = lane_value(x, at(o, i64(0), in));
      if (argmax) {
        b_.CreateStore(x0, elem_ptr(best, in));
        b_.CreateStore(b_.getInt32(0), elem_ptr(out, dst(o, i64(0), in)));
      } else {
        b_.CreateStore(x0, elem_ptr(out, dst(o, i64(0), in)));
      }
    }, "in0");
    loop(i64(1), i64(len), [&](llvm::Value *k) {
      loop(inner, [&](llvm::Value *in) {
        llvm::Value *xv = lane_value(x, at(o, k, in));
        if (argmax) { // the first maximum; NaN counts as the largest value
          llvm::Value *bp = elem_ptr(best, in);
          llvm::Value *cur = b_.CreateLoad(best.elem, bp);
          llvm::Value *greater;
          if (ir::is_float(t.elem()))
            greater = b_.CreateAnd(b_.CreateFCmpORD(cur, cur),
                                   b_.CreateOr(b_.CreateFCmpUNO(xv, xv), b_.CreateFCmpOGT(xv, cur)));
          else
            greater = ir::is_signed(t.elem()) ? b_.CreateICmpSGT(xv, cur) : b_.CreateICmpUGT(xv, cur);
          b_.CreateStore(b_.CreateSelect(greater, xv, cur), bp);
          llvm::Value *op_ = elem_ptr(out, dst(o, k, in));
          b_.CreateStore(b_.CreateSelect(greater, b_.CreateTrunc(k, b_.getInt32Ty()),
                                         b_.CreateLoad(b_.getInt32Ty(), op_)), op_);
          return;
        }
        llvm::Value *prev = b_.CreateLoad(out.elem, elem_ptr(out, dst(o, scan ? b_.CreateSub(k, i64(1)) : k, in)));
        llvm::Value *next = round_to(t.elem(), combine(kind, t.elem(), prev, xv));
        // A float reduce-sum may associate freely (tl/ir/ir.h): let the vectorizer split it.
        if (!scan && kind == "sum" && (t.elem() == ScalarKind::F32 || t.elem() == ScalarKind::F64))
          llvm::cast<llvm::Instruction>(next)->setHasAllowReassoc(true);
        b_.CreateStore(next, elem_ptr(out, dst(o, k, in)));
      }, "in");
    }, "k");
  }, "o");
}

} // namespace tl::llvm_cpu
