// x86 instructions that LLVM 19 does not select from portable IR, for the hot spots of
// memory-bound kernels: the 2^n scaling of exp (AVX-512 vscalefps: one instruction instead of
// ten) and the NaN-propagating max/min of reductions (AVX-512DQ vrangeps: three instead of six).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/IR/Module.h>

namespace tl::llvm_cpu::x86 {

/// The x86 features the helpers use, from a target feature string ("+avx512f,...").
struct Isa {
  bool avx512f = false, avx512dq = false, avx512vl = false;
};
Isa isa_features(llvm::StringRef features);

/// float @tl.scalef.f32(float p, float n) = p * 2^n for an integral n, rounded once (subnormal
/// and overflowing results included), declared with vector variants of 16 lanes (8 and 4 with
/// AVX-512VL) that the loop vectorizer calls instead. The helpers stay calls until
/// finish_module inlines them. Requires AVX-512F.
llvm::Function *scalef_f32(llvm::Module &m, const Isa &isa);

/// After the optimization pipeline: inlines and removes the scalef helpers, and rewrites vector
/// llvm.maximum / llvm.minimum of f32 as vrangeps (which orders -0 < +0 as the IR does) plus one
/// compare and blend that propagates NaN (vrangeps alone returns the other operand).
void finish_module(llvm::Module &m, const Isa &isa);

} // namespace tl::llvm_cpu::x86
