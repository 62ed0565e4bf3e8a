// llvm-cpu planning pass cpu-fuse-stores (see plan_attrs.h for the attributes).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// Marks each store of a tree of single-use elementwise ops, reshapes and row broadcasts
/// (`s[:, None]` of several rows, to the stored shape) over loads of its block (other values are
/// leaves) with `cpu.fuse = G`, and every load and op of the tree with the same
/// G: the store then runs as one loop from the tensors to the tensor, sparing memory-bound
/// kernels passes through stack buffers. Trees with a write to memory between their first op and
/// the store stay unfused (the loads would read later than they were written).
bool plan_store_fusion(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
