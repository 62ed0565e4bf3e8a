// The dce pass: dead code elimination.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::passes {

/// Removes, until nothing more can go: ops without regions that are pure or only read memory
/// and whose results are all unused; `if` ops, and `for` ops with a constant positive step (so
/// that they surely terminate), whose results are unused and whose regions hold no writing op.
/// Block arguments and kernel signatures are kept. Returns whether anything changed.
bool run_dce(ir::Kernel &kernel);

} // namespace tl::passes
