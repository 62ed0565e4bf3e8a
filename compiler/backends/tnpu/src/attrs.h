// The tnpu planning decisions as Tile IR attributes: their names, and the readers the planning
// passes and the lowering share. The passes (plan_pipelining.h, plan_memory.h) write them; the
// lowering only reads them (see README "Pipeline").
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace tl::tnpu::attr {

// tnpu-plan-pipelining
/// On a load / fill a loop prefetches, and on a tile its body computes and stores: the buffers
/// (CompileOptions::pipeline_depth, 2..4) the tile rotates over, one per body copy.
inline constexpr const char *kBuffers = "tnpu.buffers";
/// On a scalar op of a pipelined body: the prefetch of a later iteration recomputes it.
inline constexpr const char *kPrefetch = "tnpu.prefetch";
/// On a pipelined `for` (or the kernel's `return`, for the grid loop): its DMA engines wait
/// for each other at every iteration.
inline constexpr const char *kDmaOrdered = "tnpu.dma_ordered";
/// On the kernel's `return`: the kernel runs once per core and loops over the core's programs.
inline constexpr const char *kPersistent = "tnpu.persistent";

// tnpu-plan-memory
/// On an op with tile results: the address of each in its memory (an integer; for `for` / `if`
/// a list, one per result, -1 for a scalar or a tile that does not fit). A `for`'s carried
/// tile, its body argument and its result share one address.
inline constexpr const char *kAddr = "tnpu.addr";
/// Beside tnpu.addr: "sram" (scratchpad) or "acc" (accumulator, at isa::kAccBase); for `for` /
/// `if` one word per result, comma-separated ("-" for a scalar or a tile that does not fit).
inline constexpr const char *kMem = "tnpu.mem";
/// On an op with tnpu.buffers: bytes between its buffers (buffer b at tnpu.addr + b * stride).
inline constexpr const char *kStride = "tnpu.stride";
/// On an op whose tile does not fit: the error, without location, for the lowering to report.
inline constexpr const char *kOverflow = "tnpu.overflow";
/// On a broadcast of one row (1 x C -> R x C) whose every user is an elementwise vector op: no
/// copy; the users read the row with a row stride of 0 (its result shares the row's address).
/// Also on an index broadcast whose every user is a row gather (kRowGather): no copy, the row
/// gather reads its input.
inline constexpr const char *kFused = "tnpu.fused";
/// On a broadcast of one column (m[:, None], R x 1 -> R x C) whose every user is an elementwise
/// vector op: the columns Wn (< C, C a multiple) of the copy it makes (R x Wn); each user runs
/// C / Wn commands over column chunks, reading the copy with a row stride of Wn elements.
inline constexpr const char *kNarrow = "tnpu.narrow";
/// On a gather of row_gather's form whose index broadcasts are fused (their tiles are their
/// inputs'): lowered as one dma.gather of C-element rows per engine, the ids its index tile.
inline constexpr const char *kRowGather = "tnpu.row_gather";
/// On the kernel's `return`: the bytes of scratchpad / accumulator the planned tiles use (the
/// lowering's temporaries and scalar slots start above the scratchpad's).
inline constexpr const char *kSramPeak = "tnpu.sram_peak";
inline constexpr const char *kAccPeak = "tnpu.acc_peak";

/// Drops the attributes `names` from every op of `kernel` (a pass recomputes its decisions).
void clear(ir::Kernel &kernel, std::initializer_list<const char *> names);

/// Loads and fills (full / splat / constant tiles: DMA too): what a pipelined loop can issue
/// ahead.
bool prefetchable(const ir::Operation &op);

/// The op that holds a loop's decisions: the `for` whose body `body` is, or the kernel's
/// `return` when `body` is the kernel body (the grid loop of a persistent kernel).
const ir::Operation *loop_op(const ir::Block &body);

/// A gather of rank-2 tensor t that reads R whole runs of C columns: unmasked, its row index
/// a broadcast of an (R, 1) tile `ids`, its column index a broadcast of a run of C (reshapes
/// of arange(a, a + C), plus a splat of scalar `start` where given): out[r, c] = t[ids[r],
/// start + a + c]. embedding_kernel's G form (python/tl/ops/transformer.py).
struct RowGather {
  const ir::Operation *rows, *cols; ///< the broadcasts of the row and the column indices
  const ir::Value *ids;             ///< the (R, 1) i32 row indices
  const ir::Value *start;           ///< the run's scalar start, or null
  int64_t offset;                   ///< the arange's start
};
std::optional<RowGather> row_gather(const ir::Operation &op);

/// The integer attribute `name` of op, or `otherwise`.
int64_t get_int(const ir::Operation &op, const char *name, int64_t otherwise = 0);
inline bool has(const ir::Operation *op, const char *name) { return op && op->attr(name); }

/// Where tile `v` lives: its local address (accumulator addresses include isa::kAccBase), or
/// nullopt when it does not fit (then `overflow` names the op holding the error).
std::optional<uint64_t> address(const ir::Value *v, const ir::Operation **overflow);

} // namespace tl::tnpu::attr
