// llvm-cpu load/elementwise/store fusion: a rank-1 store of a tree of single-use elementwise ops
// over loads (or of a load: a copy) runs as one loop straight from and to the tensors when every
// access is in bounds and contiguous, instead of passes through stack buffers; otherwise the
// unfused code runs.
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include <algorithm>

namespace tl::llvm_cpu {
using ir::Opcode;

/// Collects the tree feeding a store: single-use elementwise ops and rank-1 loads of the same
/// block (other values are leaves read from their slots). False if the tree holds no load.
bool KernelCodegen::collect_fusion(const ir::Value *v, const ir::Block &block,
                                   std::unordered_map<const ir::Value *, int> &uses, Fusion &f) {
  const ir::Operation *def = v->def();
  if (!def || def->parent() != &block || uses[v] != 1 || v->type().rank() != 1)
    return false;
  if (def->opcode() == Opcode::Load) {
    f.loads.push_back(def);
    return true;
  }
  if (!(def->flags() & ir::kElementwise))
    return false;
  bool any = false;
  for (const ir::Value *in : def->operands())
    any |= collect_fusion(in, block, uses, f);
  f.ops.push_back(def); // operands first: the order ops are evaluated in
  return any;
}

void KernelCodegen::plan_fusion() {
  std::unordered_map<const ir::Value *, int> uses;
  ir::walk(kernel_.body(), [&](ir::Operation *op) {
    for (const ir::Value *v : op->operands())
      ++uses[v];
  });
  ir::walk(kernel_.body(), [&](ir::Operation *store) {
    if (store->opcode() != Opcode::Store || store->num_operands() != 3)
      return; // rank-1 tensors only: tensor, offset, value
    const ir::Block &block = *store->parent();
    Fusion f;
    if (!collect_fusion(store->operand(2), block, uses, f))
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
  const int64_t n = store.operand(2)->type().num_elements();
  // All accesses inside their tensors with unit stride?
  struct Access {
    llvm::Value *data, *offset;
    llvm::Type *mem;
    ir::ScalarKind elem;
  };
  auto access = [&](const ir::Operation &op, llvm::Value *&ok) {
    const unsigned a = arg_index_.at(op.operand(0));
    llvm::Value *off = b_.CreateSExt(scalar(op.operand(1)), b_.getInt64Ty());
    llvm::Value *shape = arg_field(a, 1, i64(0)), *stride = arg_field(a, 2, i64(0));
    ok = b_.CreateAnd(ok, b_.CreateAnd(b_.CreateICmpSGE(off, i64(0)),
                                       b_.CreateICmpSLE(b_.CreateAdd(off, i64(n)), shape)));
    ok = b_.CreateAnd(ok, b_.CreateICmpEQ(stride, i64(1)));
    const ir::ScalarKind elem = op.operand(0)->type().elem();
    return Access{arg_field(a, 0, nullptr), off, storage_type(elem), elem};
  };
  llvm::Value *ok = b_.getTrue();
  std::vector<Access> loads;
  for (const ir::Operation *l : f.loads)
    loads.push_back(access(*l, ok));
  const Access out = access(store, ok);
  auto *fast = llvm::BasicBlock::Create(ctx_, "fused", fn_);
  auto *slow = llvm::BasicBlock::Create(ctx_, "unfused", fn_);
  auto *done = llvm::BasicBlock::Create(ctx_, "fused.done", fn_);
  b_.CreateCondBr(ok, fast, slow);
  b_.SetInsertPoint(fast);
  loop(n, [&](llvm::Value *i) {
    std::unordered_map<const ir::Value *, llvm::Value *> lane; // this lane's fused values
    for (size_t k = 0; k < f.loads.size(); ++k) {
      const Access &l = loads[k];
      llvm::Value *p = b_.CreateGEP(l.mem, l.data, b_.CreateAdd(l.offset, i));
      lane[f.loads[k]->result()] = from_storage(l.elem, b_.CreateLoad(l.mem, p));
    }
    for (const ir::Operation *op : f.ops) {
      std::vector<llvm::Value *> args;
      for (const ir::Value *in : op->operands()) {
        if (auto it = lane.find(in); it != lane.end()) {
          args.push_back(it->second);
        } else {
          Slot s = slot(in);
          args.push_back(b_.CreateLoad(s.elem, elem_ptr(s, in->type().is_scalar() ? i64(0) : i)));
        }
      }
      lane[op->result()] = elementwise_value(*op, args, i);
    }
    b_.CreateStore(to_storage(out.elem, lane.at(store.operand(2))),
                   b_.CreateGEP(out.mem, out.data, b_.CreateAdd(out.offset, i)));
  }, "fused");
  b_.CreateBr(done);
  b_.SetInsertPoint(slow);
  for (const ir::Operation *l : f.loads)
    lower_block_access(*l);
  for (const ir::Operation *op : f.ops)
    lower_elementwise(*op);
  lower_block_access(store);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

} // namespace tl::llvm_cpu
