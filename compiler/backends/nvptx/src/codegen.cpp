// nvptx lowering: kernel structure, arguments, control flow and the layout coordinates.
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>

#include <algorithm>

namespace tl::nvptx {
using ir::Opcode;
using ir::ScalarKind;

namespace {
constexpr unsigned kGlobal = 1, kShared = 3;
} // namespace

KernelEmitter::KernelEmitter(const ir::Kernel &kernel, llvm::Module &module, int num_warps,
                             std::string arch)
    : kernel_(kernel), module_(module), ctx_(module.getContext()), b_(ctx_, IdentityFolder()),
      num_warps_(num_warps), arch_(std::move(arch)) {}

Builder KernelEmitter::at_entry() {
  auto *after = llvm::cast<llvm::Instruction>(warp_);
  return Builder(after->getParent(), std::next(after->getIterator()), IdentityFolder());
}

void KernelEmitter::unsupported(const ir::Operation &op, const std::string &what) {
  throw LoweringError(op.loc().str() + ": error: nvptx: '" + std::string(op.name()) + "': " + what);
}

llvm::Value *KernelEmitter::special(const char *reg) {
  static const std::pair<const char *, llvm::Intrinsic::ID> kRegs[] = {
      {"tid.x", llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x},
      {"ctaid.x", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x},
      {"ctaid.y", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y},
      {"ctaid.z", llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z},
      {"nctaid.x", llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x},
      {"nctaid.y", llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y},
      {"nctaid.z", llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z}};
  for (auto [name, id] : kRegs)
    if (std::string_view(name) == reg)
      return b_.CreateIntrinsic(id, {}, {});
  throw LoweringError(std::string("nvptx: unknown special register ") + reg);
}

void KernelEmitter::barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

Kernel KernelEmitter::run() {
  Kernel info;
  info.name = kernel_.name();
  info.block[0] = 32u * static_cast<uint32_t>(num_warps_);
  // Parameters: per tensor its data pointer, extents and strides (i64); per scalar its bits.
  std::vector<llvm::Type *> params;
  const ir::Block &body = *kernel_.body();
  for (unsigned i = 0; i < body.arguments().size(); ++i) {
    const ir::Type &t = body.argument(i)->type();
    const uint16_t arg = static_cast<uint16_t>(i);
    if (t.is_tensor()) {
      params.push_back(llvm::PointerType::get(ctx_, kGlobal));
      info.params.push_back({Slot::Kind::Pointer, arg, 0, 8});
      for (int d = 0; d < t.rank(); ++d) {
        params.push_back(b_.getInt64Ty());
        info.params.push_back({Slot::Kind::Shape, arg, static_cast<uint8_t>(d), 8});
      }
      for (int d = 0; d < t.rank(); ++d) {
        params.push_back(b_.getInt64Ty());
        info.params.push_back({Slot::Kind::Stride, arg, static_cast<uint8_t>(d), 8});
      }
    } else {
      const ScalarKind k = t.elem();
      if (k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2)
        throw LoweringError(kernel_.loc().str() + ": error: nvptx: argument #" + std::to_string(i) +
                            ": " + std::string(ir::scalar_name(k)) + " is not supported yet");
      params.push_back(memory_type(k));
      const int bytes = k == ScalarKind::I1 ? 1 : ir::bit_width(k) / 8;
      info.params.push_back({Slot::Kind::Scalar, arg, 0, static_cast<uint8_t>(bytes)});
    }
  }
  // Grid axes y and z: CUDA stops them at 65535 programs, so the device runs a larger grid as
  // several launches, each told its first program on each axis (GridBase) and the whole
  // axis's programs (Grid): program_id and num_programs read these, not ctaid / nctaid alone.
  for (const Slot::Kind kind : {Slot::Kind::GridBase, Slot::Kind::Grid})
    for (uint8_t d = 1; d < 3; ++d) {
      params.push_back(b_.getInt32Ty());
      info.params.push_back({kind, 0, d, 4});
    }
  // The status word comes last (every kernel takes it: which ops can fail is known only after
  // lowering, and one 8-byte parameter costs nothing).
  params.push_back(llvm::PointerType::get(ctx_, kGlobal));
  info.params.push_back({Slot::Kind::Status, 0, 0, 8});
  fn_ = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false),
                               llvm::Function::ExternalLinkage, kernel_.name(), module_);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::NamedMDNode *annotations = module_.getOrInsertNamedMetadata("nvvm.annotations");
  auto md = [&](const char *key, int value) {
    llvm::Metadata *ops[] = {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx_, key),
                             llvm::ConstantAsMetadata::get(b_.getInt32(value))};
    annotations->addOperand(llvm::MDNode::get(ctx_, ops));
  };
  md("kernel", 1);
  md("maxntidx", static_cast<int>(info.block[0]));
  // The dynamic shared memory every spill uses (its size is this kernel's launch parameter).
  shared_ = module_.getGlobalVariable("tl_shared");
  if (!shared_)
    shared_ = new llvm::GlobalVariable(module_, llvm::ArrayType::get(b_.getInt8Ty(), 0), false,
                                       llvm::GlobalValue::ExternalLinkage, nullptr, "tl_shared",
                                       nullptr, llvm::GlobalValue::NotThreadLocal, kShared);
  rings_end_ = plan_rings(body, 0);
  // wgmma's 128-byte swizzle repeats every 1024 bytes, from a 1024-byte boundary (one
  // declaration serves every kernel of the module: the largest alignment stays).
  shared_->setAlignment(
      std::max(shared_->getAlign().valueOrOne(), llvm::Align(rings_end_ ? 1024 : 16)));
  shared_bytes_ = rings_end_;

  llvm::BasicBlock *entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  b_.SetInsertPoint(entry);
  scratch_ = b_.CreateInBoundsGEP(b_.getInt8Ty(), shared_, b_.getInt64(rings_end_), "scratch");
  tid_ = b_.CreateZExt(special("tid.x"), b_.getInt64Ty(), "tid");
  lane_ = b_.CreateAnd(tid_, b_.getInt64(31), "lane");
  warp_ = b_.CreateLShr(tid_, b_.getInt64(5), "warp");
  unsigned p = 0;
  for (unsigned i = 0; i < body.arguments().size(); ++i) {
    const ir::Value *a = body.argument(i);
    const ir::Type &t = a->type();
    if (t.is_tensor()) {
      TensorArg ta;
      ta.elem = t.elem();
      ta.data = fn_->getArg(p++);
      for (int d = 0; d < t.rank(); ++d)
        ta.shape.push_back(fn_->getArg(p++));
      for (int d = 0; d < t.rank(); ++d)
        ta.strides.push_back(fn_->getArg(p++));
      tensors_[a] = ta;
    } else {
      values_[a] = {from_memory(t.elem(), fn_->getArg(p++))};
    }
  }
  for (int d = 1; d < 3; ++d)
    grid_base_[d] = fn_->getArg(p++);
  for (int d = 1; d < 3; ++d)
    grid_[d] = fn_->getArg(p++);
  status_ = fn_->getArg(p);
  lower_block(body);
  if (!b_.GetInsertBlock()->getTerminator())
    b_.CreateRetVoid();
  // Past 48 KiB of static + dynamic shared memory a launch needs the dynamic size opted in, which
  // the cuda device does when the dynamic size alone is past 48 KiB: ask for that much then.
  constexpr uint64_t kDefaultShared = 48 * 1024;
  if (static_shared_bytes_ && shared_bytes_ &&
      static_shared_bytes_ + shared_bytes_ > kDefaultShared)
    shared_bytes_ = std::max<uint64_t>(shared_bytes_, kDefaultShared + 16);
  info.dynamic_shared_bytes = static_cast<uint32_t>(shared_bytes_);
  info.asserts = errors_;
  return info;
}

void KernelEmitter::lower_block(const ir::Block &block) {
  for (auto &op : block.ops()) {
    if (op->opcode() == Opcode::Yield)
      return; // the parent reads it
    if (op->opcode() == Opcode::Return) {
      b_.CreateRetVoid();
      // Code after a return is unreachable; give it a block so lowering can continue.
      b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "after.return", fn_));
      return;
    }
    if (!prefetched_.count(op.get()))
      lower_op(*op);
  }
}

void KernelEmitter::lower_op(const ir::Operation &op) {
  switch (op.opcode()) {
  case Opcode::ProgramId:
  case Opcode::NumPrograms:
  case Opcode::Constant:
  case Opcode::Constexpr:
  case Opcode::TensorDim:
  case Opcode::TensorStride:
  case Opcode::Arange:
  case Opcode::Full:
    return lower_source(op);
  case Opcode::Splat:
  case Opcode::Broadcast:
  case Opcode::Reshape:
  case Opcode::Transpose:
  case Opcode::Slice:
  case Opcode::ExpandDims:
    return lower_shape(op);
  case Opcode::Load:
  case Opcode::Store:
    return lower_load_store(op);
  case Opcode::Gather:
  case Opcode::Scatter:
  case Opcode::AtomicAdd:
    return lower_indexed(op);
  case Opcode::Dot:
    return lower_dot(op);
  case Opcode::Reduce:
    return lower_reduce(op);
  case Opcode::Scan:
    return lower_scan(op);
  case Opcode::For:
    return lower_for(op);
  case Opcode::If:
    return lower_if(op);
  case Opcode::Print:
  case Opcode::Assert:
    return lower_debug(op);
  default:
    break;
  }
  if (!(op.flags() & ir::kElementwise))
    unsupported(op, "not supported yet");
  // Operands in the result's layout (a dot's mma result meeting a blocked tile converts).
  std::vector<Regs> in;
  for (const ir::Value *v : op.operands())
    in.push_back(op.result()->type().is_tile() ? regs_in(v, layout_of(op.result())) : regs(v));
  Regs out(in.back().size());
  for (size_t r = 0; r < out.size(); ++r) {
    std::vector<llvm::Value *> a;
    for (const Regs &x : in)
      a.push_back(x[r]);
    out[r] = elementwise(op, a);
  }
  values_[op.result()] = out;
}

void KernelEmitter::lower_for(const ir::Operation &op) {
  const ScalarKind ik = op.operand(0)->type().elem();
  const bool is_signed = ir::is_signed(ik);
  llvm::Value *lb = scalar(op.operand(0)), *ub = scalar(op.operand(1)),
              *step = scalar(op.operand(2));
  llvm::Value *bad_step = is_signed
                              ? b_.CreateICmpSLE(step, llvm::ConstantInt::get(step->getType(), 0))
                              : b_.CreateICmpEQ(step, llvm::ConstantInt::get(step->getType(), 0));
  record_error(op, "the step is not positive", bad_step);
  const ir::Block &body = *op.region(0);
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *header = llvm::BasicBlock::Create(ctx_, "for.header", fn_);
  llvm::BasicBlock *loop_body = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "for.exit", fn_);
  std::vector<std::vector<llvm::PHINode *>> carried;
  std::vector<Regs> inits;
  for (size_t i = 3; i < op.num_operands(); ++i)
    inits.push_back(carried_regs(op.operand(i), op.region(0)->argument(i - 2)));
  // Loads marked nvptx.prefetch: iteration lb's before the loop, then each iteration issues the
  // next one's (past the end they read padding) before its own dot, carried in registers.
  // Loads marked "async" (plan_pipeline) are copied into the ring of the loop's dot instead.
  std::vector<const ir::Operation *> slice, loads, async_slice, async_loads;
  for (auto &o : body.ops())
    if (const std::string *p = o->attr_as<std::string>("nvptx.prefetch"))
      (*p == "async" ? async_loads : loads).push_back(o.get());
  // The loads and the scalar ops their indices need, operands first.
  std::function<void(const ir::Operation *, std::vector<const ir::Operation *> &)> need =
      [&](const ir::Operation *o, std::vector<const ir::Operation *> &into) {
        if (std::find(into.begin(), into.end(), o) != into.end())
          return;
        for (const ir::Value *v : o->operands())
          if (v->def() && v->owner() == &body)
            need(v->def(), into);
        into.push_back(o);
      };
  for (const ir::Operation *l : loads)
    need(l, slice);
  for (const ir::Operation *l : async_loads)
    need(l, async_slice);
  const ir::Operation *ring_dot = async_loads.empty() ? nullptr : pipelined_dot(body);
  const Ring ring = ring_dot ? rings_.at(ring_dot) : Ring{};
  // How many iterations ahead the ring is filled: stages - 1, or stages - 2 when wgmma keeps one
  // group in flight past its iteration (its slot is refilled an iteration later).
  const bool in_flight = ring_dot && wgmma_in_flight(*ring_dot);
  const int64_t distance = ring.stages - (in_flight ? 2 : 1);
  // Iteration `at`'s operand tiles into ring slot `slot` (i64) when `valid`; one commit group
  // per call either way, so that "all but the newest stages - 2 groups" names an iteration.
  auto issue = [&](llvm::Value *at, llvm::Value *valid, llvm::Value *slot) {
    guarded(valid, [&] {
      values_[body.argument(0)] = {at};
      for (const ir::Operation *o : async_slice)
        if (o->opcode() != Opcode::Load)
          lower_op(*o);
      llvm::Value *base = b_.CreateInBoundsGEP(
          b_.getInt8Ty(), shared_,
          b_.CreateAdd(b_.getInt64(static_cast<int64_t>(ring.offset)),
                       b_.CreateMul(slot, b_.getInt64(static_cast<int64_t>(ring.slot_bytes)))));
      copy_tile_async(*ring_dot->operand(0)->def(), base, 0);
      copy_tile_async(*ring_dot->operand(1)->def(), base, ring.b_offset);
      for (const ir::Operation *o : async_slice)
        if (o->num_results())
          values_.erase(o->result());
      values_.erase(body.argument(0));
    });
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {});
  };
  // Whether iteration lb + n step exists: no wrap on the way and below ub.
  auto exists = [&](llvm::Value *from, llvm::Value *from_ok, llvm::Value *&at) {
    const llvm::Intrinsic::ID id =
        is_signed ? llvm::Intrinsic::sadd_with_overflow : llvm::Intrinsic::uadd_with_overflow;
    llvm::Value *sum = b_.CreateBinaryIntrinsic(id, from, step);
    at = b_.CreateExtractValue(sum, 0);
    llvm::Value *below = is_signed ? b_.CreateICmpSLT(at, ub) : b_.CreateICmpULT(at, ub);
    return b_.CreateAnd(b_.CreateAnd(from_ok, b_.CreateNot(b_.CreateExtractValue(sum, 1))), below);
  };
  llvm::AllocaInst *read_slot = nullptr;
  if (ring_dot) {
    // Prologue: iterations lb .. lb + (distance - 1) step into slots 0 .. distance - 1.
    // A rolled loop past one slot: each unrolled copy of the copies' code costs every compile
    // its size (the f16 GEMM's 3 stages: two copies).
    llvm::Value *ok = b_.CreateAnd(is_signed ? b_.CreateICmpSLT(lb, ub) : b_.CreateICmpULT(lb, ub),
                                   b_.CreateNot(bad_step));
    if (distance == 1)
      issue(lb, ok, b_.getInt64(0));
    else
      loop(
          b_.getInt64(distance), {lb, ok},
          [&](llvm::Value *s, const Regs &cur) -> Regs {
            issue(cur[0], cur[1], s);
            llvm::Value *at = nullptr;
            llvm::Value *next_ok = exists(cur[0], cur[1], at);
            return {at, next_ok};
          },
          true);
    Builder entry = at_entry();
    read_slot = entry.CreateAlloca(b_.getInt64Ty());
    b_.CreateStore(b_.getInt64(0), read_slot);
  }
  // `real`: whether iteration `at` exists; the run-time errors of a load's index computation
  // (an integer division by zero, a gather lane outside its tensor) count only then.
  auto ahead = [&](llvm::Value *at, llvm::Value *real) {
    values_[body.argument(0)] = {at};
    speculative_ = real;
    for (const ir::Operation *o : slice)
      lower_op(*o);
    speculative_ = nullptr;
    // Carried as memory bits: a conversion (bf16 -> f32) would wait for the load right away.
    std::vector<Regs> out;
    for (const ir::Operation *l : loads) {
      auto bits = load_bits_.find(l->result());
      out.push_back(bits != load_bits_.end() ? bits->second : values_.at(l->result()));
      load_bits_.erase(l->result());
    }
    for (const ir::Operation *o : slice)
      values_.erase(o->result());
    values_.erase(body.argument(0));
    return out;
  };
  // Two shapes. Without register prefetches:
  //   pre -> header (iv < ub?) -> body -> header | exit.
  // With them, one copy of the loads' code (a prologue copy costs every compile its size: the
  // library GEMM's IR 1112 -> 908 instructions, its PTX 553 -> 472 without one): a trip through
  // `header` loads iteration lb when it is the first (`started` false) and goes round again,
  // later trips load iteration iv + step and run iv's body on the tiles loaded the trip before:
  //   pre (lb < ub?) -> header (the loads) -> body | latch;  body -> latch | exit;  latch ->
  //   header.
  const bool prefetching = !loads.empty();
  llvm::Value *ok0 = b_.CreateAnd(is_signed ? b_.CreateICmpSLT(lb, ub) : b_.CreateICmpULT(lb, ub),
                                  b_.CreateNot(bad_step));
  llvm::BasicBlock *latch_bb =
      prefetching ? llvm::BasicBlock::Create(ctx_, "for.latch", fn_) : nullptr;
  pre = b_.GetInsertBlock();
  if (prefetching)
    b_.CreateCondBr(ok0, header, exit);
  else
    b_.CreateBr(header);
  header->moveAfter(pre);
  b_.SetInsertPoint(header);
  llvm::PHINode *iv = b_.CreatePHI(lb->getType(), 2, "iv");
  iv->addIncoming(lb, pre);
  llvm::PHINode *started = nullptr;
  if (prefetching) {
    started = b_.CreatePHI(b_.getInt1Ty(), 2, "started");
    started->addIncoming(b_.getFalse(), pre);
  }
  for (size_t i = 3; i < op.num_operands(); ++i) {
    std::vector<llvm::PHINode *> phis;
    for (llvm::Value *init : inits[i - 3]) {
      llvm::PHINode *phi = b_.CreatePHI(init->getType(), 2);
      phi->addIncoming(init, pre);
      phis.push_back(phi);
    }
    carried.push_back(phis);
  }
  // `fetched`: the tiles loaded the trip before, as ahead() returns them (memory bits where a
  // conversion would wait for the load).
  std::vector<std::vector<llvm::PHINode *>> fetched;
  std::vector<Regs> next;
  if (prefetching) {
    llvm::Value *ahead_iv = nullptr;
    llvm::Value *ahead_real = exists(iv, b_.getTrue(), ahead_iv);
    next = ahead(b_.CreateSelect(started, ahead_iv, iv),
                 b_.CreateSelect(started, ahead_real, b_.getTrue()));
    for (const Regs &r : next) {
      std::vector<llvm::PHINode *> phis;
      for (llvm::Value *v : r) {
        phis.push_back(llvm::PHINode::Create(v->getType(), 2, "", header->getFirstNonPHIIt()));
        phis.back()->addIncoming(llvm::PoisonValue::get(v->getType()), pre); // read once started
      }
      fetched.push_back(phis);
    }
    b_.CreateCondBr(started, loop_body, latch_bb);
  } else {
    llvm::Value *more = is_signed ? b_.CreateICmpSLT(iv, ub) : b_.CreateICmpULT(iv, ub);
    b_.CreateCondBr(b_.CreateAnd(more, b_.CreateNot(bad_step)), loop_body, exit);
  }
  llvm::BasicBlock *loads_end = b_.GetInsertBlock(); // the loads may have added blocks
  b_.SetInsertPoint(loop_body);
  for (size_t i = 0; i < loads.size(); ++i) {
    const ScalarKind k = loads[i]->result()->type().elem();
    Regs v;
    for (llvm::PHINode *phi : fetched[i])
      v.push_back(phi->getType() == memory_type(k) && phi->getType() != value_type(k, *loads[i])
                      ? from_memory(k, phi)
                      : phi);
    values_[loads[i]->result()] = v;
    prefetched_.insert(loads[i]);
  }
  if (ring_dot) {
    // This iteration's slot is complete once all but the newest distance - 1 groups are; the
    // barrier makes every thread's copies visible and ends every read of the slot refilled
    // next (distance iterations ahead: the slot of iteration i + distance - stages, whose
    // mma.sync reads or wgmma group are done). wgmma reads through the async proxy: a fence,
    // for wgmma only (on a CUDA-core dot it is a MEMBAR.ALL.CTA a K step for nothing).
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {},
                       {b_.getInt32(static_cast<int32_t>(distance - 1))});
    if (uses_wgmma(*ring_dot))
      b_.CreateCall(llvm::InlineAsm::get(llvm::FunctionType::get(b_.getVoidTy(), false),
                                         "fence.proxy.async.shared::cta;", "~{memory}", true));
    barrier();
    llvm::Value *slot = b_.CreateLoad(b_.getInt64Ty(), read_slot);
    auto plus = [&](int64_t n) { // (slot + n) mod stages, 0 < n < stages
      llvm::Value *sum = b_.CreateAdd(slot, b_.getInt64(n));
      return b_.CreateSelect(b_.CreateICmpSGE(sum, b_.getInt64(ring.stages)),
                             b_.CreateSub(sum, b_.getInt64(ring.stages)), sum);
    };
    llvm::Value *fill = plus(distance);
    b_.CreateStore(plus(1), read_slot);
    llvm::Value *at = iv, *ok = b_.getTrue();
    for (int64_t s = 0; s < distance; ++s)
      ok = exists(at, ok, at);
    issue(at, ok, fill);
    llvm::Value *base = b_.CreateInBoundsGEP(
        b_.getInt8Ty(), shared_,
        b_.CreateAdd(b_.getInt64(static_cast<int64_t>(ring.offset)),
                     b_.CreateMul(slot, b_.getInt64(static_cast<int64_t>(ring.slot_bytes)))));
    staged_[ring_dot->operand(0)] = base;
    staged_[ring_dot->operand(1)] = b_.CreateInBoundsGEP(
        b_.getInt8Ty(), base, b_.getInt64(static_cast<int64_t>(ring.b_offset)));
    for (const ir::Operation *l : async_loads)
      prefetched_.insert(l);
  }
  values_[body.argument(0)] = {iv};
  for (size_t i = 0; i < carried.size(); ++i)
    values_[body.argument(static_cast<unsigned>(i + 1))] =
        Regs(carried[i].begin(), carried[i].end());
  lower_block(body);
  const ir::Operation *yield = body.terminator();
  std::vector<Regs> yielded;
  for (unsigned i = 0; i < yield->num_operands(); ++i)
    yielded.push_back(carried_regs(yield->operand(i), body.argument(i + 1)));
  // The loop ends when iv + step would wrap (ir.h), after this iteration.
  const llvm::Intrinsic::ID add_id =
      is_signed ? llvm::Intrinsic::sadd_with_overflow : llvm::Intrinsic::uadd_with_overflow;
  llvm::Value *sum = b_.CreateBinaryIntrinsic(add_id, iv, step);
  llvm::Value *next_iv = b_.CreateExtractValue(sum, 0), *wrapped = b_.CreateExtractValue(sum, 1);
  llvm::BasicBlock *body_end = b_.GetInsertBlock();
  auto add_back_edges = [&](llvm::BasicBlock *from) {
    for (size_t i = 0; i < fetched.size(); ++i)
      for (size_t r = 0; r < fetched[i].size(); ++r)
        fetched[i][r]->addIncoming(next[i][r], from);
  };
  if (prefetching) {
    llvm::Value *below = is_signed ? b_.CreateICmpSLT(next_iv, ub) : b_.CreateICmpULT(next_iv, ub);
    b_.CreateCondBr(b_.CreateAnd(b_.CreateNot(wrapped), below), latch_bb, exit);
    // The latch: from the first trip (iv unchanged, nothing yielded) or from a body. No
    // unrolling or peeling: a peeled first trip would be the prologue copy again.
    b_.SetInsertPoint(latch_bb);
    llvm::PHINode *iv_next = b_.CreatePHI(iv->getType(), 2);
    iv_next->addIncoming(iv, loads_end);
    iv_next->addIncoming(next_iv, body_end);
    iv->addIncoming(iv_next, latch_bb);
    started->addIncoming(b_.getTrue(), latch_bb);
    add_back_edges(latch_bb);
    for (size_t i = 0; i < carried.size(); ++i)
      for (size_t r = 0; r < carried[i].size(); ++r) {
        llvm::PHINode *phi = b_.CreatePHI(carried[i][r]->getType(), 2);
        phi->addIncoming(carried[i][r], loads_end);
        phi->addIncoming(yielded[i][r], body_end);
        carried[i][r]->addIncoming(phi, latch_bb);
      }
    no_unrolling(b_.CreateBr(header));
  } else {
    b_.CreateCondBr(wrapped, exit, header);
    iv->addIncoming(next_iv, body_end);
    add_back_edges(body_end);
    for (size_t i = 0; i < carried.size(); ++i)
      for (size_t r = 0; r < carried[i].size(); ++r)
        carried[i][r]->addIncoming(yielded[i][r], body_end);
  }
  b_.SetInsertPoint(exit);
  for (size_t i = 0; i < carried.size(); ++i) {
    Regs out;
    for (size_t r = 0; r < carried[i].size(); ++r) {
      llvm::PHINode *phi = b_.CreatePHI(carried[i][r]->getType(), 2);
      // Zero trips: the initial values (from pre, or the header when it tests).
      phi->addIncoming(prefetching ? inits[i][r] : static_cast<llvm::Value *>(carried[i][r]),
                       prefetching ? pre : header);
      phi->addIncoming(yielded[i][r], body_end);
      out.push_back(phi);
    }
    values_[op.result(static_cast<unsigned>(i))] = out;
  }
  if (in_flight) // the last wgmma group, before anything reads the accumulator
    for (unsigned i = 0; i < yield->num_operands(); ++i)
      if (yield->operand(i) == ring_dot->result())
        values_[op.result(i)] = wgmma_wait(values_[op.result(i)]);
  if (ring_dot) { // the ring's last groups are empty, but a later loop may reuse its memory
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
    barrier();
    staged_.clear();
  }
}

void KernelEmitter::lower_if(const ir::Operation &op) {
  llvm::Value *cond = scalar(op.operand(0));
  llvm::BasicBlock *then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
  llvm::BasicBlock *else_bb = llvm::BasicBlock::Create(ctx_, "if.else", fn_);
  llvm::BasicBlock *merge = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
  b_.CreateCondBr(cond, then_bb, else_bb);
  std::vector<Regs> from[2];
  llvm::BasicBlock *ends[2];
  for (unsigned r = 0; r < 2; ++r) {
    b_.SetInsertPoint(r == 0 ? then_bb : else_bb);
    if (r < op.num_regions()) {
      const ir::Block &block = *op.region(r);
      lower_block(block);
      if (const ir::Operation *y = block.terminator(); y && y->opcode() == Opcode::Yield)
        for (unsigned i = 0; i < y->num_operands(); ++i)
          from[r].push_back(carried_regs(y->operand(i), op.result(i)));
    }
    ends[r] = b_.GetInsertBlock();
    b_.CreateBr(merge);
  }
  b_.SetInsertPoint(merge);
  for (unsigned i = 0; i < op.num_results(); ++i) {
    Regs out;
    for (size_t r = 0; r < from[0][i].size(); ++r) {
      llvm::PHINode *phi = b_.CreatePHI(from[0][i][r]->getType(), 2);
      phi->addIncoming(from[0][i][r], ends[0]);
      phi->addIncoming(from[1][i][r], ends[1]);
      out.push_back(phi);
    }
    values_[op.result(i)] = out;
  }
}

KernelEmitter::Regs &KernelEmitter::regs(const ir::Value *v) {
  auto it = values_.find(v);
  if (it == values_.end())
    throw LoweringError("nvptx: internal error: a value used before it is lowered");
  return it->second;
}

llvm::Value *KernelEmitter::scalar(const ir::Value *v) { return regs(v).front(); }

const Layout &KernelEmitter::layout_of(const ir::Value *v) {
  auto it = layouts_.find(v);
  if (it != layouts_.end())
    return it->second;
  Layout l;
  const ir::Operation *def = v->def();
  for (int64_t d : v->type().shape())
    if (!is_pow2(d))
      throw LoweringError((def ? def->loc().str() : kernel_.loc().str()) +
                          ": error: nvptx: " + v->type().str() +
                          ": tile dimensions must be powers of two on this target");
  const std::string *text =
      def && def->num_results() == 1 ? def->attr_as<std::string>("nvptx.layout") : nullptr;
  std::string carried;
  if (const ir::Operation *loop = carrier(v, &carried); loop)
    text = &carried;
  if (!text || !Layout::parse(*text, l))
    l = default_layout(v->type().shape(), num_warps_);
  // Every element of a tile is a register of its thread, and the code is straight-line over
  // them: past this many, code size and compile time explode (and registers spill anyway).
  constexpr int64_t kMaxElementsPerThread = 512;
  if (const int64_t n = registers_per_thread(l, v->type().shape()); n > kMaxElementsPerThread)
    throw LoweringError((def ? def->loc().str() : kernel_.loc().str()) +
                        ": error: nvptx: " + v->type().str() + " puts " + std::to_string(n) +
                        " elements on each of " + std::to_string(32 * num_warps_) +
                        " threads (at most " + std::to_string(kMaxElementsPerThread) +
                        "): use a smaller tile, or more warps (target option num_warps)");
  if (l.rank() != v->type().rank() ||
      (l.mma ? num_warps_ % l.num_warps() != 0 : l.num_warps() != num_warps_))
    throw LoweringError((def ? def->loc().str() : kernel_.loc().str()) + ": error: nvptx: layout " +
                        l.str() + " does not fit " + v->type().str() + " with " +
                        std::to_string(num_warps_) + " warps");
  return layouts_[v] = l;
}

const ir::Operation *KernelEmitter::carrier(const ir::Value *v, std::string *layout) {
  // A loop-carried tile (the for's result or its body's argument) in the layout the planning
  // pass chose for it: nvptx.carried lists one per carried value, ';'-separated.
  const ir::Operation *loop = v->def();
  int64_t index = -1;
  if (loop && loop->opcode() == Opcode::For) {
    index = v->index();
  } else if (!loop && v->owner() && v->owner()->parent() &&
             v->owner()->parent()->opcode() == Opcode::For) {
    loop = v->owner()->parent();
    index = static_cast<int64_t>(v->index()) - 1; // argument 0 is the induction variable
  }
  const std::string *all = index >= 0 ? loop->attr_as<std::string>("nvptx.carried") : nullptr;
  if (!all)
    return nullptr;
  size_t start = 0;
  for (int64_t i = 0; i < index && start != std::string::npos; ++i)
    start =
        all->find(';', start) == std::string::npos ? std::string::npos : all->find(';', start) + 1;
  if (start == std::string::npos)
    return nullptr;
  *layout = all->substr(start, all->find(';', start) - start);
  return loop;
}

KernelEmitter::Regs KernelEmitter::carried_regs(const ir::Value *v, const ir::Value *into) {
  return into->type().is_tile() ? regs_in(v, layout_of(into)) : regs(v);
}

bool KernelEmitter::uniform(const ir::Value *v) {
  // Not "every register is the same value": a row broadcast holds one value per thread too.
  // Memoized: x = y * y chains share operands (exponential otherwise).
  if (auto it = uniform_.find(v); it != uniform_.end())
    return it->second;
  const ir::Operation *def = v->def();
  bool is = false;
  if (!def || !(def->flags() & ir::kPure))
    is = false;
  else if (def->opcode() == Opcode::Full || def->opcode() == Opcode::Splat)
    is = true;
  else if ((def->flags() & ir::kElementwise) && !def->num_regions())
    is = std::all_of(def->operands().begin(), def->operands().end(),
                     [&](const ir::Value *x) { return x->type().is_scalar() || uniform(x); });
  return uniform_[v] = is;
}

KernelEmitter::Regs KernelEmitter::regs_in(const ir::Value *v, const Layout &want) {
  Regs &have = regs(v);
  if (!v->type().is_tile() || layout_of(v) == want)
    return have;
  const int64_t n = registers_per_thread(want, v->type().shape());
  if (uniform(v)) // the same in every layout
    return Regs(n, have.front());
  llvm::Value *base = spill(v);
  barrier();
  llvm::Type *t = have.front()->getType();
  Coords &c = coords(want, v->type().shape());
  Regs out;
  for (int64_t r = 0; r < n; ++r)
    out.push_back(b_.CreateLoad(t, shared_at(base, t, linear_index(c, r))));
  return out;
}

KernelEmitter::Coords &KernelEmitter::coords(const Layout &l, const std::vector<int64_t> &shape) {
  std::string key = l.str();
  for (int64_t s : shape)
    key += "x" + std::to_string(s);
  auto it = coords_.find(key);
  if (it != coords_.end())
    return it->second;
  Coords c;
  c.shape = shape;
  c.layout = l;
  // This thread's base coordinates, computed once at the kernel's entry.
  Builder at = at_entry();
  llvm::Value *lane = lane_, *warp = warp_;
  c.base.assign(l.rank(), nullptr);
  if (l.mma) { // layout.h: warp block (w / wn, w % wn), then rows l/4, columns 2(l%4)
    llvm::Value *wn = at.getInt64(l.warps[1]);
    warp = at.CreateURem(warp, at.getInt64(l.num_warps())); // extra warps replicate
    c.base[0] =
        at.CreateAdd(at.CreateMul(at.CreateUDiv(warp, wn), at.getInt64(shape[0] / l.warps[0])),
                     at.CreateLShr(lane, at.getInt64(2)));
    c.base[1] =
        at.CreateAdd(at.CreateMul(at.CreateURem(warp, wn), at.getInt64(shape[1] / l.warps[1])),
                     at.CreateShl(at.CreateAnd(lane, at.getInt64(3)), at.getInt64(1)));
  }
  for (int64_t d : l.mma ? std::vector<int64_t>{} : l.order) {
    c.base[d] =
        at.CreateMul(at.CreateURem(lane, at.getInt64(l.lanes[d])), at.getInt64(l.per_thread[d]));
    lane = at.CreateUDiv(lane, at.getInt64(l.lanes[d]));
  }
  for (int64_t d : l.mma ? std::vector<int64_t>{} : l.order) {
    c.base[d] = at.CreateAdd(c.base[d], at.CreateMul(at.CreateURem(warp, at.getInt64(l.warps[d])),
                                                     at.getInt64(l.lanes[d] * l.per_thread[d])));
    warp = at.CreateUDiv(warp, at.getInt64(l.warps[d]));
  }
  const int64_t n = registers_per_thread(l, c.shape);
  for (int64_t r = 0; r < n; ++r)
    c.offset.push_back(register_offset(l, c.shape, r));
  c.max_base.assign(l.rank(), 0);
  if (l.mma) {
    c.max_base[0] = (l.warps[0] - 1) * (shape[0] / l.warps[0]) + 7;
    c.max_base[1] = (l.warps[1] - 1) * (shape[1] / l.warps[1]) + 6;
  } else {
    for (int d = 0; d < l.rank(); ++d)
      c.max_base[d] = (l.lanes[d] * l.warps[d] - 1) * l.per_thread[d];
  }
  return coords_[key] = c;
}

llvm::Value *KernelEmitter::coord(const Coords &c, int64_t reg, int d) {
  llvm::Value *v = b_.CreateAdd(c.base[d], b_.getInt64(c.offset[reg][d]));
  // Shapes are powers of two: the wrap of a replicated layout is a mask.
  return b_.CreateAnd(v, b_.getInt64(c.shape[d] - 1));
}

llvm::Value *KernelEmitter::linear_index(const Coords &c, int64_t reg) {
  llvm::Value *index = b_.getInt64(0);
  for (int d = 0; d < static_cast<int>(c.shape.size()); ++d)
    index = b_.CreateAdd(b_.CreateMul(index, b_.getInt64(c.shape[d])), coord(c, reg, d));
  return index;
}

void KernelEmitter::record_error(const ir::Operation &op, const std::string &what,
                                 llvm::Value *failed) {
  errors_.push_back(op.loc().str() + ": " + std::string(op.name()) + ": " + what);
  if (speculative_) // computed ahead for an iteration that may not exist (lower_for)
    failed = b_.CreateAnd(failed, speculative_);
  const uint32_t number = static_cast<uint32_t>(errors_.size());
  guarded(failed, [&] { // the first error of the launch wins
    b_.CreateAtomicCmpXchg(status_, b_.getInt32(0), b_.getInt32(number), llvm::MaybeAlign(4),
                           llvm::AtomicOrdering::Monotonic, llvm::AtomicOrdering::Monotonic);
  });
}

void KernelEmitter::guarded(llvm::Value *cond, const std::function<void()> &body) {
  llvm::BasicBlock *then_bb = llvm::BasicBlock::Create(ctx_, "guard", fn_);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "guard.end", fn_);
  b_.CreateCondBr(cond, then_bb, done);
  b_.SetInsertPoint(then_bb);
  body();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

llvm::Value *KernelEmitter::guarded_load(llvm::Value *cond, llvm::Type *t, llvm::Value *ptr,
                                         llvm::Value *otherwise) {
  llvm::BasicBlock *from = b_.GetInsertBlock();
  llvm::BasicBlock *then_bb = llvm::BasicBlock::Create(ctx_, "load", fn_);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "load.end", fn_);
  b_.CreateCondBr(cond, then_bb, done);
  b_.SetInsertPoint(then_bb);
  llvm::Value *v = b_.CreateLoad(t, ptr);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  llvm::PHINode *phi = b_.CreatePHI(t, 2);
  phi->addIncoming(v, then_bb);
  phi->addIncoming(otherwise, from);
  return phi;
}

void KernelEmitter::no_unrolling(llvm::Instruction *back_edge) {
  // A distinct self-referencing loop id, as LLVM's loop metadata requires.
  llvm::Metadata *disable =
      llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")});
  llvm::MDNode *id = llvm::MDNode::getDistinct(ctx_, {nullptr, disable});
  id->replaceOperandWith(0, id);
  back_edge->setMetadata(llvm::LLVMContext::MD_loop, id);
}

KernelEmitter::Regs KernelEmitter::loop(llvm::Value *n, const Regs &init, const LoopBody &body,
                                        bool rolled) {
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *head = llvm::BasicBlock::Create(ctx_, "loop", fn_);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "loop.end", fn_);
  b_.CreateCondBr(b_.CreateICmpSGT(n, b_.getInt64(0)), head, done);
  b_.SetInsertPoint(head);
  llvm::PHINode *i = b_.CreatePHI(b_.getInt64Ty(), 2, "k");
  i->addIncoming(b_.getInt64(0), pre);
  std::vector<llvm::PHINode *> phis;
  Regs carried;
  for (llvm::Value *v : init) {
    phis.push_back(b_.CreatePHI(v->getType(), 2));
    phis.back()->addIncoming(v, pre);
    carried.push_back(phis.back());
  }
  const Regs next_values = body(i, carried);
  llvm::Value *next = b_.CreateAdd(i, b_.getInt64(1));
  llvm::BasicBlock *latch = b_.GetInsertBlock();
  i->addIncoming(next, latch);
  for (size_t j = 0; j < phis.size(); ++j)
    phis[j]->addIncoming(next_values[j], latch);
  llvm::BranchInst *back = b_.CreateCondBr(b_.CreateICmpSLT(next, n), head, done);
  if (rolled)
    no_unrolling(back);
  b_.SetInsertPoint(done);
  Regs out;
  for (size_t j = 0; j < phis.size(); ++j) {
    llvm::PHINode *phi = b_.CreatePHI(init[j]->getType(), 2);
    phi->addIncoming(init[j], pre);
    phi->addIncoming(next_values[j], latch);
    out.push_back(phi);
  }
  return out;
}

} // namespace tl::nvptx
