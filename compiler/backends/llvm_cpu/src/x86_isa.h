// x86 instructions that LLVM 19 does not select from portable IR, for the hot spots of
// memory-bound kernels: the 2^n scaling of exp (AVX-512 vscalefps: one instruction instead of
// ten) and the NaN-propagating max/min of reductions (AVX-512DQ vrangeps: three instead of six;
// elsewhere SSE/AVX max/min without blends).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <string>

namespace llvm {
class MCSubtargetInfo;
}

namespace tl::llvm_cpu::x86 {

/// The x86 features the helpers use, from the target machine's subtarget (the host's or a named
/// CPU's).
struct Isa {
  bool avx = false, avx512f = false, avx512dq = false, avx512vl = false, avx512bw = false;
};
Isa isa_features(const llvm::MCSubtargetInfo &subtarget);

/// The features of an x86 ISA-extension list that `subtarget` enables, as "+avx,+avx2,...": what
/// the object needs of the host that runs it (TL_CPU_FEATURES_SYMBOL, llvm_cpu_abi.h).
std::string required_features(const llvm::MCSubtargetInfo &subtarget);

/// p * 2^n for f32 p and an integral f32 n, rounded once (subnormal and overflowing results
/// included): a helper (vector_math.h) whose vector variants of 16 lanes (8 and 4 with AVX-512VL)
/// are vscalefps. Requires AVX-512F.
llvm::Value *scalef(llvm::IRBuilder<> &b, llvm::Module &m, const Isa &isa, llvm::Value *p,
                    llvm::Value *n);

/// Lanes `first` .. `first` + W - 1 of `lo` and `hi` joined (W lanes each: 16 of 32 bits, or 32
/// of 16 bits), `first` a splat of 0 .. W (lanes of i32, or i16) known only at run time
/// (vpermi2d / vpermi2w: one instruction, where a shuffle needs its mask as a constant).
/// Requires AVX-512F (16-bit lanes: AVX-512BW).
llvm::Value *lanes_of_pair(llvm::IRBuilder<> &b, llvm::Value *lo, llvm::Value *hi,
                           llvm::Value *first);

/// After the optimization pipeline: rewrites vector llvm.maximum / llvm.minimum. With AVX-512DQ
/// (f32) as vrangeps (which orders -0 < +0 as the IR does) plus one compare and blend that
/// propagates NaN (vrangeps alone returns the other operand). Without it (f32 and f64, 128 bits, or
/// 256 with AVX) as SSE/AVX max/min, which LLVM 19 lowers with three blends a vector: a vectorized
/// reduction's step keeps a plain max/min on its loop-carried chain, with the NaN lanes and the
/// zeros' signs accumulated beside it and applied once after the loop; other uses take max/min in
/// both operand orders and-ed / or-ed (zeros ordered) and or-ed with the NaN mask.
void finish_module(llvm::Module &m, const Isa &isa);

} // namespace tl::llvm_cpu::x86
