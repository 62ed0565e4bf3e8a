// Result-type inference: the result types of an op that follow from its operands and attributes.
// SPDX-License-Identifier: Apache-2.0
//
// The one home of these rules: the builder's typed helpers (program_id, dot, reduce, ...) and the
// C API's TL_IR_INFER (how the Python front end makes ops) both call infer_result_types. The
// types it returns are the only ones verify_op accepts for those operands and attributes.
#pragma once

#include "tl/ir/builder.h" // BuildError

#include <string>
#include <utility>
#include <vector>

namespace tl::ir {

/// The result types of op `opcode` with these operands (non-null) and attributes, in `kernel`
/// (constexpr looks its parameter up there). Inferable: elementwise ops, cmp, select, dot,
/// reduce, scan, gather, atomic_add, program_id, num_programs, dim, stride, transpose,
/// expand_dims, constexpr, for, and ops without results (if: none, its results are added later).
/// The others (constant, full, arange, splat, broadcast, reshape, load, cast, bitcast) are a
/// choice: BuildError "needs explicit result types". A missing operand or attribute that the
/// types depend on is a BuildError too. Its message does not name the op: callers prefix it.
std::vector<Type> infer_result_types(Opcode opcode, const std::vector<Value *> &operands,
                                     const std::vector<std::pair<std::string, Attr>> &attrs,
                                     const Kernel &kernel);

} // namespace tl::ir
