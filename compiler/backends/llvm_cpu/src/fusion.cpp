// llvm-cpu emission of the planned fusions (the plan: plan_attrs.h and the plan_*.h passes):
// - a fused store (cpu.fuse) runs its tree as one loop straight from and to the tensors when
//   every access is inside its tensor and contiguous; otherwise the unfused code runs;
// - inlined ops (cpu.inline) are computed per lane inside their users' loops (lane_value);
// - lane loops after a load view prefetch the next block and the stores' blocks fetched for
//   ownership (cpu.prefetch_after).
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include "plan_attrs.h"

#include <algorithm>
#include <optional>
#include <stdexcept>

namespace tl::llvm_cpu {
using ir::Opcode;
using ir::ScalarKind;

namespace {

/// The densest stream a lane loop fetches, in bytes a lane (see lane_loop).
constexpr int64_t kMaxStreamLaneBytes = 8;

/// Do two loads read the same block: one tensor, one tile type, offsets the same values or equal
/// constants?
bool same_block(const ir::Operation &a, const ir::Operation &b) {
  if (a.num_operands() != b.num_operands() || a.result()->type() != b.result()->type())
    return false;
  for (size_t i = 0; i < a.num_operands(); ++i) {
    const ir::Value *x = a.operand(i), *y = b.operand(i);
    const ir::Operation *dx = x->def(), *dy = y->def();
    if (x != y &&
        !(dx && dy && dx->opcode() == Opcode::Constant && dy->opcode() == Opcode::Constant &&
          x->type() == y->type() && *dx->attr("value") == *dy->attr("value")))
      return false;
  }
  return true;
}

/// The loads and ops of fusion group `g` feeding `v`, operands before users: the order they are
/// evaluated in.
void collect_group(const ir::Value *v, int64_t g, KernelCodegen::Fusion &f) {
  const ir::Operation *def = v->def();
  if (!def || plan::group(*def, plan::kFuse) != g)
    return;
  if (def->opcode() == Opcode::Load) {
    f.loads.push_back(def);
    return;
  }
  for (const ir::Value *in : def->operands())
    collect_group(in, g, f);
  f.ops.push_back(def);
}

} // namespace

KernelCodegen::Fusion KernelCodegen::fusion_of(const ir::Operation &store) {
  Fusion f;
  collect_group(store.operand(store.num_operands() - 1), *plan::group(store, plan::kFuse), f);
  return f;
}

/// Is the block inside the tensor, its last dimension contiguous and its rows (every other
/// dimension, flattened) `row_stride` elements apart? A contiguous block is the case row_stride
/// = the last dimension (or one row).
llvm::Value *KernelCodegen::block_rows_are_strided(unsigned arg,
                                                   const std::vector<llvm::Value *> &off,
                                                   const std::vector<int64_t> &tile_shape,
                                                   llvm::Value *&row_stride) {
  int last = int(tile_shape.size()) - 1; // the innermost dimension of extent > 1
  while (last > 0 && tile_shape[last] == 1)
    --last;
  llvm::Value *ok = b_.getTrue();
  // Dimensions of extent 1 after the row's are inside the tensor too: a (1, 1) tile's column
  // past the end had been stored to (an out-of-bounds write past the tensor, session 30).
  for (int d = last + 1; d < int(tile_shape.size()); ++d)
    ok = b_.CreateAnd(ok, b_.CreateAnd(b_.CreateICmpSGE(off[d], i64(0)),
                                       b_.CreateICmpSLT(off[d], arg_field(arg, 1, i64(d)))));
  row_stride = i64(0);
  int64_t rows = 1; // rows of the tile after dimension d
  for (int d = last; d >= 0; --d) {
    llvm::Value *shape = arg_field(arg, 1, i64(d)), *stride = arg_field(arg, 2, i64(d));
    ok = b_.CreateAnd(ok, extent_inside(off[d], tile_shape[d], shape));
    if (tile_shape[d] == 1)
      continue;
    if (d == last) {
      ok = b_.CreateAnd(ok, b_.CreateICmpEQ(stride, i64(1)));
      continue;
    }
    if (rows == 1)
      row_stride = stride; // the innermost row dimension sets the stride
    else
      ok = b_.CreateAnd(ok, b_.CreateICmpEQ(stride, b_.CreateMul(row_stride, i64(rows))));
    rows *= tile_shape[d];
  }
  return ok;
}

/// A fused store's accesses and their run-time check. The loop walks rows of the stored tile's
/// last dimension (W lanes): an access whose tile has that last dimension may have any row stride
/// (RoPE's half rows, a concat's row slices of a wider output), any other access must be
/// contiguous.
KernelCodegen::FusedLoop KernelCodegen::fused_loop(const ir::Operation &store) {
  FusedLoop fl{&store, fusion_of(store), 0, 0, {}, {}, nullptr};
  const ir::Value *stored = store.operand(store.num_operands() - 1);
  fl.n = stored->type().num_elements();
  // The extent of a tile's innermost dimension of extent > 1 (the row of the fused loop).
  auto inner_extent = [](const ir::Type &t) {
    int64_t w = 1;
    for (int d = t.rank() - 1; d >= 0 && w == 1; --d)
      w = t.shape()[d];
    return std::max<int64_t>(w, 1);
  };
  const int64_t width = fl.width = inner_extent(stored->type());
  llvm::Value *ok = b_.getTrue();
  auto access = [&](const ir::Operation &op, const ir::Type &tile) {
    const unsigned a = arg_index_.at(op.operand(0));
    const std::vector<llvm::Value *> off = block_offsets(op);
    const ir::ScalarKind elem = op.operand(0)->type().elem();
    Access acc{block_base(a, off, storage_type(elem)), storage_type(elem), elem, i64(width)};
    const int64_t esize = int64_t(module_.getDataLayout().getTypeAllocSize(acc.mem));
    if (inner_extent(tile) == width) {
      ok = b_.CreateAnd(ok, block_rows_are_strided(a, off, tile.shape(), acc.row_stride));
      const int64_t rows = tile.num_elements() / width;
      acc.row_bytes = b_.CreateMul(acc.row_stride, i64(esize));
      acc.width_bytes = width * esize;
      // The last row's start, from the first: below it where the row stride is negative.
      llvm::Value *last = b_.CreateMul(acc.row_bytes, i64(rows - 1));
      llvm::Value *back = b_.CreateICmpSLT(last, i64(0));
      acc.low = b_.CreateSelect(back, last, i64(0));
      acc.bytes =
          b_.CreateAdd(b_.CreateSelect(back, b_.CreateNeg(last), last), i64(acc.width_bytes));
    } else {
      ok = b_.CreateAnd(ok, block_is_contiguous(a, off, tile.shape()));
      acc.low = i64(0);
      acc.bytes = i64(tile.num_elements() * esize);
    }
    return acc;
  };
  for (const ir::Operation *l : fl.f.loads)
    if (l->attr(plan::kPrefetchRows))
      fetch_rows_ahead(*l);
  for (const ir::Operation *l : fl.f.loads)
    fl.loads.push_back(access(*l, l->result()->type()));
  fl.out = access(store, stored->type());
  fl.ok = ok;
  return fl;
}

/// Lane i = r W + j of row r: each access's element at base + r row_stride + j (row and col
/// null: element i of contiguous blocks).
llvm::Value *KernelCodegen::fused_lane(const FusedLoop &fl, llvm::Value *i, llvm::Value *row,
                                       llvm::Value *col) {
  auto at = [&](const Access &a) {
    return col ? b_.CreateGEP(a.mem, a.base, b_.CreateAdd(b_.CreateMul(row, a.row_stride), col))
               : b_.CreateGEP(a.mem, a.base, i);
  };
  std::unordered_map<const ir::Value *, llvm::Value *> lane; // this lane's fused values
  // The stored bits of the loads and of their reshapes: a value stored as it was loaded (a
  // copy: concat, embedding) is stored as those bits, so that a narrow float's NaN keeps its
  // sign and payload (held as f32 and rounded back, every bf16 NaN became 0x7fc0).
  std::unordered_map<const ir::Value *, llvm::Value *> bits;
  for (size_t k = 0; k < fl.f.loads.size(); ++k) {
    const Access &l = fl.loads[k];
    const ir::Value *v = fl.f.loads[k]->result();
    bits[v] = b_.CreateLoad(l.mem, at(l));
    lane[v] = from_storage(l.elem, bits[v]);
  }
  for (const ir::Operation *op : fl.f.ops) {
    if (op->opcode() == Opcode::Broadcast) { // a row broadcast (plan_store_fusion.h): the
      // row's value, invariant in the loop over the row when the row is known
      lane[op->result()] = lane_value(op->operand(0), row ? row : b_.CreateUDiv(i, i64(fl.width)));
      continue;
    }
    if (!(op->flags() & ir::kElementwise)) { // a reshape: the same lanes
      lane[op->result()] =
          lane.count(op->operand(0)) ? lane.at(op->operand(0)) : lane_value(op->operand(0), i);
      if (auto b = bits.find(op->operand(0)); b != bits.end())
        bits[op->result()] = b->second;
      continue;
    }
    std::vector<llvm::Value *> args;
    for (const ir::Value *in : op->operands()) {
      if (auto it = lane.find(in); it != lane.end()) {
        args.push_back(it->second);
      } else {
        args.push_back(lane_value(in, i));
      }
    }
    lane[op->result()] = elementwise_value(*op, args, i);
  }
  const ir::Value *stored = fl.store->operand(fl.store->num_operands() - 1);
  if (auto b = bits.find(stored); b != bits.end() && stored->type().elem() == fl.out.elem)
    return b->second;
  llvm::Value *v = lane.count(stored) ? lane.at(stored) : lane_value(stored, i);
  if (v->getType() == storage_type(fl.out.elem))
    return v; // a copied tile's stored bits (raw_storage), or a type held as stored
  return to_storage(fl.out.elem, v);
}

const ir::Operation *KernelCodegen::paired_store(const ir::Operation &store) {
  const std::optional<int64_t> g = plan::group(store, plan::kFuse);
  for (auto &op : store.parent()->ops())
    if (op->opcode() == Opcode::Store && plan::group(*op, plan::kFuseWith) == g)
      return op.get();
  return nullptr;
}

/// Emits the fused loop behind its run-time check, and the unfused ops in the other branch.
void KernelCodegen::lower_fused_store(const FusedLoop &fl) {
  const ir::Operation &store = *fl.store;
  auto *fast = llvm::BasicBlock::Create(ctx_, "fused", fn_);
  auto *slow = llvm::BasicBlock::Create(ctx_, "unfused", fn_);
  auto *done = llvm::BasicBlock::Create(ctx_, "fused.done", fn_);
  b_.CreateCondBr(fl.ok, fast, slow);
  b_.SetInsertPoint(fast);
  emit_fused_loops({&fl}, done);
  b_.SetInsertPoint(slow);
  for (const ir::Operation *l : fl.f.loads)
    lower_block_access(*l);
  for (const ir::Operation *op : fl.f.ops)
    lower_op(*op);
  lower_block_access(store);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

/// Apart (byte ranges from each block's lowest byte to its highest), or rows at one positive
/// stride whose columns interleave without touching (RoPE's two halves of each row): b's rows
/// start m bytes into a's row stride, m >= a's row and m + b's row <= the stride.
llvm::Value *KernelCodegen::disjoint(const Access &a, const Access &b) {
  llvm::Value *a0 = b_.CreatePtrToInt(a.base, b_.getInt64Ty());
  llvm::Value *b0 = b_.CreatePtrToInt(b.base, b_.getInt64Ty());
  llvm::Value *a_lo = b_.CreateAdd(a0, a.low), *b_lo = b_.CreateAdd(b0, b.low);
  llvm::Value *apart = b_.CreateOr(b_.CreateICmpULE(b_.CreateAdd(a_lo, a.bytes), b_lo),
                                   b_.CreateICmpULE(b_.CreateAdd(b_lo, b.bytes), a_lo));
  if (!a.row_bytes || !b.row_bytes)
    return apart;
  llvm::Value *stride = a.row_bytes;
  llvm::Value *strided =
      b_.CreateAnd(b_.CreateICmpEQ(stride, b.row_bytes), b_.CreateICmpSGT(stride, i64(0)));
  llvm::Value *safe = b_.CreateSelect(strided, stride, i64(1)); // no remainder by 0
  llvm::Value *m = b_.CreateSRem(b_.CreateSub(b0, a0), safe);
  m = b_.CreateSelect(b_.CreateICmpSLT(m, i64(0)), b_.CreateAdd(m, safe), m);
  llvm::Value *between = b_.CreateAnd(b_.CreateICmpSGE(m, i64(a.width_bytes)),
                                      b_.CreateICmpSLE(b_.CreateAdd(m, i64(b.width_bytes)), safe));
  return b_.CreateOr(apart, b_.CreateAnd(strided, between));
}

/// Two fused stores planned as a pair (cpu.fuse_with, plan_paired_stores.h) run as one loop,
/// each lane computing both stores' values, where both fused checks hold and neither output
/// overlaps the other's loads or the other output (a lane of the one would otherwise see or undo
/// a later lane of the other). Otherwise each runs on its own, in order, as without the pair.
void KernelCodegen::lower_fused_pair(const ir::Operation &first, const ir::Operation &second) {
  const FusedLoop a = fused_loop(first), b = fused_loop(second);
  llvm::Value *ok = b_.CreateAnd(b_.CreateAnd(a.ok, b.ok), disjoint(a.out, b.out));
  for (const Access &l : b.loads)
    ok = b_.CreateAnd(ok, disjoint(a.out, l));
  for (const Access &l : a.loads)
    ok = b_.CreateAnd(ok, disjoint(b.out, l));
  auto *pair = llvm::BasicBlock::Create(ctx_, "fused.pair", fn_);
  auto *apart = llvm::BasicBlock::Create(ctx_, "fused.apart", fn_);
  auto *done = llvm::BasicBlock::Create(ctx_, "fused.pair.done", fn_);
  b_.CreateCondBr(ok, pair, apart);
  b_.SetInsertPoint(pair);
  emit_fused_loops({&a, &b}, done);
  b_.SetInsertPoint(apart);
  lower_fused_store(a); // its accesses' addresses and checks, computed above, still hold
  lower_fused_store(b);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

/// The fused loops of stores of one tile shape as one loop (each lane stores each loop's value,
/// in order), where their checks hold: streamed where planned and possible, else plain stores.
/// Ends with a branch to `done`.
void KernelCodegen::emit_fused_loops(const std::vector<const FusedLoop *> &loops,
                                     llvm::BasicBlock *done) {
  const int64_t n = loops[0]->n, width = loops[0]->width;
  bool streamed = true;
  for (const FusedLoop *fl : loops)
    streamed &= plan::flag(*fl->store, plan::kNontemporal);
  if (streamed) {
    // Chunk loops over a contiguous block as one run (every access contiguous: lane i at base +
    // i), and over row-strided blocks (a concat's row slices, RoPE's half rows) a row at a time.
    llvm::Value *contiguous = b_.getTrue(), *rows_aligned = b_.getTrue();
    bool whole_lines = true;
    int64_t esize = 1; // the widest output's element
    for (const FusedLoop *fl : loops) {
      const int64_t osize = int64_t(module_.getDataLayout().getTypeAllocSize(fl->out.mem));
      esize = std::max(esize, osize);
      whole_lines &= (width * osize) % 64 == 0;
      if (n == width)
        continue;
      for (const Access &l : fl->loads)
        contiguous = b_.CreateAnd(contiguous, b_.CreateICmpEQ(l.row_stride, i64(width)));
      contiguous = b_.CreateAnd(contiguous, b_.CreateICmpEQ(fl->out.row_stride, i64(width)));
      rows_aligned = b_.CreateAnd(
          rows_aligned,
          b_.CreateICmpEQ(b_.CreateAnd(b_.CreateMul(fl->out.row_stride, i64(osize)), i64(63)),
                          i64(0)));
    }
    // Rows of a kilobyte or more whose chunks would straddle them in one run (1000 f32: a row
    // broadcast's value looked up per lane) stream a row at a time, each from its own first
    // aligned line, whatever the row stride.
    const bool runs_of_rows =
        loops.size() == 1 && n != width && width * esize >= 1024 && width % plan::kStreamChunk != 0;
    // A contiguous block is one run, streamed as before session 14 (concat along rows measured
    // slower through the row-strided loop); the row-strided one in the other branch, where its
    // chunks lie within rows, so each load is addressed by row and may be row-strided too
    // (RoPE's half rows: 0.5 of the triad with plain stores from two passes over the rows).
    if (runs_of_rows) {
      stream_fused_stores(loops, width, b_.getTrue(), done, /*heads=*/true);
    } else {
      // (A block of rows of whole chunks names each chunk's row, so it starts aligned.)
      stream_fused_stores(loops, 0, contiguous, done,
                          loops.size() == 1 && (n == width || width % plan::kStreamChunk != 0));
      if (n != width && whole_lines)
        stream_fused_stores(loops, width, rows_aligned, done, /*heads=*/false);
    }
  }
  // Plain stores, fetching the next block of a load view read here or before (a row's scale,
  // then the row quantized: nothing else of the program streams).
  int work = 0;
  for (const FusedLoop *fl : loops)
    for (const ir::Operation *op : fl->f.ops)
      work += lane_cost(*op);
  const bool to_l1 = work >= kFetchingLaneWork;
  lane_loop(
      n / width, width,
      [&](llvm::Value *r, llvm::Value *j) {
        llvm::Value *i = b_.CreateAdd(b_.CreateMul(r, i64(width)), j);
        for (const FusedLoop *fl : loops) {
          const Access &out = fl->out;
          b_.CreateStore(
              fused_lane(*fl, i, r, j),
              b_.CreateGEP(out.mem, out.base, b_.CreateAdd(b_.CreateMul(r, out.row_stride), j)));
        }
      },
      "fused.row", "fused", /*fetch=*/true, to_l1);
  b_.CreateBr(done);
}

llvm::Value *KernelCodegen::touches_stream_bytes() {
  // Every tensor argument's span: a store's tensor below plan::kStreamBytes still streams when
  // the kernel reads more besides (quantize's int8 output, a quarter of its f32 input's bytes):
  // the kernel's other tensors evict it from the caches anyway.
  llvm::Value *total = i64(0);
  for (const auto &a : kernel_.body()->arguments())
    if (a->type().is_tensor())
      total =
          b_.CreateAdd(total, span_bytes(a.get(), int64_t(module_.getDataLayout().getTypeAllocSize(
                                                      storage_type(a->type().elem())))));
  return b_.CreateICmpSGE(total, i64(plan::kStreamBytes));
}

llvm::Value *KernelCodegen::span_bytes(const ir::Value *tensor, int64_t esize) {
  // The largest extent x stride over its dimensions (the first alone read 0 for a concat's
  // (1, rows, n) views, whose added leading axis has stride 0).
  const unsigned a = arg_index_.at(tensor);
  llvm::Value *span = i64(0);
  for (int d = 0; d < tensor->type().rank(); ++d) {
    llvm::Value *e = b_.CreateMul(arg_field(a, 1, i64(d)), arg_field(a, 2, i64(d)));
    span = b_.CreateSelect(b_.CreateICmpSGT(e, span), e, span);
  }
  return b_.CreateMul(span, i64(esize));
}

// A store planned non-temporal (cpu-stream-stores) uses them where the kernel's tensors span
// plan::kStreamBytes or more (smaller ones may be read back from the caches). LLVM's vectorizer
// will not emit them without provable alignment, so lanes are computed into an aligned chunk on
// the stack (L1) and copied out with aligned vector non-temporal stores. The block streams as
// runs: one (width 0: a contiguous block) or a row each (width: its rows, at the output's row
// stride). `heads`: a run may start anywhere in a line and have any number of lanes: its lanes
// before the output's first 64-byte boundary are stored plainly, then whole chunks stream, then
// a last partial chunk streams its whole vectors and stores the lanes after them plainly (rows
// of 1000 f32 start at 16 offsets in their lines: all had been plain stores, each output line
// read before it was overwritten). Otherwise each run starts aligned (`streamable` and the
// output's base) and is whole chunks. Paired loops (lower_fused_pair) compute each chunk of both
// and copy both out. Leaves the builder in the other branch (plain stores).
void KernelCodegen::stream_fused_stores(const std::vector<const FusedLoop *> &loops, int64_t width,
                                        llvm::Value *streamable, llvm::BasicBlock *done,
                                        bool heads) {
  const int64_t n = loops[0]->n, row_width = loops[0]->width;
  const int64_t run = width ? width : n, runs = n / run; // lanes a run, runs
  auto size_of = [&](llvm::Type *t) {
    return int64_t(module_.getDataLayout().getTypeAllocSize(t));
  };
  int64_t esize = 1; // the widest output's element
  for (const FusedLoop *fl : loops)
    esize = std::max(esize, size_of(fl->out.mem));
  // Without heads a row's chunk divides it (the largest number of whole 64-byte vectors up to
  // plan::kStreamChunk lanes that does), so that each row is whole chunks.
  int64_t kChunk = plan::kStreamChunk;
  if (width && !heads)
    while (width % kChunk != 0 && kChunk * esize > 64)
      kChunk /= 2;
  llvm::Value *stream = b_.CreateAnd(streamable, touches_stream_bytes());
  for (const FusedLoop *fl : loops) {
    const int64_t osize = size_of(fl->out.mem);
    llvm::Value *at = b_.CreatePtrToInt(fl->out.base, b_.getInt64Ty());
    stream = b_.CreateAnd(stream,
                          b_.CreateICmpEQ(b_.CreateAnd(at, i64(heads ? osize - 1 : 63)), i64(0)));
  }
  auto *nt = llvm::BasicBlock::Create(ctx_, "fused.stream", fn_);
  auto *plain = llvm::BasicBlock::Create(ctx_, "fused.plain", fn_);
  b_.CreateCondBr(stream, nt, plain);
  b_.SetInsertPoint(nt);
  // The whole chunks' stack chunks are addressed at constant offsets, so SROA keeps them in
  // registers (each vector stored straight from them); a partial chunk has its own.
  std::vector<Slot> chunks, last;
  for (size_t k = 0; k < loops.size(); ++k) {
    chunks.push_back(new_slot(ir::Type::tile(ir::ScalarKind::I8, {kChunk * esize})));
    if (heads)
      last.push_back(new_slot(ir::Type::tile(ir::ScalarKind::I8, {kChunk * esize})));
  }
  // The next blocks that views read, fetched as lane_loop paces them (a few lines per 256 bytes
  // of the densest stream); not the stores' blocks, which stream past the caches. Without it the
  // hardware prefetcher ran too little ahead of a loop with work to do (one thread, a SiLU of
  // 16384 x 1024 f32: 0.63 ns a lane, 0.32 fetching; bench/README.md, session 33).
  std::vector<Fetch> fetches;
  if (run >= kChunk)
    for (const Fetch &f : open_streams(n, kMaxStreamLaneBytes))
      if (!f.write)
        fetches.push_back(f);
  // A row-strided block's fused loads (RoPE's half rows) are no views, so they have no stream
  // above: each chunk fetches its own lines of the rows plan::kFetchAheadBytes or more below,
  // where the next programs of a kernel walking down the rows read. Only where the block covers
  // half its rows' stride or more: a narrow column block of wide rows may be walked across, and
  // its distance is 0 (the lines the chunk reads next). One NT copy of 64 MiB in 256-byte rows on
  // two threads of session 34's Xeon: 37-39 GB/s, 45-48 fetching 4-16 KiB ahead into L2 (none
  // with L1's locality); RoPE in C alike, bench/README.md.
  struct RowFetch {
    const ir::Operation *op;
    const Access *load;
    llvm::Value *distance; // bytes from the row being read
    int64_t esize;
  };
  std::vector<RowFetch> row_fetches;
  if (width && row_width % kChunk == 0)
    for (const FusedLoop *fl : loops)
      for (size_t i = 0; i < fl->loads.size(); ++i) {
        const Access &l = fl->loads[i];
        const ir::Operation *op = fl->f.loads[i];
        if (!l.row_bytes || std::any_of(row_fetches.begin(), row_fetches.end(),
                                        [&](const RowFetch &f) { return same_block(*f.op, *op); }))
          continue; // RoPE reloads its blocks for its second store
        const int64_t esize_l = int64_t(module_.getDataLayout().getTypeAllocSize(l.mem));
        const int64_t rows = n / width, block = rows * l.width_bytes;
        const int64_t ahead = rows * ((plan::kFetchAheadBytes + block - 1) / block);
        llvm::Value *dense = b_.CreateAnd(b_.CreateICmpSGT(l.row_bytes, i64(0)),
                                          b_.CreateICmpSLE(l.row_bytes, i64(2 * l.width_bytes)));
        row_fetches.push_back(
            {op, &l, b_.CreateSelect(dense, b_.CreateMul(l.row_bytes, i64(ahead)), i64(0)),
             esize_l});
      }
  int64_t sub = std::min(kChunk, trip_lanes(fetches, n)); // lanes a fetch trip covers
  if (fetches.empty() || kChunk % sub != 0)
    sub = kChunk;
  const int64_t subs = kChunk / sub, run_trips = run / kChunk * subs;
  // Lanes [from, to) of the chunk starting at lane `first` of the block into stack chunks
  // `into`; `row` and `col0` name the chunk's row where it lies within one (else null).
  auto lanes = [&](const std::vector<Slot> &into, llvm::Value *first, llvm::Value *row,
                   llvm::Value *col0, llvm::Value *from, llvm::Value *to) {
    loop(
        from, to,
        [&](llvm::Value *j) {
          for (size_t k = 0; k < loops.size(); ++k)
            b_.CreateStore(fused_lane(*loops[k], b_.CreateAdd(first, j), row,
                                      row ? b_.CreateAdd(col0, j) : nullptr),
                           b_.CreateGEP(loops[k]->out.mem, into[k].ptr, j));
        },
        "lane", /*rolled=*/kChunk < plan::kStreamChunk);
  };
  // Vector v of output k's stack chunk in `chunk`, non-temporal, to element `at` of the output
  // (64-byte aligned).
  auto stream_vector = [&](const std::vector<Slot> &chunk, size_t k, llvm::Value *v,
                           llvm::Value *at) {
    const Access &out = loops[k]->out;
    auto *vec_t = llvm::FixedVectorType::get(out.mem, unsigned(64 / size_of(out.mem)));
    llvm::Value *from = b_.CreateGEP(b_.getInt8Ty(), chunk[k].ptr, b_.CreateMul(v, i64(64)));
    llvm::Value *to = b_.CreateGEP(out.mem, out.base, at, "nt.at"); // named for the tests
    auto *st = b_.CreateAlignedStore(b_.CreateAlignedLoad(vec_t, from, llvm::Align(64)), to,
                                     llvm::Align(64));
    st->setMetadata(llvm::LLVMContext::MD_nontemporal,
                    llvm::MDNode::get(ctx_, {llvm::ConstantAsMetadata::get(b_.getInt32(1))}));
  };
  // Run r (null: the one run of a contiguous block): its lane j is lane r run + j of the block,
  // at element r row_stride + j of each output (r run + j of a contiguous one).
  auto emit_run = [&](llvm::Value *r) {
    llvm::Value *lane0 = r ? b_.CreateMul(r, i64(run)) : i64(0);
    std::vector<llvm::Value *> out0; // each output's element of the run's lane 0
    for (const FusedLoop *fl : loops)
      out0.push_back(r ? b_.CreateMul(r, fl->out.row_stride) : i64(0));
    // The chunk of lanes [first, first + kChunk) of the run names its row where it lies in one:
    // a run that is a row, a block of one row, or rows of whole chunks from an aligned start.
    auto row_of = [&](llvm::Value *first) -> std::pair<llvm::Value *, llvm::Value *> {
      if (r)
        return {r, first};
      if (n == row_width)
        return {i64(0), first};
      if (row_width % kChunk == 0 && !heads)
        return {b_.CreateUDiv(first, i64(row_width)), b_.CreateURem(first, i64(row_width))};
      return {nullptr, nullptr};
    };
    llvm::Value *head = i64(0);
    if (heads) { // the lanes before the output's first 64-byte boundary, stored plainly
      const Access &out = loops[0]->out;
      const int64_t osize = size_of(out.mem);
      llvm::Value *at =
          b_.CreatePtrToInt(b_.CreateGEP(out.mem, out.base, out0[0]), b_.getInt64Ty());
      head = b_.CreateUDiv(b_.CreateAnd(b_.CreateSub(i64(64), b_.CreateAnd(at, i64(63))), i64(63)),
                           i64(osize));
      head = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, head, i64(run));
      const auto [row, col0] = row_of(i64(0));
      loop(
          i64(0), head,
          [&](llvm::Value *j) {
            const FusedLoop &fl = *loops[0];
            b_.CreateStore(
                fused_lane(fl, b_.CreateAdd(lane0, j), row, row ? b_.CreateAdd(col0, j) : nullptr),
                b_.CreateGEP(fl.out.mem, fl.out.base, b_.CreateAdd(out0[0], j)));
          },
          "lane.head", /*rolled=*/true);
    }
    llvm::Value *whole =
        heads ? b_.CreateUDiv(b_.CreateSub(i64(run), head), i64(kChunk)) : i64(run / kChunk);
    loop(
        i64(0), whole,
        [&](llvm::Value *c) {
          llvm::Value *first = b_.CreateAdd(head, b_.CreateMul(c, i64(kChunk))); // in the run
          const auto [row, col0] = row_of(first);
          for (const RowFetch &f : row_fetches) {
            llvm::Value *at = b_.CreateGEP(
                b_.getInt8Ty(),
                b_.CreateGEP(f.load->mem, f.load->base,
                             b_.CreateAdd(b_.CreateMul(row, f.load->row_stride), col0)),
                f.distance);
            for (int64_t l = 0; l < (kChunk * f.esize + 63) / 64; ++l)
              b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                                 {b_.CreateConstGEP1_64(b_.getInt8Ty(), at, uint64_t(l * 64)),
                                  b_.getInt32(0), b_.getInt32(2), b_.getInt32(1)}); // L2, data
          }
          llvm::Value *lane = b_.CreateAdd(lane0, first);
          if (fetches.empty()) {
            lanes(chunks, lane, row, col0, i64(0), i64(kChunk));
          } else {
            llvm::Value *trip0 = b_.CreateMul(c, i64(subs));
            if (r)
              trip0 = b_.CreateAdd(trip0, b_.CreateMul(r, i64(run_trips)));
            loop(
                subs,
                [&](llvm::Value *s) {
                  fetch_trip(fetches, b_.CreateAdd(trip0, s), runs * run_trips);
                  lanes(chunks, lane, row, col0, b_.CreateMul(s, i64(sub)),
                        b_.CreateMul(b_.CreateAdd(s, i64(1)), i64(sub)));
                },
                "fetch");
          }
          for (size_t k = 0; k < loops.size(); ++k) {
            llvm::Value *at = b_.CreateAdd(out0[k], first);
            const int64_t per = 64 / size_of(loops[k]->out.mem); // lanes a vector
            for (int64_t v = 0; v < kChunk / per; ++v)
              stream_vector(chunks, k, i64(v), b_.CreateAdd(at, i64(v * per)));
          }
        },
        "chunk");
    if (!heads)
      return;
    // The last partial chunk: its whole vectors stream, the lanes after them are stored plainly.
    llvm::Value *first = b_.CreateAdd(head, b_.CreateMul(whole, i64(kChunk)));
    llvm::Value *rest = b_.CreateSub(i64(run), first);
    const auto [row, col0] = row_of(first);
    lanes(last, b_.CreateAdd(lane0, first), row, col0, i64(0), rest);
    const FusedLoop &fl = *loops[0];
    const int64_t per = 64 / size_of(fl.out.mem);
    llvm::Value *at = b_.CreateAdd(out0[0], first);
    llvm::Value *vectors = b_.CreateUDiv(rest, i64(per));
    loop(
        i64(0), vectors,
        [&](llvm::Value *v) {
          stream_vector(last, 0, v, b_.CreateAdd(at, b_.CreateMul(v, i64(per))));
        },
        "stream.tail", /*rolled=*/true);
    loop(
        b_.CreateMul(vectors, i64(per)), rest,
        [&](llvm::Value *j) {
          b_.CreateStore(b_.CreateLoad(fl.out.mem, b_.CreateGEP(fl.out.mem, last[0].ptr, j)),
                         b_.CreateGEP(fl.out.mem, fl.out.base, b_.CreateAdd(at, j)));
        },
        "lane.tail", /*rolled=*/true);
  };
  if (width && runs > 1)
    loop(runs, emit_run, "run");
  else
    emit_run(width ? i64(0) : nullptr);
  // Non-temporal stores are weakly ordered; the host fences them (sfence) once a worker has run
  // its programs (llvm_cpu_abi.h): a fence per program (mfence) stalled each row op's program
  // until its row had drained to DRAM (bench/README.md, session 12).
  b_.CreateBr(done);
  b_.SetInsertPoint(plain);
}

// A memory-bound kernel whose programs stream through consecutive blocks (rows of a softmax,
// chunks of a vector) leaves DRAM idle while it computes: the hardware prefetcher runs only a
// little ahead. So the lane loops after a load view fetch the block that follows it, and the
// blocks later stores write (fetch_stores_after), a few lines per chunk of lanes (prefetches
// never fault; a kernel that does not stream only wastes some bandwidth). A chunk is 256 bytes
// of the streamed elements (64 f32 lanes: one vector iteration of the loop as LLVM unrolls it,
// four lines per stream): bursts of 16 lines per 256 lanes filled the miss queue and were
// partly dropped (one-thread softmax 0.75 of the triad with 256 lanes, 0.81-0.83 with 64).
// A stream of more than kMaxStreamLaneBytes per lane is not fetched: a chunk would be more than
// four lines (a column sum's 16 x 1024 f32 chunk, 64 bytes a lane, had been fetched by the
// 1024-lane add of its partial sums: 32 lines per 32 lanes of a loop that reads L1; without
// that burst the chunk's rows stream through the hardware prefetcher, and one thread took 3.5
// instead of 5.3 ms of CPU time for a 16384 x 1024 column sum; session 16).
void KernelCodegen::lane_loop(int64_t n, const IndexFn &body, bool fetch, bool to_l1) {
  lane_loop(
      1, n, [&](llvm::Value *, llvm::Value *j) { body(j); }, "row", "i", fetch, to_l1);
}

int64_t KernelCodegen::trip_lanes(const std::vector<Fetch> &fetches, int64_t n) {
  int64_t lane_bytes = 1; // of the densest stream
  for (const Fetch &f : fetches)
    lane_bytes = std::max(lane_bytes, f.bytes / n);
  int64_t lanes = 32;
  while (lanes * lane_bytes < 256)
    lanes *= 2;
  return lanes;
}

KernelCodegen::LanePlan KernelCodegen::lane_plan(int64_t rows, int64_t width, bool fetch,
                                                 int64_t jam) {
  const int64_t n = rows * width;
  LanePlan plan{fetch ? open_streams(n * jam, kMaxStreamLaneBytes) : std::vector<Fetch>{}, 0};
  const int64_t chunk = trip_lanes(plan.fetches, n);
  // A row need not be whole chunks: its last lanes are a partial chunk, without fetches (rows
  // of 1000 or 992 f32 had no chunks, so no fetches: softmax 0.55 of the triad, 1024 0.7).
  if (!plan.fetches.empty() && n >= 4 * chunk && width >= chunk)
    plan.chunk = chunk;
  return plan;
}

/// lane_loop over `rows` rows of `width` lanes (a fused store's block), body(row, column); the
/// chunks count on across the rows, so each fetches its own lines of the next block.
void KernelCodegen::lane_loop(int64_t rows, int64_t width, const RowLaneFn &body,
                              const char *row_name, const char *lane_name, bool fetch, bool to_l1) {
  const LaneRows of = rows == 1 ? lane_rows_ : LaneRows{};
  lane_rows_ = {};
  const int64_t n = of.rows * rows * width;
  const LanePlan plan = lane_plan(of.rows * rows, width, fetch, of.jam);
  auto each_row = [&](const IndexFn &row, const char *name) {
    if (rows == 1)
      return row(i64(0));
    loop(rows, row, name);
  };
  llvm::Value *const outer_chunk = chunk_first_;
  if (!plan.chunk) {
    chunk_first_ = nullptr;
    each_row(
        [&](llvm::Value *r) {
          loop(
              width, [&](llvm::Value *j) { body(r, j); }, lane_name);
        },
        row_name);
    chunk_first_ = outer_chunk;
    return;
  }
  const int64_t per_row = width / plan.chunk, whole = per_row * plan.chunk;
  each_row(
      [&](llvm::Value *r) {
        loop(
            per_row,
            [&](llvm::Value *c) {
              fetch_trip(plan.fetches,
                         b_.CreateAdd(b_.CreateMul(of.row ? of.row : r, i64(per_row)), c),
                         n / width * per_row, to_l1);
              chunk_first_ = b_.CreateMul(c, i64(plan.chunk));
              loop(
                  chunk_first_, b_.CreateMul(b_.CreateAdd(c, i64(1)), i64(plan.chunk)),
                  [&](llvm::Value *j) { body(r, j); }, lane_name);
              chunk_first_ = outer_chunk;
            },
            "chunk");
        if (whole < width) { // the row's partial chunk
          chunk_first_ = i64(whole);
          loop(
              i64(whole), i64(width), [&](llvm::Value *j) { body(r, j); }, lane_name);
          chunk_first_ = outer_chunk;
        }
      },
      row_name);
}

// A full reduction in a loop of chunks, accumulated in one running value, was reduced across
// its vector at the end of every chunk (the vectorizer's epilogue): softmax's sum in its exp
// loop, a chain of ~40 cycles each 64 lanes, a third of the kernel's compute (session 33). So
// where the order is free (f32 and f64 sums associate freely, tl/ir/ir.h; max, min and integer
// sums come out the same in any order) each lane of the chunk keeps its own running value,
// combined once after the loop.
void KernelCodegen::reduce_lanes(int64_t n, const std::vector<LaneReduce> &reduces,
                                 const LaneValuesFn &body, bool fetch, bool to_l1) {
  const int64_t chunk = lane_plan(lane_rows_.rows, n, fetch, lane_rows_.jam).chunk; // lane_loop's
  auto free_order = [](const LaneReduce &r) {
    return r.kind != "sum" || !ir::is_float(r.k) || r.k == ScalarKind::F32 ||
           r.k == ScalarKind::F64;
  };
  auto accumulate = [&](const LaneReduce &r, llvm::Value *at, llvm::Value *v) {
    llvm::Value *next = round_to(r.k, combine(r.kind, r.k, b_.CreateLoad(r.acc->elem, at), v));
    if (r.kind == "sum" && (r.k == ScalarKind::F32 || r.k == ScalarKind::F64))
      llvm::cast<llvm::Instruction>(next)->setHasAllowReassoc(true);
    b_.CreateStore(next, at);
  };
  std::vector<std::optional<Slot>> lanes(reduces.size());
  for (size_t q = 0; q < reduces.size(); ++q) {
    const LaneReduce &r = reduces[q];
    b_.CreateStore(reduce_identity(r.kind, r.k, r.acc->elem), r.acc->ptr);
    if (chunk && free_order(r)) {
      Slot &part = lanes[q].emplace(new_slot(ir::Type::tile(r.k, {chunk})));
      // One vector store (a loop of them stayed 64 scalar stores a row, unmerged).
      b_.CreateStore(b_.CreateVectorSplat(unsigned(chunk), reduce_identity(r.kind, r.k, part.elem)),
                     part.ptr);
    }
  }
  lane_loop(
      n,
      [&](llvm::Value *i) {
        const std::vector<llvm::Value *> v = body(i);
        for (size_t q = 0; q < reduces.size(); ++q)
          accumulate(reduces[q],
                     lanes[q] && chunk_first_ ? elem_ptr(*lanes[q], b_.CreateSub(i, chunk_first_))
                                              : reduces[q].acc->ptr,
                     v[q]);
      },
      fetch, to_l1);
  // The running values combined in halves (a loop over them ran as a serial chain of 64 scalar
  // adds, fully unrolled before the vectorizer saw it).
  for (size_t q = 0; q < reduces.size(); ++q) {
    if (!lanes[q])
      continue;
    const LaneReduce &r = reduces[q];
    llvm::Value *v =
        b_.CreateLoad(llvm::FixedVectorType::get(lanes[q]->elem, unsigned(chunk)), lanes[q]->ptr);
    for (int64_t w = chunk / 2; w >= 1; w /= 2) {
      std::vector<int> lo(w), hi(w);
      for (int64_t j = 0; j < w; ++j) {
        lo[j] = int(j);
        hi[j] = int(w + j);
      }
      v = combine(r.kind, r.k, b_.CreateShuffleVector(v, lo), b_.CreateShuffleVector(v, hi));
      if (auto *add = llvm::dyn_cast<llvm::Instruction>(v); add && r.kind == "sum")
        if (ir::is_float(r.k))
          add->setHasAllowReassoc(true);
    }
    accumulate(r, r.acc->ptr, b_.CreateExtractElement(v, uint64_t(0)));
  }
}

std::vector<KernelCodegen::Fetch> KernelCodegen::open_streams(int64_t trips,
                                                              int64_t max_bytes_per_trip) {
  std::vector<Fetch> fetches;
  for (const Stream &s : streams_)
    if (std::find(open_blocks_.begin(), open_blocks_.end(), s.block) != open_blocks_.end() &&
        s.bytes <= trips * max_bytes_per_trip) // denser: not paced by this loop
      fetches.push_back({s.at, s.bytes, s.write ? 1 : 0});
  return fetches;
}

void KernelCodegen::fetch_trip(const std::vector<Fetch> &fetches, llvm::Value *trip, int64_t trips,
                               bool small_to_l1) {
  for (const Fetch &f : fetches) {
    const int64_t total = (f.bytes + 63) / 64, lines = (total + trips - 1) / trips; // per trip
    for (int64_t l = 0; l < lines; ++l) {
      // A stream of fewer lines than trips (a row mean's 64-byte output block) is spread over
      // them, line trip x total / trips: trip x 64 ran past its block (256 lines fetched for
      // ownership, by every program, for its one line).
      llvm::Value *at =
          total < trips
              ? b_.CreateMul(b_.CreateUDiv(b_.CreateMul(trip, i64(total)), i64(trips)), i64(64))
              : b_.CreateAdd(b_.CreateMul(trip, i64(lines * 64)), i64(l * 64));
      // Into L2 (locality 2), or L1 (3) for the small blocks of a lane loop whose lanes compute
      // a transcendental (its to_l1): a row of 4 KiB two rows ahead stays there until read
      // (softmax 4.03 -> 3.36 ms, log_softmax 4.20 -> 3.77 for 16384 x 1024 f32 on session
      // 33's Xeon). Cheap loops go to L2 since session 34 (var's x - mean: medians 0.61-0.69 ->
      // 0.70-0.77 of the triad). Larger blocks and the other loops' streams stay in L2 (into L1
      // everywhere, argmax and cumsum read 0.54-0.67 of the triad against 0.82-1.04).
      const int locality = small_to_l1 && f.bytes <= plan::kFetchAheadBytes ? 3 : 2;
      b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                         {b_.CreateGEP(b_.getInt8Ty(), f.base, at), b_.getInt32(f.write),
                          b_.getInt32(locality), b_.getInt32(1)}); // data
    }
  }
}

/// After load view `load`: the stores planned to be fetched for writing after it
/// (cpu.prefetch_after, plan_prefetch.h) become streams of the lane loops before them.
void KernelCodegen::fetch_stores_after(const ir::Operation &load) {
  const int64_t view = *plan::group(load, plan::kView);
  const ir::Block &block = *load.parent();
  bool after = false;
  for (auto &op : block.ops()) {
    after |= op.get() == &load;
    if (!after || op->opcode() != Opcode::Store || plan::group(*op, plan::kPrefetchAfter) != view)
      continue;
    const ir::Type &tile = op->operand(1 + op->operand(0)->type().rank())->type();
    llvm::Value *at =
        block_base(arg_index_.at(op->operand(0)), block_offsets(*op), storage_type(tile.elem()));
    streams_.push_back({at, tile_bytes(tile), &block, true});
  }
}

llvm::Value *KernelCodegen::lane_value(const ir::Value *v, llvm::Value *index) {
  const ir::Operation *def = v->def();
  if (def && plan::flag(*def, plan::kInline)) {
    if (def->opcode() == Opcode::Splat)
      return scalar(def->operand(0));
    if (def->opcode() == Opcode::Full)
      return attr_constant(def->result()->type().elem(), *def->attr("value"));
    if (def->opcode() == Opcode::ExpandDims || def->opcode() == Opcode::Reshape)
      return lane_value(def->operand(0), index); // the same elements in the same order
    if (def->opcode() == Opcode::Broadcast) {
      const ir::Type &in = def->operand(0)->type();
      if (in.num_elements() == 1)
        return lane_value(def->operand(0), i64(0));
      // A (R, 1) or (1, C) tile broadcast to (R, C), read inside a reduction along the rows
      // (plan_inlining.h): the element at the lane's row or column.
      if (!row_lane_.row || in.rank() != 2)
        throw std::logic_error("llvm-cpu: an inlined broadcast read outside a row reduction");
      return lane_value(def->operand(0), in.shape()[0] == 1 ? row_lane_.col : row_lane_.row);
    }
    std::vector<llvm::Value *> args;
    for (const ir::Value *in : def->operands())
      args.push_back(lane_value(in, index));
    return elementwise_value(*def, std::move(args), index);
  }
  Slot &s = slot(v);
  return b_.CreateLoad(s.elem, elem_ptr(s, v->type().is_scalar() ? i64(0) : index));
}

} // namespace tl::llvm_cpu
