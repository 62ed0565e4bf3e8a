// The Tile IR verifier: every structural and typing rule of the IR, with located diagnostics.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/diagnostics.h"

#include <optional>
#include <string>

namespace tl::ir {

/// Whether `v` is representable in integer type `elem` (i1: 0 or 1).
bool fits(ScalarKind elem, int64_t v);

/// Checks one op's local rules (operand/result counts and types, attributes). Returns the reason
/// it is invalid, or nothing. Used by the verifier and by the builder as each op is made.
std::optional<std::string> verify_op(const Operation &op, const Kernel &kernel);

/// Checks a whole kernel: local rules, terminators, region signatures, SSA dominance.
bool verify(const Kernel &kernel, Diagnostics &diags);
bool verify(const Module &module, Diagnostics &diags);

} // namespace tl::ir
