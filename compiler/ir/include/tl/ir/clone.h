// Deep copies of kernels and modules.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <memory>

namespace tl::ir {

/// A copy of `module` that shares nothing with it: every kernel, op, block and value anew, with
/// the same locations, name hints, attributes and constexprs, so that a backend can record its
/// decisions on the copy (or rewrite it) and leave the caller's module as it was.
std::unique_ptr<Module> clone(const Module &module);

} // namespace tl::ir
