// SPDX-License-Identifier: Apache-2.0
#include "x86_isa.h"

#include "vector_math.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsX86.h>

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

} // namespace

Isa isa_features(llvm::StringRef features) {
  llvm::SmallVector<llvm::StringRef, 64> parts;
  features.split(parts, ',');
  Isa a;
  for (llvm::StringRef p : parts) {
    a.avx512f |= p == "+avx512f";
    a.avx512dq |= p == "+avx512dq";
    a.avx512vl |= p == "+avx512vl";
  }
  return a;
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
  // Vector f32 maximum / minimum as vrangeps + NaN blend.
  if (!isa.avx512dq)
    return;
  llvm::SmallVector<llvm::IntrinsicInst *, 32>
      to_rewrite; // collected first: rewriting edits the lists
  for (llvm::Function &f : m)
    for (llvm::Instruction &i : llvm::instructions(f))
      if (auto *ii = llvm::dyn_cast<llvm::IntrinsicInst>(&i))
        if (ii->getIntrinsicID() == llvm::Intrinsic::maximum ||
            ii->getIntrinsicID() == llvm::Intrinsic::minimum)
          if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(ii->getType()))
            if (vt->getElementType()->isFloatTy() &&
                (vt->getNumElements() == 16 ||
                 (isa.avx512vl && (vt->getNumElements() == 8 || vt->getNumElements() == 4))))
              to_rewrite.push_back(ii);
  for (llvm::IntrinsicInst *ii : to_rewrite) {
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
  for (llvm::Function &f : llvm::make_early_inc_range(m)) // now unused declarations
    if (f.isIntrinsic() && f.use_empty())
      f.eraseFromParent();
}

} // namespace tl::llvm_cpu::x86
