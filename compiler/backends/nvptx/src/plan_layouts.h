// nvptx-plan-layouts (see plan_layouts.cpp).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::nvptx {

/// The warps of one program of `kernel`: `requested` when positive (the num_warps target
/// option), else chosen from the largest tile so that a thread holds at most 16 of its elements
/// (4 to 16 warps; kernels with a `dot` start from 4); then doubled (up to 16) while a
/// tensor-core dot's accumulator would put more than 64 elements on each thread.
int choose_num_warps(const ir::Kernel &kernel, int requested);

/// Records `nvptx.layout` on every op defining one tile, and `nvptx.convert` on ops whose
/// result elements live on other threads than their operand's, for programs of `num_warps`
/// warps (choose_num_warps); `nvptx.carried` and `nvptx.prefetch` on K loops.
bool plan_layouts(ir::Kernel &kernel, int num_warps);

} // namespace tl::nvptx
