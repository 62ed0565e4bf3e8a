// nvptx-plan-layouts (see plan_layouts.cpp).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::nvptx {

/// The warps of one program of `kernel`: `requested` when positive (the num_warps target
/// option), else chosen from the largest tile so that a thread holds at most 16 of its elements
/// (4 to 16 warps); kernels with a `dot` keep 4 (the dot layouts are tuned for them).
int choose_num_warps(const ir::Kernel &kernel, int requested);

/// Records `nvptx.layout` on every op defining one tile, and `nvptx.convert` on ops whose
/// result elements live on other threads than their operand's, for choose_num_warps(kernel,
/// num_warps) warps.
bool plan_layouts(ir::Kernel &kernel, int num_warps);

} // namespace tl::nvptx
