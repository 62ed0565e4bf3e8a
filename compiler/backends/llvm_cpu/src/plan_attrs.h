// The llvm-cpu planning attributes: the decisions the planning passes record on Tile IR ops and
// the emitter reads (names, meanings, readers), so that both sides spell them once.
// SPDX-License-Identifier: Apache-2.0
//
// Ops have no ids, so groups are numbered per kernel in program order:
//   cpu.fuse = G          a store that runs as one fused loop (group G), and the loads,
//                         elementwise ops and reshapes evaluated inside that loop;
//   cpu.inline = true     an op computed per lane inside its users' loops (never materialized);
//   cpu.in_producer = true  a full reduction accumulated inside its operand's producer loop;
//   cpu.view = V          a load that reads the tensor in place when its block is inside and
//                         contiguous (view V);
//   cpu.stream_copy = true  a load that would be a view but for its type (held widened: bf16,
//                         f16, fp8): copied, and the lane loops after it fetch its next block;
//   cpu.prefetch_after = V  a store whose block is fetched for writing by the lane loops that
//                         follow view V;
//   cpu.nontemporal = true  a fused store that may write with non-temporal stores (x86, large
//                         aligned tensors: the emitter checks the size and alignment at run time);
//   cpu.prefetch_next = D   a load in a for body whose offset along D is the induction variable:
//                         the dot that reads it fetches the next trip's block (offset D + step);
//   cpu.exp_nonpositive = true  an f32 exp of a value minus its maximum: its argument is at most 0
//                         or NaN (its results below 2^-126.5 flushed to 0);
//   cpu.prefetch_rows = D  a load in a for whose offset along D is an index the loop reads from
//                         memory: its block kRowsAhead trips later is fetched where it is read;
//   cpu.strided_view = T  a load read in place, rows at the tensor's row stride, by transpose T
//                         when its block is inside and its rows contiguous;
//   cpu.transpose_at = T  a transpose lowered at its store (T), from the load to the tensor;
//   cpu.transpose_store = T  the store of transpose T's result;
//   cpu.fuse_with = G     a fused store emitted with the fused store of group G, before it, as
//                         one loop where run-time checks allow (plan_paired_stores.h).
#pragma once

#include "tl/ir/ir.h"

#include <optional>
#include <string_view>

namespace tl::llvm_cpu::plan {

inline constexpr std::string_view kFuse = "cpu.fuse";
inline constexpr std::string_view kInline = "cpu.inline";
inline constexpr std::string_view kInProducer = "cpu.in_producer";
inline constexpr std::string_view kView = "cpu.view";
inline constexpr std::string_view kStreamCopy = "cpu.stream_copy";
inline constexpr std::string_view kPrefetchAfter = "cpu.prefetch_after";
inline constexpr std::string_view kNontemporal = "cpu.nontemporal";
inline constexpr std::string_view kPrefetchNext = "cpu.prefetch_next";
inline constexpr std::string_view kExpNonpositive = "cpu.exp_nonpositive";
inline constexpr std::string_view kPrefetchRows = "cpu.prefetch_rows";
inline constexpr std::string_view kStridedView = "cpu.strided_view";
inline constexpr std::string_view kTransposeAt = "cpu.transpose_at";
inline constexpr std::string_view kTransposeStore = "cpu.transpose_store";
inline constexpr std::string_view kFuseWith = "cpu.fuse_with";

/// Trips ahead a cpu.prefetch_rows load fetches, and at most how much of its block (Zen 4,
/// embedding of 4 KiB rows: 2 trips ahead 0.72-1.14 of the triad, 3 0.54-0.77, 4 0.69-0.92,
/// none 0.43-0.57; session 18).
inline constexpr int64_t kRowsAhead = 2;
inline constexpr int64_t kRowsAheadBytes = 4096;
/// How far ahead a load view's stream is fetched (codegen_memory.cpp): the block this many bytes
/// or more after the program's own, where the program after next reads when its blocks are
/// 4 KiB rows (the next block alone left too little in flight: 16384 x 1024 f32 on session 33's
/// Xeon, six alternating rounds back to back, the next row only against two ahead: softmax
/// 3.63 / 3.40 ms, log_softmax 3.71 / 3.34, quantize 2.43 / 2.25; var and cumsum level from cold
/// caches; 16 KiB ahead measured lower for softmax and log_softmax).
inline constexpr int64_t kFetchAheadBytes = 8192;
/// Lanes a streaming store computes into its stack chunk before copying them out.
inline constexpr int64_t kStreamChunk = 256;
/// The smallest fused store that streams: 1 KiB, a row of 1024 int8 (quantize's programs: its
/// plain stores read each output line first, 6 bytes of traffic an element for 5; 16384 x 1024
/// f32 -> int8 at 0.59 -> 0.62 of the triad with 512 MiB inputs, four alternating rounds on
/// session 35's Xeon, 0.62 -> 0.66 at 64 MiB, five; 4 KiB, a row of 1024 f32, until then).
inline constexpr int64_t kStreamMinBytes = 1024;
/// Non-temporal stores are taken where the kernel's tensors span this much in all (checked at
/// run time; an L3 of 32 MiB): below it, outputs may be read back from the caches. Counting
/// the inputs too (session 19; the output alone before): an add of 4096 x 1024 f32 (16 MiB a
/// tensor) 0.72-0.79 -> 0.95-1.01 of the triad on Zen 4.
inline constexpr int64_t kStreamBytes = int64_t(32) << 20;

/// The integer attribute `name` of `op`, if set.
std::optional<int64_t> group(const ir::Operation &op, std::string_view name);
/// True when the boolean attribute `name` of `op` is set to true.
bool flag(const ir::Operation &op, std::string_view name);
/// A load or value op evaluated inside a fused store's loop (cpu.fuse on anything but a store).
bool deferred(const ir::Operation &op);
/// A tile of `k` is held in memory's type (not f16, bf16, fp8 or i1, held widened), so that a
/// load may read the tensor in place.
bool held_as_stored(ir::ScalarKind k);
/// Lowered elsewhere than at its place in the block: deferred, inlined, in its producer, at
/// its store (a transpose) or with the fused store it is paired with.
bool lowered_elsewhere(const ir::Operation &op);
/// Removes attribute `name` from every op of `kernel` (a pass re-deciding from scratch); true if
/// any op had it.
bool clear(ir::Kernel &kernel, std::string_view name);

} // namespace tl::llvm_cpu::plan
