// The lowering's IR folder: constants fold (as LLVM's ConstantFolder), and so do the integer
// identities a generic layout spells out (x * 1, x + 0, x / 1, x % 1, x << 0, x & -1, x & false,
// x | true, select on a constant). The lowering writes layouts generically; what folds here
// LLVM's O3 need not see, which shortens the cold compile (the library GEMM: 1292 -> ~1080
// instructions into O3).
//
// Not LLVM's InstSimplifyFolder: it assumes finished IR and folds a loop's phi that has only its
// entry value so far (lowering adds the back edge after the body) into that value.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <llvm/IR/ConstantFolder.h>
#include <llvm/IR/IRBuilderFolder.h>
#include <llvm/IR/Instructions.h>

namespace tl::nvptx {

class IdentityFolder final : public llvm::IRBuilderFolder {
public:
  llvm::Value *FoldBinOp(llvm::Instruction::BinaryOps op, llvm::Value *l,
                         llvm::Value *r) const override {
    if (llvm::Value *v = constants_.FoldBinOp(op, l, r))
      return v;
    return identity(op, l, r);
  }
  llvm::Value *FoldExactBinOp(llvm::Instruction::BinaryOps op, llvm::Value *l, llvm::Value *r,
                              bool exact) const override {
    if (llvm::Value *v = constants_.FoldExactBinOp(op, l, r, exact))
      return v;
    return identity(op, l, r);
  }
  llvm::Value *FoldNoWrapBinOp(llvm::Instruction::BinaryOps op, llvm::Value *l, llvm::Value *r,
                               bool nuw, bool nsw) const override {
    if (llvm::Value *v = constants_.FoldNoWrapBinOp(op, l, r, nuw, nsw))
      return v;
    return identity(op, l, r);
  }
  // Floating point: constants only (x + 0.0 is not x for x = -0.0).
  llvm::Value *FoldBinOpFMF(llvm::Instruction::BinaryOps op, llvm::Value *l, llvm::Value *r,
                            llvm::FastMathFlags fmf) const override {
    return constants_.FoldBinOpFMF(op, l, r, fmf);
  }
  llvm::Value *FoldUnOpFMF(llvm::Instruction::UnaryOps op, llvm::Value *v,
                           llvm::FastMathFlags fmf) const override {
    return constants_.FoldUnOpFMF(op, v, fmf);
  }
  llvm::Value *FoldCmp(llvm::CmpInst::Predicate p, llvm::Value *l, llvm::Value *r) const override {
    return constants_.FoldCmp(p, l, r);
  }
  llvm::Value *FoldGEP(llvm::Type *t, llvm::Value *ptr, llvm::ArrayRef<llvm::Value *> indices,
                       llvm::GEPNoWrapFlags nw) const override {
    return constants_.FoldGEP(t, ptr, indices, nw);
  }
  llvm::Value *FoldSelect(llvm::Value *c, llvm::Value *t, llvm::Value *f) const override {
    if (auto *cc = llvm::dyn_cast<llvm::ConstantInt>(c))
      return cc->isOne() ? t : f;
    if (t == f)
      return t;
    return constants_.FoldSelect(c, t, f);
  }
  llvm::Value *FoldExtractValue(llvm::Value *agg, llvm::ArrayRef<unsigned> idx) const override {
    return constants_.FoldExtractValue(agg, idx);
  }
  llvm::Value *FoldInsertValue(llvm::Value *agg, llvm::Value *v,
                               llvm::ArrayRef<unsigned> idx) const override {
    return constants_.FoldInsertValue(agg, v, idx);
  }
  llvm::Value *FoldExtractElement(llvm::Value *vec, llvm::Value *idx) const override {
    return constants_.FoldExtractElement(vec, idx);
  }
  llvm::Value *FoldInsertElement(llvm::Value *vec, llvm::Value *v,
                                 llvm::Value *idx) const override {
    return constants_.FoldInsertElement(vec, v, idx);
  }
  llvm::Value *FoldShuffleVector(llvm::Value *a, llvm::Value *b,
                                 llvm::ArrayRef<int> mask) const override {
    return constants_.FoldShuffleVector(a, b, mask);
  }
  llvm::Value *FoldCast(llvm::Instruction::CastOps op, llvm::Value *v,
                        llvm::Type *to) const override {
    return constants_.FoldCast(op, v, to);
  }
  llvm::Value *FoldBinaryIntrinsic(llvm::Intrinsic::ID id, llvm::Value *l, llvm::Value *r,
                                   llvm::Type *t, llvm::Instruction *fmf) const override {
    return constants_.FoldBinaryIntrinsic(id, l, r, t, fmf);
  }
  llvm::Value *CreatePointerCast(llvm::Constant *c, llvm::Type *to) const override {
    return constants_.CreatePointerCast(c, to);
  }
  llvm::Value *CreatePointerBitCastOrAddrSpaceCast(llvm::Constant *c,
                                                   llvm::Type *to) const override {
    return constants_.CreatePointerBitCastOrAddrSpaceCast(c, to);
  }

private:
  /// x op c (or c op x where op commutes) that is x or a constant; null otherwise.
  static llvm::Value *identity(llvm::Instruction::BinaryOps op, llvm::Value *l, llvm::Value *r) {
    using I = llvm::Instruction;
    auto *rc = llvm::dyn_cast<llvm::ConstantInt>(r);
    auto *lc = llvm::dyn_cast<llvm::ConstantInt>(l);
    if (!rc && lc && I::isCommutative(op)) {
      std::swap(l, r);
      std::swap(lc, rc);
    }
    if (!rc)
      return nullptr;
    switch (op) {
    case I::Add:
    case I::Sub:
    case I::Or:
    case I::Xor:
    case I::Shl:
    case I::LShr:
    case I::AShr:
      if (rc->isZero())
        return l;
      if (op == I::Or && rc->isMinusOne())
        return r;
      return nullptr;
    case I::Mul:
      return rc->isOne() ? l : rc->isZero() ? r : nullptr;
    case I::UDiv:
    case I::SDiv:
      return rc->isOne() ? l : nullptr;
    case I::URem:
    case I::SRem:
      return rc->isOne() ? llvm::ConstantInt::get(l->getType(), 0) : nullptr;
    case I::And:
      return rc->isMinusOne() ? l : rc->isZero() ? r : nullptr;
    default:
      return nullptr;
    }
  }

  llvm::ConstantFolder constants_;
};

} // namespace tl::nvptx
