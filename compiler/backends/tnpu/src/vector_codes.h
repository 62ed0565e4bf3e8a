// The vector unit's codes for Tile IR ops and types: opcodes of elementwise ops and compares,
// rounding modes, raw-copy dtypes; shared by the lower_vector*.cpp / lower_reduce.cpp files.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "lowering.h"

#include <string>

namespace tl::tnpu::detail {

/// The vector opcode of an elementwise Tile IR op, or Nop.
isa::Opcode vector_opcode(Opcode op);

/// The class tests (isnan, isinf, isfinite): a float operand, a byte-mask result.
inline bool is_class_test(Opcode op) {
  return op == Opcode::IsNan || op == Opcode::IsInf || op == Opcode::IsFinite;
}

/// The vector compare opcode of a `cmp` predicate (eq, ne, lt, le, gt, ge).
isa::Opcode compare_opcode(const std::string &pred);

/// The unit's rounding code (rne 0, rtz 1, rd 2, ru 3) of the mode a cast applies
/// (ir::cast_rounding: its `rounding` attribute or the conversion's default).
int rounding_code(const ir::Operation &op);

/// The unit dtype that copies elements of `bytes` bytes unchanged.
inline int raw_code(int bytes) { return bytes == 1 ? 3 : bytes == 2 ? 0 : 4; }

inline bool unsigned_int(ir::ScalarKind e) { return ir::is_integer(e) && !ir::is_signed(e); }

} // namespace tl::tnpu::detail
