// llvm-cpu planning pass cpu-plan-views (see plan_attrs.h for the attributes).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// Numbers with `cpu.view = V` each unmasked load of a type stored as it is computed (not f16,
/// bf16, fp8 or i1) whose users all run before any write to memory in its block: it may read the
/// tensor in place (no copy) when the block is inside the tensor and contiguous, which the
/// emitter checks at run time. Users count where they are evaluated (an inlined op at its user,
/// a fused op at its store, a reduction in its producer), so this runs after the other fusions.
/// Such a load of a type held widened gets `cpu.stream_copy` instead: it is copied (converted),
/// and the lane loops after it fetch the block after its own, as after a view.
bool plan_views(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
