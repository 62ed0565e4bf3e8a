// The per-op typing rules behind verify_op, one function per op family, and their shared checks.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/verifier.h"

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

namespace tl::ir::op_rules {

/// Why an op is invalid (a diagnostic without its location), or nothing.
using Error = std::optional<std::string>;

// ---- the op families (each file verify_op_<family>.cpp) ----

/// Arithmetic, bitwise and math ops, cmp, select, cast, bitcast (verify_op_elementwise.cpp).
Error verify_elementwise(const Operation &op);
/// splat, broadcast, reshape, transpose, expand_dims (verify_op_shape.cpp).
Error verify_shape_op(const Operation &op);
/// load, store (verify_op_memory.cpp).
Error verify_block_access(const Operation &op);
/// gather, scatter, atomic_add (verify_op_memory.cpp).
Error verify_indexed_access(const Operation &op);
/// dot (verify_op_compute.cpp).
Error verify_dot(const Operation &op);
/// reduce, scan (verify_op_compute.cpp).
Error verify_reduce_scan(const Operation &op);
/// program_id, num_programs, dim, stride, constant, constexpr, full, arange
/// (verify_op_sources.cpp).
Error verify_tile_source(const Operation &op, const Kernel &kernel);
/// for, if, yield, return, print, assert (verify_op_control.cpp).
Error verify_control(const Operation &op);

// ---- shared checks (verify_op_checks.cpp) ----

/// "1 operand", "2 operands".
std::string count_str(size_t n, const char *what);
Error expect_counts(const Operation &op, size_t operands, size_t results);
/// Operand `i` is a scalar or a tile.
Error expect_value(const Operation &op, unsigned i);
/// Integer attribute `name` in [lo, hi].
Error expect_int_attr(const Operation &op, const char *name, int64_t lo, int64_t hi);
/// String attribute `name`, one of `allowed`.
Error expect_string_attr(const Operation &op, const char *name,
                         std::initializer_list<std::string_view> allowed);
/// The attribute `name` holds a value representable in `elem` (ints for ints, any number for
/// floats).
Error expect_value_attr(const Operation &op, const char *name, ScalarKind elem, bool required);
/// Operand `i` is an integer scalar (an offset); `what` names its role.
Error expect_index(const Operation &op, unsigned i, const char *what);
/// Operand #0 is a tensor of rank >= 1.
Error expect_tensor(const Operation &op);

} // namespace tl::ir::op_rules
