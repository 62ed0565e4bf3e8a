// llvm-cpu planning pass cpu-fuse-reduces (see plan_attrs.h for the attributes).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// Marks with `cpu.in_producer` each full reduction (sum, max or min to one value) of a tile
/// that an elementwise op of the same block materializes (neither inlined nor fused into a
/// store): it accumulates inside that op's loop, one pass over the tile instead of two
/// (softmax's sum of exponentials). Runs after cpu-fuse-stores and cpu-inline-lanes.
bool plan_reduce_fusion(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
