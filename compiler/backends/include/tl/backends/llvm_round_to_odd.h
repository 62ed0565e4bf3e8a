// The exact fma of the narrow float types (f16, bf16, fp8) for the LLVM backends: a b + c
// rounded to odd in f64, so that the one rounding to the type afterwards is the correctly
// rounded fma (round to odd in f64 keeps the sticky bit that f64's round to nearest drops when c
// is far below a b: 53 bits >= twice the type's precision plus two). Header-only; llvm_cpu and
// nvptx include it.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

namespace tl::backends {

/// a b + c (f64 operands whose product is exact: widened narrow floats) rounded to odd in f64.
/// The sum s = a b + c to nearest and its exact error e (Knuth's two-sum); where e != 0 and s
/// is even, the odd neighbour on e's side. Infinities and NaN pass through (e is NaN there).
template <class Builder>
llvm::Value *f64_fma_round_to_odd(Builder &b, llvm::Value *x, llvm::Value *y, llvm::Value *c) {
  llvm::Value *p = b.CreateFMul(x, y);
  llvm::Value *s = b.CreateFAdd(p, c);
  llvm::Value *bb = b.CreateFSub(s, p);
  llvm::Value *e = b.CreateFAdd(b.CreateFSub(p, b.CreateFSub(s, bb)), b.CreateFSub(c, bb));
  llvm::Type *i64 = b.getInt64Ty();
  llvm::Value *bits = b.CreateBitCast(s, i64);
  llvm::Value *zero = llvm::ConstantFP::get(s->getType(), 0.0);
  llvm::Value *even = b.CreateICmpEQ(b.CreateAnd(bits, b.getInt64(1)), b.getInt64(0));
  llvm::Value *inexact = b.CreateFCmpONE(e, zero); // false for NaN
  // e on s's side: the magnitude grows (bits + 1), else shrinks (bits - 1)
  llvm::Value *away = b.CreateICmpEQ(b.CreateFCmpOLT(e, zero), b.CreateFCmpOLT(s, zero));
  llvm::Value *step = b.CreateSelect(away, b.getInt64(1), b.getInt64(-1));
  llvm::Value *odd = b.CreateBitCast(b.CreateAdd(bits, step), s->getType());
  return b.CreateSelect(b.CreateAnd(even, inexact), odd, s);
}

} // namespace tl::backends
