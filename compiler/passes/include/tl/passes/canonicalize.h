// The canonicalize pass: named local simplifications applied to a fixpoint.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::passes {

/// Applies the canonicalization patterns (see canonicalize.cpp for the table: constexpr ->
/// constant, arithmetic identities, no-op casts and shape ops, constant select/if conditions,
/// zero-trip loops, splat of a constant -> full) until none matches. Each pattern keeps the exact
/// semantics of ir.h, including float signed zeros. Ops made dead are left for dce. Returns
/// whether anything changed.
bool run_canonicalize(ir::Kernel &kernel);

} // namespace tl::passes
