// The constfold pass: evaluates elementwise ops on scalar constants at compile time.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::passes {

/// Replaces every elementwise op whose operands are all scalar `constant` ops by a `constant`
/// holding its result, computed by the reference interpreter (tl::interp::fold_scalar) so that
/// folded and executed code agree bit for bit. Ops that would trap (integer division by zero)
/// are left alone. Returns whether anything changed.
bool run_constfold(ir::Kernel &kernel);

} // namespace tl::passes
