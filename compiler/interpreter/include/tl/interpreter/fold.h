// Constant folding with the interpreter's exact semantics, so that folded and run code agree.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <optional>
#include <vector>

namespace tl::interp {

/// Evaluates the elementwise op `op` on scalar constants given as attribute values (int64_t for
/// integers, bool or int64_t for i1, double for floats), as the result of `op` would be computed
/// at run time. Returns the result as an attribute value of the same convention (bool for i1), or
/// nothing when `op` is not a scalar elementwise op or would trap (integer division by zero).
std::optional<ir::Attr> fold_scalar(const ir::Operation &op, const std::vector<ir::Attr> &operands);

} // namespace tl::interp
