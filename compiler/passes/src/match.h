// Matchers over constant-defining ops, shared by canonicalize and constfold (private header).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <optional>

namespace tl::passes {

/// The "value" attribute of the scalar `constant` op defining `v`, or null.
const ir::Attr *scalar_constant(const ir::Value *v);

/// The "value" attribute of a scalar `constant` or a tile `full` op defining `v`: the value of
/// every lane of `v`. Null when `v` is not known to be uniform.
const ir::Attr *uniform_constant(const ir::Value *v);

/// An integer attribute (bool as 0/1) as int64; nothing for floats and other kinds.
std::optional<int64_t> attr_int(const ir::Attr &a);
/// A numeric attribute as double (ints converted); nothing for other kinds.
std::optional<double> attr_float(const ir::Attr &a);

/// `v` is a uniform integer constant equal to `n` (the attribute taken literally, not wrapped).
bool is_int_constant(const ir::Value *v, int64_t n);
/// `v` is a uniform float constant bitwise equal to `d` (so 0.0 and -0.0 differ).
bool is_float_constant(const ir::Value *v, double d);
/// A uniform i1 constant: 0 or 1 (other integers are not trusted).
std::optional<bool> bool_constant(const ir::Value *v);

/// `a` is the attribute form the verifier and fold_scalar agree on for element type `elem`:
/// bool for i1, int64 for other integers, double for floats.
bool is_canonical_value_attr(const ir::Attr &a, ir::ScalarKind elem);

/// Two attributes are the same value; doubles compare bitwise (0.0 differs from -0.0, NaNs of
/// one payload are equal).
bool same_attr(const ir::Attr &a, const ir::Attr &b);

} // namespace tl::passes
