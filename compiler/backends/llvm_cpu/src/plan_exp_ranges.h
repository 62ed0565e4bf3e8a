// llvm-cpu planning pass cpu-exp-ranges (see plan_attrs.h for the attributes).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// Marks with `cpu.exp_nonpositive` each f32 exp whose operand is `a - m` with m at least a in
/// every lane: m a max with a among its operands, or a broadcast, splat or expand_dims of a max
/// reduction of a (along the expanded axis, or to one value), through maxes with other values
/// (softmax's `x - max(x)`, the online softmax's `m_old - max(m_old, m_block)`). Its argument is
/// then at most 0 or NaN: the emitter's exp drops the clamp at 89 and its second power of two,
/// flushing results below 2^-126.5 to 0 (codegen_elementwise.cpp, ExpRange::NonPositive).
bool plan_exp_ranges(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
