// llvm-cpu planning pass cpu-inline-lanes (see plan_attrs.h for the attributes).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// Marks with `cpu.inline` the splats, `full` constants and broadcasts of a one-element tile, and
/// the elementwise ops with exactly one use, whose users all walk lanes (elementwise ops, reduce,
/// scan) in the same block: each lane is computed inside its user's loop instead of being stored
/// to a tile and read back. An elementwise op used by two ops stays materialized, so that nothing
/// is computed twice (a splat, one value for every lane, is free to recompute); one elementwise
/// op reading it twice (d * d) is one user, both reads at the same lane. Inside a reduction
/// along the rows of a rank-2 tile (several rows a program), whose loop gives each lane its row
/// and column, more is inlined when every lane of it is read there: (R, 1) and (1, C) tiles
/// broadcast to (R, C), expand_dims and reshapes, and an op read twice by one user (d * d). Runs
/// after cpu-fuse-stores: ops of a fused tree are evaluated at their store.
bool plan_inlining(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
