// Scalar helpers that the loop vectorizer replaces by vector functions, and math through SLEEF.
//
// A helper is an internal scalar function named "tl.<something>", opaque (noinline, no memory
// effects) until the vectorizer has run, whose calls name vector variants of it
// (vector-function-abi-variant); finish_helpers then inlines what is left of them. So the lane
// code stays scalar and the vectorizer picks the vector function for its width.
//
// Math goes through SLEEF (Debian's libsleef3: vector functions within 1.0 ulp) this way: LLVM 19
// maps SLEEF only on AArch64 by itself, and glibc's libmvec offers it at most 8 f32 lanes, within
// 4 ulp (logf 3.02); a helper's own name also keeps LLVM from picking libmvec for the call.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <string>
#include <vector>

namespace tl::llvm_cpu {

/// A vector variant of a helper: `lanes` lanes, implemented by function `name`.
struct VectorVariant {
  unsigned lanes;
  llvm::Function *fn;
};

/// Defines a helper's scalar body in the function given and returns its vector variants.
using HelperDefinition = std::function<std::vector<VectorVariant>(llvm::Function &)>;

/// A call of helper `name` of type `type` on `args`; the first call in a module defines the
/// helper with `define` and keeps its variants alive until finish_helpers.
llvm::CallInst *call_helper(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &name,
                            llvm::FunctionType *type, const HelperDefinition &define,
                            llvm::ArrayRef<llvm::Value *> args);

/// After the optimization pipeline: inlines the remaining helper calls, removes the helpers and
/// the vector functions nobody calls.
void finish_helpers(llvm::Module &m);

/// `fn` of SLEEF ("log", "sin", "pow", ...) on `args` (one or two f32 or f64 values): scalar
/// calls go to libm (logf / log, ...), vector ones to SLEEF's 1.0-ulp functions of the widths
/// that `vector_bits` (128, 256, 512) allows.
/// `accuracy` is SLEEF's suffix: "u10" (1.0 ulp), or "u15" where SLEEF has no 1.0-ulp form (erfc).
llvm::Value *sleef_call(llvm::IRBuilder<> &b, llvm::Module &m, const char *fn,
                        llvm::ArrayRef<llvm::Value *> args, unsigned vector_bits,
                        const char *accuracy = "u10");

} // namespace tl::llvm_cpu
