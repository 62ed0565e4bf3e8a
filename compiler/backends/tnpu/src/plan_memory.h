// The tnpu-plan-memory pass: scratchpad and accumulator addresses by liveness.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/backends/tnpu.h"

namespace tl::tnpu {

/// Places every tile of the kernel (README "Memory"). Live ranges over the ops in program order
/// (a value used in a loop it is defined outside of lives to the loop's end); one slot for
/// values that can share it: reshape / expand_dims and their operand, a `for`'s carried tile with
/// its result, its init (when the init dies there) and its yielded value (when the carried value
/// is dead by then), a dot's result with its accumulator operand when that dies at the dot
/// (accumulated in place). Tiles with `tnpu.buffers` (tnpu-plan-pipelining) get that many
/// buffers, live through their loop. A linear scan then puts each slot at the lowest free
/// address of its memory: matrix results in the accumulator when they fit, everything else in
/// the scratchpad, so the space of dead tiles is reused. Records `tnpu.addr` / `tnpu.mem` on the
/// ops defining tiles, `tnpu.stride` on buffered ones, `tnpu.overflow` (the error) on those
/// that do not fit, and `tnpu.sram_peak` / `tnpu.acc_peak` on the `return`.
bool plan_memory(ir::Kernel &kernel, const CompileOptions &options);

} // namespace tl::tnpu
