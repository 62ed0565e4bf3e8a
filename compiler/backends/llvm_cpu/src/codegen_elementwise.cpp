// llvm-cpu lowering of elementwise ops: arithmetic, comparisons, casts with rounding modes and
// the narrow float types, the inline f32 exp, erf and tanh, and erfinv. Every op is exact against
// the reference interpreter except transcendental math (SLEEF and the inline exp, within 1 ulp;
// erfinv, within ~1 ulp): no fast-math flags, no FMA contraction. SPDX-License-Identifier:
// Apache-2.0
#include "codegen.h"

#include "plan_attrs.h"
#include "tl/backends/llvm_round_to_odd.h"
#include "vector_math.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Intrinsics.h>

namespace tl::llvm_cpu {
using ir::Opcode;
using ir::ScalarKind;

void KernelCodegen::lower_elementwise(const ir::Operation &op) {
  // A widening cast of a narrow float tile (bf16, f16, fp8: held as f32 values rounded to their
  // type, never read in place) to f32 is the identity on the held values: its tile shares the
  // storage, as a reshape's, where that is a tile in memory (not computed per lane: inlined),
  // and its loop only accumulates the reductions planned into it. (A bf16 row op's x.to(f32)
  // had copied its rows once more after the load's converting copy: a third stack tile past
  // L1.)
  const ir::Value *in = op.operand(0);
  const bool identity = widens_in_place(op) && slots_.count(in) &&
                        !(in->def() && plan::lowered_elsewhere(*in->def()));
  if (identity)
    slots_[op.result()] = slot(op.operand(0));
  Slot &out = slot(op.result());
  // Full reductions of this result planned into its loop (cpu.in_producer) accumulate there.
  std::vector<LaneReduce> reduces;
  const ScalarKind k = op.result()->type().elem();
  for (const ir::Operation *u : uses_.users(op.result()))
    if (plan::flag(*u, plan::kInProducer))
      reduces.push_back({*u->attr_as<std::string>("kind"), k, &slot(u->result())});
  // Fetching even where the lanes are cheap: var's x - mean a row, 1.65 ms against 2.17
  // without (16384 x 1024 f32; its row loop's only fetching loop, session 33's Xeon); into L1
  // only where they compute an exponential or more.
  if (identity && reduces.empty())
    return;
  int work = lane_cost(op);
  for (const ir::Value *v : op.operands())
    work += lane_work(*v);
  reduce_lanes(
      out.n, reduces,
      [&](llvm::Value *i) {
        if (identity)
          return std::vector<llvm::Value *>(reduces.size(), lane_value(op.operand(0), i));
        std::vector<llvm::Value *> a;
        for (const ir::Value *v : op.operands())
          a.push_back(lane_value(v, i));
        llvm::Value *v = elementwise_value(op, a, i);
        b_.CreateStore(v, elem_ptr(out, i));
        return std::vector<llvm::Value *>(reduces.size(), v);
      },
      /*fetch=*/true, /*to_l1=*/work >= kFetchingLaneWork);
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
  case Opcode::Add:
    return b_.CreateFAdd(a[0], a[1]);
  case Opcode::Sub:
    return b_.CreateFSub(a[0], a[1]);
  case Opcode::Mul:
    // x * sigmoid(v) = x / (1 + e^-v) (SiLU, the tanh GELU): one rounding where two were, and
    // a product fewer on the FMA pipes (the division is there either way).
    for (int i : {0, 1}) {
      auto d = sigmoid_denominators_.find(a[i]);
      if (d == sigmoid_denominators_.end())
        continue;
      // SiLU, x * sigmoid(x): e^-x as 2^(x (-log2 e)), the exp's base2 form (a product and an
      // fsub where a product and two FMAs were; the sigmoid's own lanes are then dead). The
      // rounding of x log2 e adds |x| 2^-24 to e^-x's relative error, within SiLU's |x| 2^-24.
      const ir::Operation *sig = op.operand(i)->def(); // the TL IR: a view's lane is a load
      if (sig && sig->opcode() == Opcode::Sigmoid && sig->operand(0) == op.operand(1 - i)) {
        llvm::Type *t = a[0]->getType();
        llvm::Value *e =
            exp_f32(b_.CreateFMul(a[1 - i], llvm::ConstantFP::get(t, -1.4426950408889634)),
                    ExpRange::OnePlus, /*base2=*/true);
        return b_.CreateFDiv(a[1 - i], b_.CreateFAdd(llvm::ConstantFP::get(t, 1.0), e));
      }
      return b_.CreateFDiv(a[1 - i], d->second);
    }
    return b_.CreateFMul(a[0], a[1]);
  case Opcode::Div:
    return b_.CreateFDiv(a[0], a[1]);
  case Opcode::Min:
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum, a[0], a[1]);
  case Opcode::Max:
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a[0], a[1]);
  case Opcode::Pow:
    return sleef("pow");
  case Opcode::Neg:
    return b_.CreateFNeg(a[0]);
  case Opcode::Abs:
    return unary(llvm::Intrinsic::fabs);
  case Opcode::Exp:
    if (!t->isFloatTy())
      return sleef("exp");
    return exp_f32(a[0],
                   plan::flag(op, plan::kExpNonpositive) ? ExpRange::NonPositive : ExpRange::Full);
  case Opcode::Exp2:
    return sleef("exp2");
  case Opcode::Log:
    return sleef("log");
  case Opcode::Log2:
    return sleef("log2");
  case Opcode::Sqrt:
    return unary(llvm::Intrinsic::sqrt);
  case Opcode::Sin:
    return sleef("sin");
  case Opcode::Cos:
    return sleef("cos");
  case Opcode::Rsqrt:
    return b_.CreateFDiv(llvm::ConstantFP::get(t, 1.0), unary(llvm::Intrinsic::sqrt));
  case Opcode::Tanh:
    return t->isFloatTy() ? tanh_f32(a[0]) : sleef("tanh");
  case Opcode::Erf: {
    if (!t->isFloatTy())
      return sleef("erf");
    llvm::Value *r = erf_f32(a[0]);
    if (llvm::isa<llvm::Instruction>(r)) // not a folded constant, which other values may share
      erf_args_[r] = a[0];
    return r;
  }
  case Opcode::Sigmoid: {
    // The tanh GELU's sigmoid(x fma(m, B, A)) (B, A constants): e^-v = 2^(x fma(m, -B L, -A L)),
    // L = log2(e) folded into the constants, so that the exp's reduction is t - round(t) times
    // ln 2 (an add off the FMA pipes and one product) instead of a product by L and two FMAs.
    // The rounding of t adds an error of |v| 2^-24 to e^-v, as the rounding of v itself does.
    if (llvm::Value *t2 = t->isFloatTy() ? sigmoid_base2_argument(a[0]) : nullptr) {
      llvm::Value *one = llvm::ConstantFP::get(t, 1.0);
      llvm::Value *d = b_.CreateFAdd(one, exp_f32(t2, ExpRange::OnePlus, /*base2=*/true));
      llvm::Value *r = b_.CreateFDiv(one, d);
      if (llvm::isa<llvm::Instruction>(r))
        sigmoid_denominators_[r] = d;
      return r;
    }
    a[0] = b_.CreateFNeg(a[0]);
    llvm::Value *e = t->isFloatTy() ? exp_f32(a[0], ExpRange::OnePlus) : sleef("exp");
    llvm::Value *one = llvm::ConstantFP::get(t, 1.0);
    llvm::Value *d = b_.CreateFAdd(one, e);
    llvm::Value *r = b_.CreateFDiv(one, d);
    if (t->isFloatTy() && llvm::isa<llvm::Instruction>(r)) // as erf's
      sigmoid_denominators_[r] = d;
    return r;
  }
  case Opcode::Fma: {
    // GELU's fma(erf(u), 1/2, 1/2): Phi computed from u directly (gelu_phi_f32); erf's own
    // division and clamps are then dead unless erf has other uses.
    auto half = [](llvm::Value *v) {
      auto *c = llvm::dyn_cast<llvm::ConstantFP>(v);
      return c && c->isExactlyValue(0.5);
    };
    if (auto u = erf_args_.find(a[0]); u != erf_args_.end() && half(a[1]) && half(a[2]))
      return gelu_phi_f32(u->second);
    if (k == ScalarKind::F16 || k == ScalarKind::BF16 || k == ScalarKind::F8E4M3 ||
        k == ScalarKind::F8E5M2) {
      // Rounded once to the type, as the interpreter: a b + c rounded to odd in f64 first. In
      // f32 the sum of the exact product and c rounded twice (to f32, then to bf16; found by
      // RandomProgramsMatchTheInterpreter), and so did f64's round to nearest where c lies more
      // than ~37 binary orders below a b (found by npusim's random programs).
      llvm::Type *f64 = b_.getDoubleTy();
      llvm::Value *d = backends::f64_fma_round_to_odd(
          b_, b_.CreateFPExt(a[0], f64), b_.CreateFPExt(a[1], f64), b_.CreateFPExt(a[2], f64));
      if (k == ScalarKind::F16 || k == ScalarKind::BF16)
        return narrow(f32_round_to_odd(d), ScalarKind::F32, k, "rne");
      return b_.CreateFPTrunc(
          f8_call("tl_cpu_f8_round",
                  {b_.getInt32(k == ScalarKind::F8E4M3 ? 0 : 1), b_.getInt32(0), d}, f64),
          b_.getFloatTy());
    }
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {a[0], a[1], a[2]});
  }
  case Opcode::Tan:
    return sleef("tan");
  case Opcode::Asin:
    return sleef("asin");
  case Opcode::Acos:
    return sleef("acos");
  case Opcode::Atan:
    return sleef("atan");
  case Opcode::Atan2:
    return sleef("atan2");
  case Opcode::Sinh:
    return sleef("sinh");
  case Opcode::Cosh:
    return sleef("cosh");
  case Opcode::Log1p: {
    // SLEEF's log1p overflows to inf near the top of the range (log1pf(3e38) = inf, found by
    // the differential test); past 2^64 (f32) or 2^128 (f64) log(x) is log1p(x) to the last bit.
    llvm::Value *big = b_.CreateFCmpOGT(
        a[0], llvm::ConstantFP::get(t, t->getScalarType()->isFloatTy() ? 0x1p64 : 0x1p128));
    return b_.CreateSelect(big, sleef("log"), sleef("log1p"));
  }
  case Opcode::Expm1:
    return sleef("expm1");
  case Opcode::Erfinv:
    return erfinv(a[0]);
  case Opcode::Ndtr:
    return t->isFloatTy() ? ndtr_f32(a[0]) : ndtr_f64(a[0]);
  // Exact: IEEE operations the vector units have (roundeven ignores the rounding environment).
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
  case Opcode::Fmod: // frem is C's fmod, exact
    return b_.CreateFRem(a[0], a[1]);
  case Opcode::IsNan:
    return b_.CreateFCmpUNO(a[0], a[0]);
  case Opcode::IsInf:
    return b_.CreateFCmpOEQ(unary(llvm::Intrinsic::fabs), llvm::ConstantFP::getInfinity(t));
  case Opcode::IsFinite:
    return b_.CreateFCmpONE(unary(llvm::Intrinsic::fabs), llvm::ConstantFP::getInfinity(t));
  case Opcode::MinNum:
  case Opcode::MaxNum: {
    // llvm.minnum leaves the order of -0 and +0 open; IEEE minimum orders them and the selects
    // drop a NaN operand (NaN only when both are).
    const bool is_min = op.opcode() == Opcode::MinNum;
    llvm::Value *m = b_.CreateBinaryIntrinsic(
        is_min ? llvm::Intrinsic::minimum : llvm::Intrinsic::maximum, a[0], a[1]);
    m = b_.CreateSelect(b_.CreateFCmpUNO(a[1], a[1]), a[0], m);
    return b_.CreateSelect(b_.CreateFCmpUNO(a[0], a[0]), a[1], m);
  }
  case Opcode::Clamp: { // min(max(x, lo), hi), NaN-propagating
    // Constant nonzero bounds (a quantization's +-127): no signed zero to order and no NaN
    // bound, so two compares and selects that keep x when it is NaN, which x86 selects as one
    // vmaxps and one vminps (their second operand wins when unordered); the general form is
    // three instructions each with AVX-512 (quantize's loop 14 -> 10 per 16 lanes).
    auto *lo = llvm::dyn_cast<llvm::ConstantFP>(a[1]), *hi = llvm::dyn_cast<llvm::ConstantFP>(a[2]);
    if (lo && hi && !lo->isNaN() && !hi->isNaN() && !lo->isZero() && !hi->isZero()) {
      llvm::Value *m = b_.CreateSelect(b_.CreateFCmpOGT(a[1], a[0]), a[1], a[0]);
      return b_.CreateSelect(b_.CreateFCmpOLT(a[2], m), a[2], m);
    }
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::minimum,
                                    b_.CreateBinaryIntrinsic(llvm::Intrinsic::maximum, a[0], a[1]),
                                    a[2]);
  }
  default:
    unsupported(op, "no floating-point form");
  }
}

// erf of an f32 inline (GELU's hot loop): SLEEF's erff is double-float arithmetic, ~12x the
// cost of this per lane, which made GELU compute-bound at 0.06 of the triad. One rational over
// the whole clamped range, no branches (17 vector instructions per lane group; the two-branch
// form before it, a polynomial below 0.921875 and 1 - e^Q(|x|) with the inline exp above, took
// ~45 and held GELU at ~0.25 of the triad):
//   erf(x) = x P(s) / Q(s), s = x^2 clamped to 3.925^2 (past 3.925 erf rounds to +-1
//   in f32; inf gives +-1, NaN stays: the ordered compares keep it), P and Q of degree 5 with
//   positive coefficients (no cancellation in Horner's form); the result clamped to [-1, 1].
// Coefficients: Sanathanan-Koerner iteration, then Lawson reweighting toward the minimax relative
// error of erf(x) / x over s in [0, 3.925^2] (1.9e-8 before rounding to f32;
// tools/fit_rational.py erf 5 5 3.925). In f32 the rounding of P, Q, the product and the
// quotient add up to 5.2 ulp near erf = 1 over LlvmCpu.InlineErfAndTanhF32AreWithinTheirBounds's
// 4.3M inputs (5.9 in the script's f32 emulation on a denser grid; tl-conform's bound for f32
// erf: 16 ulp; f16 and bf16 round the f32 result once).
namespace {
// erf_f32's rational, highest power of s = x^2 first: erf(x) = x P(s) / Q(s).
constexpr double kErfP[] = {2.0460479390749242e-06, 0.00028484559152275324, 0.003772566793486476,
                            0.05276935547590256,    0.1905939280986786,     1.1283791065216064};
constexpr double kErfQ[] = {3.8048096030252054e-05, 0.0011638649739325047, 0.014983230270445347,
                            0.11418282240629196,    0.5022422075271606,    1.0};
constexpr double kErfClamp = 3.925 * 3.925; // s past it: erf rounds to +-1
} // namespace

llvm::Value *KernelCodegen::erf_f32(llvm::Value *x) {
  llvm::Type *t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto horner = [&](std::initializer_list<double> coeffs, llvm::Value *v) { // highest first
    llvm::Value *p = c(*coeffs.begin());
    for (auto it = coeffs.begin() + 1; it != coeffs.end(); ++it)
      p = b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, v, c(*it)});
    return p;
  };
  // s = x^2 clamped at 3.925^2 (one clamp, not two on x): past 3.925 x P(s) / Q(s) is
  // (x / 3.925) times the rational at 3.925 (1 within an ulp), so its magnitude passes 1 and the
  // result clamp gives +-1, as the clamped x did; inf gives +-1. The clamp is an unsigned integer
  // min of the bits (s is +0 or more, or a NaN, and non-negative floats order as their bits): a
  // NaN s becomes 3.925^2, but x P(s) stays a NaN (x is one). s18: ~1% fewer cycles than vminps
  // in a Zen 4 loop of the GELU's instructions in L1 (17.9 against 18.1 per 16 lanes).
  llvm::Value *s = b_.CreateFMul(x, x);
  llvm::Type *it = t->getWithNewType(b_.getInt32Ty());
  s = b_.CreateBitCast(b_.CreateBinaryIntrinsic(
                           llvm::Intrinsic::umin, b_.CreateBitCast(s, it),
                           llvm::ConstantInt::get(it, std::bit_cast<uint32_t>(float(kErfClamp)))),
                       t);
  llvm::Value *p = horner({kErfP[0], kErfP[1], kErfP[2], kErfP[3], kErfP[4], kErfP[5]}, s);
  llvm::Value *q = horner({kErfQ[0], kErfQ[1], kErfQ[2], kErfQ[3], kErfQ[4], kErfQ[5]}, s);
  // The rational passes 1 by an ulp near x = 3.8 (its error, rounded): |erf| <= 1 kept.
  llvm::Value *r = b_.CreateFDiv(b_.CreateFMul(x, p), q);
  r = b_.CreateSelect(b_.CreateFCmpOGT(r, c(1.0)), c(1.0), r);
  return b_.CreateSelect(b_.CreateFCmpOLT(r, c(-1.0)), c(-1.0), r);
}

// GELU's Phi(x) = (1 + erf(x / sqrt 2)) / 2, fused: with erf(u) = u P(s) / Q(s) (erf_f32),
//   Phi = (Q + u P) / (2 Q) = fma(u, P, Q) / (Q + Q),
// where fma(erf, 1/2, 1/2) after erf's division and clamps took a product, a division and an FMA
// (Q + Q is an add, off Zen 4's FMA pipes). When u is GELU's x * 0.70710677 (x / sqrt 2 rounded),
// the product is folded into the rational: x P'(x^2) / Q'(x^2) = erf(x / sqrt 2) with
// P'_k = P_k / (sqrt 2 2^k), Q'_k = Q_k / 2^k (exact), x^2 clamped at 2 3.925^2; so u is not
// rounded first. The result is clamped to [0, 1] (NaN kept: ordered compares); x * Phi is
// then GELU's product. Measured: LlvmCpu.GeluAndSiluF32FusedAreWithinTheirBounds (2.58 units of
// max(ulp, |x| 2^-24), the unfused form 2.26); Zen 4, GELU's loop in L1 (the generated loop's
// instructions timed alone): 15.7 cycles per 16 lanes against 18.1; lit activation_lanes.tlir.
llvm::Value *KernelCodegen::gelu_phi_f32(llvm::Value *u) {
  llvm::Type *t = u->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  llvm::Value *x = u;
  double scale_p = 1, scale_s = 1; // coefficient k of P times scale_p / scale_s^k, of Q / scale_s^k
  {
    auto *m = llvm::dyn_cast<llvm::BinaryOperator>(u);
    if (m && m->getOpcode() == llvm::Instruction::FMul)
      for (int i : {0, 1})
        if (auto *k = llvm::dyn_cast<llvm::ConstantFP>(m->getOperand(i));
            k && k->isExactlyValue(double(float(0.7071067811865476)))) {
          x = m->getOperand(1 - i);
          scale_p = 0.7071067811865476;
          scale_s = 2;
          break;
        }
  }
  llvm::Value *s = b_.CreateFMul(x, x);
  llvm::Type *it = t->getWithNewType(b_.getInt32Ty());
  s = b_.CreateBitCast( // as in erf_f32
      b_.CreateBinaryIntrinsic(
          llvm::Intrinsic::umin, b_.CreateBitCast(s, it),
          llvm::ConstantInt::get(it, std::bit_cast<uint32_t>(float(kErfClamp * scale_s)))),
      t);
  auto horner = [&](const double(&coeffs)[6], double scale) { // highest power first
    llvm::Value *p = c(coeffs[0] * scale / std::pow(scale_s, 5));
    for (int k = 1; k < 6; ++k)
      p = b_.CreateIntrinsic(llvm::Intrinsic::fma, {t},
                             {p, s, c(coeffs[k] * scale / std::pow(scale_s, 5 - k))});
    return p;
  };
  llvm::Value *p = horner(kErfP, scale_p), *q = horner(kErfQ, 1);
  llvm::Value *r =
      b_.CreateFDiv(b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {x, p, q}), b_.CreateFAdd(q, q));
  r = b_.CreateSelect(b_.CreateFCmpOGT(r, c(1.0)), c(1.0), r);
  return b_.CreateSelect(b_.CreateFCmpOLT(r, c(0.0)), c(0.0), r);
}

// Phi(x) of an f32 inline (the exact GELU, x Phi(x)), relatively accurate in both tails: with
// a = |x|, Phi(-a) = e^(-a^2 / 2) m(a), m(a) = Phi(-a) e^(a^2 / 2) (Mills' ratio over sqrt(2 pi),
// smooth from 1/2 at 0 to ~1 / (a sqrt(2 pi))) ~ P(a) / Q(a) of degrees 4 and 5 with positive
// coefficients (5.9e-9 relative over [0, 14.5]; tools/fit_rational.py ndtr 4 5 14.5); x > 0 takes
// 1 - Phi(-a) (at most 1/2 taken from 1: no cancellation). The exponential's argument is never
// rounded: a^2 is reduced by n 2 ln2 inside one FMA (below), where 1/2 + erf(x / sqrt 2) / 2
// (gelu_phi_f32) and erfc(-x / sqrt 2) / 2 both round theirs (2 z^2 ulp: 1.5e-6 at x = -5).
// Past a = 14.5 Phi(-a) rounds to 0 (inf gives 0 and 1; NaN stays: ordered compares).
// Measured: LlvmCpu.InlineNdtrF32IsWithinItsBound (4.8 ulp, 3.4e-7 relative). Cost (llvm-mca,
// rocketlake): GELU's loop 26 cycles a 16-lane vector on port 0, the erf form's 18; on session
// 37's Xeon (one 512-bit FMA unit) GELU is bound by them; on session 38's (two) a hand-written
// loop of this formula computes 0.23-0.25 ns an element on both cores from L1, where 0.8 of
// the triad needs 0.21 (bench/README.md, sessions 37 and 38).
llvm::Value *KernelCodegen::ndtr_f32(llvm::Value *x) {
  llvm::Type *t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto fma = [&](llvm::Value *p, llvm::Value *q, llvm::Value *r) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, q, r});
  };
  auto horner = [&](std::initializer_list<double> coeffs, llvm::Value *v) { // highest first
    llvm::Value *p = c(*coeffs.begin());
    for (auto it = coeffs.begin() + 1; it != coeffs.end(); ++it)
      p = fma(p, v, c(*it));
    return p;
  };
  llvm::Value *a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  a = b_.CreateSelect(b_.CreateFCmpOGT(a, c(14.5)), c(14.5), a);
  // e^(-a^2 / 2) = e^(-r / 2) 2^n, n = round(-a^2 log2(e) / 2) in [-152, 0], r = a^2 + n 2 ln2
  // from a and a by an FMA (a^2 exact inside it: no rounding of the argument) with 2 ln2's high
  // part (16 bits: n times it is exact), then its low part; the -1/2 goes into the polynomial.
  llvm::Value *nf = b_.CreateUnaryIntrinsic(
      llvm::Intrinsic::roundeven, b_.CreateFMul(b_.CreateFMul(a, a), c(-0.72134752044448171)));
  llvm::Value *r = fma(a, a, b_.CreateFMul(nf, c(2 * 0.693145751953125)));
  r = fma(nf, c(2 * 1.4286068203094172e-06), r);
  llvm::Value *e = exp_reduced_f32(r, nf, ExpRange::Full, -0.5);
  llvm::Value *p = horner(
      {0.004116362426429987, 0.04063357040286064, 0.18323613703250885, 0.43829625844955444, 0.5},
      a);
  llvm::Value *q = horner({0.010318069718778133, 0.10185970366001129, 0.469473272562027,
                           1.2025072574615479, 1.674477458000183, 1.0},
                          a);
  llvm::Value *lower = b_.CreateFDiv(b_.CreateFMul(e, p), q);
  return b_.CreateSelect(b_.CreateFCmpOLT(x, c(0.0)), lower, b_.CreateFSub(c(1.0), lower));
}

// Phi(x) in f64: erfc(z) / 2 by SLEEF (1.5 ulp), z = -x / sqrt 2 = zh + zl with zl the product's
// rounding and that of 1 / sqrt 2 (the reference's form, reference/src/elementwise.cpp): erfc's
// slope corrects it to first order, a rounding of 2 z^2 ulp otherwise. |x| clamped at 40, past
// which Phi is 0 or 1 in f64 (so that inf does not make the NaN of inf - inf).
llvm::Value *KernelCodegen::ndtr_f64(llvm::Value *x) {
  llvm::Type *t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto fma = [&](llvm::Value *p, llvm::Value *q, llvm::Value *r) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, q, r});
  };
  llvm::Value *xc = b_.CreateSelect(b_.CreateFCmpOGT(x, c(40.0)), c(40.0), x);
  xc = b_.CreateSelect(b_.CreateFCmpOLT(xc, c(-40.0)), c(-40.0), xc);
  llvm::Value *zh = b_.CreateFMul(xc, c(-0.70710678118654757));
  llvm::Value *zl = fma(xc, c(-0.70710678118654757), b_.CreateFNeg(zh));
  zl = fma(xc, c(4.8336466567264567e-17), zl); // -x (1 / sqrt 2 - 0.70710678118654757)
  llvm::Value *erfc = sleef_call(b_, module_, "erfc", {zh}, vector_bits_, "u15");
  llvm::Value *e =
      sleef_call(b_, module_, "exp", {b_.CreateFNeg(b_.CreateFMul(zh, zh))}, vector_bits_);
  return fma(b_.CreateFMul(zl, c(-0.56418958354775628)), e, b_.CreateFMul(erfc, c(0.5)));
}

// tanh of an f32 inline (the tanh form of GELU; SLEEF's tanhf took 2.3x the time of the whole
// erf GELU), both branches computed and one selected:
//   |x| < 0.875:  tanh(x) = x + x s P(s), s = x^2, P of degree 5 (reweighted least squares
//                 toward the minimax relative error);
//   else:         tanh(x) = sign(x) (1 - 2 / (e^(2t) + 1)), t = min(|x|, 9.1) (past 9.1 tanh
//                 rounds to 1 in f32; inf gives 1, NaN stays); e^(2t) by the inline exp without
//                 its clamps and with one scaling (2t is within [0, 18.2]).
// Measured: LlvmCpu.InlineErfAndTanhF32AreWithinTheirBounds (0.94 ulp).
llvm::Value *KernelCodegen::tanh_f32(llvm::Value *x) {
  llvm::Type *t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  llvm::Value *ax = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value *s = b_.CreateFMul(x, x);
  llvm::Value *p = c(0.001370934653095901);
  for (double k : {-0.007003123871982098, 0.02101699449121952, -0.0537615604698658,
                   0.1333097368478775, -0.3333324193954468})
    p = b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, s, c(k)});
  llvm::Value *small = b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {x, b_.CreateFMul(p, s), x});
  llvm::Value *tc = b_.CreateSelect(b_.CreateFCmpOGT(ax, c(9.1)), c(9.1), ax);
  llvm::Value *e = exp_f32(b_.CreateFMul(tc, c(2.0)), ExpRange::Normal); // 2 tc in [1.75, 18.2]
  llvm::Value *large = b_.CreateFSub(c(1.0), b_.CreateFDiv(c(2.0), b_.CreateFAdd(e, c(1.0))));
  // x + x s P(s) drops the sign of -0 (s P(s) is -0 there): the sign is x's in both forms.
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign,
                                  b_.CreateSelect(b_.CreateFCmpOLT(ax, c(0.875)), small, large), x);
}

// exp of an f32 inline, so that the loop vectorizer widens it to the full SIMD width without a
// call (softmax's hot loop; other math calls SLEEF): x = n ln2 + r with |r| <= ln2/2 (Cody-Waite,
// ln2 split in two so that n ln2 is exact to 32 bits), e^r by a degree-6 polynomial (relative
// error 3.1e-9), scaled by 2^n rounding once for subnormal results: vscalefps with AVX-512, else
// two exact powers of two. Measured: see LlvmCpu.ExpF32IsWithinTwoUlps (4M f32 across the
// range); the conformance bound for exp is 3 ulp. `range` (codegen.h) drops what the caller does
// not need: Normal (tanh's clamped 2|x|): no clamps, one power of two (8 vector instructions
// fewer). OnePlus (sigmoid's 1 / (1 + e^-x)): x clamped to [-87, 89], where below -87 1 + e^x
// rounds to 1 anyway, and one power of two, 2^128 = inf (its bit pattern) from x = 88.38 on, so
// sigmoid flushes its results below 2^-127.5 to 0 (a precision decision: tl-conform's sigmoid
// inputs stay within [-30, 30], the ops' tolerances are normwise; see
// LlvmCpu.SigmoidF32IsWithinItsBound); and a degree-5 polynomial (1.1e-7: sigmoid within 3.24 ulp
// of its 5-ulp bound): SiLU's loop 5 integer ops, a product and an FMA shorter.
// NonPositive (softmax's x - max x, cpu-exp-ranges): clamped at -88 only, one power of two,
// 2^-127 encoded as 0 (its bit pattern), so results below 2^-126.5 are 0 (the same decision;
// LlvmCpu.NonPositiveExpF32FlushesOnlyBelowTheNormals); with vscalefps (AVX-512) x below
// ln 2^-126.5 selects 0 (exp_f32).
llvm::Value *KernelCodegen::sigmoid_base2_argument(llvm::Value *v) {
  auto *m = llvm::dyn_cast<llvm::BinaryOperator>(v);
  if (!m || m->getOpcode() != llvm::Instruction::FMul)
    return nullptr;
  for (int i : {0, 1}) {
    auto *f = llvm::dyn_cast<llvm::IntrinsicInst>(m->getOperand(i));
    if (!f || f->getIntrinsicID() != llvm::Intrinsic::fma)
      continue;
    auto *b = llvm::dyn_cast<llvm::ConstantFP>(f->getArgOperand(1));
    auto *a = llvm::dyn_cast<llvm::ConstantFP>(f->getArgOperand(2));
    if (!b || !a)
      continue;
    llvm::Type *t = v->getType();
    const double l = -1.4426950408889634; // -log2(e): e^-v = 2^(-v log2 e)
    llvm::Value *g = b_.CreateIntrinsic(
        llvm::Intrinsic::fma, {t},
        {f->getArgOperand(0), llvm::ConstantFP::get(t, b->getValueAPF().convertToFloat() * l),
         llvm::ConstantFP::get(t, a->getValueAPF().convertToFloat() * l)});
    return b_.CreateFMul(m->getOperand(1 - i), g);
  }
  return nullptr;
}

llvm::Value *KernelCodegen::exp_f32(llvm::Value *x, ExpRange range, bool base2) {
  llvm::Type *t = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  auto fma = [&](llvm::Value *p, llvm::Value *q, llvm::Value *r) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, q, r});
  };
  // Clamp where e^x is already 0 or inf in f32 (OnePlus: where 1 + e^x is 1 or inf); ordered
  // compares keep a NaN, which then flows through the polynomial (its n is frozen: any integer,
  // the product stays NaN).
  llvm::Value *xc = x, *flush = nullptr;
  const double scale = base2 ? 1.4426950408889634 : 1.0; // the clamps' bounds in x's units
  // NonPositive with vscalefps (exp_reduced_f32), which scales exactly, subnormals included: x
  // below ln 2^-126.5 (float, rounded down) gives 0 by a select on the clamp's compare. Without
  // it, the -inf of softmax's padded lanes (rows narrower than the tile) or of a masked score
  // made a subnormal e^x, and each vector division or product reading one took a microcode
  // assist (~130 cycles on session 40's Xeon): softmax of rows of 520 in 1024-wide tiles ran
  // 20x slower than of 1024 (bench/README.md, session 40).
  const bool scalef_flush = range == ExpRange::NonPositive && uses_scalef(t);
  if (range != ExpRange::Normal) {
    const double lo =
        range == ExpRange::OnePlus ? -87.0
        : range == ExpRange::NonPositive
            ? (scalef_flush ? double(std::nextafter(float(-126.5 * std::log(2.0)), -INFINITY))
                            : -88.0)
            : -104.0;
    llvm::Value *below = b_.CreateFCmpOLT(x, c(lo * scale));
    xc = b_.CreateSelect(below, c(lo * scale), x);
    if (scalef_flush)
      flush = below;
  }
  if (range == ExpRange::Full || range == ExpRange::OnePlus)
    xc = b_.CreateSelect(b_.CreateFCmpOGT(xc, c(89.0 * scale)), c(89.0 * scale), xc);
  llvm::Value *nf, *r;
  if (base2) { // t - round(t) is exact (Sterbenz), then one rounding of the product
    nf = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, xc);
    r = b_.CreateFMul(b_.CreateFSub(xc, nf), c(0.6931471805599453));
  } else {
    nf = b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven,
                                 b_.CreateFMul(xc, c(1.44269504088896341)));
    r = fma(nf, c(-0.693145751953125), xc);     // ln2 high part: 16 bits, exact product
    r = fma(nf, c(-1.4286068203094172e-06), r); // ln2 - high part
  }
  llvm::Value *e = exp_reduced_f32(r, nf, range);
  return flush ? b_.CreateSelect(flush, c(0.0), e) : e;
}

llvm::Value *KernelCodegen::exp_reduced_f32(llvm::Value *r, llvm::Value *nf, ExpRange range,
                                            double r_scale) {
  llvm::Type *t = r->getType(), *it = b_.getInt32Ty();
  auto c = [&](double v) { return llvm::ConstantFP::get(t, v); };
  // e^r = 1 + r + r^2 q(r), q of degree 4 fitted for the relative error of e^r over the range
  // (weighted least squares on Chebyshev nodes: 3.1e-9, against 1.2e-7 for the degree-6 Taylor
  // polynomial), so one FMA less than the degree-7 Taylor polynomial; OnePlus: q of degree 3
  // fitted the same way (1.1e-7).
  std::initializer_list<double> q6 = {0.0013814590638503432,
                                      0.008368711918592453,
                                      0.04166838899254799,
                                      0.1666652113199234,
                                      0.4999999403953552,
                                      1.0,
                                      1.0};
  std::initializer_list<double> q5 = {
      0.008312850259244442, 0.04189023748040199, 0.16667111217975616, 0.4999922811985016, 1.0, 1.0};
  std::initializer_list<double> coeffs = range == ExpRange::OnePlus ? q5 : q6;
  // Horner's rule in r: the coefficient of power k times r_scale^k (exact for a power of two).
  double power = std::pow(r_scale, double(coeffs.size() - 1));
  llvm::Value *p = c(*coeffs.begin() * power);
  for (auto k = coeffs.begin() + 1; k != coeffs.end(); ++k)
    p = b_.CreateIntrinsic(llvm::Intrinsic::fma, {t}, {p, r, c(*k * (power /= r_scale))});
  if (uses_scalef(t)) // vscalefps: one instruction (x86_isa.h)
    return x86::scalef(b_, module_, isa_, p, nf);
  llvm::Value *n = b_.CreateFreeze(b_.CreateFPToSI(nf, it)); // in [-152, 129]; NaN: any
  auto pow2 = [&](llvm::Value *e) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, b_.getInt32(127)), 23), t);
  };
  // One power of two: a product, not an add to p's exponent bits, so a NaN's frozen n keeps it
  // NaN (Normal: n in [-125, 127]; OnePlus: n in [-126, 128], 2^128 encoded as inf; NonPositive:
  // n in [-127, 0], 2^-127 encoded as 0).
  if (range != ExpRange::Full)
    return b_.CreateFMul(p, pow2(n));
  llvm::Value *n1 = b_.CreateAShr(n, 1), *n2 = b_.CreateSub(n, n1);
  return b_.CreateFMul(b_.CreateFMul(p, pow2(n1)), pow2(n2));
}

// erfinv (no SLEEF or libm function), computed in f64 for every type: Giles' single-precision
// approximation (GPU Computing Gems, 2011; relative error ~1e-7 over f32's range), then Newton
// steps as in reference/ (erfinv_positive): on erf(y) = a for a <= 0.5, on log(erfc(y)) =
// log(1 - a) beyond (1 - a exact; near-quadratic in y, so the rough start of f64's far tail, 1 - a
// down to 2^-53, converges). One step takes f32's 1e-7 to ~1e-13; f64 takes five (measured:
// LlvmCpu differential tests against the reference). Both branches run on every lane (vector
// code), the select picks one.
llvm::Value *KernelCodegen::erfinv(llvm::Value *x) {
  llvm::Type *t = x->getType(), *dt = b_.getDoubleTy();
  const bool f64 = t->isDoubleTy();
  if (t->isVectorTy())
    dt = llvm::VectorType::get(dt, llvm::cast<llvm::VectorType>(t)->getElementCount());
  auto c = [&](double v) { return llvm::ConstantFP::get(dt, v); };
  auto math = [&](const char *fn, llvm::Value *v, const char *acc = "u10") {
    return sleef_call(b_, module_, fn, {v}, vector_bits_, acc);
  };
  auto poly = [&](llvm::Value *w, std::initializer_list<double> coeffs) {
    llvm::Value *p = nullptr;
    for (double k : coeffs)
      p = p ? b_.CreateFAdd(c(k), b_.CreateFMul(p, w)) : c(k);
    return p;
  };
  llvm::Value *xd = f64 ? x : b_.CreateFPExt(x, dt);
  llvm::Value *a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, xd);
  llvm::Value *one_minus = b_.CreateFSub(c(1), a);
  llvm::Value *w = b_.CreateFNeg(math("log", b_.CreateFMul(one_minus, b_.CreateFAdd(c(1), a))));
  llvm::Value *p_mid =
      poly(b_.CreateFSub(w, c(2.5)),
           {2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
            -0.00125372503, -0.00417768164, 0.246640727, 1.50140941});
  llvm::Value *p_tail =
      poly(b_.CreateFSub(b_.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, w), c(3.0)),
           {-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
            -0.0076224613, 0.00943887047, 1.00167406, 2.83297682});
  llvm::Value *y = b_.CreateFMul(b_.CreateSelect(b_.CreateFCmpOLT(w, c(5.0)), p_mid, p_tail), a);
  llvm::Value *mid = b_.CreateFCmpOLE(a, c(0.5));
  llvm::Value *log_one_minus = math("log", one_minus);
  for (int i = 0; i < (f64 ? 5 : 1); ++i) {
    llvm::Value *d = b_.CreateFMul(c(1.1283791670955126), // 2/sqrt(pi) e^(-y^2) = erf'(y)
                                   math("exp", b_.CreateFNeg(b_.CreateFMul(y, y))));
    llvm::Value *step_mid = b_.CreateFDiv(b_.CreateFSub(math("erf", y), a), d);
    llvm::Value *ec = math("erfc", y, "u15");
    llvm::Value *step_tail = b_.CreateFDiv(
        b_.CreateFMul(b_.CreateFSub(math("log", ec), log_one_minus), ec), b_.CreateFNeg(d));
    y = b_.CreateFSub(y, b_.CreateSelect(mid, step_mid, step_tail));
  }
  // +-1 -> +-inf; |x| > 1 and NaN -> NaN; +-0 stays +-0 (y = 0 there).
  y = b_.CreateSelect(b_.CreateFCmpOLT(a, c(1)), y, llvm::ConstantFP::getNaN(dt));
  y = b_.CreateSelect(b_.CreateFCmpOEQ(a, c(1)), llvm::ConstantFP::getInfinity(dt), y);
  y = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, y, xd);
  return f64 ? y : b_.CreateFPTrunc(y, t);
}

llvm::Value *KernelCodegen::int_lane(const ir::Operation &op, ScalarKind k,
                                     std::vector<llvm::Value *> a, llvm::Value *lane) {
  const bool s = ir::is_signed(k);
  llvm::Type *t = a[0]->getType();
  const unsigned bits = t->getIntegerBitWidth();
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
    llvm::Value *amt = b_.CreateURem(a[1], llvm::ConstantInt::get(t, bits));
    return s ? b_.CreateAShr(a[0], amt) : b_.CreateLShr(a[0], amt);
  }
  case Opcode::Min:
    return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a[0], a[1]);
  case Opcode::Max:
    return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a[0], a[1]);
  case Opcode::Abs:
    return s ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, a[0], b_.getFalse()) : a[0];
  case Opcode::Clamp: {
    llvm::Value *lo =
        b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a[0], a[1]);
    return b_.CreateBinaryIntrinsic(s ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, lo, a[2]);
  }
  case Opcode::Popcount:
    return b_.CreateUnaryIntrinsic(llvm::Intrinsic::ctpop, a[0]);
  case Opcode::Clz: // is_zero_poison = false: clz(0) is the bit width
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, a[0], b_.getFalse());
  case Opcode::Div:
  case Opcode::Rem: {
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
  llvm::Value *r =
      b_.CreateAnd(b_.CreateAdd(bits, b_.CreateAdd(b_.getInt32(0xfff), lsb)), b_.getInt32(~0x1fff));
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
    llvm::Value *stepped =
        b_.CreateSelect(shrink, b_.CreateSub(bits, one), b_.CreateAdd(bits, one));
    bits = b_.CreateSelect(step, stepped, bits);
  }
  if (to == ScalarKind::F32)
    return b_.CreateBitCast(bits, b_.getFloatTy());
  return from_storage(to, bits);
}

/// f64 `d` rounded to f32 toward zero, the last bit set where that was inexact ("round to
/// odd"): rounding this f32 once more to a type of at most 22 significant bits gives what
/// rounding `d` itself would, in every mode (f64 -> f16 / bf16 without a double rounding).
llvm::Value *KernelCodegen::f32_round_to_odd(llvm::Value *d) {
  llvm::Value *r = b_.CreateFPTrunc(d, b_.getFloatTy());
  llvm::Value *back = b_.CreateFPExt(r, d->getType());
  llvm::Value *bits = b_.CreateBitCast(r, b_.getInt32Ty());
  llvm::Value *away = b_.CreateFCmpOGT(b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, back),
                                       b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, d));
  bits = b_.CreateSelect(away, b_.CreateSub(bits, b_.getInt32(1)), bits);
  bits = b_.CreateOr(bits, b_.CreateZExt(b_.CreateFCmpONE(back, d), b_.getInt32Ty()));
  return b_.CreateBitCast(bits, b_.getFloatTy());
}

namespace {

/// Whether `v` is a clamp's result (Opcode::Clamp: a NaN kept) whose bounds are constants
/// (`full` tiles, splats of scalar constants) within [lo, hi].
bool clamped_within(const ir::Value *v, double lo, double hi) {
  const ir::Operation *def = v->def();
  if (!def || def->opcode() != Opcode::Clamp)
    return false;
  auto bound = [](const ir::Value *b) -> std::optional<double> {
    const ir::Operation *d = b->def();
    if (d && d->opcode() == Opcode::Splat)
      d = d->operand(0)->def();
    if (!d || (d->opcode() != Opcode::Full && d->opcode() != Opcode::Constant))
      return std::nullopt;
    const ir::Attr *a = d->attr("value");
    const double *x = a ? std::get_if<double>(a) : nullptr;
    return x ? std::optional<double>(*x) : std::nullopt;
  };
  const std::optional<double> l = bound(def->operand(1)), h = bound(def->operand(2));
  return l && h && *l >= lo && *h <= hi; // false for a NaN bound
}

} // namespace

llvm::Value *KernelCodegen::cast_lane(const ir::Operation &op, llvm::Value *v) {
  const ScalarKind from = op.operand(0)->type().elem(), to = op.result()->type().elem();
  llvm::Type *t = llvm_type(to, &op);
  const std::string *rounding = op.attr_as<std::string>("rounding");
  const bool rne = !rounding || *rounding == "rne";
  if (ir::is_float(from) && ir::is_float(to)) {
    // Widening is exact; bf16 <-> f16 and e4m3 <-> e5m2 (the same widths) are not (e4m3 ->
    // e5m2 had kept the e4m3 value, then stored its bits truncated). bf16 and fp8 values are held
    // as f32, so to f64 they widen as f32 does (bf16 went through `narrow`, which stored the
    // f32's bits into an f64 tile).
    if (((from == to || ir::bit_width(to) > ir::bit_width(from)) && from != ScalarKind::BF16 &&
         to != ScalarKind::BF16) ||
        to == ScalarKind::F64)
      return b_.CreateFPCast(v, t);
    if (to == ScalarKind::F8E4M3 || to == ScalarKind::F8E5M2) { // one rounding, from the source
      const std::string m = rne ? "rne" : *rounding;
      const int mode = m == "rtz" ? 1 : m == "rd" ? 2 : m == "ru" ? 3 : 0;
      if (mode == 0 && v->getType()->isFloatTy())
        return f8_round_rne(to, v);
      llvm::Value *format = b_.getInt32(to == ScalarKind::F8E4M3 ? 0 : 1);
      llvm::Value *r = f8_call("tl_cpu_f8_round",
                               {format, b_.getInt32(mode), b_.CreateFPCast(v, b_.getDoubleTy())},
                               b_.getDoubleTy());
      return b_.CreateFPTrunc(r, b_.getFloatTy());
    }
    if (from == ScalarKind::F64 && (to == ScalarKind::F16 || to == ScalarKind::BF16))
      return narrow(f32_round_to_odd(v), ScalarKind::F32, to, rne ? "rne" : *rounding);
    if (from != ScalarKind::F64 && to == ScalarKind::F32)
      return v; // f16/bf16/f8 values are f32 already, exactly
    if (ir::bit_width(to) >= ir::bit_width(from) && to != ScalarKind::F64 && rne)
      return round_to(to, v); // f8 -> f16/bf16: exact for e5m2->f16; rounds e4m3 only if needed
    if (from != ScalarKind::F64 && to != ScalarKind::F32) // f16 <-> bf16 by a directed mode
      return narrow(v, ScalarKind::F32, to, rne ? "rne" : *rounding);
    return narrow(v, from, to, rne ? "rne" : *rounding);
  }
  if (ir::is_float(from)) { // rounded by the mode (default rtz), saturating, NaN -> 0
    if (to == ScalarKind::I1)
      return b_.CreateFCmpONE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    // Rounding to an integral value is exact in the source type (narrow types are held as f32),
    // and the saturating conversion then truncates nothing; rtz is the conversion's own.
    const std::string_view m = ir::cast_rounding(op);
    auto round = [&](llvm::Value *x) {
      return m == "rtz" ? x
                        : b_.CreateUnaryIntrinsic(m == "rne"  ? llvm::Intrinsic::roundeven
                                                  : m == "rd" ? llvm::Intrinsic::floor
                                                              : llvm::Intrinsic::ceil,
                                                  x);
    };
    if (ir::bit_width(to) <= 16) {
      // To 8 or 16 bits: clamped in the float type (the bounds are exact), NaN -> 0, then an
      // i32 conversion and a truncation, which vectorize (vcvttps2dq and packs); LLVM 19 kept a
      // loop of fptosi.sat to i8 scalar (the int8 quantize at 0.14 of the triad). The bounds
      // are integers, so rounding after the clamp is rounding before it, and the rounding sits
      // next to the conversion (one AVX-512 vcvtps2dq with the mode, x86::finish_module). A
      // value a constant clamp already holds within the bounds (quantize's +-127) is not
      // clamped again.
      llvm::Type *ft = v->getType();
      const double bits = double(ir::bit_width(to));
      const double lo = ir::is_signed(to) ? -std::exp2(bits - 1) : 0.0;
      const double hi = ir::is_signed(to) ? std::exp2(bits - 1) - 1 : std::exp2(bits) - 1;
      llvm::Value *c = v;
      if (!clamped_within(op.operand(0), lo, hi)) {
        c = b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, v, llvm::ConstantFP::get(ft, lo));
        c = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, c, llvm::ConstantFP::get(ft, hi));
      }
      c = b_.CreateSelect(b_.CreateFCmpUNO(v, v), llvm::ConstantFP::get(ft, 0.0), c);
      return b_.CreateTrunc(b_.CreateFPToSI(round(c), b_.getInt32Ty()), t);
    }
    v = round(v);
    return b_.CreateIntrinsic(ir::is_signed(to) ? llvm::Intrinsic::fptosi_sat
                                                : llvm::Intrinsic::fptoui_sat,
                              {t, v->getType()}, {v});
  }
  if (ir::is_float(to)) {
    if (ir::bit_width(from) > 16 && ir::bit_width(from) <= 32 &&
        (!rne || to == ScalarKind::F16 || to == ScalarKind::BF16 || ir::bit_width(to) == 8)) {
      // Exact in f64, then rounded once to the type (an i32 through f32 would round twice).
      llvm::Value *d = ir::is_signed(from) ? b_.CreateSIToFP(v, b_.getDoubleTy())
                                           : b_.CreateUIToFP(v, b_.getDoubleTy());
      const std::string mode = rne ? "rne" : *rounding;
      if (to == ScalarKind::F64)
        return d;
      if (to == ScalarKind::F32)
        return narrow(d, ScalarKind::F64, to, mode);
      if (ir::bit_width(to) == 8) {
        const int m = mode == "rtz" ? 1 : mode == "rd" ? 2 : mode == "ru" ? 3 : 0;
        return b_.CreateFPTrunc(
            f8_call("tl_cpu_f8_round",
                    {b_.getInt32(to == ScalarKind::F8E4M3 ? 0 : 1), b_.getInt32(m), d},
                    b_.getDoubleTy()),
            b_.getFloatTy()); // exact: every fp8 value is an f32
      }
      return narrow(f32_round_to_odd(d), ScalarKind::F32, to, mode);
    }
    // i64 (no exact wider type to round once from): rne to f32 and f64 only
    if (!rne && ir::bit_width(from) > 32)
      unsupported(op, "rounding mode '" + *rounding + "' for i64 to float");
    if ((to == ScalarKind::F16 || to == ScalarKind::BF16 || ir::bit_width(to) == 8) &&
        ir::bit_width(from) > 32)
      unsupported(op, "i64 to " + std::string(ir::scalar_name(to)) + " (i64 -> f64 -> " +
                          std::string(ir::scalar_name(to)) + " would round twice)");
    // exact in f32 (at most 16 bits) or rounded once by the conversion (rne)
    llvm::Value *f = ir::is_signed(from) ? b_.CreateSIToFP(v, t) : b_.CreateUIToFP(v, t);
    if (rne)
      return round_to(to, f);
    if (ir::bit_width(to) == 8) // the mode was ignored (i16 -> f16 rtz: 32767 -> 32768)
      return f8_round(to, f, *rounding == "rtz" ? 1 : *rounding == "rd" ? 2 : 3);
    if (to == ScalarKind::F16 || to == ScalarKind::BF16)
      return narrow(f, ScalarKind::F32, to, *rounding);
    return f;
  }
  if (to == ScalarKind::I1)
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  return b_.CreateIntCast(v, t, ir::is_signed(from));
}

} // namespace tl::llvm_cpu
