// nvptx-plan-layouts (see plan_layouts.cpp).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::nvptx {

/// Records `nvptx.layout` on every op defining one tile, and `nvptx.convert` on ops whose
/// result elements live on other threads than their operand's.
bool plan_layouts(ir::Kernel &kernel, int num_warps);

} // namespace tl::nvptx
