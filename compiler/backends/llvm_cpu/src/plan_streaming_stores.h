// llvm-cpu planning pass cpu-stream-stores (see plan_attrs.h for the attributes).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

namespace tl::llvm_cpu {

/// Marks with `cpu.nontemporal` each fused store (cpu-fuse-stores) of at least
/// plan::kStreamMinBytes: a tensor written block by block streams to DRAM, and non-temporal
/// stores skip reading each line before overwriting it (a third of a copy's traffic). The emitter
/// takes them where the kernel's tensors span 32 MiB or more in all (smaller working sets may be
/// read back from the caches), checked at run time: a contiguous block streams its whole 64-byte
/// lines wherever it starts (the lines it shares with its neighbours are stored plainly); a
/// row-strided block (a transpose's or a concat's rows in a wider output) streams where its rows
/// are whole 64-byte lines, each aligned. For x86 targets (planning_passes).
bool plan_streaming_stores(ir::Kernel &kernel);

} // namespace tl::llvm_cpu
