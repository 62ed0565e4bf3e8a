// llvm-cpu lowering of memory and debugging ops: block load/store with out-of-bounds padding and
// masking, gather/scatter/atomic_add with bounds checks, print and assert.
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include "plan_attrs.h"

#include <llvm/IR/MDBuilder.h>

namespace tl::llvm_cpu {
using ir::Opcode;
using ir::ScalarKind;

/// True when the block of `tensor` at `off` with the tile's shape lies inside the tensor and is
/// one contiguous run of memory in the tile's row-major order (dims of extent 1 may have any
/// stride); then tile element i is at data + sum(off * stride) + i.
llvm::Value *KernelCodegen::block_is_contiguous(unsigned arg, const std::vector<llvm::Value *> &off,
                                                const std::vector<int64_t> &tile_shape) {
  llvm::Value *ok = b_.getTrue();
  int64_t run = 1; // elements of the tile after dimension d
  for (int d = int(tile_shape.size()) - 1; d >= 0; --d) {
    llvm::Value *shape = arg_field(arg, 1, i64(d)), *stride = arg_field(arg, 2, i64(d));
    ok = b_.CreateAnd(ok, extent_inside(off[d], tile_shape[d], shape));
    if (tile_shape[d] > 1)
      ok = b_.CreateAnd(ok, b_.CreateICmpEQ(stride, i64(run)));
    run *= tile_shape[d];
  }
  return ok;
}

/// Address of element 0 of the block at `off` (valid when block_is_contiguous).
llvm::Value *KernelCodegen::block_base(unsigned arg, const std::vector<llvm::Value *> &off,
                                       llvm::Type *mem_t) {
  llvm::Value *base = i64(0);
  for (size_t d = 0; d < off.size(); ++d)
    base = b_.CreateAdd(base, b_.CreateMul(off[d], arg_field(arg, 2, i64(d))));
  return b_.CreateGEP(mem_t, arg_field(arg, 0, nullptr), base);
}

std::vector<llvm::Value *> KernelCodegen::block_offsets(const ir::Operation &op) {
  std::vector<llvm::Value *> off;
  for (int d = 0; d < op.operand(0)->type().rank(); ++d)
    off.push_back(b_.CreateSExt(scalar(op.operand(1 + d)), b_.getInt64Ty()));
  return off;
}

int64_t KernelCodegen::tile_bytes(const ir::Type &t) {
  return t.num_elements() *
         int64_t(module_.getDataLayout().getTypeAllocSize(storage_type(t.elem())));
}

void KernelCodegen::stream_next_block(const ir::Operation &load) {
  const int64_t along = *plan::group(load, plan::kPrefetchNext);
  const ir::Operation &loop = *load.parent()->parent();
  const unsigned a = arg_index_.at(load.operand(0));
  const ir::Type &tt = load.result()->type();
  const int rank = tt.rank();
  std::vector<llvm::Value *> off = block_offsets(load);
  off[along] = b_.CreateAdd(off[along], b_.CreateSExt(scalar(loop.operand(2)), b_.getInt64Ty()));
  llvm::Type *mem_t = storage_type(tt.elem());
  const int64_t elem = int64_t(module_.getDataLayout().getTypeAllocSize(mem_t));
  int row_dim = -1; // the one dimension before the last wider than 1 (cpu-prefetch-next)
  for (int d = 0; d + 1 < rank; ++d)
    if (tt.shape()[d] > 1)
      row_dim = d;
  const int64_t tile_rows = row_dim < 0 ? 1 : tt.shape()[row_dim];
  // Rows are runs of the last dimension only where it is contiguous (not a transposed view).
  llvm::Value *unit = b_.CreateICmpEQ(arg_field(a, 2, i64(rank - 1)), i64(1));
  llvm::Value *stride =
      row_dim < 0 ? i64(0) : b_.CreateMul(arg_field(a, 2, i64(row_dim)), i64(elem));
  row_streams_.push_back({block_base(a, off, mem_t), b_.CreateSelect(unit, i64(tile_rows), i64(0)),
                          stride, tile_rows, tt.shape()[rank - 1] * elem, load.parent()});
}

/// The index kRowsAhead steps ahead is read clamped to its tensor (none when it is empty: the
/// index load pads), the block at it fetched into L2 line by line, its first row only and at
/// most kRowsAheadBytes (prefetches never fault: a stale or out-of-range row wastes a fetch, no
/// more). Into L1 (prefetcht0) it measured no gain: 64 lines a row ahead held the L1's miss
/// buffers that the copy's own loads needed.
void KernelCodegen::fetch_rows_ahead(const ir::Operation &load) {
  const int64_t along = *plan::group(load, plan::kPrefetchRows);
  const ir::Operation &index = *load.operand(1 + along)->def()->operand(0)->def();
  const ir::Operation &loop = *index.parent()->parent();
  const unsigned ia = arg_index_.at(index.operand(0));
  const ir::ScalarKind ik = index.result()->type().elem();
  llvm::Value *count = arg_field(ia, 1, i64(0));
  auto *fetch = llvm::BasicBlock::Create(ctx_, "rows.ahead", fn_);
  auto *done = llvm::BasicBlock::Create(ctx_, "rows.ahead.done", fn_);
  b_.CreateCondBr(b_.CreateICmpSGT(count, i64(0)), fetch, done);
  b_.SetInsertPoint(fetch);
  llvm::Value *step = b_.CreateSExt(scalar(loop.operand(2)), b_.getInt64Ty());
  llvm::Value *at = b_.CreateAdd(b_.CreateSExt(scalar(index.operand(1)), b_.getInt64Ty()),
                                 b_.CreateMul(step, i64(plan::kRowsAhead)));
  at = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, at, b_.CreateSub(count, i64(1)));
  at = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, at, i64(0));
  llvm::Type *it = storage_type(ik);
  llvm::Value *id = b_.CreateLoad(
      it, b_.CreateGEP(it, arg_field(ia, 0, nullptr), b_.CreateMul(at, arg_field(ia, 2, i64(0)))));
  std::vector<llvm::Value *> off = block_offsets(load);
  off[along] = b_.CreateIntCast(id, b_.getInt64Ty(), ir::is_signed(ik));
  const ir::Type &tt = load.result()->type();
  llvm::Type *mem_t = storage_type(tt.elem());
  llvm::Value *base = block_base(arg_index_.at(load.operand(0)), off, mem_t);
  const int64_t row = tt.shape().back() * int64_t(module_.getDataLayout().getTypeAllocSize(mem_t));
  for (int64_t l = 0; l < std::min<int64_t>(row, plan::kRowsAheadBytes); l += 64)
    b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                       {b_.CreateConstGEP1_64(b_.getInt8Ty(), base, uint64_t(l)), b_.getInt32(0),
                        b_.getInt32(2), b_.getInt32(1)}); // into L2, data
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void KernelCodegen::lower_block_access(const ir::Operation &op) {
  if (op.opcode() == Opcode::Load && op.attr(plan::kPrefetchRows) && !plan::deferred(op))
    fetch_rows_ahead(op); // a fused load's is fetched before its store's loop (fusion.cpp)
  if (op.attr(plan::kStridedView))
    return lower_strided_view(op);
  if (op.attr(plan::kTransposeStore))
    return lower_transpose_store(op);
  if (op.opcode() == Opcode::Load && op.attr(plan::kPrefetchNext))
    stream_next_block(op);
  // A load planned as a view (cpu.view, plan_views.h) reads the tensor in place when the block is
  // inside and contiguous: no copy, its users read the tensor; otherwise it is copied as below.
  if (op.opcode() == Opcode::Load && op.attr(plan::kView) && !slots_.count(op.result())) {
    const unsigned a = arg_index_.at(op.operand(0));
    const std::vector<llvm::Value *> off = block_offsets(op);
    const ir::Type &tt = op.result()->type();
    llvm::Value *view = block_base(a, off, storage_type(tt.elem()));
    in_place_or_copy(op, block_is_contiguous(a, off, tt.shape()), view, "view");
    fetch_after(op, view);
    fetch_stores_after(op);
    return;
  }
  copy_block_access(op);
  if (op.opcode() == Opcode::Load && plan::flag(op, plan::kStreamCopy)) {
    // A bf16 row op's converting copy had fetched nothing ahead: 16384 x 1024 rows reduced and
    // stored read 0.54 of the triad (f32's, read in place, 1.07).
    const ir::Type &tt = op.result()->type();
    fetch_after(
        op, block_base(arg_index_.at(op.operand(0)), block_offsets(op), storage_type(tt.elem())));
  }
}

/// The blocks after `load`'s block (at `at` in memory) are where the next programs of a
/// streaming kernel read: the lane loops after it (lane_loop) fetch the one at least
/// plan::kFetchAheadBytes ahead.
void KernelCodegen::fetch_after(const ir::Operation &load, llvm::Value *at) {
  const int64_t bytes = tile_bytes(load.result()->type());
  const int64_t ahead = std::max<int64_t>(1, (plan::kFetchAheadBytes + bytes - 1) / bytes);
  streams_.push_back(
      {b_.CreateGEP(b_.getInt8Ty(), at, i64(bytes * ahead)), bytes, load.parent(), false});
}

/// block_rows_are_strided (fusion.cpp) with rows a positive stride apart (the overlap test of
/// lower_transpose_store takes the rows in ascending order).
llvm::Value *KernelCodegen::rows_positively_strided(unsigned arg,
                                                    const std::vector<llvm::Value *> &off,
                                                    const std::vector<int64_t> &tile_shape,
                                                    llvm::Value *&row_stride) {
  llvm::Value *ok = block_rows_are_strided(arg, off, tile_shape, row_stride);
  return b_.CreateAnd(ok, b_.CreateICmpSGT(row_stride, i64(0)));
}

/// A load its transpose reads in place (cpu.strided_view): the tensor's rows where the block is
/// inside with contiguous rows, else a copy (rows back to back).
void KernelCodegen::lower_strided_view(const ir::Operation &load) {
  const unsigned a = arg_index_.at(load.operand(0));
  const std::vector<llvm::Value *> off = block_offsets(load);
  const ir::Type &tt = load.result()->type();
  llvm::Value *rs = nullptr;
  llvm::Value *ok = rows_positively_strided(a, off, tt.shape(), rs);
  const auto [from, copied] =
      in_place_or_copy(load, ok, block_base(a, off, storage_type(tt.elem())), "strided");
  llvm::PHINode *stride = b_.CreatePHI(b_.getInt64Ty(), 2, "row.stride");
  stride->addIncoming(rs, from);
  stride->addIncoming(i64(tt.shape().back()), copied);
  slot(load.result()).row_stride = stride;
}

std::pair<llvm::BasicBlock *, llvm::BasicBlock *>
KernelCodegen::in_place_or_copy(const ir::Operation &load, llvm::Value *ok, llvm::Value *view,
                                const std::string &name) {
  llvm::BasicBlock *from = b_.GetInsertBlock();
  auto *copy_bb = llvm::BasicBlock::Create(ctx_, name + ".copy", fn_);
  auto *join = llvm::BasicBlock::Create(ctx_, name + ".done", fn_);
  b_.CreateCondBr(ok, join, copy_bb);
  b_.SetInsertPoint(copy_bb);
  copy_block_access(load);
  llvm::BasicBlock *copied = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  Slot &s = slot(load.result());
  llvm::PHINode *ptr = b_.CreatePHI(b_.getPtrTy(), 2, name == "view" ? "tile" : "rows");
  ptr->addIncoming(view, from);
  ptr->addIncoming(s.ptr, copied);
  s.ptr = ptr;
  return {from, copied};
}

/// The store of a transpose planned at it (cpu.transpose_store): from the load's rows straight
/// to the tensor where its block is inside with contiguous rows and does not overlap the
/// source (an in-place transpose of a diagonal block would overwrite rows not yet read), else
/// into the transpose's stack tile and copied out.
void KernelCodegen::lower_transpose_store(const ir::Operation &store) {
  const int rank = store.operand(0)->type().rank();
  const ir::Value *stored = store.operand(1 + rank);
  const ir::Operation *t = stored->def();
  while (t->opcode() != Opcode::Transpose)
    t = t->operand(0)->def();
  const ir::Type &in = t->operand(0)->type();
  const int64_t M = in.shape()[in.rank() - 2], N = in.shape()[in.rank() - 1];
  const Slot &src = slot(t->operand(0));
  llvm::Value *src_rs = src.row_stride ? src.row_stride : i64(N);
  const unsigned a = arg_index_.at(store.operand(0));
  const std::vector<llvm::Value *> off = block_offsets(store);
  llvm::Value *dst_rs = nullptr;
  llvm::Value *ok = rows_positively_strided(a, off, stored->type().shape(), dst_rs);
  llvm::Value *dst = block_base(a, off, storage_type(stored->type().elem()));
  const int64_t esize = int64_t(module_.getDataLayout().getTypeAllocSize(src.elem));
  auto end_of = [&](llvm::Value *p, llvm::Value *rs, int64_t rows, int64_t cols) {
    llvm::Value *elems = b_.CreateAdd(b_.CreateMul(rs, i64(rows - 1)), i64(cols));
    return b_.CreateAdd(b_.CreatePtrToInt(p, b_.getInt64Ty()), b_.CreateMul(elems, i64(esize)));
  };
  llvm::Value *src_lo = b_.CreatePtrToInt(src.ptr, b_.getInt64Ty());
  llvm::Value *dst_lo = b_.CreatePtrToInt(dst, b_.getInt64Ty());
  // dst_rs is positive where ok holds (the product is not used otherwise).
  llvm::Value *apart = b_.CreateOr(b_.CreateICmpULE(end_of(src.ptr, src_rs, M, N), dst_lo),
                                   b_.CreateICmpULE(end_of(dst, dst_rs, N, M), src_lo));
  auto *direct_bb = llvm::BasicBlock::Create(ctx_, "transpose.direct", fn_);
  auto *copy_bb = llvm::BasicBlock::Create(ctx_, "transpose.copy", fn_);
  auto *done = llvm::BasicBlock::Create(ctx_, "transpose.done", fn_);
  b_.CreateCondBr(b_.CreateAnd(ok, apart), direct_bb, copy_bb);
  b_.SetInsertPoint(direct_bb);
  // Non-temporal stores into a large tensor, as cpu-stream-stores decides for fused stores (the
  // host fences them after the worker's programs).
  transpose_rows(src.ptr, src_rs, dst, dst_rs, M, N, src.elem, touches_stream_bytes());
  b_.CreateBr(done);
  b_.SetInsertPoint(copy_bb);
  transpose_rows(src.ptr, src_rs, slot(t->result()).ptr, i64(M), M, N, src.elem, nullptr);
  copy_block_access(store);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

/// Padding first, when the tile reaches outside the tensor; the in-bounds rows overwrite it.
void KernelCodegen::pad_block(const ir::Operation &op, const BlockCopy &c) {
  const ir::Type &tt = c.tile_type;
  const ir::Attr *p = op.attr("padding");
  llvm::Value *pad = p ? attr_constant(tt.elem(), *p) : llvm::Constant::getNullValue(c.tile.elem);
  if (pad->getType() != c.tile.elem) // a tile of stored bits (raw_storage)
    pad = to_storage(tt.elem(), pad);
  llvm::Value *inside = b_.getTrue();
  for (int d = 0; d < tt.rank(); ++d)
    inside = b_.CreateAnd(inside, extent_inside(c.off[d], tt.shape()[d], c.shape[d]));
  auto *pad_bb = llvm::BasicBlock::Create(ctx_, "pad", fn_);
  auto *after = llvm::BasicBlock::Create(ctx_, "pad.done", fn_);
  b_.CreateCondBr(inside, after, pad_bb);
  b_.SetInsertPoint(pad_bb);
  loop(
      c.tile.n, [&](llvm::Value *i) { b_.CreateStore(pad, elem_ptr(c.tile, i)); }, "pad");
  b_.CreateBr(after);
  b_.SetInsertPoint(after);
}

/// Elements [lo, hi) of the innermost dimension, between tile row `row_index` and memory at
/// `base`; `unit`: the innermost stride is 1 (contiguous, so the loop vectorizes).
void KernelCodegen::copy_row_elements(const BlockCopy &c, llvm::Value *lo, llvm::Value *hi,
                                      llvm::Value *row_index, llvm::Value *base, bool unit) {
  const ir::Type &tt = c.tile_type;
  const int d = c.row_dim;
  const int64_t last = tt.shape()[d];
  loop(
      lo, hi,
      [&](llvm::Value *j) {
        llvm::Value *t_index = b_.CreateAdd(b_.CreateMul(row_index, i64(last)), j);
        llvm::Value *col = b_.CreateAdd(c.off[d], j);
        llvm::Value *m_index = b_.CreateAdd(base, unit ? col : b_.CreateMul(col, c.stride[d]));
        llvm::Value *mp = b_.CreateGEP(c.mem_t, c.data, m_index);
        // A tile that holds the stored bits (a direct transpose's, raw_storage) copies them.
        const bool raw = c.tile.elem == c.mem_t;
        if (c.is_store) {
          llvm::Value *v = b_.CreateLoad(c.tile.elem, elem_ptr(c.tile, t_index));
          b_.CreateStore(raw ? v : to_storage(tt.elem(), v), mp);
        } else {
          llvm::Value *bits = b_.CreateLoad(c.mem_t, mp);
          b_.CreateStore(raw ? bits : from_storage(tt.elem(), bits), elem_ptr(c.tile, t_index));
        }
      },
      unit ? "j.unit" : "j");
}

/// The innermost dimension over its clamped in-bounds range, in two copies of the row loop: unit
/// stride and any stride.
void KernelCodegen::copy_block_row(const BlockCopy &c, llvm::Value *row_index, llvm::Value *base) {
  const int d = c.row_dim;
  const int64_t last = c.tile_type.shape()[d];
  llvm::Value *lo = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, i64(0), b_.CreateNeg(c.off[d]));
  llvm::Value *hi = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, i64(last),
                                             b_.CreateSub(c.shape[d], c.off[d]));
  auto *unit_bb = llvm::BasicBlock::Create(ctx_, "row.unit", fn_);
  auto *any_bb = llvm::BasicBlock::Create(ctx_, "row.strided", fn_);
  auto *done = llvm::BasicBlock::Create(ctx_, "row.done", fn_);
  b_.CreateCondBr(b_.CreateICmpEQ(c.stride[d], i64(1)), unit_bb, any_bb);
  b_.SetInsertPoint(unit_bb);
  copy_row_elements(c, lo, hi, row_index, base, true);
  b_.CreateBr(done);
  b_.SetInsertPoint(any_bb);
  copy_row_elements(c, lo, hi, row_index, base, false);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

/// Dimension d and those inside it: the outer dimensions loop over their in-bounds coordinates
/// (tile row `row_index`, memory at `base`), the innermost copies a row.
void KernelCodegen::copy_block_dims(const BlockCopy &c, int d, llvm::Value *row_index,
                                    llvm::Value *base) {
  const ir::Type &tt = c.tile_type;
  if (d == c.row_dim) {
    // Trailing dimensions of extent 1 (an (outer, n, 1) block of a reduction's view): one
    // bounds check and offset for them, then rows of dimension d, which are the contiguous runs
    // (copied as rows of one element each, such a block had been a loop and a branch per
    // element).
    llvm::Value *inside = b_.getTrue();
    for (int t = d + 1; t < tt.rank(); ++t) {
      inside = b_.CreateAnd(inside, b_.CreateICmpULT(c.off[t], c.shape[t]));
      base = b_.CreateAdd(base, b_.CreateMul(c.off[t], c.stride[t]));
    }
    if (d + 1 == tt.rank()) {
      copy_block_row(c, row_index, base);
      return;
    }
    auto *in_bb = llvm::BasicBlock::Create(ctx_, "row.in", fn_);
    auto *next = llvm::BasicBlock::Create(ctx_, "row.next", fn_);
    b_.CreateCondBr(inside, in_bb, next);
    b_.SetInsertPoint(in_bb);
    copy_block_row(c, row_index, base);
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
    return;
  }
  loop(
      tt.shape()[d],
      [&](llvm::Value *i) {
        llvm::Value *coord = b_.CreateAdd(c.off[d], i);
        llvm::Value *inside = b_.CreateICmpULT(coord, c.shape[d]); // also rejects negative coords
        auto *in_bb = llvm::BasicBlock::Create(ctx_, "row.in", fn_);
        auto *next = llvm::BasicBlock::Create(ctx_, "row.next", fn_);
        b_.CreateCondBr(inside, in_bb, next);
        b_.SetInsertPoint(in_bb);
        copy_block_dims(c, d + 1, b_.CreateAdd(b_.CreateMul(row_index, i64(tt.shape()[d])), i),
                        b_.CreateAdd(base, b_.CreateMul(coord, c.stride[d])));
        b_.CreateBr(next);
        b_.SetInsertPoint(next);
      },
      "d");
}

/// A block load or store element by element, any strides, out-of-bounds elements padded (a
/// load) or skipped (a store).
void KernelCodegen::copy_block_access(const ir::Operation &op) {
  const unsigned a = arg_index_.at(op.operand(0));
  const int rank = op.operand(0)->type().rank();
  const bool is_store = op.opcode() == Opcode::Store;
  const ir::Value *tile_v = is_store ? op.operand(1 + rank) : op.result();
  const ir::Type &tt = tile_v->type();
  BlockCopy c{
      tt, slot(tile_v), storage_type(tt.elem()), arg_field(a, 0, nullptr), block_offsets(op), {},
      {}, is_store};
  c.shape.resize(rank), c.stride.resize(rank);
  c.row_dim = rank - 1;
  while (c.row_dim > 0 && tt.shape()[c.row_dim] == 1)
    --c.row_dim;
  for (int d = 0; d < rank; ++d) {
    c.shape[d] = arg_field(a, 1, i64(d));
    c.stride[d] = arg_field(a, 2, i64(d));
  }
  if (!is_store)
    pad_block(op, c);
  copy_block_dims(c, 0, i64(0), i64(0));
}

void KernelCodegen::lower_indexed(const ir::Operation &op) {
  const unsigned a = arg_index_.at(op.operand(0));
  const int rank = op.operand(0)->type().rank();
  const ScalarKind elem = op.operand(0)->type().elem();
  const bool gather = op.opcode() == Opcode::Gather;
  const size_t mask_at = 1 + rank + (gather ? 0 : 1);
  const bool masked = op.num_operands() > mask_at;
  llvm::Value *data = arg_field(a, 0, nullptr);
  std::vector<llvm::Value *> shape(rank), stride(rank);
  std::vector<Slot> index;
  for (int d = 0; d < rank; ++d) {
    shape[d] = arg_field(a, 1, i64(d));
    stride[d] = arg_field(a, 2, i64(d));
    index.push_back(slot(op.operand(1 + d)));
  }
  const int64_t lanes = op.operand(1)->type().num_elements();
  Slot value = gather ? Slot{} : slot(op.operand(1 + rank));
  Slot mask = masked ? slot(op.operand(mask_at)) : Slot{};
  Slot out = op.num_results() ? slot(op.result()) : Slot{};
  llvm::Type *elem_t = llvm_type(elem, &op);
  llvm::Type *mem_t = storage_type(elem);
  if (op.opcode() == Opcode::AtomicAdd && (elem == ScalarKind::BF16 || elem == ScalarKind::I1))
    unsupported(op, "atomic_add on " + std::string(ir::scalar_name(elem)) + " tensors");
  llvm::Value *other = nullptr;
  if (gather) {
    const ir::Attr *o = op.attr("other");
    other = o ? attr_constant(elem, *o) : llvm::Constant::getNullValue(elem_t);
  }
  const IndexFn lane = [&](llvm::Value *l) {
    if (gather)
      b_.CreateStore(other, elem_ptr(out, l));
    auto *active = llvm::BasicBlock::Create(ctx_, "lane.active", fn_);
    auto *next = llvm::BasicBlock::Create(ctx_, "lane.next", fn_);
    llvm::Value *on = masked
                          ? static_cast<llvm::Value *>(b_.CreateLoad(mask.elem, elem_ptr(mask, l)))
                          : b_.getTrue();
    b_.CreateCondBr(on, active, next);
    b_.SetInsertPoint(active);
    llvm::Value *m_index = i64(0);
    for (int d = 0; d < rank; ++d) {
      llvm::Value *idx =
          b_.CreateIntCast(b_.CreateLoad(index[d].elem, elem_ptr(index[d], l)), b_.getInt64Ty(),
                           ir::is_signed(op.operand(1 + d)->type().elem()));
      fail_if(b_.CreateICmpUGE(idx, shape[d]), op,
              "'" + std::string(op.name()) + "' index out of bounds in dimension " +
                  std::to_string(d),
              l, idx);
      m_index = b_.CreateAdd(m_index, b_.CreateMul(idx, stride[d]));
    }
    llvm::Value *mp = b_.CreateGEP(mem_t, data, m_index);
    if (gather) {
      b_.CreateStore(from_storage(elem, b_.CreateLoad(mem_t, mp)), elem_ptr(out, l));
    } else if (op.opcode() == Opcode::Scatter) {
      llvm::Value *v = b_.CreateLoad(value.elem, elem_ptr(value, l));
      b_.CreateStore(to_storage(elem, v), mp);
    } else { // programs run concurrently: a real atomic read-modify-write
      llvm::Value *v = b_.CreateLoad(value.elem, elem_ptr(value, l));
      if (elem == ScalarKind::F16) // the memory holds half: add in half, widen the old value
        v = b_.CreateFPTrunc(v, b_.getHalfTy());
      llvm::Value *old = b_.CreateAtomicRMW(
          ir::is_float(elem) ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add, mp, v,
          llvm::MaybeAlign(), llvm::AtomicOrdering::Monotonic);
      if (elem == ScalarKind::F16)
        old = b_.CreateFPExt(old, b_.getFloatTy());
      b_.CreateStore(old, elem_ptr(out, l));
    }
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  };
  const int64_t width = gather ? gather_width(elem) : 0;
  if (width == 0 || lanes < width) {
    loop(lanes, lane, "lane");
    return;
  }
  // A gather a vector of lanes at a time: the lanes' bounds checked together, the active ones
  // loaded by one masked gather (vgatherdps / vgatherqps). A chunk with an active lane out of
  // bounds runs lane by lane, so that the error names the first such lane and its index.
  const int64_t chunks = lanes / width;
  llvm::Type *i64t = b_.getInt64Ty(), *i32t = b_.getInt32Ty();
  auto vec = [&](llvm::Type *t) { return llvm::FixedVectorType::get(t, unsigned(width)); };
  auto splat = [&](llvm::Value *v) { return b_.CreateVectorSplat(unsigned(width), v); };
  // The lanes' addresses and which lanes are out of bounds, from offsets of type `it`.
  auto addresses = [&](llvm::Type *it, llvm::Value *l0, llvm::Value *&outside) {
    llvm::Value *at = llvm::Constant::getNullValue(vec(it));
    outside = llvm::Constant::getNullValue(vec(b_.getInt1Ty()));
    for (int d = 0; d < rank; ++d) {
      // element-aligned: a tile may be a view of the tensor's memory (cpu.view), not a slot
      llvm::Value *idx = b_.CreateIntCast(
          b_.CreateAlignedLoad(vec(index[d].elem), elem_ptr(index[d], l0),
                               llvm::Align(index[d].elem->getPrimitiveSizeInBits() / 8)),
          vec(it), ir::is_signed(op.operand(1 + d)->type().elem()));
      outside = b_.CreateOr(outside, b_.CreateICmpUGE(idx, splat(b_.CreateTrunc(shape[d], it))));
      at = b_.CreateAdd(at, b_.CreateMul(idx, splat(b_.CreateTrunc(stride[d], it))));
    }
    return b_.CreateGEP(mem_t, data, at);
  };
  // 32-bit offsets (one vgatherdps of 16 lanes, where 64-bit ones take two vgatherqps and
  // 64-bit products) where every element of the tensor is within 2^31 of its start and the
  // indices are at most 32 bits wide.
  llvm::Value *narrow = nullptr;
  bool narrow_indices = true;
  for (int d = 0; d < rank; ++d)
    narrow_indices &= ir::bit_width(op.operand(1 + d)->type().elem()) <= 32;
  if (narrow_indices) {
    llvm::Value *limit = i64(int64_t(1) << 31), *span = i64(0);
    narrow = b_.getTrue();
    for (int d = 0; d < rank; ++d) {
      narrow = b_.CreateAnd(narrow, b_.CreateAnd(b_.CreateICmpULT(shape[d], limit),
                                                 b_.CreateICmpULT(stride[d], limit)));
      span = b_.CreateAdd(span, b_.CreateMul(b_.CreateSub(shape[d], i64(1)), stride[d]));
    }
    narrow = b_.CreateAnd(narrow, b_.CreateICmpSLT(span, limit));
  }
  // The chunks with offsets of type `it`.
  auto chunk_loop = [&](llvm::Type *it) {
    loop(
        chunks,
        [&](llvm::Value *chunk) {
          llvm::Value *l0 = b_.CreateMul(chunk, i64(width));
          llvm::Value *on = b_.getAllOnesMask(llvm::ElementCount::getFixed(unsigned(width)));
          if (masked)
            on = b_.CreateICmpNE(
                b_.CreateAlignedLoad(vec(b_.getInt8Ty()), elem_ptr(mask, l0), llvm::Align(1)),
                llvm::Constant::getNullValue(vec(b_.getInt8Ty())));
          llvm::Value *outside = nullptr;
          llvm::Value *ptrs = addresses(it, l0, outside);
          auto *fast = llvm::BasicBlock::Create(ctx_, "gather.fast", fn_);
          auto *slow = llvm::BasicBlock::Create(ctx_, "gather.lanes", fn_);
          auto *done = llvm::BasicBlock::Create(ctx_, "gather.done", fn_);
          b_.CreateCondBr(b_.CreateOrReduce(b_.CreateAnd(outside, on)), slow, fast,
                          llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
          b_.SetInsertPoint(slow);
          loop(l0, b_.CreateAdd(l0, i64(width)), lane, "lane");
          b_.CreateBr(done);
          b_.SetInsertPoint(fast);
          llvm::Value *got = b_.CreateMaskedGather(
              vec(mem_t), ptrs, llvm::Align(mem_t->getPrimitiveSizeInBits() / 8), on);
          if (elem == ScalarKind::F16)
            got = b_.CreateFPExt(b_.CreateBitCast(got, vec(b_.getHalfTy())), vec(elem_t));
          else if (elem == ScalarKind::BF16)
            got = b_.CreateBitCast(
                b_.CreateShl(b_.CreateZExt(got, vec(b_.getInt32Ty())), splat(b_.getInt32(16))),
                vec(elem_t));
          got = b_.CreateSelect(on, got, splat(other));
          b_.CreateAlignedStore(got, elem_ptr(out, l0),
                                llvm::Align(elem_t->getPrimitiveSizeInBits() / 8));
          b_.CreateBr(done);
          b_.SetInsertPoint(done);
        },
        "chunk", /*rolled=*/true);
  };
  versions(
      narrow, [&](bool n32) { chunk_loop(n32 ? i32t : i64t); }, "gather");
  loop(i64(chunks * width), i64(lanes), lane, "lane");
}

/// Lanes a gather of `k` loads at once (0: lane by lane): a 512-bit vector of 32-bit elements,
/// or of f16 / bf16 widened to f32. i1 and fp8 tiles (bytes converted on load) go lane by lane.
int64_t KernelCodegen::gather_width(ScalarKind k) const {
  switch (k) {
  case ScalarKind::F32:
  case ScalarKind::I32:
  case ScalarKind::F16:
  case ScalarKind::BF16:
  case ScalarKind::I16:
  case ScalarKind::I8:
  case ScalarKind::U32:
  case ScalarKind::U16:
  case ScalarKind::U8:
    return std::max<int64_t>(4, vector_bits_ / 32);
  case ScalarKind::F64:
  case ScalarKind::I64:
    return std::max<int64_t>(2, vector_bits_ / 64);
  default:
    return 0;
  }
}

void KernelCodegen::lower_debug(const ir::Operation &op) {
  if (op.opcode() == Opcode::Assert) {
    Slot c = slot(op.operand(0));
    loop(
        c.n,
        [&](llvm::Value *l) {
          llvm::Value *ok = b_.CreateLoad(c.elem, elem_ptr(c, l));
          fail_if(b_.CreateNot(ok), op, "assertion failed: " + *op.attr_as<std::string>("message"),
                  l, nullptr);
        },
        "lane");
    return;
  }
  auto *ptr = b_.getPtrTy();
  auto *i64t = b_.getInt64Ty();
  auto *i32t = b_.getInt32Ty();
  llvm::FunctionCallee print = module_.getOrInsertFunction(
      "tl_cpu_print",
      llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, i32t, ptr, i64t, i32t, i64t, i64t, i64t},
                              false));
  llvm::Value *host = b_.CreateLoad(
      ptr, b_.CreateStructGEP(
               llvm::StructType::get(ctx_, {ptr, llvm::ArrayType::get(i64t, 3), ptr}), launch_, 2));
  const std::string *p = op.attr_as<std::string>("prefix");
  llvm::Value *prefix = b_.CreateGlobalStringPtr(p ? *p : "");
  for (const ir::Value *v : op.operands()) {
    const ScalarKind k = v->type().elem();
    Slot s = slot(v);
    const bool fl = ir::is_float(k);
    Slot wide = new_slot(
        ir::Type::value_of_shape(fl ? ScalarKind::F64 : ScalarKind::I64, v->type().shape()));
    loop(
        s.n,
        [&](llvm::Value *l) {
          llvm::Value *x = b_.CreateLoad(s.elem, elem_ptr(s, l));
          x = fl ? b_.CreateFPCast(x, wide.elem) : b_.CreateIntCast(x, wide.elem, ir::is_signed(k));
          b_.CreateStore(x, elem_ptr(wide, l));
        },
        "p");
    b_.CreateCall(print, {host, prefix,
                          b_.getInt32(fl                 ? 2
                                      : ir::is_signed(k) ? 0
                                                         : 1),
                          wide.ptr, i64(s.n), b_.getInt32(v->type().is_tile()), pid_[0], pid_[1],
                          pid_[2]});
  }
}

} // namespace tl::llvm_cpu
