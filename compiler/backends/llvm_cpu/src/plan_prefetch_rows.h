// llvm-cpu planning pass cpu-prefetch-rows (see plan_attrs.h for the attribute).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// Marks `cpu.prefetch_rows = D` on a load inside a `for` whose offset along D (its tile one
/// row along it) is an index read from memory: the sum (max, min) of a one-element load of a
/// rank-1 tensor at the loop's induction variable plus a value from outside the loop (an
/// embedding lookup's `table[ids[r]]`). The emitter then fetches, where the load is evaluated,
/// the block it reads plan::kRowsAhead trips later (the index that many steps ahead, clamped to
/// the index tensor): rows at random addresses get no help from the hardware prefetchers, which
/// need a few lines of a stream to start.
bool plan_prefetch_rows(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
