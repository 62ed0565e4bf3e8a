// nvptx lowering of tile ops: sources, shape changes, memory, reductions and scans.
// Ops that move elements between threads go through shared memory (spill): the tile is written
// row-major, then each thread reads the elements its result layout gives it.
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <map>

namespace tl::nvptx {
using ir::Opcode;
using ir::ScalarKind;

namespace {

std::vector<int64_t> row_major_strides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}
} // namespace

void KernelEmitter::need_shared(uint64_t bytes) {
  shared_bytes_ = std::max(shared_bytes_, rings_end_ + bytes); // scratch_ follows the rings
}

llvm::Value *KernelEmitter::shared_at(llvm::Value *base, llvm::Type *t, llvm::Value *index) {
  return b_.CreateInBoundsGEP(t, base, index);
}

llvm::Value *KernelEmitter::spill(const ir::Value *v, uint64_t offset) {
  const ir::Operation *where = v->def();
  llvm::Type *t =
      value_type(v->type().elem(), *(where ? where : kernel_.body()->ops().front().get()));
  const uint64_t bytes = offset + static_cast<uint64_t>(v->type().num_elements()) *
                                      module_.getDataLayout().getTypeAllocSize(t);
  if (bytes > kMaxShared)
    throw LoweringError((where ? where->loc().str() : kernel_.loc().str()) +
                        ": error: nvptx: " + v->type().str() + " needs " + std::to_string(bytes) +
                        " bytes of shared memory to change layout (at most " +
                        std::to_string(kMaxShared) + ")");
  need_shared(bytes);
  if (offset == 0)
    barrier(); // earlier readers of the buffer (this iteration's or the last's) are done
  llvm::Value *base = b_.CreateInBoundsGEP(b_.getInt8Ty(), scratch_, b_.getInt64(offset));
  const Regs &r = regs(v);
  if (v->type().is_tile()) {
    Coords &c = coords_of(v);
    for (size_t i = 0; i < r.size(); ++i)
      b_.CreateStore(r[i], shared_at(base, t, linear_index(c, static_cast<int64_t>(i))));
  } else {
    b_.CreateStore(r[0], base);
  }
  shared_in_use_ = true;
  return base;
}

void KernelEmitter::lower_source(const ir::Operation &op) {
  const ir::Type &t = op.result()->type();
  const size_t n = t.is_tile() ? registers_per_thread(layout_of(op.result()), t.shape()) : 1;
  auto fill = [&](llvm::Value *v) { values_[op.result()] = Regs(n, v); };
  switch (op.opcode()) {
  case Opcode::ProgramId:
  case Opcode::NumPrograms: {
    static const char *kRegs[2][3] = {{"ctaid.x", "ctaid.y", "ctaid.z"},
                                      {"nctaid.x", "nctaid.y", "nctaid.z"}};
    const int64_t axis = *op.attr_as<int64_t>("axis");
    const bool count = op.opcode() == Opcode::NumPrograms;
    llvm::Value *v = special(kRegs[count][axis]);
    if (axis > 0) // y and z: this launch may be one part of the grid (run())
      v = count ? grid_[axis] : b_.CreateAdd(v, grid_base_[axis], "", true, true);
    return fill(b_.CreateZExtOrTrunc(v, value_type(t.elem(), op)));
  }
  case Opcode::Constant:
  case Opcode::Full:
    return fill(constant(t.elem(), *op.attr("value"), op));
  case Opcode::Constexpr: {
    const ir::ConstexprParam *p = kernel_.find_constexpr(*op.attr_as<std::string>("name"));
    const ir::Attr a = std::visit([](auto v) { return ir::Attr(v); }, p->value);
    return fill(constant(t.elem(), a, op));
  }
  case Opcode::TensorDim:
  case Opcode::TensorStride: {
    const TensorArg &ta = tensors_.at(op.operand(0));
    const int64_t axis = *op.attr_as<int64_t>("axis");
    return fill(op.opcode() == Opcode::TensorDim ? ta.shape[axis] : ta.strides[axis]);
  }
  case Opcode::Arange: {
    const int64_t start = *op.attr_as<int64_t>("start");
    Coords &c = coords_of(op.result());
    Regs out;
    for (size_t r = 0; r < n; ++r)
      out.push_back(
          b_.CreateTrunc(b_.CreateAdd(coord(c, static_cast<int64_t>(r), 0), b_.getInt64(start)),
                         value_type(t.elem(), op)));
    values_[op.result()] = out;
    return;
  }
  default:
    unsupported(op, "unknown source");
  }
}

void KernelEmitter::lower_shape(const ir::Operation &op) {
  const ir::Value *in = op.operand(0), *out = op.result();
  const ir::Type &it = in->type(), &ot = out->type();
  if (ot.is_scalar()) { // reshape of a one-element tile: every register holds the element
    values_[out] = {regs(in).front()};
    return;
  }
  const size_t n = registers_per_thread(layout_of(out), ot.shape());
  if (op.opcode() == Opcode::Splat || it.is_scalar()) {
    values_[out] = Regs(n, scalar(in));
    return;
  }
  // A one-element tile is on every thread (layouts replicate it): broadcasting or reshaping it
  // moves nothing (softmax's row max and sum, m[:, None]).
  if (it.num_elements() == 1 && op.opcode() != Opcode::Transpose) {
    values_[out] = Regs(n, regs(in).front());
    return;
  }
  // out[c] = in[first + map(c)] on row-major indices: reshape and expand_dims keep them,
  // broadcast reads dimension 0 of size-1 dimensions, transpose permutes, slice starts at its
  // offsets.
  std::vector<int64_t> src_stride_of_dim(ot.rank());
  int64_t first = 0; // slice: the operand's index of out[0]
  const std::vector<int64_t> in_strides = row_major_strides(it.shape());
  bool keeps_order = op.opcode() == Opcode::Reshape || op.opcode() == Opcode::ExpandDims;
  if (op.opcode() == Opcode::Broadcast) {
    for (int d = 0; d < ot.rank(); ++d)
      src_stride_of_dim[d] = it.shape()[d] == 1 ? 0 : in_strides[d];
  } else if (op.opcode() == Opcode::Transpose) {
    const auto &perm = *op.attr_as<std::vector<int64_t>>("perm");
    for (int d = 0; d < ot.rank(); ++d)
      src_stride_of_dim[d] = in_strides[perm[d]];
  } else if (op.opcode() == Opcode::Slice) {
    const auto &offsets = *op.attr_as<std::vector<int64_t>>("offsets");
    for (int d = 0; d < ot.rank(); ++d)
      src_stride_of_dim[d] = in_strides[d], first += offsets[d] * in_strides[d];
  }
  if (keeps_order) {
    // The same elements on the same threads and registers: nothing moves (the planning pass
    // marks these nvptx.convert = "none").
    const ElementMap a = element_map(layout_of(in), it.shape());
    const ElementMap b = element_map(layout_of(out), ot.shape());
    if (a.registers == b.registers && a.linear == b.linear) {
      values_[out] = regs(in);
      return;
    }
  }
  llvm::Type *t = value_type(ot.elem(), op);
  llvm::Value *base = spill(in);
  barrier();
  Coords &c = coords_of(out);
  Regs result;
  const std::vector<int64_t> out_strides = row_major_strides(ot.shape());
  for (size_t r = 0; r < n; ++r) {
    llvm::Value *index = b_.getInt64(first);
    for (int d = 0; d < ot.rank(); ++d)
      index = b_.CreateAdd(
          index, b_.CreateMul(coord(c, static_cast<int64_t>(r), d),
                              b_.getInt64(keeps_order ? out_strides[d] : src_stride_of_dim[d])));
    result.push_back(b_.CreateLoad(t, shared_at(base, t, index)));
  }
  values_[out] = result;
}

llvm::Value *KernelEmitter::element_address(const TensorArg &t,
                                            const std::vector<llvm::Value *> &index) {
  llvm::Value *offset = b_.getInt64(0);
  for (size_t d = 0; d < index.size(); ++d)
    offset = b_.CreateAdd(offset, b_.CreateMul(index[d], t.strides[d]));
  return b_.CreateGEP(memory_type(t.elem), t.data, offset);
}

llvm::Value *KernelEmitter::in_bounds(const TensorArg &t, const std::vector<llvm::Value *> &index) {
  llvm::Value *ok = b_.getTrue();
  for (size_t d = 0; d < index.size(); ++d) // unsigned: a negative index is out too
    ok = b_.CreateAnd(ok, b_.CreateICmpULT(index[d], t.shape[d]));
  return ok;
}

void KernelEmitter::lower_load_store(const ir::Operation &op) {
  const bool is_store = op.opcode() == Opcode::Store;
  const TensorArg &ta = tensors_.at(op.operand(0));
  const int rank = static_cast<int>(ta.shape.size());
  std::vector<llvm::Value *> origin;
  for (int d = 0; d < rank; ++d) {
    const ir::Value *o = op.operand(1 + d);
    origin.push_back(ir::is_signed(o->type().elem()) ? b_.CreateSExt(scalar(o), b_.getInt64Ty())
                                                     : b_.CreateZExt(scalar(o), b_.getInt64Ty()));
  }
  const ir::Value *tile = is_store ? op.operand(1 + rank) : op.result();
  const ScalarKind k = ta.elem;
  llvm::Type *mt = memory_type(k);
  if (tile->type().is_scalar()) { // a rank-0 access is not a thing: tiles only
    unsupported(op, "scalar access");
  }
  Coords &c = coords_of(tile);
  const int64_t n = registers_per_thread(c.layout, c.shape);
  llvm::Value *pad = nullptr;
  if (!is_store) {
    const ir::Attr *p = op.attr("padding");
    pad = p ? constant(k, *p, op) : constant(k, ir::Attr(int64_t(0)), op);
  }
  auto index_of = [&](int64_t r) {
    std::vector<llvm::Value *> index;
    for (int d = 0; d < rank; ++d)
      index.push_back(b_.CreateAdd(origin[d], coord(c, r, d)));
    return index;
  };
  // One element, bounds-checked: a padded load or a skipped store outside the tensor.
  auto element = [&](int64_t r) -> llvm::Value * {
    const std::vector<llvm::Value *> index = index_of(r);
    llvm::Value *ok = in_bounds(ta, index);
    llvm::Value *addr = element_address(ta, index);
    if (is_store) {
      llvm::Value *v = to_memory(k, regs(tile)[r]);
      guarded(ok, [&] { b_.CreateStore(v, addr); });
      return nullptr;
    }
    return from_memory(k, guarded_load(ok, mt, addr, to_memory(k, pad)));
  };
  // A thread's consecutive elements along the last dimension move as one access of up to 16
  // bytes when its runs are inside the tensor, unit-stride and aligned (checked at run time; the
  // element path serves the edges). One check covers all of the thread's runs, so that the fast
  // path is one block of independent accesses the hardware can keep in flight together.
  const uint64_t bytes = module_.getDataLayout().getTypeAllocSize(mt);
  const int64_t vec =
      std::min<int64_t>({c.layout.per_thread[rank - 1], 16 / static_cast<int64_t>(bytes), 4});
  const bool vectorize = vec >= 2 && bytes >= 2 && n % vec == 0;
  std::vector<llvm::Value *> addrs;
  llvm::Value *ok = vectorize ? vector_runs(ta, c, origin, vec, n, index_of, addrs) : nullptr;
  // The edge path (rare: tiles across the tensor's end, unaligned or strided tensors): a rolled
  // loop above 32 registers a thread; unrolled, it was most of a big GEMM's code (its 64-register
  // epilogue) and so most of its compile time. At 32 and below it stays unrolled: the rolled
  // loop's smaller register count let twice the blocks share an SM, and the H200 then streamed
  // the kit's copy (16384-element blocks, 512 threads) at 4054-4062 instead of 4133-4143 GB/s.
  auto edge = [&](const Regs *values) -> Regs {
    if (n > 32)
      return rolled_access(ta, c, origin, values, is_store ? nullptr : to_memory(k, pad));
    Regs bits;
    for (int64_t r = 0; r < n; ++r) {
      llvm::Value *v = element(r);
      if (!is_store)
        bits.push_back(to_memory(k, v));
    }
    return bits;
  };
  if (!is_store && vectorize) {
    llvm::BasicBlock *fast = llvm::BasicBlock::Create(ctx_, "load.vector", fn_);
    llvm::BasicBlock *slow = llvm::BasicBlock::Create(ctx_, "load.edge", fn_);
    b_.CreateCondBr(ok, fast, slow);
    b_.SetInsertPoint(slow);
    const Regs slow_bits = edge(nullptr);
    llvm::BasicBlock *slow_end = b_.GetInsertBlock();
    b_.SetInsertPoint(fast);
    load_tile(op, ta, slow_end, addrs, vec, slow_bits);
    return;
  }
  Regs out(is_store ? 0 : n);
  if (!vectorize) {
    for (int64_t g = 0; g < n; ++g) {
      llvm::Value *v = element(g);
      if (!is_store)
        out[g] = v;
    }
    if (!is_store)
      values_[op.result()] = out;
    return;
  }
  llvm::BasicBlock *fast = llvm::BasicBlock::Create(ctx_, "access.vector", fn_);
  llvm::BasicBlock *slow = llvm::BasicBlock::Create(ctx_, "access.edge", fn_);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "access.end", fn_);
  b_.CreateCondBr(ok, fast, slow);
  b_.SetInsertPoint(fast);
  for (int64_t g = 0; g < n; g += vec) {
    Regs bits;
    for (int64_t j = 0; j < vec; ++j)
      bits.push_back(to_memory(k, regs(tile)[g + j]));
    vector_access(true, addrs[g / vec], mt, bits);
  }
  b_.CreateBr(done);
  b_.SetInsertPoint(slow);
  Regs bits; // the rolled loop reads them from its array; unrolled, element() converts its own
  for (int64_t g = 0; n > 32 && g < n; ++g)
    bits.push_back(to_memory(k, regs(tile)[g]));
  edge(&bits);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

std::vector<llvm::Value *> KernelEmitter::register_index(const Coords &c,
                                                         const std::vector<llvm::Value *> &origin,
                                                         llvm::Value *r) {
  const int rank = static_cast<int>(c.shape.size());
  std::string name = "tl_offsets." + c.layout.str();
  for (int64_t s : c.shape)
    name += "x" + std::to_string(s);
  llvm::GlobalVariable *table = module_.getGlobalVariable(name, /*AllowInternal=*/true);
  llvm::Type *i32 = b_.getInt32Ty();
  if (!table) {
    std::vector<llvm::Constant *> items;
    for (const std::vector<int64_t> &off : c.offset)
      for (int d = 0; d < rank; ++d)
        items.push_back(b_.getInt32(static_cast<uint32_t>(off[d])));
    auto *type = llvm::ArrayType::get(i32, items.size());
    table = new llvm::GlobalVariable(module_, type, true, llvm::GlobalValue::InternalLinkage,
                                     llvm::ConstantArray::get(type, items), name, nullptr,
                                     llvm::GlobalValue::NotThreadLocal, 4); // .const
  }
  std::vector<llvm::Value *> index;
  for (int d = 0; d < rank; ++d) {
    llvm::Value *at = b_.CreateAdd(b_.CreateMul(r, b_.getInt64(rank)), b_.getInt64(d));
    llvm::Value *off =
        b_.CreateZExt(b_.CreateLoad(i32, b_.CreateInBoundsGEP(i32, table, at)), b_.getInt64Ty());
    llvm::Value *v = b_.CreateAnd(b_.CreateAdd(c.base[d], off), b_.getInt64(c.shape[d] - 1));
    index.push_back(b_.CreateAdd(origin[d], v));
  }
  return index;
}

KernelEmitter::Regs KernelEmitter::rolled_access(const TensorArg &ta, const Coords &c,
                                                 const std::vector<llvm::Value *> &origin,
                                                 const Regs *values, llvm::Value *pad) {
  const ScalarKind k = ta.elem;
  llvm::Type *mt = memory_type(k);
  const int64_t n = static_cast<int64_t>(c.offset.size());
  // Four accesses a trip: loads issue back to back (in flight together).
  const int64_t group = std::min<int64_t>(n, 4);
  Builder entry = at_entry();
  llvm::AllocaInst *local = entry.CreateAlloca(llvm::ArrayType::get(mt, static_cast<uint64_t>(n)));
  local->setAlignment(llvm::Align(16)); // 16-byte local accesses
  auto slot = [&](llvm::Value *r) { return b_.CreateInBoundsGEP(mt, local, {r}); };
  if (values)
    for (int64_t r = 0; r < n; ++r)
      b_.CreateStore((*values)[r], slot(b_.getInt64(r)));
  loop(
      b_.getInt64(n / group), {},
      [&](llvm::Value *i, const Regs &) -> Regs {
        Regs loaded;
        std::vector<llvm::Value *> at;
        for (int64_t u = 0; u < group; ++u) {
          llvm::Value *r = b_.CreateAdd(b_.CreateMul(i, b_.getInt64(group)), b_.getInt64(u));
          const std::vector<llvm::Value *> index = register_index(c, origin, r);
          llvm::Value *ok = in_bounds(ta, index), *addr = element_address(ta, index);
          at.push_back(r);
          if (values) {
            llvm::Value *v = b_.CreateLoad(mt, slot(r));
            guarded(ok, [&] { b_.CreateStore(v, addr); });
          } else {
            loaded.push_back(guarded_load(ok, mt, addr, pad));
          }
        }
        for (size_t u = 0; u < loaded.size(); ++u)
          b_.CreateStore(loaded[u], slot(at[u]));
        return {};
      },
      /*rolled=*/true);
  Regs out;
  if (!values)
    for (int64_t r = 0; r < n; ++r)
      out.push_back(b_.CreateLoad(mt, slot(b_.getInt64(r))));
  return out;
}

llvm::Value *
KernelEmitter::vector_runs(const TensorArg &ta, const Coords &c,
                           const std::vector<llvm::Value *> &origin, int64_t vec, int64_t n,
                           const std::function<std::vector<llvm::Value *>(int64_t)> &index_of,
                           std::vector<llvm::Value *> &addrs) {
  const int rank = static_cast<int>(ta.shape.size()), last = rank - 1;
  const uint64_t bytes = module_.getDataLayout().getTypeAllocSize(memory_type(ta.elem));
  const int64_t run_bytes = vec * static_cast<int64_t>(bytes);
  llvm::Value *ok = b_.CreateICmpEQ(ta.strides[last], b_.getInt64(1));
  for (int64_t g = 0; g < n; g += vec)
    addrs.push_back(element_address(ta, index_of(g)));
  // Where no coordinate wraps (the layout does not replicate the tile), a thread's coordinates
  // along d lie between its base plus the smallest and plus the largest register offset: two
  // bounds tests a dimension and one alignment test cover every run. A test per run (the
  // fallback, for replicated layouts) is ~8 instructions each: on a 128 x 128 tile, most of the
  // kernel's straight-line code and so of its compile time.
  std::vector<int64_t> lo(rank, INT64_MAX), hi(rank, INT64_MIN);
  bool runs_aligned_alike = true;
  for (int64_t r = 0; r < n; ++r)
    for (int d = 0; d < rank; ++d) {
      lo[d] = std::min(lo[d], c.offset[r][d]);
      hi[d] = std::max(hi[d], c.offset[r][d]);
      if (d == last && r % vec == 0)
        runs_aligned_alike &= (c.offset[r][d] - c.offset[0][d]) % vec == 0;
    }
  bool wraps = !runs_aligned_alike || n / vec < 4; // (few runs: their own tests are as short)
  for (int d = 0; d < rank; ++d)
    wraps |= lo[d] < 0 || c.max_base[d] + hi[d] >= c.shape[d];
  if (!wraps) {
    for (int d = 0; d < rank; ++d) {
      // lo and hi span every register, the last element of the last run included.
      llvm::Value *at = b_.CreateAdd(origin[d], c.base[d]);
      ok = b_.CreateAnd(ok, b_.CreateICmpULT(b_.CreateAdd(at, b_.getInt64(lo[d])), ta.shape[d]));
      ok = b_.CreateAnd(ok, b_.CreateICmpULT(b_.CreateAdd(at, b_.getInt64(hi[d])), ta.shape[d]));
      if (d < last) // rows start on run boundaries
        ok = b_.CreateAnd(
            ok, b_.CreateICmpEQ(b_.CreateAnd(ta.strides[d], b_.getInt64(vec - 1)), b_.getInt64(0)));
    }
    llvm::Value *first =
        b_.CreateAdd(b_.CreateAdd(origin[last], c.base[last]), b_.getInt64(c.offset[0][last]));
    ok = b_.CreateAnd(ok,
                      b_.CreateICmpEQ(b_.CreateAnd(first, b_.getInt64(vec - 1)), b_.getInt64(0)));
    llvm::Value *data = b_.CreatePtrToInt(ta.data, b_.getInt64Ty());
    return b_.CreateAnd(
        ok, b_.CreateICmpEQ(b_.CreateAnd(data, b_.getInt64(run_bytes - 1)), b_.getInt64(0)));
  }
  for (int64_t g = 0; g < n; g += vec) {
    const std::vector<llvm::Value *> first = index_of(g);
    ok = b_.CreateAnd(ok, in_bounds(ta, first));
    ok = b_.CreateAnd(
        ok, b_.CreateICmpULT(b_.CreateAdd(first[last], b_.getInt64(vec - 1)), ta.shape[last]));
    llvm::Value *misaligned = b_.CreateAnd(b_.CreatePtrToInt(addrs[g / vec], b_.getInt64Ty()),
                                           b_.getInt64(run_bytes - 1));
    ok = b_.CreateAnd(ok, b_.CreateICmpEQ(misaligned, b_.getInt64(0)));
  }
  return ok;
}

void KernelEmitter::load_tile(const ir::Operation &op, const TensorArg &ta,
                              llvm::BasicBlock *slow_end, const std::vector<llvm::Value *> &addrs,
                              int64_t vec, const Regs &slow_bits) {
  // The fast path (the insertion point): when every run of `vec` elements is inside the tensor,
  // unit-stride and aligned (one test for the whole tile), the vector loads issue back to back
  // with nothing between them that waits for one (a branch per run would put each load's first
  // use, the phi or a conversion, before the next load: one full memory latency per run).
  const ScalarKind k = ta.elem;
  llvm::Type *mt = memory_type(k);
  const int64_t n = static_cast<int64_t>(regs_count(op.result()));
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "load.end", fn_);
  Regs fast_bits;
  for (llvm::Value *addr : addrs)
    for (llvm::Value *bits : vector_access(false, addr, mt, Regs(vec)))
      fast_bits.push_back(bits);
  llvm::BasicBlock *fast_end = b_.GetInsertBlock();
  b_.CreateBr(done);
  b_.SetInsertPoint(slow_end);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  Regs bits, out;
  for (int64_t r = 0; r < n; ++r) {
    llvm::PHINode *phi = b_.CreatePHI(mt, 2);
    phi->addIncoming(fast_bits[r], fast_end);
    phi->addIncoming(slow_bits[r], slow_end);
    bits.push_back(phi);
  }
  for (llvm::Value *phi : bits) // after every phi (phis head their block)
    out.push_back(from_memory(k, phi));
  load_bits_[op.result()] = bits;
  values_[op.result()] = out;
}

KernelEmitter::Regs KernelEmitter::vector_access(bool is_store, llvm::Value *addr, llvm::Type *t,
                                                 const Regs &values) {
  // Inline PTX, so that LLVM cannot split the access back into elements (it scalarizes vector
  // loads whose uses are all extracts); the memory clobber keeps it ordered with other accesses.
  const unsigned bits = t->getPrimitiveSizeInBits();
  const std::string type = t->isFloatTy()    ? "f32"
                           : t->isDoubleTy() ? "f64"
                                             : "b" + std::to_string(bits);
  const char reg = t->isFloatTy()    ? 'f'
                   : t->isDoubleTy() ? 'd'
                   : bits == 64      ? 'l'
                   : bits == 32      ? 'r'
                                     : 'h';
  const size_t n = values.size();
  std::string list = "{";
  for (size_t j = 0; j < n; ++j)
    list += (j ? ", $" : "$") + std::to_string(is_store ? j + 1 : j);
  list += "}";
  const std::string v = "v" + std::to_string(n) + "." + type;
  std::string constraints;
  std::vector<llvm::Type *> in_types;
  llvm::Type *ret = b_.getVoidTy();
  if (is_store) {
    constraints = "l";
    in_types.push_back(addr->getType());
    for (size_t j = 0; j < n; ++j) {
      constraints += std::string(",") + reg;
      in_types.push_back(t);
    }
  } else {
    for (size_t j = 0; j < n; ++j)
      constraints += std::string(j ? "," : "") + "=" + reg;
    constraints += ",l";
    in_types.push_back(addr->getType());
    ret = llvm::StructType::get(ctx_, std::vector<llvm::Type *>(n, t));
  }
  constraints += ",~{memory}";
  const std::string text = is_store
                               ? "st.global." + v + " [$0], " + list + ";"
                               : "ld.global." + v + " " + list + ", [$" + std::to_string(n) + "];";
  auto *asm_fn =
      llvm::InlineAsm::get(llvm::FunctionType::get(ret, in_types, false), text, constraints,
                           /*hasSideEffects=*/true);
  std::vector<llvm::Value *> args = {addr};
  if (is_store)
    args.insert(args.end(), values.begin(), values.end());
  llvm::Value *r = b_.CreateCall(asm_fn, args);
  Regs out;
  if (!is_store)
    for (size_t j = 0; j < n; ++j)
      out.push_back(b_.CreateExtractValue(r, static_cast<unsigned>(j)));
  return out;
}

void KernelEmitter::lower_indexed(const ir::Operation &op) {
  const TensorArg &ta = tensors_.at(op.operand(0));
  const int rank = static_cast<int>(ta.shape.size());
  const bool has_value = op.opcode() != Opcode::Gather;
  const size_t base_count = 1 + rank + (has_value ? 1 : 0);
  const ir::Value *mask = op.num_operands() > base_count ? op.operand(base_count) : nullptr;
  const ir::Value *lanes = op.operand(1);
  const ScalarKind k = ta.elem;
  llvm::Type *mt = memory_type(k);
  const size_t n = regs(lanes).size();
  Regs out;
  llvm::Value *other = nullptr;
  if (!has_value) {
    const ir::Attr *o = op.attr("other");
    other = o ? constant(k, *o, op) : constant(k, ir::Attr(int64_t(0)), op);
  }
  // Index, value and mask tiles in the first index tile's layout.
  std::vector<Regs> in;
  for (size_t i = 1; i < op.num_operands(); ++i)
    in.push_back(regs_in(op.operand(static_cast<unsigned>(i)), layout_of(lanes)));
  llvm::Value *outside = b_.getFalse(); // an unmasked lane of this thread outside the tensor
  for (size_t r = 0; r < n; ++r) {
    std::vector<llvm::Value *> index;
    for (int d = 0; d < rank; ++d) {
      const ir::Value *iv = op.operand(1 + d);
      llvm::Value *x = in[d][r];
      index.push_back(ir::is_signed(iv->type().elem()) ? b_.CreateSExt(x, b_.getInt64Ty())
                                                       : b_.CreateZExt(x, b_.getInt64Ty()));
    }
    llvm::Value *active = mask ? in[base_count - 1][r] : b_.getTrue();
    llvm::Value *ok = in_bounds(ta, index);
    outside = b_.CreateOr(outside, b_.CreateAnd(active, b_.CreateNot(ok)));
    llvm::Value *go = b_.CreateAnd(active, ok);
    llvm::Value *addr = element_address(ta, index);
    if (op.opcode() == Opcode::Gather) {
      out.push_back(from_memory(k, guarded_load(go, mt, addr, to_memory(k, other))));
      continue;
    }
    llvm::Value *v = in[rank][r];
    if (op.opcode() == Opcode::Scatter) {
      // Replicated layouts hold an element on several threads: they write the same value.
      guarded(go, [&] { b_.CreateStore(to_memory(k, v), addr); });
      continue;
    }
    // atomic_add: only the first thread holding an element adds it.
    if (!ir::is_float(k) && k != ScalarKind::I32 && k != ScalarKind::U32 && k != ScalarKind::I64)
      unsupported(op, "atomic_add on " + std::string(ir::scalar_name(k)) + " is not supported yet");
    if (k == ScalarKind::F16 || k == ScalarKind::BF16)
      unsupported(op, "atomic_add on " + std::string(ir::scalar_name(k)) + " is not supported yet");
    Coords &c = coords_of(lanes);
    // Warps past an mma layout's wm x wn repeat the first ones: not owners.
    llvm::Value *owner =
        c.layout.mma ? b_.CreateICmpULT(warp_, b_.getInt64(c.layout.num_warps())) : b_.getTrue();
    // A thread owns its element when no lower thread id holds the same one: with wrap-around
    // replication, that is when its unwrapped coordinates are inside the tile.
    for (size_t d = 0; d < c.shape.size(); ++d)
      owner =
          b_.CreateAnd(owner, b_.CreateICmpULT(b_.CreateAdd(c.base[d], b_.getInt64(c.offset[r][d])),
                                               b_.getInt64(c.shape[d])));
    guarded(b_.CreateAnd(go, owner), [&] {
      const auto rmw = ir::is_float(k) ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add;
      b_.CreateAtomicRMW(rmw, addr, v, llvm::MaybeAlign(), llvm::AtomicOrdering::Monotonic);
    });
    out.push_back(v);
  }
  record_error(op, "an unmasked lane's index is outside the tensor", outside);
  if (op.opcode() == Opcode::Gather)
    values_[op.result()] = out;
  else if (op.opcode() == Opcode::AtomicAdd && op.num_results())
    values_[op.result()] = out;
}

llvm::Value *KernelEmitter::shuffle(llvm::Value *v, llvm::Intrinsic::ID id, int64_t amount,
                                    int32_t c) {
  // shfl.sync moves 32 bits: wider values go in halves, narrower ones widened.
  llvm::Type *t = v->getType();
  const unsigned bits = t->getPrimitiveSizeInBits();
  auto shfl32 = [&](llvm::Value *x) {
    return b_.CreateIntrinsic(
        id, {}, {b_.getInt32(-1), x, b_.getInt32(static_cast<int32_t>(amount)), b_.getInt32(c)});
  };
  if (bits == 64) {
    llvm::Value *x = b_.CreateBitCast(v, b_.getInt64Ty());
    llvm::Value *lo = shfl32(b_.CreateTrunc(x, b_.getInt32Ty()));
    llvm::Value *hi = shfl32(b_.CreateTrunc(b_.CreateLShr(x, 32), b_.getInt32Ty()));
    llvm::Value *r = b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()),
                                 b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
    return b_.CreateBitCast(r, t);
  }
  if (t->isFloatTy())
    return b_.CreateBitCast(shfl32(b_.CreateBitCast(v, b_.getInt32Ty())), t);
  return b_.CreateTrunc(shfl32(b_.CreateZExt(v, b_.getInt32Ty())), t);
}

llvm::Value *KernelEmitter::shuffle_xor(llvm::Value *v, int64_t mask) {
  return shuffle(v, llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, mask, 31);
}

llvm::Value *KernelEmitter::shuffle_up(llvm::Value *v, int64_t delta) {
  // c = 0: the whole warp one segment; a lane below `delta` gets its own value back.
  return shuffle(v, llvm::Intrinsic::nvvm_shfl_sync_up_i32, delta, 0);
}

bool KernelEmitter::reduce_in_registers(const ir::Operation &op) {
  // sum, max, min and argmax of a tile along one axis: each thread combines its own elements,
  // then the lanes of a warp by butterfly shuffles, then the warps through shared memory; only
  // the distinct copies of a replicated layout take part. A float sum may associate in any order
  // (ir.h); max and min are exact in any order; argmax carries (value, index) pairs whose
  // combination picks the first maximal index in any order (argmax_wins), where a serial scan
  // of the tile in shared memory by every thread had been 0.02 of the H200's bandwidth.
  const ir::Value *in = op.operand(0);
  const ir::Type &it = in->type(), &ot = op.result()->type();
  const int64_t axis = *op.attr_as<int64_t>("axis");
  const std::string &kind = *op.attr_as<std::string>("kind");
  if (!it.is_tile() || layout_of(in).mma)
    return false; // mma layouts take the shared-memory path
  const bool arg = kind == "argmax";
  const ScalarKind k = it.elem();
  llvm::Type *t = value_type(k, op);
  Coords &c = coords_of(in);
  const Layout &l = c.layout;
  const int64_t size = it.shape()[axis];
  // Folds (ov, oi) into (v, i): the op's combination, or argmax's pick of a pair.
  auto fold = [&](llvm::Value *&v, llvm::Value *&i, llvm::Value *ov, llvm::Value *oi) {
    if (!arg) {
      v = combine(kind, k, v, ov);
      return;
    }
    llvm::Value *wins = argmax_wins(k, v, i, ov, oi);
    v = b_.CreateSelect(wins, ov, v);
    i = b_.CreateSelect(wins, oi, i);
  };
  const int64_t pt = l.per_thread[axis];
  const int64_t lanes = std::min<int64_t>(l.lanes[axis], std::max<int64_t>(1, size / pt));
  const int64_t warps =
      std::min<int64_t>(l.warps[axis], std::max<int64_t>(1, size / (pt * l.lanes[axis])));
  // 1. Registers with the same coordinates off the axis, in ascending axis order.
  std::map<std::vector<int64_t>, std::vector<std::pair<int64_t, int64_t>>> groups;
  const Regs &x = regs(in);
  for (size_t r = 0; r < x.size(); ++r) {
    std::vector<int64_t> key = c.offset[r];
    const int64_t along = key[axis];
    key.erase(key.begin() + axis);
    groups[key].push_back({along, static_cast<int64_t>(r)});
  }
  std::vector<std::vector<int64_t>> keys;
  Regs partial, index; // index: argmax's, i32 along the axis
  for (auto &[key, members] : groups) {
    std::sort(members.begin(), members.end());
    // Pairwise: a thread's sum of m elements errs by log2(m) roundings, not m.
    Regs level, where;
    for (const auto &member : members) {
      level.push_back(x[member.second]);
      if (arg) // a replicated layout's coordinates wrap into the tile
        where.push_back(
            b_.CreateTrunc(b_.CreateAnd(b_.CreateAdd(c.base[axis], b_.getInt64(member.first)),
                                        b_.getInt64(size - 1)),
                           b_.getInt32Ty()));
      else
        where.push_back(nullptr);
    }
    while (level.size() > 1) {
      Regs next, next_where;
      for (size_t i = 0; i + 1 < level.size(); i += 2) {
        fold(level[i], where[i], level[i + 1], where[i + 1]);
        next.push_back(level[i]);
        next_where.push_back(where[i]);
      }
      if (level.size() % 2) {
        next.push_back(level.back());
        next_where.push_back(where.back());
      }
      level = next;
      where = next_where;
    }
    keys.push_back(key);
    partial.push_back(level.front());
    index.push_back(where.front());
  }
  // 2. Lanes along the axis: their bits in the lane id.
  int64_t lane_stride = 1;
  for (int64_t d : l.order) {
    if (d == axis)
      break;
    lane_stride *= l.lanes[d];
  }
  for (int64_t m = 1; m < lanes; m *= 2)
    for (size_t i = 0; i < partial.size(); ++i)
      fold(partial[i], index[i], shuffle_xor(partial[i], m * lane_stride),
           arg ? shuffle_xor(index[i], m * lane_stride) : nullptr);
  // The output coordinate of each partial, as a linear index of the result.
  const std::vector<int64_t> out_shape = ot.is_tile() ? ot.shape() : std::vector<int64_t>{};
  auto out_index = [&](size_t i) -> llvm::Value * {
    llvm::Value *index = b_.getInt64(0);
    for (int d = 0, o = 0; d < it.rank(); ++d) {
      if (d == axis)
        continue;
      llvm::Value *cd = b_.CreateAnd(b_.CreateAdd(c.base[d], b_.getInt64(keys[i][o])),
                                     b_.getInt64(it.shape()[d] - 1));
      index = b_.CreateAdd(b_.CreateMul(index, b_.getInt64(out_shape[o])), cd);
      ++o;
    }
    return index;
  };
  const int64_t out_count = ot.is_tile() ? ot.num_elements() : 1;
  const uint64_t elem_bytes = module_.getDataLayout().getTypeAllocSize(t);
  // 3. Warps along the axis: partials through shared memory, combined in warp order.
  if (warps > 1) {
    // argmax's indices after the values, 8-byte aligned
    const uint64_t values_bytes =
        (static_cast<uint64_t>(warps * out_count) * elem_bytes + 7) & ~uint64_t(7);
    const uint64_t bytes = values_bytes + (arg ? static_cast<uint64_t>(warps * out_count) * 4 : 0);
    if (bytes > kMaxShared)
      return false;
    need_shared(bytes);
    barrier();
    llvm::Value *base = b_.CreateInBoundsGEP(b_.getInt8Ty(), scratch_, b_.getInt64(0));
    llvm::Value *index_base =
        b_.CreateInBoundsGEP(b_.getInt8Ty(), scratch_, b_.getInt64(values_bytes));
    llvm::Value *slot = b_.CreateUDiv(b_.CreateAnd(c.base[axis], b_.getInt64(size - 1)),
                                      b_.getInt64(pt * l.lanes[axis]));
    for (size_t i = 0; i < partial.size(); ++i) {
      llvm::Value *at = b_.CreateAdd(b_.CreateMul(slot, b_.getInt64(out_count)), out_index(i));
      b_.CreateStore(partial[i], shared_at(base, t, at));
      if (arg)
        b_.CreateStore(index[i], shared_at(index_base, b_.getInt32Ty(), at));
    }
    barrier();
    for (size_t i = 0; i < partial.size(); ++i) {
      llvm::Value *first = out_index(i);
      partial[i] = b_.CreateLoad(t, shared_at(base, t, first));
      if (arg)
        index[i] = b_.CreateLoad(b_.getInt32Ty(), shared_at(index_base, b_.getInt32Ty(), first));
      for (int64_t w = 1; w < warps; ++w) {
        llvm::Value *at = b_.CreateAdd(first, b_.getInt64(w * out_count));
        fold(partial[i], index[i], b_.CreateLoad(t, shared_at(base, t, at)),
             arg ? b_.CreateLoad(b_.getInt32Ty(), shared_at(index_base, b_.getInt32Ty(), at))
                 : nullptr);
      }
    }
    shared_in_use_ = true;
  }
  // From here on the result's values: argmax's indices.
  if (arg) {
    partial = index;
    t = b_.getInt32Ty();
  }
  if (!ot.is_tile()) {
    values_[op.result()] = {partial.front()};
    return true;
  }
  // A one-element result (a whole row's max or sum): every thread holds it already (lanes by the
  // butterfly, warps by step 3), and every register of its layout is that element.
  if (out_count == 1 && partial.size() == 1) {
    values_[op.result()] =
        Regs(registers_per_thread(layout_of(op.result()), ot.shape()), partial.front());
    return true;
  }
  // 4. Into the result's layout: through shared memory by output index.
  const uint64_t bytes = static_cast<uint64_t>(out_count) * (arg ? 4 : elem_bytes);
  need_shared(bytes);
  barrier();
  llvm::Value *base = b_.CreateInBoundsGEP(b_.getInt8Ty(), scratch_, b_.getInt64(0));
  for (size_t i = 0; i < partial.size(); ++i)
    b_.CreateStore(partial[i], shared_at(base, t, out_index(i)));
  barrier();
  Coords &rc = coords_of(op.result());
  Regs out;
  for (size_t r = 0; r < rc.offset.size(); ++r)
    out.push_back(b_.CreateLoad(t, shared_at(base, t, linear_index(rc, static_cast<int64_t>(r)))));
  values_[op.result()] = out;
  shared_in_use_ = true;
  return true;
}

llvm::Value *KernelEmitter::argmax_wins(ScalarKind k, llvm::Value *v, llvm::Value *i,
                                        llvm::Value *ov, llvm::Value *oi) {
  // (ov, oi) replaces (v, i) when it is larger, or as large with a smaller index; NaN is the
  // largest value (ir.h: the first NaN's index), so the order of combination does not matter.
  llvm::Value *earlier = b_.CreateICmpSLT(oi, i);
  if (!ir::is_float(k)) {
    const bool s = ir::is_signed(k);
    return b_.CreateOr(s ? b_.CreateICmpSGT(ov, v) : b_.CreateICmpUGT(ov, v),
                       b_.CreateAnd(b_.CreateICmpEQ(ov, v), earlier));
  }
  llvm::Value *v_nan = b_.CreateFCmpUNO(v, v), *o_nan = b_.CreateFCmpUNO(ov, ov);
  llvm::Value *larger = b_.CreateOr(b_.CreateAnd(o_nan, b_.CreateNot(v_nan)),
                                    b_.CreateFCmpOGT(ov, v)); // OGT: false with a NaN
  llvm::Value *tie = b_.CreateOr(b_.CreateFCmpOEQ(ov, v), b_.CreateAnd(o_nan, v_nan));
  return b_.CreateOr(larger, b_.CreateAnd(tie, earlier));
}

void KernelEmitter::lower_reduce(const ir::Operation &op) {
  if (reduce_in_registers(op))
    return;
  const ir::Value *in = op.operand(0);
  const ir::Type &it = in->type(), &ot = op.result()->type();
  const int64_t axis = *op.attr_as<int64_t>("axis");
  const std::string &kind = *op.attr_as<std::string>("kind");
  const ScalarKind k = it.elem();
  llvm::Type *t = value_type(k, op);
  llvm::Value *base = spill(in);
  barrier();
  const std::vector<int64_t> strides = row_major_strides(it.shape());
  const int64_t len = it.shape()[axis];
  // Each result register: its coordinates in the input with the axis at 0, then a loop along it.
  const size_t n = ot.is_tile() ? registers_per_thread(layout_of(op.result()), ot.shape()) : 1;
  Regs out;
  for (size_t r = 0; r < n; ++r) {
    llvm::Value *start = b_.getInt64(0);
    if (ot.is_tile()) {
      Coords &c = coords_of(op.result());
      for (int d = 0, o = 0; d < it.rank(); ++d)
        if (d != axis)
          start = b_.CreateAdd(
              start, b_.CreateMul(coord(c, static_cast<int64_t>(r), o++), b_.getInt64(strides[d])));
    }
    llvm::Value *first = b_.CreateLoad(t, shared_at(base, t, start));
    auto element = [&](llvm::Value *kk) {
      return b_.CreateLoad(
          t, shared_at(base, t, b_.CreateAdd(start, b_.CreateMul(kk, b_.getInt64(strides[axis])))));
    };
    if (kind == "argmax") {
      Regs init = {first, b_.getInt64(0)};
      Regs res = loop(b_.getInt64(len - 1), init, [&](llvm::Value *i, const Regs &acc) -> Regs {
        llvm::Value *kk = b_.CreateAdd(i, b_.getInt64(1));
        llvm::Value *x = element(kk);
        llvm::Value *greater;
        if (ir::is_float(k))
          greater = b_.CreateAnd(b_.CreateFCmpORD(acc[0], acc[0]),
                                 b_.CreateOr(b_.CreateFCmpUNO(x, x), b_.CreateFCmpOGT(x, acc[0])));
        else
          greater = ir::is_signed(k) ? b_.CreateICmpSGT(x, acc[0]) : b_.CreateICmpUGT(x, acc[0]);
        return {b_.CreateSelect(greater, x, acc[0]), b_.CreateSelect(greater, kk, acc[1])};
      });
      out.push_back(b_.CreateTrunc(res[1], b_.getInt32Ty()));
      continue;
    }
    Regs res = loop(b_.getInt64(len - 1), {first}, [&](llvm::Value *i, const Regs &acc) -> Regs {
      return {combine(kind, k, acc[0], element(b_.CreateAdd(i, b_.getInt64(1))))};
    });
    out.push_back(res[0]);
  }
  values_[op.result()] = out;
}

void KernelEmitter::lower_scan(const ir::Operation &op) {
  const ir::Value *in = op.operand(0);
  const ir::Type &it = in->type();
  const int64_t axis = *op.attr_as<int64_t>("axis");
  const std::string &kind = *op.attr_as<std::string>("kind");
  const ScalarKind k = it.elem();
  llvm::Type *t = value_type(k, op);
  // The tile goes to shared memory, where each line along the axis is split into `parts`
  // contiguous chunks, one a thread: where the lines leave threads idle, a line gets several
  // (a chunk of at least one element). Each thread scans its chunk in place; the chunks'
  // totals are scanned across the threads (shuffles within a warp, then the warps' totals
  // through shared memory); each chunk then adds the totals before it. A float sum in exact
  // order (ir.h) keeps one thread a line, the ascending chain. (One thread a line for every
  // scan left a 1024-element row's depth at 1024 adds: cumsum along rows 0.05 of the H200's
  // triad before tl.ops split rows into segments, 0.49 after.)
  const int64_t len = it.shape()[axis];
  const int64_t inner = row_major_strides(it.shape())[axis];
  const int64_t lines = it.num_elements() / len;
  const int64_t threads = 32 * static_cast<int64_t>(num_warps_);
  const std::string *order = op.attr_as<std::string>("order");
  const bool exact = ir::is_float(k) && kind == "sum" && order && *order == "exact";
  int64_t parts = 1;
  if (!exact)
    while (2 * parts * lines <= threads && 2 * parts <= len)
      parts *= 2;
  // lines * parts == threads, or each chunk is one element (all are powers of two): so a chunk
  // of more than one element always has a thread of its own.
  const int64_t chunk = len / parts;
  // Along the last axis, one slot of padding after each chunk, so that the threads' i-th
  // elements (at tid (chunk + 1) + i) fall in distinct banks; lines along an outer axis are
  // adjacent already (thread t's step i at t + i inner).
  const bool pad = inner == 1 && chunk > 1;
  auto slot = [&](llvm::Value *index) {
    return pad ? b_.CreateAdd(index, b_.CreateUDiv(index, b_.getInt64(chunk))) : index;
  };
  const uint64_t elem_bytes = module_.getDataLayout().getTypeAllocSize(t);
  const uint64_t tile_bytes =
      static_cast<uint64_t>(it.num_elements() + (pad ? it.num_elements() / chunk : 0)) * elem_bytes;
  const uint64_t totals_at = (tile_bytes + 7) & ~uint64_t(7); // the warps' totals after it
  const uint64_t bytes =
      parts > 32 ? totals_at + static_cast<uint64_t>(num_warps_) * elem_bytes : tile_bytes;
  if (bytes > kMaxShared)
    throw LoweringError(op.loc().str() + ": error: nvptx: scan of " + it.str() + " needs " +
                        std::to_string(bytes) + " bytes of shared memory (at most " +
                        std::to_string(kMaxShared) + ")");
  need_shared(bytes);
  barrier(); // earlier readers of the buffer are done
  llvm::Value *base = b_.CreateInBoundsGEP(b_.getInt8Ty(), scratch_, b_.getInt64(0));
  const Regs &src = regs(in);
  Coords &ci = coords_of(in);
  for (size_t r = 0; r < src.size(); ++r)
    b_.CreateStore(src[r], shared_at(base, t, slot(linear_index(ci, static_cast<int64_t>(r)))));
  shared_in_use_ = true;
  barrier();
  // Element i of line `line`'s chunk `part`, as a shared-memory index.
  auto element = [&](llvm::Value *line, llvm::Value *part, llvm::Value *i) {
    llvm::Value *start = b_.CreateAdd(
        b_.CreateMul(b_.CreateUDiv(line, b_.getInt64(inner)), b_.getInt64(len * inner)),
        b_.CreateURem(line, b_.getInt64(inner)));
    llvm::Value *along = b_.CreateAdd(b_.CreateMul(part, b_.getInt64(chunk)), i);
    return slot(b_.CreateAdd(start, b_.CreateMul(along, b_.getInt64(inner))));
  };
  // Scans a chunk in place (its first element stays); returns its total.
  auto scan_chunk = [&](llvm::Value *line, llvm::Value *part) {
    llvm::Value *first = b_.CreateLoad(t, shared_at(base, t, element(line, part, b_.getInt64(0))));
    return loop(b_.getInt64(chunk - 1), {first},
                [&](llvm::Value *i, const Regs &acc) -> Regs {
                  llvm::Value *at =
                      shared_at(base, t, element(line, part, b_.CreateAdd(i, b_.getInt64(1))));
                  llvm::Value *sum = combine(kind, k, acc[0], b_.CreateLoad(t, at));
                  b_.CreateStore(sum, at);
                  return {sum};
                })
        .front();
  };
  if (parts == 1) {
    for (int64_t first_line = 0; first_line < lines; first_line += threads) {
      llvm::Value *line = b_.CreateAdd(tid_, b_.getInt64(first_line));
      guarded(b_.CreateICmpULT(line, b_.getInt64(lines)),
              [&] { scan_chunk(line, b_.getInt64(0)); });
    }
  } else {
    // Threads past lines * parts (only where chunks are single elements) compute a copy of a
    // line's prefixes and store nothing.
    llvm::Value *active = b_.CreateICmpULT(tid_, b_.getInt64(lines * parts));
    llvm::Value *line =
        b_.CreateAnd(b_.CreateUDiv(tid_, b_.getInt64(parts)), b_.getInt64(lines - 1));
    llvm::Value *part = b_.CreateAnd(tid_, b_.getInt64(parts - 1));
    llvm::Value *total = scan_chunk(line, part);
    // The chunks before this one within the warp: an inclusive scan of the totals by shuffles
    // (Kogge-Stone: log2 steps), then the previous lane's.
    const int64_t group = std::min<int64_t>(parts, 32);
    llvm::Value *lane_part = b_.CreateAnd(lane_, b_.getInt64(group - 1));
    llvm::Value *running = total;
    for (int64_t d = 1; d < group; d *= 2) {
      llvm::Value *earlier = shuffle_up(running, d);
      running = b_.CreateSelect(b_.CreateICmpUGE(lane_part, b_.getInt64(d)),
                                combine(kind, k, earlier, running), running);
    }
    llvm::Value *before = shuffle_up(running, 1);
    llvm::Value *has_before = b_.CreateICmpUGE(lane_part, b_.getInt64(1));
    if (parts > 32) {
      // The line's warps before this one: their totals (each warp's last lane) in order.
      llvm::Value *totals = b_.CreateInBoundsGEP(b_.getInt8Ty(), scratch_, b_.getInt64(totals_at));
      guarded(b_.CreateICmpEQ(lane_, b_.getInt64(31)),
              [&] { b_.CreateStore(running, shared_at(totals, t, warp_)); });
      barrier();
      llvm::Value *warp_part = b_.CreateAnd(warp_, b_.getInt64(parts / 32 - 1));
      llvm::Value *first_warp = b_.CreateSub(warp_, warp_part);
      llvm::Value *first = b_.CreateLoad(t, shared_at(totals, t, first_warp));
      llvm::Value *warps_before =
          loop(b_.CreateSub(warp_part, b_.getInt64(1)), {first},
               [&](llvm::Value *i, const Regs &acc) -> Regs {
                 llvm::Value *w = b_.CreateAdd(first_warp, b_.CreateAdd(i, b_.getInt64(1)));
                 return {combine(kind, k, acc[0], b_.CreateLoad(t, shared_at(totals, t, w)))};
               })
              .front();
      llvm::Value *has_warps = b_.CreateICmpUGE(warp_part, b_.getInt64(1));
      before = b_.CreateSelect(
          has_warps,
          b_.CreateSelect(has_before, combine(kind, k, warps_before, before), warps_before),
          before);
      has_before = b_.CreateOr(has_before, has_warps);
    }
    guarded(b_.CreateAnd(active, has_before), [&] {
      loop(b_.getInt64(chunk), {}, [&](llvm::Value *i, const Regs &) -> Regs {
        llvm::Value *at = shared_at(base, t, element(line, part, i));
        b_.CreateStore(combine(kind, k, before, b_.CreateLoad(t, at)), at);
        return {};
      });
    });
  }
  barrier();
  Coords &c = coords_of(op.result());
  const size_t n = registers_per_thread(c.layout, c.shape);
  Regs out;
  for (size_t r = 0; r < n; ++r)
    out.push_back(
        b_.CreateLoad(t, shared_at(base, t, slot(linear_index(c, static_cast<int64_t>(r))))));
  values_[op.result()] = out;
}

void KernelEmitter::lower_debug(const ir::Operation &op) {
  if (op.opcode() == Opcode::Print)
    return lower_print(op);
  // assert: every lane of the condition must hold.
  const Regs &r = regs(op.operand(0));
  llvm::Value *failed = b_.getFalse();
  for (llvm::Value *v : r)
    failed = b_.CreateOr(failed, b_.CreateNot(v));
  record_error(op, *op.attr_as<std::string>("message"), failed);
}

} // namespace tl::nvptx
