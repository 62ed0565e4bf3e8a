// llvm-cpu planning pass cpu-pair-stores (see plan_attrs.h for the attributes).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// Marks with `cpu.fuse_with = G` a fused store that directly follows fused store G (nothing
/// between them but its own fused tree) and stores a tile of the same shape and element type,
/// with the same streaming plan: the emitter runs both as one loop, so that each row of both
/// outputs is written in one pass (RoPE's two halves of each row: one pass over x and whole
/// output rows, where two passes wrote each row's halves apart). The emitter checks at run time
/// that neither output overlaps the other's loads or the other output, else runs them in order.
bool plan_paired_stores(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
