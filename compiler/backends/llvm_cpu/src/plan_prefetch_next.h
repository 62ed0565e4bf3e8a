// llvm-cpu planning pass cpu-prefetch-next (see plan_attrs.h for the attributes).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// Marks with `cpu.prefetch_next = D` each load in a `for` body whose offset along dimension D
/// is the loop's induction variable and whose other offsets are computed outside the loop, when
/// a `dot` of the same body reads the tile (directly or through a reshape) and the tile has at
/// most one dimension besides the last wider than 1 (its rows): the dot's micro-kernel fetches
/// the block the next trip loads (offset D + step) while it computes this trip's, so a k loop's
/// tile copies read the cache, not DRAM (GEMM's A and B panels, one strided row per line run).
bool plan_prefetch_next(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
