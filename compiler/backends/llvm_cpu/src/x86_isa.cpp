// SPDX-License-Identifier: Apache-2.0
#include "x86_isa.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <string>

namespace tl::llvm_cpu::x86 {
namespace {

constexpr const char *kScalef = "tl.scalef.f32";

/// The vector variant of the scalef helper for `lanes` lanes (1: the scalar helper itself).
llvm::Function *define_scalef(llvm::Module &m, unsigned lanes) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::Type *f32 = llvm::Type::getFloatTy(ctx);
  llvm::Type *t = lanes == 1 ? f32 : llvm::FixedVectorType::get(f32, lanes);
  const std::string name =
      lanes == 1 ? kScalef : std::string(kScalef) + ".v" + std::to_string(lanes);
  auto *fn = llvm::Function::Create(llvm::FunctionType::get(t, {t, t}, false),
                                    llvm::GlobalValue::InternalLinkage, name, m);
  fn->setDoesNotAccessMemory();
  fn->setDoesNotThrow();
  fn->setWillReturn();
  fn->setNoSync();
  fn->setDoesNotFreeMemory();
  // Opaque to the inliner until the vectorizer has chosen the variant (finish_module inlines).
  fn->addFnAttr(llvm::Attribute::NoInline);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", fn));
  llvm::Value *p = fn->getArg(0), *n = fn->getArg(1);
  llvm::Value *r;
  if (lanes == 1) { // vscalefss on lane 0
    auto *v4 = llvm::FixedVectorType::get(f32, 4);
    llvm::Value *zero = llvm::Constant::getNullValue(v4);
    r = b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ss, {},
                          {b.CreateInsertElement(zero, p, uint64_t(0)),
                           b.CreateInsertElement(zero, n, uint64_t(0)), zero, b.getInt8(-1),
                           b.getInt32(4)});
    r = b.CreateExtractElement(r, uint64_t(0));
  } else if (lanes == 16) {
    r = b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                          {p, n, llvm::Constant::getNullValue(t), b.getInt16(-1), b.getInt32(4)});
  } else {
    r = b.CreateIntrinsic(lanes == 8 ? llvm::Intrinsic::x86_avx512_mask_scalef_ps_256
                                     : llvm::Intrinsic::x86_avx512_mask_scalef_ps_128,
                          {}, {p, n, llvm::Constant::getNullValue(t), b.getInt8(-1)});
  }
  b.CreateRet(r);
  return fn;
}

bool is_helper(const llvm::Function &f) { return f.getName().starts_with(kScalef); }

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

llvm::Function *scalef_f32(llvm::Module &m, const Isa &isa) {
  if (llvm::Function *f = m.getFunction(kScalef))
    return f;
  llvm::Function *scalar = define_scalef(m, 1);
  // The loop vectorizer finds vector variants through this attribute at the call site and
  // needs them alive until it runs (compiler.used keeps them; finish_module drops them).
  std::string variants;
  llvm::SmallVector<llvm::GlobalValue *, 3> used;
  for (unsigned lanes : {16u, 8u, 4u}) {
    if (lanes < 16 && !isa.avx512vl)
      continue;
    llvm::Function *v = define_scalef(m, lanes);
    used.push_back(v);
    variants += (variants.empty() ? "" : ",") + std::string("_ZGV_LLVM_N") + std::to_string(lanes) +
                "vv_" + kScalef + "(" + v->getName().str() + ")";
  }
  llvm::appendToCompilerUsed(m, used);
  scalar->addFnAttr("vector-function-abi-variant", variants);
  return scalar;
}

void finish_module(llvm::Module &m, const Isa &isa) {
  // 1. Inline the scalef helpers (one instruction each) and remove them.
  llvm::removeFromUsedLists(m, [](llvm::Constant *c) {
    auto *f = llvm::dyn_cast<llvm::Function>(c);
    return f && is_helper(*f);
  });
  llvm::SmallVector<llvm::Function *, 4> helpers;
  for (llvm::Function &f : m)
    if (is_helper(f))
      helpers.push_back(&f);
  for (llvm::Function *f : helpers) {
    llvm::SmallVector<llvm::CallBase *, 16> calls;
    for (llvm::User *u : f->users())
      if (auto *c = llvm::dyn_cast<llvm::CallBase>(u))
        calls.push_back(c);
    for (llvm::CallBase *c : calls) {
      llvm::InlineFunctionInfo info;
      if (!llvm::InlineFunction(*c, info).isSuccess())
        throw std::runtime_error("llvm-cpu: cannot inline " + f->getName().str());
    }
    f->removeDeadConstantUsers(); // the old llvm.compiler.used array
    if (f->use_empty())
      f->eraseFromParent();
  }
  // 2. Vector f32 maximum / minimum as vrangeps + NaN blend.
  if (!isa.avx512dq)
    return;
  llvm::SmallVector<llvm::IntrinsicInst *, 32> todo;
  for (llvm::Function &f : m)
    for (llvm::Instruction &i : llvm::instructions(f))
      if (auto *ii = llvm::dyn_cast<llvm::IntrinsicInst>(&i))
        if (ii->getIntrinsicID() == llvm::Intrinsic::maximum ||
            ii->getIntrinsicID() == llvm::Intrinsic::minimum)
          if (auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(ii->getType()))
            if (vt->getElementType()->isFloatTy() &&
                (vt->getNumElements() == 16 ||
                 (isa.avx512vl && (vt->getNumElements() == 8 || vt->getNumElements() == 4))))
              todo.push_back(ii);
  for (llvm::IntrinsicInst *ii : todo) {
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
