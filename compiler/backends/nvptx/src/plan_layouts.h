// nvptx-plan-layouts (see plan_layouts.cpp).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::nvptx {

/// Records `nvptx.layout` on every op defining one tile, and `nvptx.convert` on ops whose
/// result elements live on other threads than their operand's.
bool plan_layouts(ir::Kernel &kernel, int num_warps);

/// The warps of `kernel`'s programs: the target option num_warps, doubled (up to 16) while a
/// tensor-core dot's accumulator would put more than 64 elements on each thread (a 128 x 128
/// f32 accumulator on 4 warps takes 128 registers a thread and spills).
int kernel_warps(const ir::Kernel &kernel, int num_warps);

} // namespace tl::nvptx
