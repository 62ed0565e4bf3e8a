// Scratchpad and accumulator planning by liveness for the tnpu lowering (see README "Memory").
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/backends/tnpu.h"
#include "tl/ir/ir.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace tl::tnpu {

/// Where a kernel's tiles live.
struct TilePlan {
  /// Local address of every tile value that fits. Values that share a slot have one address:
  /// expand_dims / reshape and their operand; a `for`'s carried tile with its init (when the init
  /// dies there), its yielded value (when the carried value is dead by then) and its result; a
  /// dot's result with its accumulator operand when that dies at the dot (accumulated in place).
  std::map<const ir::Value *, uint64_t> address;
  /// Loads and fills that their (innermost enclosing) `for`, or the grid loop of a persistent
  /// kernel, prefetches depth - 1 iterations ahead, and the
  /// tiles such a loop's body computes and stores, with the distance between their buffers:
  /// buffer b (of body copy b) is at address + b * stride.
  std::map<const ir::Operation *, uint64_t> pipelined;
  /// Scalar ops of a loop body that the prefetch of the next iteration recomputes (pure, from
  /// the induction variable and values defined outside the loop).
  std::set<const ir::Operation *> prefetch_scalars;
  /// Tiles that do not fit: the message (without location) per value.
  std::map<const ir::Value *, std::string> overflow;
  uint64_t sram_peak = 0, acc_peak = 0;
  /// Buffers of each pipelined tile (CompileOptions::pipeline_depth, at least 2).
  int depth = 2;
  /// Pipelined loop bodies (the kernel body for the grid loop) whose DMA engines must wait for
  /// each other at every iteration.
  std::set<const ir::Block *> dma_ordered;
  /// The kernel body itself is pipelined: it runs once per core, looping over the core's grid
  /// programs and prefetching the next programs' loads (CompileOptions::persistent).
  bool persistent = false;
};

/// Loads and fills (full / splat: DMA too): what a pipelined loop can issue ahead.
bool prefetchable(const ir::Operation &op);

/// Plans the tiles of a kernel: live ranges over the ops in program order (a value used inside
/// a loop it is defined outside of lives to the loop's end), slots shared as described above,
/// then a linear scan that puts each slot at the lowest free address of its memory — matrix
/// results in the accumulator when they fit, everything else in the scratchpad — so the space of
/// dead tiles is reused.
TilePlan plan_tiles(const ir::Kernel &kernel, const CompileOptions &options);

} // namespace tl::tnpu
