// SPDX-License-Identifier: Apache-2.0
#include "x86_isa.h"

#include "vector_math.h"

#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/MC/MCSubtargetInfo.h>

#include <string>

namespace tl::llvm_cpu::x86 {
namespace {

constexpr const char *kScalef = "tl.scalef.f32";

/// Emits into `fn` (p, n) -> p * 2^n for `lanes` lanes (1: vscalefss on lane 0).
void scalef_body(llvm::Function &fn, unsigned lanes) {
  llvm::LLVMContext &ctx = fn.getContext();
  llvm::Type *f32 = llvm::Type::getFloatTy(ctx);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", &fn));
  llvm::Value *p = fn.getArg(0), *n = fn.getArg(1);
  llvm::Value *r;
  if (lanes == 1) {
    auto *v4 = llvm::FixedVectorType::get(f32, 4);
    llvm::Value *zero = llvm::Constant::getNullValue(v4);
    r = b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ss, {},
                          {b.CreateInsertElement(zero, p, uint64_t(0)),
                           b.CreateInsertElement(zero, n, uint64_t(0)), zero, b.getInt8(-1),
                           b.getInt32(4)});
    r = b.CreateExtractElement(r, uint64_t(0));
  } else if (lanes == 16) {
    r = b.CreateIntrinsic(
        llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
        {p, n, llvm::Constant::getNullValue(p->getType()), b.getInt16(-1), b.getInt32(4)});
  } else {
    r = b.CreateIntrinsic(lanes == 8 ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_256
                                     : llvm::Intrinsic::x86_avx512_mask_scalef_ps_128,
                          {}, {p, n, llvm::Constant::getNullValue(p->getType()), b.getInt8(-1)});
  }
  b.CreateRet(r);
}

/// The vector llvm.maximum / llvm.minimum calls of `m` whose type `take` accepts, collected
/// before any is rewritten (rewriting edits the instruction lists).
llvm::SmallVector<llvm::IntrinsicInst *, 32>
vector_minmax(llvm::Module &m, llvm::function_ref<bool(llvm::FixedVectorType *)> take) {
  llvm::SmallVector<llvm::IntrinsicInst *, 32> found;
  for (llvm::Function &f : m)
    for (llvm::Instruction &i : llvm::instructions(f))
      if (auto *ii = llvm::dyn_cast<llvm::IntrinsicInst>(&i))
        if (ii->getIntrinsicID() == llvm::Intrinsic::maximum ||
            ii->getIntrinsicID() == llvm::Intrinsic::minimum)
          if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(ii->getType()); vt && take(vt))
            found.push_back(ii);
  return found;
}

/// Vector f32 maximum / minimum as vrangeps + NaN blend (AVX-512DQ).
void range_minmax(llvm::Module &m, const Isa &isa) {
  auto take = [&](llvm::FixedVectorType *vt) {
    return vt->getElementType()->isFloatTy() &&
           (vt->getNumElements() == 16 ||
            (isa.avx512vl && (vt->getNumElements() == 8 || vt->getNumElements() == 4)));
  };
  for (llvm::IntrinsicInst *ii : vector_minmax(m, take)) {
    llvm::IRBuilder<> b(ii);
    llvm::Value *x = ii->getArgOperand(0), *y = ii->getArgOperand(1);
    auto *vt = llvm::cast<llvm::FixedVectorType>(ii->getType());
    llvm::Value *zero = llvm::Constant::getNullValue(vt);
    // imm: bits 1:0 select min (00) or max (01); bits 3:2 = 01 take the sign from the compare.
    llvm::Value *imm = b.getInt32(ii->getIntrinsicID() == llvm::Intrinsic::maximum ? 5 : 4);
    llvm::Value *r;
    if (vt->getNumElements() == 16)
      r = b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_range_ps_512, {},
                            {x, y, imm, zero, b.getInt16(-1), b.getInt32(4)});
    else
      r = b.CreateIntrinsic(vt->getNumElements() == 8
                                ? llvm::Intrinsic::x86_avx512_mask_range_ps_256
                                : llvm::Intrinsic::x86_avx512_mask_range_ps_128,
                            {}, {x, y, imm, zero, b.getInt8(-1)});
    // x + y is a NaN when either is.
    r = b.CreateSelect(b.CreateFCmpUNO(x, y), b.CreateFAdd(x, y), r);
    ii->replaceAllUsesWith(r);
    ii->eraseFromParent();
  }
}

/// The SSE / AVX max (min) of `vt`'s 128 or 256 bits of f32 or f64; not_intrinsic otherwise.
/// Each returns its second operand when either is a NaN or both are zeros.
llvm::Intrinsic::ID sse_minmax_id(llvm::FixedVectorType *vt, bool max, const Isa &isa) {
  namespace I = llvm::Intrinsic;
  const bool f32 = vt->getElementType()->isFloatTy();
  if (!f32 && !vt->getElementType()->isDoubleTy())
    return I::not_intrinsic;
  const uint64_t bits = vt->getPrimitiveSizeInBits().getFixedValue();
  if (bits == 128)
    return f32 ? (max ? I::x86_sse_max_ps : I::x86_sse_min_ps)
               : (max ? I::x86_sse2_max_pd : I::x86_sse2_min_pd);
  if (bits == 256 && isa.avx)
    return f32 ? (max ? I::x86_avx_max_ps_256 : I::x86_avx_min_ps_256)
               : (max ? I::x86_avx_max_pd_256 : I::x86_avx_min_pd_256);
  return I::not_intrinsic;
}

llvm::Value *as_int(llvm::IRBuilder<> &b, llvm::Value *v) {
  return b.CreateBitCast(v,
                         llvm::VectorType::getInteger(llvm::cast<llvm::VectorType>(v->getType())));
}

/// All-ones lanes where x or y is a NaN.
llvm::Value *unordered(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  return b.CreateSExt(b.CreateFCmpUNO(x, y),
                      llvm::VectorType::getInteger(llvm::cast<llvm::VectorType>(x->getType())));
}

/// A constant without NaN or zero lanes (a clamp's bound): max/min against it has no zeros to
/// order, and the instruction with it first returns the other operand where that is a NaN.
bool plain_constant(llvm::Value *v) {
  auto *c = llvm::dyn_cast<llvm::Constant>(v);
  if (!c)
    return false;
  for (unsigned i = 0, n = llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements(); i < n;
       ++i) {
    auto *e = llvm::dyn_cast_or_null<llvm::ConstantFP>(c->getAggregateElement(i));
    if (!e || e->isNaN() || e->isZero())
      return false;
  }
  return true;
}

/// IEEE maximum (minimum) of x and y: the instruction in both orders, and-ed (max) or or-ed (min)
/// so that equal zeros give +0 (-0), then or-ed with the unordered mask so that a NaN lane is a
/// NaN (all ones; its sign and payload are unspecified, tl/ir/ir.h). Five single-uop
/// instructions (one against a plain_constant); LLVM 19's AVX2 lowering of llvm.maximum blends
/// three times.
llvm::Value *sse_minmax(llvm::IRBuilder<> &b, llvm::Intrinsic::ID id, bool max, llvm::Value *x,
                        llvm::Value *y) {
  if (plain_constant(x))
    return b.CreateIntrinsic(id, {}, {x, y});
  if (plain_constant(y))
    return b.CreateIntrinsic(id, {}, {y, x});
  llvm::Value *xy = as_int(b, b.CreateIntrinsic(id, {}, {x, y}));
  llvm::Value *yx = as_int(b, b.CreateIntrinsic(id, {}, {y, x}));
  llvm::Value *r = max ? b.CreateAnd(xy, yx) : b.CreateOr(xy, yx);
  return b.CreateBitCast(b.CreateOr(r, unordered(b, x, y)), x->getType());
}

/// The steps of a vectorized max (min) reduction through phi p: r1 = op(p, x1), r2 = op(r1, x2),
/// ..., rK = op(rK-1, xK) (either operand order; K > 1 where the loop was unrolled after
/// vectorizing), p used only by r1, each step but the last only by the next, rK one of p's two
/// incoming values. Empty otherwise.
llvm::SmallVector<llvm::IntrinsicInst *, 8> reduction_chain(llvm::PHINode *p,
                                                            llvm::Intrinsic::ID op) {
  llvm::SmallVector<llvm::IntrinsicInst *, 8> chain;
  if (p->getNumIncomingValues() != 2)
    return {};
  llvm::Value *cur = p;
  while (cur == p || (cur != p->getIncomingValue(0) && cur != p->getIncomingValue(1))) {
    auto *u = cur->hasOneUse() ? llvm::dyn_cast<llvm::IntrinsicInst>(*cur->user_begin()) : nullptr;
    if (!u || u->getIntrinsicID() != op || u->getArgOperand(0) == u->getArgOperand(1) ||
        chain.size() == 64)
      return {};
    chain.push_back(u);
    cur = u;
  }
  return chain;
}

/// The reduction's value from the NaN-ignoring accumulator m, the and (max) / or (min) of every
/// element's bits s and the NaN mask f: where m is a zero, every element was <= 0 (>= 0 for min),
/// so the result is -0 exactly when every sign bit was set (any was, for min); the sign bit of s
/// says which. A NaN anywhere makes the lane a NaN.
llvm::Value *reduction_result(llvm::IRBuilder<> &b, llvm::Value *m, llvm::Value *s,
                              llvm::Value *f) {
  auto *it = llvm::cast<llvm::VectorType>(s->getType());
  const unsigned bits = it->getScalarSizeInBits();
  llvm::Value *sign = b.CreateAnd(s, llvm::ConstantInt::get(it, llvm::APInt::getSignMask(bits)));
  llvm::Value *r = b.CreateSelect(b.CreateFCmpOEQ(m, llvm::Constant::getNullValue(m->getType())),
                                  b.CreateBitCast(sign, m->getType()), m);
  return b.CreateBitCast(b.CreateOr(as_int(b, r), f), m->getType());
}

/// Rewrites the reduction steps r1 ... rK = reduction_chain(p) into mk = op'(xk, mk-1) (m0 = p),
/// which keeps the accumulator on a NaN xk and on equal zeros (one instruction a step on the
/// loop-carried chain, against the elementwise form's three), with two more accumulators off
/// that chain: s (bits and-ed / or-ed) and f (NaN lanes). Every use of rK outside the loop's
/// chain gets reduction_result (at the start of a phi's block with a single predecessor: the
/// loop's exit), so the fix-up runs once after the loop. False, changing nothing, where a use is
/// a phi of a block with several predecessors.
bool rewrite_reduction(llvm::PHINode *p, llvm::ArrayRef<llvm::IntrinsicInst *> chain,
                       llvm::Intrinsic::ID id, bool max) {
  llvm::IntrinsicInst *last = chain.back();
  llvm::SmallVector<llvm::Use *, 4> outside;
  for (llvm::Use &u : last->uses()) {
    auto *phi = llvm::dyn_cast<llvm::PHINode>(u.getUser());
    if (phi == p)
      continue;
    if (phi && !phi->getParent()->getSinglePredecessor())
      return false;
    outside.push_back(&u);
  }
  const unsigned back = p->getIncomingValue(0) == last ? 0 : 1;
  llvm::Value *init = p->getIncomingValue(1 - back);
  llvm::BasicBlock *entry = p->getIncomingBlock(1 - back), *latch = p->getIncomingBlock(back);
  auto *it = llvm::VectorType::getInteger(llvm::cast<llvm::VectorType>(p->getType()));
  llvm::IRBuilder<> pre(entry->getTerminator());
  llvm::Value *s0 = as_int(pre, init), *f0 = unordered(pre, init, init);
  llvm::IRBuilder<> head(p);
  llvm::PHINode *s = head.CreatePHI(it, 2, "minmax.bits"), *f = head.CreatePHI(it, 2, "minmax.nan");
  llvm::Value *prev = p, *m = p, *sv = s, *fv = f;
  for (llvm::IntrinsicInst *r : chain) {
    llvm::Value *x = r->getArgOperand(r->getArgOperand(0) == prev ? 1 : 0);
    llvm::IRBuilder<> b(r);
    m = b.CreateIntrinsic(id, {}, {x, m});
    sv = max ? b.CreateAnd(sv, as_int(b, x)) : b.CreateOr(sv, as_int(b, x));
    fv = b.CreateOr(fv, unordered(b, x, x));
    prev = r;
  }
  s->addIncoming(s0, entry);
  s->addIncoming(sv, latch);
  f->addIncoming(f0, entry);
  f->addIncoming(fv, latch);
  p->setIncomingValue(back, m);
  for (llvm::Use *u : outside) {
    if (auto *phi = llvm::dyn_cast<llvm::PHINode>(u->getUser())) {
      // The phi takes m; its users take the fixed-up value (sv and fv dominate the block: its
      // one predecessor ends where rK is available).
      u->set(m);
      llvm::IRBuilder<> at(&*phi->getParent()->getFirstInsertionPt());
      llvm::SmallVector<llvm::Use *, 4> users;
      for (llvm::Use &pu : phi->uses())
        users.push_back(&pu);
      llvm::Value *v = reduction_result(at, phi, sv, fv);
      for (llvm::Use *pu : users)
        pu->set(v);
      continue;
    }
    llvm::IRBuilder<> at(llvm::cast<llvm::Instruction>(u->getUser()));
    u->set(reduction_result(at, m, sv, fv));
  }
  for (auto r = chain.rbegin(); r != chain.rend(); ++r) // each used only by the next
    (*r)->eraseFromParent();
  return true;
}

/// Without AVX-512DQ: vector maximum / minimum of f32 and f64 through SSE / AVX max / min, the
/// steps of vectorized reductions as rewrite_reduction, the others as sse_minmax.
void sse_minmax(llvm::Module &m, const Isa &isa) {
  const llvm::SmallVector<llvm::IntrinsicInst *, 32> found =
      vector_minmax(m, [&](llvm::FixedVectorType *vt) {
        return sse_minmax_id(vt, true, isa) != llvm::Intrinsic::not_intrinsic;
      });
  llvm::SmallPtrSet<llvm::Instruction *, 32> rewritten; // reduction steps, erased
  for (llvm::IntrinsicInst *ii : found) {
    if (rewritten.contains(ii))
      continue;
    const bool max = ii->getIntrinsicID() == llvm::Intrinsic::maximum;
    const llvm::Intrinsic::ID id =
        sse_minmax_id(llvm::cast<llvm::FixedVectorType>(ii->getType()), max, isa);
    bool reduction = false;
    for (unsigned i = 0; i < 2 && !reduction; ++i)
      if (auto *p = llvm::dyn_cast<llvm::PHINode>(ii->getArgOperand(i))) {
        auto chain = reduction_chain(p, ii->getIntrinsicID());
        if (!chain.empty() && chain.front() == ii && rewrite_reduction(p, chain, id, max)) {
          rewritten.insert(chain.begin(), chain.end());
          reduction = true;
        }
      }
    if (reduction)
      continue;
    llvm::IRBuilder<> b(ii);
    ii->replaceAllUsesWith(sse_minmax(b, id, max, ii->getArgOperand(0), ii->getArgOperand(1)));
    ii->eraseFromParent();
  }
}

/// Whether every lane of v is a float with its sign bit clear (NaN included) or -inf: llvm.fabs
/// results, such constants, and phis and maxima of such values (`seen`: a phi met again on its
/// own cycle adds nothing; any other source is refused).
bool sign_clear_or_neg_inf(llvm::Value *v, llvm::SmallPtrSetImpl<llvm::Value *> &seen) {
  if (!seen.insert(v).second)
    return true;
  if (auto *ii = llvm::dyn_cast<llvm::IntrinsicInst>(v)) {
    if (ii->getIntrinsicID() == llvm::Intrinsic::fabs)
      return true;
    return ii->getIntrinsicID() == llvm::Intrinsic::maximum &&
           sign_clear_or_neg_inf(ii->getArgOperand(0), seen) &&
           sign_clear_or_neg_inf(ii->getArgOperand(1), seen);
  }
  if (auto *p = llvm::dyn_cast<llvm::PHINode>(v)) {
    for (llvm::Value *in : p->incoming_values())
      if (!sign_clear_or_neg_inf(in, seen))
        return false;
    return true;
  }
  auto *c = llvm::dyn_cast<llvm::Constant>(v);
  auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
  if (!c || !vt)
    return false;
  for (unsigned i = 0; i < vt->getNumElements(); ++i) {
    auto *e = llvm::dyn_cast_or_null<llvm::ConstantFP>(c->getAggregateElement(i));
    if (!e || (e->isNegative() && !e->isInfinity()))
      return false;
  }
  return true;
}

/// Vector f32 maxima of sign_clear_or_neg_inf operands (an abs-max reduction: a quantization's
/// scale) as signed integer maxima of their bits: for such floats the integer order is the
/// float order, a NaN (all exponent bits, a nonzero fraction) above +inf, and -inf (sign bit
/// set) below all. One vpmaxsd a step instead of vrangeps, a compare and a blend.
void abs_max_as_int(llvm::Module &m) {
  llvm::SmallVector<llvm::IntrinsicInst *, 32> take;
  for (llvm::IntrinsicInst *ii : vector_minmax(
           m, [](llvm::FixedVectorType *vt) { return vt->getElementType()->isFloatTy(); })) {
    llvm::SmallPtrSet<llvm::Value *, 16> seen;
    if (ii->getIntrinsicID() == llvm::Intrinsic::maximum && sign_clear_or_neg_inf(ii, seen))
      take.push_back(ii);
  }
  for (llvm::IntrinsicInst *ii : take) { // decided first: each rewrite replaces a maximum
    llvm::IRBuilder<> b(ii);
    llvm::Value *r = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, as_int(b, ii->getArgOperand(0)),
                                             as_int(b, ii->getArgOperand(1)));
    ii->replaceAllUsesWith(b.CreateBitCast(r, ii->getType()));
    ii->eraseFromParent();
  }
}

/// With AVX-512F: fptosi of 16 f32 lanes rounded by roundeven (floor, ceil) as one vcvtps2dq
/// with that rounding embedded ({rn,rd,ru}-sae: the conversion does not read MXCSR). A value out
/// of i32's range is poison for fptosi, so the instruction's 0x80000000 there is a refinement.
void convert_rounded(llvm::Module &m) {
  llvm::SmallVector<llvm::FPToSIInst *, 16> found;
  for (llvm::Function &f : m)
    for (llvm::Instruction &i : llvm::instructions(f))
      if (auto *c = llvm::dyn_cast<llvm::FPToSIInst>(&i)) {
        auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(c->getSrcTy());
        auto *r = llvm::dyn_cast<llvm::IntrinsicInst>(c->getOperand(0));
        if (vt && vt->getNumElements() == 16 && vt->getElementType()->isFloatTy() &&
            c->getDestTy()->getScalarType()->isIntegerTy(32) && r &&
            (r->getIntrinsicID() == llvm::Intrinsic::roundeven ||
             r->getIntrinsicID() == llvm::Intrinsic::floor ||
             r->getIntrinsicID() == llvm::Intrinsic::ceil))
          found.push_back(c);
      }
  for (llvm::FPToSIInst *c : found) {
    auto *r = llvm::cast<llvm::IntrinsicInst>(c->getOperand(0));
    const int mode = r->getIntrinsicID() == llvm::Intrinsic::roundeven ? 8 // {rn-sae}
                     : r->getIntrinsicID() == llvm::Intrinsic::floor   ? 9 // {rd-sae}
                                                                       : 10; // {ru-sae}
    llvm::IRBuilder<> b(c);
    // A lane chosen as +0 (a NaN's, cast_lane) is the conversion's zero-masked lane instead.
    llvm::Value *x = r->getArgOperand(0), *mask = b.getInt16(-1);
    auto *sel = llvm::dyn_cast<llvm::SelectInst>(x);
    auto is_zero = [](llvm::Value *v) {
      auto *z = llvm::dyn_cast<llvm::Constant>(v);
      return z && z->isNullValue(); // +0 in every lane
    };
    if (sel && sel->getCondition()->getType()->isVectorTy() &&
        (is_zero(sel->getTrueValue()) || is_zero(sel->getFalseValue()))) {
      const bool zero_if_true = is_zero(sel->getTrueValue());
      llvm::Value *keep = zero_if_true ? b.CreateNot(sel->getCondition()) : sel->getCondition();
      mask = b.CreateBitCast(keep, b.getInt16Ty());
      x = zero_if_true ? sel->getFalseValue() : sel->getTrueValue();
    }
    c->replaceAllUsesWith(
        b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_cvtps2dq_512, {},
                          {x, llvm::Constant::getNullValue(c->getType()), mask, b.getInt32(mode)}));
    c->eraseFromParent();
    if (r->use_empty())
      r->eraseFromParent();
    if (sel && sel->use_empty())
      sel->eraseFromParent();
  }
}

} // namespace

Isa isa_features(const llvm::MCSubtargetInfo &subtarget) {
  // The subtarget's own bits: a named CPU (not the host) has an empty feature string.
  Isa a;
  a.avx512f = subtarget.checkFeatures("+avx512f");
  a.avx512dq = subtarget.checkFeatures("+avx512dq");
  a.avx512vl = subtarget.checkFeatures("+avx512vl");
  a.avx512bw = subtarget.checkFeatures("+avx512bw");
  a.avx = subtarget.checkFeatures("+avx");
  return a;
}

std::string required_features(const llvm::MCSubtargetInfo &subtarget) {
  // The ISA extensions code generation may select instructions from (not tuning flags).
  // A table, kept as one (clang-format would put one name a line).
  // clang-format off
  static const char *const kExtensions[] = {
      "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx",
      "avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt",
      "movbe", "avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512cd",
      "avx512bf16", "avx512vnni", "avx512vbmi", "avx512vbmi2", "avx512ifma", "avx512bitalg",
      "avx512vpopcntdq", "avx512fp16", "gfni", "vaes", "vpclmulqdq", "avxvnni",
      "avx512vp2intersect"};
  // clang-format on
  std::string out;
  for (const char *f : kExtensions)
    if (subtarget.checkFeatures(std::string("+") + f))
      out += (out.empty() ? "+" : ",+") + std::string(f);
  return out;
}

llvm::Value *scalef(llvm::IRBuilder<> &b, llvm::Module &m, const Isa &isa, llvm::Value *p,
                    llvm::Value *n) {
  auto define = [&](llvm::Function &helper) {
    scalef_body(helper, 1);
    std::vector<VectorVariant> variants;
    for (unsigned lanes : {16u, 8u, 4u}) {
      if (lanes < 16 && !isa.avx512vl)
        continue;
      auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
      auto *v = llvm::Function::Create(llvm::FunctionType::get(vt, {vt, vt}, false),
                                       llvm::GlobalValue::InternalLinkage,
                                       std::string(kScalef) + ".v" + std::to_string(lanes), m);
      v->addFnAttr(llvm::Attribute::NoInline); // a helper too: inlined by finish_helpers
      scalef_body(*v, lanes);
      variants.push_back({lanes, v});
    }
    return variants;
  };
  auto *type = llvm::FunctionType::get(b.getFloatTy(), {b.getFloatTy(), b.getFloatTy()}, false);
  return call_helper(b, m, kScalef, type, define, {p, n});
}

void finish_module(llvm::Module &m, const Isa &isa) {
  abs_max_as_int(m);
  if (isa.avx512f)
    convert_rounded(m);
  if (isa.avx512dq)
    range_minmax(m, isa);
  else
    sse_minmax(m, isa);
  for (llvm::Function &f : llvm::make_early_inc_range(m)) // now unused declarations
    if (f.isIntrinsic() && f.use_empty())
      f.eraseFromParent();
}

llvm::Value *lanes_of_pair(llvm::IRBuilder<> &b, llvm::Value *lo, llvm::Value *hi,
                           llvm::Value *first) {
  auto *first_t = llvm::cast<llvm::FixedVectorType>(first->getType());
  const unsigned lanes = first_t->getNumElements();
  llvm::Type *lane_t = first_t->getElementType();
  llvm::SmallVector<llvm::Constant *, 32> iota;
  for (uint32_t j = 0; j < lanes; ++j)
    iota.push_back(llvm::ConstantInt::get(lane_t, j));
  llvm::Value *idx = b.CreateAdd(first, llvm::ConstantVector::get(iota));
  llvm::Value *r =
      b.CreateIntrinsic(lanes == 16 ? llvm::Intrinsic::x86_avx512_vpermi2var_d_512
                                    : llvm::Intrinsic::x86_avx512_vpermi2var_hi_512,
                        {}, {b.CreateBitCast(lo, first_t), idx, b.CreateBitCast(hi, first_t)});
  return b.CreateBitCast(r, lo->getType());
}

} // namespace tl::llvm_cpu::x86
