// llvm-cpu load/elementwise/store fusion: `store t, o, op(load a, o1; load b, o2; ...)` over rank-1
// tiles runs as one loop straight from and to the tensors when every access is in bounds and
// contiguous, instead of three passes through stack buffers; otherwise the unfused code runs.
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include <algorithm>

namespace tl::llvm_cpu {
using ir::Opcode;

void KernelCodegen::plan_fusion() {
  std::unordered_map<const ir::Value *, int> uses;
  ir::walk(kernel_.body(), [&](ir::Operation *op) {
    for (const ir::Value *v : op->operands())
      ++uses[v];
  });
  ir::walk(kernel_.body(), [&](ir::Operation *store) {
    if (store->opcode() != Opcode::Store || store->num_operands() != 3)
      return; // rank-1 tensors only: tensor, offset, value
    const ir::Value *v = store->operand(2);
    const ir::Operation *ew = v->def();
    if (!ew || !(ew->flags() & ir::kElementwise) || ew->parent() != store->parent() ||
        uses[v] != 1 || v->type().rank() != 1)
      return;
    std::vector<const ir::Operation *> loads;
    for (const ir::Value *in : ew->operands()) {
      const ir::Operation *l = in->def();
      if (l && l->opcode() == Opcode::Load && l->parent() == store->parent() && uses[in] == 1 &&
          std::find(loads.begin(), loads.end(), l) == loads.end())
        loads.push_back(l);
    }
    if (loads.empty())
      return;
    // No write to memory between the first fused load and the store: deferring the loads to the
    // store's position must not change what they read.
    const ir::Block &block = *store->parent();
    bool seen = false, clean = true;
    for (auto &op : block.ops()) {
      if (op.get() == store)
        break;
      seen |= std::find(loads.begin(), loads.end(), op.get()) != loads.end();
      if (seen && ((op->flags() & (ir::kWritesMemory | ir::kHasRegions))))
        clean = false;
    }
    if (!clean)
      return;
    fused_[store] = {ew, loads};
    deferred_.insert(ew);
    for (const ir::Operation *l : loads)
      deferred_.insert(l);
  });
}

/// Emits the fused loop behind a run-time check, and the unfused ops in the other branch.
void KernelCodegen::lower_fused_store(const ir::Operation &store) {
  const Fusion &f = fused_.at(&store);
  const ir::Operation &ew = *f.elementwise;
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
    std::vector<llvm::Value *> args;
    for (const ir::Value *in : ew.operands()) {
      auto it = std::find(f.loads.begin(), f.loads.end(), in->def());
      if (it != f.loads.end()) {
        const Access &l = loads[it - f.loads.begin()];
        llvm::Value *p = b_.CreateGEP(l.mem, l.data, b_.CreateAdd(l.offset, i));
        args.push_back(from_storage(l.elem, b_.CreateLoad(l.mem, p)));
      } else {
        Slot s = slot(in);
        args.push_back(b_.CreateLoad(s.elem, elem_ptr(s, in->type().is_scalar() ? i64(0) : i)));
      }
    }
    llvm::Value *r = elementwise_value(ew, args, i);
    b_.CreateStore(to_storage(out.elem, r),
                   b_.CreateGEP(out.mem, out.data, b_.CreateAdd(out.offset, i)));
  }, "fused");
  b_.CreateBr(done);
  b_.SetInsertPoint(slow);
  for (const ir::Operation *l : f.loads)
    lower_block_access(*l);
  lower_elementwise(ew);
  lower_block_access(store);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

} // namespace tl::llvm_cpu
