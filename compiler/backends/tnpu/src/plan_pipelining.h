// The tnpu-plan-pipelining pass: which loads a loop prefetches, and persistent kernels.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/backends/tnpu.h"

namespace tl::tnpu {

/// Software pipelining decisions (README "Software pipelining", "Persistent kernels"). In an
/// innermost `for`, and (CompileOptions::persistent) in a loop-free kernel body seen as the grid
/// loop around it, loads and fills that are direct children of the body, whose indices the
/// prefetch can compute before the iteration starts (pure integer scalars of the induction
/// variable and values from outside) and whose tensor the loop does not write get
/// `tnpu.buffers = D` (CompileOptions::pipeline_depth, clamped to 2..4), as do the tiles the body
/// computes and stores — if every stored tile can have its own buffers, else the loop is not
/// pipelined. Records `tnpu.prefetch` on the scalars a prefetch recomputes, `tnpu.dma_ordered`
/// on a pipelined loop whose DMA engines must wait for each other across iterations, and
/// `tnpu.persistent` on the `return` of a kernel whose grid loop is pipelined.
bool plan_pipelining(ir::Kernel &kernel, const CompileOptions &options);

} // namespace tl::tnpu
