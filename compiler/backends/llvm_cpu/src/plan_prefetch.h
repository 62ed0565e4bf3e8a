// llvm-cpu planning pass cpu-prefetch-stores (see plan_attrs.h for the attributes).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// Marks with `cpu.prefetch_after = V` each store after view V (cpu-plan-views) in its block
/// whose place is known when the view is read (its indices are computed before the view): the
/// lane loops that follow the view fetch the store's block for writing, so that a kernel that
/// computes before it stores (softmax) overlaps the read for ownership with its compute, and the
/// store then hits the cache. A store is fetched after the first such view only.
bool plan_prefetch(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
