// The cse pass: common subexpression elimination over pure ops and memory reads.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::passes {

/// Replaces an op by an earlier identical one (same opcode, operands, attributes and result
/// types) that dominates it: defined before it in the same block or in an enclosing block.
/// Pure ops always qualify; memory reads (load, gather) only when no tensor write can happen
/// between the two (no store/scatter/atomic_add, nor a for/if containing one, in between; a
/// region whose op contains a write does not see reads from outside it; print and assert do not
/// count as writes). Ops with regions are never merged. Returns whether anything changed.
bool run_cse(ir::Kernel &kernel);

} // namespace tl::passes
