// llvm-cpu fusion, to spare memory-bound kernels passes through stack buffers:
// - store fusion: a store of a tree of single-use elementwise ops and reshapes over loads and
//   other tiles runs as one loop straight from and to the tensors when every access is inside
//   its tensor and contiguous; otherwise the unfused code runs;
// - lane inlining: splats and single-use elementwise ops are computed inside their users' loops;
// - load views: a load whose users all run before any write to memory reads the tensor in place
//   when the block is inside and contiguous.
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include <llvm/TargetParser/Triple.h>

#include <algorithm>

namespace tl::llvm_cpu {
using ir::Opcode;

/// Collects the tree feeding a store: single-use elementwise ops, reshapes and loads of the same
/// block (other values are leaves read from their slots). False if `v` is not such an op.
bool KernelCodegen::collect_fusion(const ir::Value *v, const ir::Block &block,
                                   std::unordered_map<const ir::Value *, int> &uses, Fusion &f) {
  const ir::Operation *def = v->def();
  if (!def || def->parent() != &block || uses[v] != 1)
    return false;
  if (def->opcode() == Opcode::Load) {
    f.loads.push_back(def);
    return true;
  }
  const bool reshape = def->opcode() == Opcode::Reshape || def->opcode() == Opcode::ExpandDims;
  if (!reshape && !(def->flags() & ir::kElementwise))
    return false;
  for (const ir::Value *in : def->operands())
    collect_fusion(in, block, uses, f);
  f.ops.push_back(def); // operands first: the order ops are evaluated in
  return true;
}

void KernelCodegen::plan_fusion() {
  std::unordered_map<const ir::Value *, int> uses;
  ir::walk(kernel_.body(), [&](ir::Operation *op) {
    for (const ir::Value *v : op->operands())
      ++uses[v];
  });
  ir::walk(kernel_.body(), [&](ir::Operation *store) {
    if (store->opcode() != Opcode::Store)
      return;
    const ir::Block &block = *store->parent();
    Fusion f;
    if (!collect_fusion(store->operand(store->num_operands() - 1), block, uses, f))
      return;
    // No write to memory between the first fused op and the store: deferring the loads to the
    // store's position must not change what they read.
    bool seen = false;
    for (auto &op : block.ops()) {
      if (op.get() == store)
        break;
      seen |= std::find(f.loads.begin(), f.loads.end(), op.get()) != f.loads.end() ||
              std::find(f.ops.begin(), f.ops.end(), op.get()) != f.ops.end();
      if (seen && (op->flags() & (ir::kWritesMemory | ir::kHasRegions)))
        return;
    }
    for (const ir::Operation *op : f.loads)
      deferred_.insert(op);
    for (const ir::Operation *op : f.ops)
      deferred_.insert(op);
    fused_[store] = std::move(f);
  });
}

/// Emits the fused loop behind a run-time check, and the unfused ops in the other branch.
void KernelCodegen::lower_fused_store(const ir::Operation &store) {
  const Fusion &f = fused_.at(&store);
  // Every access inside its tensor and contiguous (then tile element i is at base + i)?
  struct Access {
    llvm::Value *base;
    llvm::Type *mem;
    ir::ScalarKind elem;
  };
  auto access = [&](const ir::Operation &op, const ir::Type &tile, llvm::Value *&ok) {
    const unsigned a = arg_index_.at(op.operand(0));
    const std::vector<llvm::Value *> off = block_offsets(op);
    ok = b_.CreateAnd(ok, block_is_contiguous(a, off, tile.shape()));
    const ir::ScalarKind elem = op.operand(0)->type().elem();
    return Access{block_base(a, off, storage_type(elem)), storage_type(elem), elem};
  };
  const ir::Value *stored = store.operand(store.num_operands() - 1);
  const int64_t n = stored->type().num_elements();
  llvm::Value *ok = b_.getTrue();
  std::vector<Access> loads;
  for (const ir::Operation *l : f.loads)
    loads.push_back(access(*l, l->result()->type(), ok));
  const Access out = access(store, stored->type(), ok);
  auto *fast = llvm::BasicBlock::Create(ctx_, "fused", fn_);
  auto *slow = llvm::BasicBlock::Create(ctx_, "unfused", fn_);
  auto *done = llvm::BasicBlock::Create(ctx_, "fused.done", fn_);
  b_.CreateCondBr(ok, fast, slow);
  b_.SetInsertPoint(fast);
  auto value_at = [&](llvm::Value *i) -> llvm::Value * {
    std::unordered_map<const ir::Value *, llvm::Value *> lane; // this lane's fused values
    for (size_t k = 0; k < f.loads.size(); ++k) {
      const Access &l = loads[k];
      llvm::Value *p = b_.CreateGEP(l.mem, l.base, i);
      lane[f.loads[k]->result()] = from_storage(l.elem, b_.CreateLoad(l.mem, p));
    }
    for (const ir::Operation *op : f.ops) {
      if (!(op->flags() & ir::kElementwise)) { // a reshape: the same lanes
        lane[op->result()] = lane.count(op->operand(0)) ? lane.at(op->operand(0))
                                                         : lane_value(op->operand(0), i);
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
    llvm::Value *v = lane.count(stored) ? lane.at(stored) : lane_value(stored, i);
    return to_storage(out.elem, v);
  };
  // A large tensor written block by block streams to DRAM: non-temporal stores skip reading each
  // line before overwriting it (a third of a copy's traffic). LLVM's vectorizer will not emit them
  // without provable alignment, so lanes are computed into an aligned chunk on the stack (L1) and
  // copied out with aligned vector non-temporal stores, when the block is 64-byte aligned and
  // the tensor is larger than kStreamBytes (smaller ones may be read back from the caches).
  constexpr int64_t kChunk = 256, kStreamBytes = int64_t(32) << 20;
  const int64_t esize = int64_t(module_.getDataLayout().getTypeAllocSize(out.mem));
  const bool x86 = llvm::Triple(module_.getTargetTriple()).isX86();
  if (x86 && !owned_stores_.count(&store) && n % kChunk == 0 && n * esize >= 16384 &&
      (kChunk * esize) % 64 == 0) {
    const unsigned a = arg_index_.at(store.operand(0));
    llvm::Value *tensor_bytes = b_.CreateMul(
        b_.CreateMul(arg_field(a, 1, i64(0)), arg_field(a, 2, i64(0))), i64(esize));
    llvm::Value *aligned = b_.CreateICmpEQ(
        b_.CreateAnd(b_.CreatePtrToInt(out.base, b_.getInt64Ty()), i64(63)), i64(0));
    llvm::Value *stream = b_.CreateAnd(aligned, b_.CreateICmpSGE(tensor_bytes, i64(kStreamBytes)));
    auto *nt = llvm::BasicBlock::Create(ctx_, "fused.stream", fn_);
    auto *plain = llvm::BasicBlock::Create(ctx_, "fused.plain", fn_);
    b_.CreateCondBr(stream, nt, plain);
    b_.SetInsertPoint(nt);
    Slot chunk = new_slot(ir::Type::tile(ir::ScalarKind::I8, {kChunk * esize}));
    auto *vec_t = llvm::FixedVectorType::get(out.mem, unsigned(64 / esize));
    loop(n / kChunk, [&](llvm::Value *c) {
      llvm::Value *first = b_.CreateMul(c, i64(kChunk));
      loop(kChunk, [&](llvm::Value *j) {
        b_.CreateStore(value_at(b_.CreateAdd(first, j)), b_.CreateGEP(out.mem, chunk.ptr, j));
      }, "lane");
      for (int64_t v = 0; v < kChunk * esize / 64; ++v) {
        llvm::Value *from = b_.CreateConstGEP1_64(b_.getInt8Ty(), chunk.ptr, uint64_t(v * 64));
        llvm::Value *to = b_.CreateGEP(b_.getInt8Ty(), out.base,
                                       b_.CreateAdd(b_.CreateMul(first, i64(esize)), i64(v * 64)));
        auto *st = b_.CreateAlignedStore(b_.CreateAlignedLoad(vec_t, from, llvm::Align(64)), to,
                                         llvm::Align(64));
        st->setMetadata(llvm::LLVMContext::MD_nontemporal,
                        llvm::MDNode::get(ctx_, {llvm::ConstantAsMetadata::get(b_.getInt32(1))}));
      }
    }, "chunk");
    // Non-temporal stores are weakly ordered: make them visible before the program ends.
    b_.CreateFence(llvm::AtomicOrdering::SequentiallyConsistent);
    b_.CreateBr(done);
    b_.SetInsertPoint(plain);
  }
  loop(n, [&](llvm::Value *i) {
    b_.CreateStore(value_at(i), b_.CreateGEP(out.mem, out.base, i));
  }, "fused");
  b_.CreateBr(done);
  b_.SetInsertPoint(slow);
  for (const ir::Operation *l : f.loads)
    lower_block_access(*l);
  for (const ir::Operation *op : f.ops)
    lower_op(*op);
  lower_block_access(store);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void KernelCodegen::collect_users() {
  ir::walk(kernel_.body(), [&](ir::Operation *op) {
    for (const ir::Value *v : op->operands())
      users_[v].push_back(op);
  });
}

void KernelCodegen::plan_inlining() {
  auto walks_lanes = [&](const ir::Operation *u) {
    return (u->flags() & ir::kElementwise) || u->opcode() == Opcode::Reduce ||
           u->opcode() == Opcode::Scan;
  };
  ir::walk(kernel_.body(), [&](ir::Operation *op) {
    if (deferred_.count(op) || op->num_results() != 1 || op->result()->type().is_scalar())
      return;
    const bool splat = op->opcode() == Opcode::Splat;
    if (!splat && !(op->flags() & ir::kElementwise))
      return;
    const auto &us = users_[op->result()];
    // A splat is free to recompute; an elementwise op is inlined only into its one user, so
    // that nothing is computed twice. Users in the same block see the same operand values (slots
    // are written once, except a carried tile updated in place, which has no other reader).
    if (us.empty() || (!splat && us.size() != 1))
      return;
    for (const ir::Operation *u : us)
      if (u->parent() != op->parent() || !walks_lanes(u))
        return;
    inlined_.insert(op);
  });
}

// A memory-bound kernel whose programs stream through consecutive blocks (rows of a softmax,
// chunks of a vector) leaves DRAM idle while it computes: the hardware prefetcher runs only a
// little ahead. So the lane loops after a load view fetch the block that follows it, and the
// blocks later stores write (prefetch_stores_after), a few lines per chunk of lanes (prefetches
// never fault; a kernel that does not stream only wastes some bandwidth). A chunk is 256 bytes
// of the streamed elements (64 f32 lanes: one vector iteration of the loop as LLVM unrolls it,
// four lines per stream): bursts of 16 lines per 256 lanes filled the miss queue and were
// partly dropped (one-thread softmax 0.75 of the triad with 256 lanes, 0.81-0.83 with 64).
void KernelCodegen::lane_loop(int64_t n, const IndexFn &body) {
  struct Fetch {
    llvm::Value *base;
    int64_t bytes;
    int write;
  };
  std::vector<Fetch> fetches;
  int64_t lane_bytes = 0; // of the densest stream
  for (const Stream &s : streams_)
    if (std::find(open_blocks_.begin(), open_blocks_.end(), s.block) != open_blocks_.end() &&
        s.bytes <= n * 64) { // a block of more than a line per lane is not paced by this loop
      fetches.push_back({s.at, s.bytes, s.write ? 1 : 0});
      lane_bytes = std::max(lane_bytes, s.bytes / n);
    }
  if (fetches.empty())
    return loop(n, body);
  int64_t kChunk = 32;
  while (kChunk * std::max<int64_t>(lane_bytes, 1) < 256)
    kChunk *= 2;
  if (n < 4 * kChunk || n % kChunk != 0)
    return loop(n, body);
  const int64_t chunks = n / kChunk;
  loop(chunks, [&](llvm::Value *c) {
    for (const Fetch &f : fetches) {
      const int64_t lines = (f.bytes / 64 + chunks - 1) / chunks; // per chunk
      for (int64_t l = 0; l < lines; ++l) {
        llvm::Value *at = b_.CreateAdd(b_.CreateMul(c, i64(lines * 64)), i64(l * 64));
        b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                           {b_.CreateGEP(b_.getInt8Ty(), f.base, at), b_.getInt32(f.write),
                            b_.getInt32(2), b_.getInt32(1)}); // into L2, data
      }
    }
    loop(b_.CreateMul(c, i64(kChunk)), b_.CreateMul(b_.CreateAdd(c, i64(1)), i64(kChunk)), body,
         "i");
  }, "chunk");
}

// A kernel that computes before it stores (softmax: max, then exp and sum, then the store) leaves
// DRAM idle during its compute passes and then stalls its store loop on reading each line of the
// output for ownership (or, with non-temporal stores, on draining them). Fetching the output block
// for writing during the compute passes overlaps that read with the compute; the stores then hit
// the cache and the lines are written back later, while the next programs compute. Measured on
// the development machine: one-thread softmax 0.72 -> 0.77 of the triad, two threads 0.72 -> 0.83.
void KernelCodegen::prefetch_stores_after(const ir::Operation &load) {
  const ir::Block &block = *load.parent();
  bool after = false;
  for (auto &op : block.ops()) {
    after |= op.get() == &load;
    if (!after || op->opcode() != Opcode::Store || owned_stores_.count(op.get()))
      continue;
    const int rank = op->operand(0)->type().rank();
    // Its place must be computable here: every index already lowered (or a block argument).
    bool known = true;
    for (int d = 0; d < rank && known; ++d) {
      const ir::Operation *def = op->operand(1 + d)->def();
      known = !def || lowered_.count(def);
    }
    if (!known)
      continue;
    const ir::Type &tile = op->operand(1 + rank)->type();
    llvm::Value *at = block_base(arg_index_.at(op->operand(0)), block_offsets(*op),
                                 storage_type(tile.elem()));
    streams_.push_back({at, tile_bytes(tile), &block, true});
    owned_stores_.insert(op.get());
  }
}

// A full reduction (one result from every lane: sum / max / min) of a tile that an elementwise op
// materializes in the same block accumulates inside that op's loop: one pass over the tile
// instead of two (softmax's sum of exponentials).
void KernelCodegen::plan_reduce_fusion() {
  ir::walk(kernel_.body(), [&](ir::Operation *r) {
    if (r->opcode() != Opcode::Reduce || r->attr_as<std::string>("kind")->compare("argmax") == 0)
      return;
    const ir::Type &t = r->operand(0)->type();
    const int64_t axis = *r->attr_as<int64_t>("axis");
    for (int d = 0; d < t.rank(); ++d)
      if (d != axis && t.shape()[d] != 1)
        return; // a reduction per row or column: its own loops
    const ir::Operation *e = r->operand(0)->def();
    if (!e || e->parent() != r->parent() || !(e->flags() & ir::kElementwise) ||
        inlined_.count(e) || deferred_.count(e) || e->result()->type().elem() == ir::ScalarKind::I1)
      return;
    fused_reduces_[e].push_back(r);
    reduce_done_.insert(r);
  });
}

/// Where `op` is evaluated: inlined ops at their (only) user, ops of a fused tree at its store.
const ir::Operation *KernelCodegen::evaluated_at(const ir::Operation *op) const {
  for (;;) {
    if (inlined_.count(op) && op->opcode() != Opcode::Splat) {
      op = users_.at(op->result()).front();
      continue;
    }
    if (reduce_done_.count(op)) {
      op = op->operand(0)->def();
      continue;
    }
    if (deferred_.count(op)) {
      for (const auto &[store, f] : fused_)
        if (std::find(f.ops.begin(), f.ops.end(), op) != f.ops.end() ||
            std::find(f.loads.begin(), f.loads.end(), op) != f.loads.end())
          return store;
    }
    return op;
  }
}

void KernelCodegen::plan_views() {
  auto writes = [](const ir::Operation *op) {
    bool w = (op->flags() & ir::kWritesMemory) != 0;
    for (unsigned r = 0; r < op->num_regions(); ++r)
      ir::walk(op->region(r), [&](ir::Operation *o) { w |= (o->flags() & ir::kWritesMemory) != 0; });
    return w;
  };
  ir::walk(kernel_.body(), [&](ir::Operation *load) {
    if (load->opcode() != Opcode::Load || deferred_.count(load) || load->num_operands() != 1 +
        size_t(load->operand(0)->type().rank()))
      return; // masked loads stay copies
    const ir::ScalarKind k = load->result()->type().elem();
    if (k == ir::ScalarKind::F16 || k == ir::ScalarKind::BF16 || k == ir::ScalarKind::F8E4M3 ||
        k == ir::ScalarKind::F8E5M2 || k == ir::ScalarKind::I1)
      return; // held in another type than stored: needs the converting copy
    const ir::Block *block = load->parent();
    // The last op of the block that uses the tile (directly or inside its regions).
    size_t last = 0, at = 0, pos = 0;
    std::vector<const ir::Operation *> ops;
    for (auto &op : block->ops()) {
      ops.push_back(op.get());
      if (op.get() == load)
        at = pos;
      ++pos;
    }
    // Users of the tile and of the values sharing its storage (reshape, expand_dims), at the
    // place they are evaluated: an inlined op at its user, a fused op at its store.
    std::vector<const ir::Value *> shared = {load->result()};
    for (size_t v = 0; v < shared.size(); ++v) {
      for (const ir::Operation *u : users_[shared[v]]) {
        if (u->opcode() == Opcode::Reshape || u->opcode() == Opcode::ExpandDims)
          shared.push_back(u->result());
        u = evaluated_at(u);
        while (u && u->parent() != block)
          u = u->parent()->parent();
        if (!u)
          return;
        last = std::max<size_t>(last, std::find(ops.begin(), ops.end(), u) - ops.begin());
      }
    }
    for (size_t i = at + 1; i <= last && i < ops.size(); ++i)
      if (writes(ops[i]))
        return;
    views_.insert(load);
  });
}

llvm::Value *KernelCodegen::lane_value(const ir::Value *v, llvm::Value *index) {
  const ir::Operation *def = v->def();
  if (def && inlined_.count(def)) {
    if (def->opcode() == Opcode::Splat)
      return scalar(def->operand(0));
    std::vector<llvm::Value *> args;
    for (const ir::Value *in : def->operands())
      args.push_back(lane_value(in, index));
    return elementwise_value(*def, std::move(args), index);
  }
  Slot &s = slot(v);
  return b_.CreateLoad(s.elem, elem_ptr(s, v->type().is_scalar() ? i64(0) : index));
}

} // namespace tl::llvm_cpu
