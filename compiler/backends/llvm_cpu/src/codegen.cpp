// llvm-cpu lowering: kernels, slots, loops, control flow and run-time error paths.
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include "plan_attrs.h"

#include <llvm/IR/MDBuilder.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

namespace tl::llvm_cpu {
using ir::Opcode;
using ir::ScalarKind;

namespace {
llvm::StructType *arg_type(llvm::LLVMContext &c) {
  auto *i64 = llvm::Type::getInt64Ty(c);
  return llvm::StructType::get(c, {llvm::PointerType::get(c, 0), llvm::ArrayType::get(i64, 8),
                                   llvm::ArrayType::get(i64, 8), i64, llvm::Type::getDoubleTy(c)});
}
llvm::StructType *launch_type(llvm::LLVMContext &c) {
  auto *ptr = llvm::PointerType::get(c, 0);
  return llvm::StructType::get(c, {ptr, llvm::ArrayType::get(llvm::Type::getInt64Ty(c), 3), ptr});
}
/// i1 in memory as i8: a load of an i1 becomes a load of its byte and a truncation, a store the
/// byte of its zero extension (what a store of an i1 writes anyway: 0 or 1). LLVM's loop
/// vectorizer does not widen loads and stores of i1, whose width is not its size in memory, so a
/// mask tile read in a loop was read a byte at a time and put together bit by bit (topk's live
/// columns, 16384 x 1024 f32, k = 8: ~254 ms, session 21).
void widen_i1_memory(llvm::Module &m) {
  for (llvm::Function &f : m)
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &inst : llvm::make_early_inc_range(bb)) {
        llvm::IRBuilder<> b(&inst);
        if (auto *ld = llvm::dyn_cast<llvm::LoadInst>(&inst);
            ld && ld->isSimple() && ld->getType()->isIntegerTy(1)) {
          llvm::Value *byte =
              b.CreateAlignedLoad(b.getInt8Ty(), ld->getPointerOperand(), ld->getAlign());
          ld->replaceAllUsesWith(b.CreateTrunc(byte, b.getInt1Ty()));
          ld->eraseFromParent();
        } else if (auto *st = llvm::dyn_cast<llvm::StoreInst>(&inst);
                   st && st->isSimple() && st->getValueOperand()->getType()->isIntegerTy(1)) {
          b.CreateAlignedStore(b.CreateZExt(st->getValueOperand(), b.getInt8Ty()),
                               st->getPointerOperand(), st->getAlign());
          st->eraseFromParent();
        }
      }
}
} // namespace

void lower_module(const ir::Module &module, llvm::Module &out, unsigned vector_bits,
                  const x86::Isa &isa) {
  for (auto &k : module.kernels())
    KernelCodegen(*k, out, vector_bits, isa).run();
  widen_i1_memory(out);
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(out, &os))
    throw std::logic_error("llvm-cpu produced invalid LLVM IR: " + err); // our bug
}

KernelCodegen::KernelCodegen(const ir::Kernel &kernel, llvm::Module &module, unsigned vector_bits,
                             const x86::Isa &isa)
    : kernel_(kernel), uses_(*kernel.body()), module_(module), ctx_(module.getContext()),
      b_(module.getContext()), vector_bits_(vector_bits), isa_(isa) {}

void KernelCodegen::unsupported(const ir::Operation &op, const std::string &what) {
  throw LoweringError(op.loc().str() + ": error: llvm-cpu cannot lower '" + std::string(op.name()) +
                      "': " + what);
}

llvm::Type *KernelCodegen::llvm_type(ScalarKind k, const ir::Operation *where) {
  switch (k) {
  case ScalarKind::I1:
    return b_.getInt1Ty();
  case ScalarKind::I8:
  case ScalarKind::U8:
    return b_.getInt8Ty();
  case ScalarKind::I16:
  case ScalarKind::U16:
    return b_.getInt16Ty();
  case ScalarKind::I32:
  case ScalarKind::U32:
    return b_.getInt32Ty();
  case ScalarKind::I64:
    return b_.getInt64Ty();
  case ScalarKind::F16:
  case ScalarKind::BF16:
  case ScalarKind::F32:
  case ScalarKind::F8E4M3:
  case ScalarKind::F8E5M2:
    return b_.getFloatTy();
  case ScalarKind::F64:
    return b_.getDoubleTy();
  default:
    break;
  }
  const std::string msg =
      "element type " + std::string(ir::scalar_name(k)) + " is not supported by llvm-cpu";
  if (where)
    unsupported(*where, msg);
  throw LoweringError(kernel_.loc().str() + ": error: kernel @" + kernel_.name() + ": " + msg);
}

/// The fp8 roundings other than nearest-even, and any from f64, call the host (tl_cpu_f8_round:
/// reference/numerics itself); loads, stores and the nearest-even rounding from f32 are inline
/// (f8_decode, f8_encode, f8_round_rne: 40x faster, the same bits).
llvm::Value *KernelCodegen::f8_call(const char *name, std::vector<llvm::Value *> args,
                                    llvm::Type *ret) {
  std::vector<llvm::Type *> types;
  for (llvm::Value *a : args)
    types.push_back(a->getType());
  llvm::FunctionCallee f =
      module_.getOrInsertFunction(name, llvm::FunctionType::get(ret, types, false));
  auto *call = b_.CreateCall(f, args);
  call->setDoesNotAccessMemory();
  return call;
}

namespace {
/// What the inline fp8 conversions need of a format (reference/numerics' FormatInfo): mantissa
/// bits, bias, the canonical NaN, the largest finite value, whether it has infinities.
struct F8Info {
  int mbits, bias;
  uint32_t nan;
  float max;
  bool inf;
};
F8Info f8_info(ScalarKind k) {
  return k == ScalarKind::F8E4M3 ? F8Info{3, 7, 0x7f, 448.0f, false}
                                 : F8Info{2, 15, 0x7e, 57344.0f, true};
}
} // namespace

llvm::Value *KernelCodegen::f8_round_rne(ScalarKind k, llvm::Value *v) {
  const F8Info f = f8_info(k);
  llvm::Type *i32 = b_.getInt32Ty(), *f32 = b_.getFloatTy();
  auto c = [&](uint32_t x) { return llvm::ConstantInt::get(i32, x); };
  auto cf = [&](double x) { return llvm::ConstantFP::get(f32, x); };
  const int shift = 23 - f.mbits;
  llvm::Value *x = b_.CreateBitCast(v, i32);
  llvm::Value *sign = b_.CreateAnd(x, c(0x80000000u));
  llvm::Value *a = b_.CreateAnd(x, c(0x7fffffffu));
  llvm::Value *af = b_.CreateBitCast(a, f32);
  // Normal range: round to nearest even on the f32 bits (a carry moves to the next binade).
  llvm::Value *lsb = b_.CreateAnd(b_.CreateLShr(a, shift), c(1));
  llvm::Value *up = b_.CreateAdd(a, b_.CreateAdd(c((1u << (shift - 1)) - 1), lsb));
  llvm::Value *normal = b_.CreateBitCast(b_.CreateAnd(up, c(~((1u << shift) - 1))), f32);
  // Below the smallest normal: a count of subnormal steps, rounded to nearest even (exact
  // scalings by powers of two around llvm.roundeven).
  const double steps = std::ldexp(1.0, f.bias - 1 + f.mbits);
  llvm::Value *sub = b_.CreateFMul(
      b_.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b_.CreateFMul(af, cf(steps))),
      cf(1.0 / steps));
  llvm::Value *r =
      b_.CreateSelect(b_.CreateFCmpOLT(af, cf(std::ldexp(1.0, 1 - f.bias))), sub, normal);
  // Past the largest finite value (an infinity included): NaN (e4m3fn) or infinity (e5m2).
  r = b_.CreateSelect(b_.CreateFCmpOGT(r, cf(f.max)),
                      f.inf ? cf(std::numeric_limits<double>::infinity())
                            : cf(std::numeric_limits<double>::quiet_NaN()),
                      r);
  r = b_.CreateBitCast(b_.CreateOr(b_.CreateBitCast(r, i32), sign), f32);
  r = b_.CreateSelect(b_.CreateFCmpUNO(v, v), v, r);
  f8_rounded_[r] = {k, v};
  return r;
}

/// The fp8 bits of f32 `v` rounded to nearest even, in one pass (a cast to fp8 then stored:
/// f8_round_rne's value, then f8_encode's bits, were 36 vector instructions per 16 lanes in fp8
/// quantization's loop, 25 now; 0.35-0.37 -> 0.43-0.44 of the triad). The same bits: a normal's
/// rounded exponent and mantissa are the top bits of the rounded f32 rebased (a carry moves to the
/// next binade, past the largest finite code to NaN for e4m3fn, to infinity for e5m2); below the
/// smallest normal, the count of subnormal steps rounded to nearest even (it may round up to the
/// smallest normal, whose code is that count); NaN the canonical NaN, unsigned.
llvm::Value *KernelCodegen::f8_encode_rne(ScalarKind k, llvm::Value *v) {
  const F8Info f = f8_info(k);
  llvm::Type *i32 = b_.getInt32Ty(), *f32 = b_.getFloatTy();
  auto c = [&](uint32_t x) { return llvm::ConstantInt::get(i32, x); };
  const int shift = 23 - f.mbits;
  llvm::Value *x = b_.CreateBitCast(v, i32);
  llvm::Value *sign = b_.CreateLShr(b_.CreateAnd(x, c(0x80000000u)), 24);
  llvm::Value *a = b_.CreateAnd(x, c(0x7fffffffu));
  llvm::Value *af = b_.CreateBitCast(a, f32);
  llvm::Value *lsb = b_.CreateAnd(b_.CreateLShr(a, shift), c(1));
  llvm::Value *up = b_.CreateAdd(a, b_.CreateAdd(c((1u << (shift - 1)) - 1), lsb));
  llvm::Value *normal =
      b_.CreateSub(b_.CreateLShr(up, shift), c(uint32_t(127 - f.bias) << f.mbits));
  llvm::Value *steps = b_.CreateFPToSI(
      b_.CreateUnaryIntrinsic(
          llvm::Intrinsic::roundeven,
          b_.CreateFMul(af, llvm::ConstantFP::get(f32, std::ldexp(1.0, f.bias - 1 + f.mbits)))),
      i32);
  llvm::Value *r = b_.CreateSelect(
      b_.CreateFCmpOLT(af, llvm::ConstantFP::get(f32, std::ldexp(1.0, 1 - f.bias))), steps, normal);
  const uint32_t top = f.inf ? 0x7bu : 0x7eu; // the largest finite code
  r = b_.CreateSelect(b_.CreateICmpUGT(r, c(top)), c(f.inf ? 0x7cu : 0x7fu), r);
  r = b_.CreateSelect(b_.CreateFCmpUNO(v, v), c(f.nan), b_.CreateOr(r, sign));
  return b_.CreateTrunc(r, b_.getInt8Ty());
}

llvm::Value *KernelCodegen::f8_encode(ScalarKind k, llvm::Value *v) {
  if (auto it = f8_rounded_.find(v); it != f8_rounded_.end() && it->second.first == k)
    return f8_encode_rne(k, it->second.second);
  const F8Info f = f8_info(k);
  llvm::Type *i32 = b_.getInt32Ty(), *f32 = b_.getFloatTy();
  auto c = [&](uint32_t x) { return llvm::ConstantInt::get(i32, x); };
  llvm::Value *x = b_.CreateBitCast(v, i32);
  llvm::Value *sign = b_.CreateLShr(b_.CreateAnd(x, c(0x80000000u)), 24);
  llvm::Value *a = b_.CreateAnd(x, c(0x7fffffffu));
  llvm::Value *af = b_.CreateBitCast(a, f32);
  // A normal: the f32 exponent rebased to the fp8 bias, the mantissa's top bits.
  llvm::Value *normal =
      b_.CreateSub(b_.CreateLShr(a, 23 - f.mbits), c(uint32_t(127 - f.bias) << f.mbits));
  // A subnormal (or zero): its count of the smallest steps, exact.
  llvm::Value *sub = b_.CreateFPToUI(
      b_.CreateFMul(af, llvm::ConstantFP::get(f32, std::ldexp(1.0, f.bias - 1 + f.mbits))), i32);
  llvm::Value *r = b_.CreateSelect(
      b_.CreateFCmpOLT(af, llvm::ConstantFP::get(f32, std::ldexp(1.0, 1 - f.bias))), sub, normal);
  if (f.inf)
    r = b_.CreateSelect(b_.CreateICmpEQ(a, c(0x7f800000u)), c(0x7cu), r);
  r = b_.CreateSelect(b_.CreateFCmpUNO(v, v), c(f.nan), b_.CreateOr(r, sign));
  return b_.CreateTrunc(r, b_.getInt8Ty());
}

llvm::Value *KernelCodegen::f8_decode(ScalarKind k, llvm::Value *bits) {
  const F8Info f = f8_info(k);
  llvm::Type *i32 = b_.getInt32Ty(), *f32 = b_.getFloatTy();
  auto c = [&](uint32_t x) { return llvm::ConstantInt::get(i32, x); };
  llvm::Value *w = b_.CreateZExt(bits, i32);
  llvm::Value *sign = b_.CreateShl(b_.CreateAnd(w, c(0x80)), 24);
  llvm::Value *mag = b_.CreateAnd(w, c(0x7f));
  // A normal: the exponent rebased from the fp8 bias to f32's, the mantissa moved to the top.
  llvm::Value *normal =
      b_.CreateAdd(b_.CreateShl(mag, 23 - f.mbits), c(uint32_t(127 - f.bias) << 23));
  // A subnormal (exponent field 0): mantissa x the smallest step, exact.
  llvm::Value *sub = b_.CreateBitCast(
      b_.CreateFMul(b_.CreateUIToFP(mag, f32),
                    llvm::ConstantFP::get(f32, std::ldexp(1.0, 1 - f.bias - f.mbits))),
      i32);
  llvm::Value *r = b_.CreateSelect(b_.CreateICmpULT(mag, c(1u << f.mbits)), sub, normal);
  if (f.inf) { // exponent all ones: infinity with a zero mantissa, else NaN
    const uint32_t top = 0x7fu & ~((1u << f.mbits) - 1);
    r = b_.CreateSelect(b_.CreateICmpEQ(mag, c(top)), c(0x7f800000u), r);
    r = b_.CreateSelect(b_.CreateICmpUGT(mag, c(top)), c(0x7fc00000u), r);
  } else { // e4m3fn: all ones is the only NaN
    r = b_.CreateSelect(b_.CreateICmpEQ(mag, c(0x7f)), c(0x7fc00000u), r);
  }
  return b_.CreateBitCast(b_.CreateOr(r, sign), f32);
}

llvm::Value *KernelCodegen::f8_round(ScalarKind k, llvm::Value *v, int mode) {
  if (mode == 0 && v->getType()->isFloatTy())
    return f8_round_rne(k, v);
  llvm::Value *format = b_.getInt32(k == ScalarKind::F8E4M3 ? 0 : 1);
  llvm::Value *r =
      f8_call("tl_cpu_f8_round", {format, b_.getInt32(mode), b_.CreateFPExt(v, b_.getDoubleTy())},
              b_.getDoubleTy());
  return b_.CreateFPTrunc(r, b_.getFloatTy()); // exact: every fp8 value is an f32
}

llvm::Value *KernelCodegen::round_to(ScalarKind k, llvm::Value *v) {
  if (k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2)
    return f8_round(k, v, 0);
  if (k == ScalarKind::F16)
    return b_.CreateFPExt(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getFloatTy());
  if (k == ScalarKind::BF16) // round to nearest even on the bits; NaN stays NaN
    return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(to_storage(k, v), b_.getInt32Ty()), 16),
                            b_.getFloatTy());
  return v;
}

llvm::Value *KernelCodegen::attr_constant(ScalarKind k, const ir::Attr &a) {
  llvm::Type *t = llvm_type(k, nullptr);
  if (ir::is_float(k)) {
    const double d =
        std::holds_alternative<double>(a) ? std::get<double>(a) : double(std::get<int64_t>(a));
    return round_to(k, llvm::ConstantFP::get(t, d)); // constant-folded
  }
  const int64_t v =
      std::holds_alternative<bool>(a) ? int64_t(std::get<bool>(a)) : std::get<int64_t>(a);
  return llvm::ConstantInt::get(t, v, /*IsSigned=*/true);
}

llvm::Type *KernelCodegen::storage_type(ScalarKind k) {
  if (k == ScalarKind::I1)
    return b_.getInt8Ty();
  if (k == ScalarKind::F16 || k == ScalarKind::BF16)
    return b_.getInt16Ty();
  if (k == ScalarKind::F8E4M3 || k == ScalarKind::F8E5M2)
    return b_.getInt8Ty();
  return llvm_type(k, nullptr);
}

llvm::Value *KernelCodegen::to_storage(ScalarKind k, llvm::Value *v) {
  switch (k) {
  case ScalarKind::I1:
    return b_.CreateZExt(v, b_.getInt8Ty());
  case ScalarKind::F16:
    return b_.CreateBitCast(b_.CreateFPTrunc(v, b_.getHalfTy()), b_.getInt16Ty());
  case ScalarKind::F8E4M3:
  case ScalarKind::F8E5M2:
    return f8_encode(k, v);
  case ScalarKind::BF16: {
    llvm::Value *bits = b_.CreateBitCast(v, b_.getInt32Ty());
    llvm::Value *lsb = b_.CreateAnd(b_.CreateLShr(bits, 16), b_.getInt32(1));
    llvm::Value *rounded =
        b_.CreateLShr(b_.CreateAdd(bits, b_.CreateAdd(b_.getInt32(0x7fff), lsb)), 16);
    llvm::Value *is_nan = b_.CreateFCmpUNO(v, v);
    return b_.CreateTrunc(b_.CreateSelect(is_nan, b_.getInt32(0x7fc0), rounded), b_.getInt16Ty());
  }
  default:
    return v;
  }
}

llvm::Value *KernelCodegen::from_storage(ScalarKind k, llvm::Value *bits) {
  switch (k) {
  case ScalarKind::I1:
    return b_.CreateICmpNE(bits, b_.getInt8(0));
  case ScalarKind::F16:
    return b_.CreateFPExt(b_.CreateBitCast(bits, b_.getHalfTy()), b_.getFloatTy());
  case ScalarKind::BF16:
    return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(bits, b_.getInt32Ty()), 16),
                            b_.getFloatTy());
  case ScalarKind::F8E4M3:
  case ScalarKind::F8E5M2:
    return f8_decode(k, bits);
  default:
    return bits;
  }
}

KernelCodegen::Slot KernelCodegen::new_slot(const ir::Type &t, llvm::Type *elem) {
  if (!elem)
    elem = llvm_type(t.elem(), nullptr);
  const int64_t n = t.num_elements();
  llvm::IRBuilder<> eb(entry_, entry_->begin());
  auto *ptr = eb.CreateAlloca(elem, eb.getInt64(n));
  ptr->setAlignment(llvm::Align(64));
  return Slot{ptr, elem, n};
}

KernelCodegen::Slot &KernelCodegen::slot(const ir::Value *v) {
  auto it = slots_.find(v);
  if (it == slots_.end())
    it = slots_.emplace(v, new_slot(v->type(), raw_storage(v))).first;
  return it->second;
}

llvm::Type *KernelCodegen::raw_storage(const ir::Value *v) {
  const ir::Operation *def = v->def();
  if (!def || !v->type().is_tile() || plan::held_as_stored(v->type().elem()) ||
      !(def->attr(plan::kStridedView) || def->attr(plan::kTransposeAt) ||
        (def->opcode() == Opcode::Load && only_stored(v))))
    return nullptr;
  return storage_type(v->type().elem());
}

bool KernelCodegen::only_stored(const ir::Value *v) const {
  for (const ir::Operation *u : uses_.users(v)) {
    if (u->opcode() == Opcode::Reshape || u->opcode() == Opcode::ExpandDims) {
      if (!only_stored(u->result()))
        return false;
    } else if (u->opcode() != Opcode::Store || u->operand(u->num_operands() - 1) != v ||
               std::count(u->operands().begin(), u->operands().end(), v) != 1) {
      return false;
    }
  }
  return true;
}

llvm::Value *KernelCodegen::elem_ptr(const Slot &s, llvm::Value *index) {
  return b_.CreateInBoundsGEP(s.elem, s.ptr, index);
}

llvm::Value *KernelCodegen::scalar(const ir::Value *v) {
  Slot &s = slot(v);
  return b_.CreateLoad(s.elem, s.ptr);
}

/// `rolled`: the loop is not unrolled before it is vectorized (llvm.loop.unroll.disable). A short
/// lane loop (a streamed row of 32 f32) was otherwise unrolled into scalar lanes that SLP did not
/// put back together (each lane inserted into its chunk's vector one by one).
void KernelCodegen::loop(llvm::Value *begin, llvm::Value *end, const IndexFn &body,
                         const char *name, bool rolled) {
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  auto *head = llvm::BasicBlock::Create(ctx_, std::string(name) + ".head", fn_);
  auto *bodybb = llvm::BasicBlock::Create(ctx_, std::string(name) + ".body", fn_);
  auto *exit = llvm::BasicBlock::Create(ctx_, std::string(name) + ".exit", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode *i = b_.CreatePHI(b_.getInt64Ty(), 2, name);
  i->addIncoming(begin, pre);
  b_.CreateCondBr(b_.CreateICmpSLT(i, end), bodybb, exit);
  b_.SetInsertPoint(bodybb);
  body(i);
  llvm::Value *next = b_.CreateAdd(i, i64(1), "", /*NUW=*/true, /*NSW=*/true);
  i->addIncoming(next, b_.GetInsertBlock());
  llvm::BranchInst *back = b_.CreateBr(head);
  if (rolled) {
    llvm::MDNode *disable =
        llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")});
    llvm::MDNode *id = llvm::MDNode::getDistinct(ctx_, {nullptr, disable});
    id->replaceOperandWith(0, id);
    back->setMetadata(llvm::LLVMContext::MD_loop, id);
  }
  b_.SetInsertPoint(exit);
}

void KernelCodegen::versions(llvm::Value *cond, const std::function<void(bool)> &emit,
                             const char *name) {
  if (!cond) {
    emit(false);
    return;
  }
  auto *yes = llvm::BasicBlock::Create(ctx_, std::string(name) + ".if", fn_);
  auto *no = llvm::BasicBlock::Create(ctx_, std::string(name) + ".else", fn_);
  auto *done = llvm::BasicBlock::Create(ctx_, std::string(name) + ".joined", fn_);
  b_.CreateCondBr(cond, yes, no);
  b_.SetInsertPoint(yes);
  emit(true);
  b_.CreateBr(done);
  b_.SetInsertPoint(no);
  emit(false);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

void KernelCodegen::loop(int64_t n, const IndexFn &body, const char *name, bool rolled) {
  loop(i64(0), i64(n), body, name, rolled);
}

void KernelCodegen::fail_if(llvm::Value *cond, const ir::Operation &op, const std::string &what,
                            llvm::Value *lane, llvm::Value *index) {
  auto *bad = llvm::BasicBlock::Create(ctx_, "fault", fn_);
  auto *ok = llvm::BasicBlock::Create(ctx_, "ok", fn_);
  b_.CreateCondBr(cond, bad, ok, llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20));
  b_.SetInsertPoint(bad);
  llvm::Value *msg = b_.CreateGlobalStringPtr(op.loc().str() + ": error: " + what);
  auto *ptr = b_.getPtrTy();
  auto *i64t = b_.getInt64Ty();
  llvm::FunctionCallee report = module_.getOrInsertFunction(
      "tl_cpu_report_error",
      llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, i64t, i64t, i64t, i64t, i64t}, false));
  llvm::Value *host = b_.CreateLoad(ptr, b_.CreateStructGEP(launch_type(ctx_), launch_, 2));
  b_.CreateCall(report, {host, msg, pid_[0], pid_[1], pid_[2], lane ? lane : i64(-1),
                         index ? b_.CreateSExtOrTrunc(index, i64t) : i64(-1)});
  b_.CreateBr(fail_);
  b_.SetInsertPoint(ok);
}

/// Field of kernel argument `arg`: 0 data, 1 shape[dim], 2 strides[dim], 3 i, 4 f.
llvm::Value *KernelCodegen::arg_field(unsigned arg, unsigned field, llvm::Value *dim) {
  auto *ptr = b_.getPtrTy();
  llvm::Value *args = b_.CreateLoad(ptr, b_.CreateStructGEP(launch_type(ctx_), launch_, 0));
  llvm::Value *a = b_.CreateConstInBoundsGEP1_64(arg_type(ctx_), args, arg);
  if (field == 0)
    return b_.CreateLoad(ptr, b_.CreateStructGEP(arg_type(ctx_), a, 0));
  if (field == 3)
    return b_.CreateLoad(b_.getInt64Ty(), b_.CreateStructGEP(arg_type(ctx_), a, 3));
  if (field == 4)
    return b_.CreateLoad(b_.getDoubleTy(), b_.CreateStructGEP(arg_type(ctx_), a, 4));
  llvm::Value *gep = b_.CreateInBoundsGEP(arg_type(ctx_), a, {i64(0), b_.getInt32(field), dim});
  return b_.CreateLoad(b_.getInt64Ty(), gep);
}

void KernelCodegen::run() {
  auto *ptr = b_.getPtrTy();
  auto *i64t = b_.getInt64Ty();
  auto *fty = llvm::FunctionType::get(b_.getInt32Ty(), {ptr, i64t, i64t, i64t}, false);
  fn_ = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, "tl_kernel_" + kernel_.name(),
                               module_);
  fn_->addFnAttr(llvm::Attribute::NoUnwind);
  launch_ = fn_->getArg(0);
  for (int i = 0; i < 3; ++i)
    pid_[i] = fn_->getArg(1 + i);
  entry_ = llvm::BasicBlock::Create(ctx_, "entry", fn_);
  fail_ = llvm::BasicBlock::Create(ctx_, "fail", fn_);
  b_.SetInsertPoint(fail_);
  b_.CreateRet(b_.getInt32(1));
  auto *start = llvm::BasicBlock::Create(ctx_, "start", fn_);
  b_.SetInsertPoint(start);
  // Scalar arguments are copied into slots; tensors are read through the launch block.
  const auto &args = kernel_.body()->arguments();
  for (unsigned i = 0; i < args.size(); ++i) {
    arg_index_[args[i].get()] = i;
    const ir::Type &t = args[i]->type();
    if (t.is_tensor()) {
      llvm_type(t.elem(), nullptr); // refuse unsupported element types up front
      continue;
    }
    Slot &s = slot(args[i].get());
    llvm::Value *v = ir::is_float(t.elem())
                         ? round_to(t.elem(), b_.CreateFPCast(arg_field(i, 4, nullptr), s.elem))
                         : b_.CreateTrunc(arg_field(i, 3, nullptr), s.elem);
    b_.CreateStore(v, s.ptr);
  }
  lower_block(*kernel_.body(), nullptr);
  b_.SetInsertPoint(entry_);
  b_.CreateBr(start);
}

void KernelCodegen::lower_block(const ir::Block &block, const ir::Operation *parent) {
  open_blocks_.push_back(&block);
  struct Close {
    std::vector<const ir::Block *> &open;
    ~Close() { open.pop_back(); }
  } close{open_blocks_};
  for (auto &op : block.ops()) {
    if (op->opcode() == Opcode::Return) {
      b_.CreateRet(b_.getInt32(0));
      return;
    }
    if (op->opcode() == Opcode::Yield)
      return; // copied by the parent (copy_yield)
    if (plan::lowered_elsewhere(*op))
      continue; // at its fused store, per lane by its users, or in its producer's loop
    if (op->opcode() == Opcode::Store && op->attr(plan::kFuse)) {
      const ir::Operation *second = paired_store(*op);
      if (second)
        lower_fused_pair(*op, *second);
      else
        lower_fused_store(fused_loop(*op));
    } else {
      lower_op(*op);
    }
  }
}

void KernelCodegen::lower_op(const ir::Operation &op) {
  switch (op.opcode()) {
  case Opcode::For:
    return lower_for(op);
  case Opcode::If:
    return lower_if(op);
  case Opcode::Print:
  case Opcode::Assert:
    return lower_debug(op);
  case Opcode::Load:
  case Opcode::Store:
    return lower_block_access(op);
  case Opcode::Gather:
  case Opcode::Scatter:
  case Opcode::AtomicAdd:
    return lower_indexed(op);
  case Opcode::Dot:
    return lower_dot(op);
  case Opcode::Reduce:
  case Opcode::Scan:
    return lower_reduce_scan(op);
  case Opcode::Splat:
  case Opcode::Broadcast:
  case Opcode::Reshape:
  case Opcode::Transpose:
  case Opcode::Slice:
  case Opcode::ExpandDims:
    return lower_shape(op);
  default:
    break;
  }
  if (op.flags() & ir::kElementwise)
    return lower_elementwise(op);
  lower_source(op);
}

/// Copies a region's yielded values into `targets`, through temporaries when a yielded value
/// is another target (a swap of carried values).
/// A slot's pointer may be a view of a tensor (cpu.view: a load read in place), aligned only
/// to its elements; copies from it must not assume the slots' 64 bytes (an if yielding a
/// loaded tile segfaulted in a vmovaps; found by RandomProgramsMatchTheInterpreter).
llvm::MaybeAlign KernelCodegen::element_align(const Slot &s) const {
  return llvm::MaybeAlign(module_.getDataLayout().getABITypeAlign(s.elem));
}

void KernelCodegen::copy_yield(const ir::Operation &yield, const std::vector<Slot> &targets) {
  std::vector<Slot> sources;
  for (const ir::Value *v : yield.operands())
    sources.push_back(slot(v));
  for (size_t i = 0; i < sources.size(); ++i)
    for (size_t j = 0; j < targets.size(); ++j)
      if (i != j && sources[i].ptr == targets[j].ptr) {
        Slot tmp = new_slot(yield.operand(i)->type());
        b_.CreateMemCpy(tmp.ptr, llvm::MaybeAlign(64), sources[i].ptr, element_align(sources[i]),
                        module_.getDataLayout().getTypeAllocSize(tmp.elem) * tmp.n);
        sources[i] = tmp;
      }
  for (size_t i = 0; i < sources.size(); ++i)
    if (sources[i].ptr != targets[i].ptr)
      b_.CreateMemCpy(targets[i].ptr, llvm::MaybeAlign(64), sources[i].ptr,
                      element_align(sources[i]),
                      module_.getDataLayout().getTypeAllocSize(targets[i].elem) * targets[i].n);
}

void KernelCodegen::lower_for(const ir::Operation &op) {
  const ir::Block &body = *op.region(0);
  const ScalarKind it = op.operand(0)->type().elem();
  const bool is_signed = ir::is_signed(it);
  llvm::Value *lb = scalar(op.operand(0)), *ub = scalar(op.operand(1)),
              *step = scalar(op.operand(2));
  fail_if(b_.CreateICmpSLE(step, llvm::ConstantInt::get(step->getType(), 0)), op,
          "for step must be positive", nullptr, b_.CreateSExt(step, b_.getInt64Ty()));
  std::vector<Slot> carried;
  for (size_t i = 0; i < op.num_results(); ++i) {
    Slot &s = slot(body.argument(1 + i));
    slots_[op.result(i)] = s; // the results are the carried values after the last trip
    carried.push_back(s);
  }
  {
    std::vector<Slot> inits;
    for (size_t i = 3; i < op.num_operands(); ++i)
      inits.push_back(slot(op.operand(i)));
    for (size_t i = 0; i < inits.size(); ++i)
      if (inits[i].ptr != carried[i].ptr)
        b_.CreateMemCpy(carried[i].ptr, llvm::MaybeAlign(64), inits[i].ptr, element_align(inits[i]),
                        module_.getDataLayout().getTypeAllocSize(inits[i].elem) * inits[i].n);
  }
  // A carried tile updated by one lane-wise op (dot with the carried value as accumulator, or an
  // elementwise op) and used nowhere else is updated in place: no copy per trip.
  const ir::Operation *yield = body.terminator();
  for (size_t i = 0; i < carried.size(); ++i) {
    const ir::Value *arg = body.argument(1 + i);
    const ir::Operation *def = yield->operand(i)->def();
    if (!def || def->parent() != &body || slots_.count(yield->operand(i)))
      continue;
    const bool lanewise =
        (def->opcode() == Opcode::Dot && def->num_operands() == 3 && def->operand(2) == arg) ||
        ((def->flags() & ir::kElementwise) &&
         std::find(def->operands().begin(), def->operands().end(), arg) != def->operands().end());
    if (!lanewise || def->result()->type() != arg->type())
      continue;
    size_t uses = 0;
    ir::walk(const_cast<ir::Block *>(&body), [&](ir::Operation *o) {
      uses += std::count(o->operands().begin(), o->operands().end(), arg);
    });
    if (uses == 1)
      slots_[yield->operand(i)] = carried[i];
  }
  Slot &iv = slot(body.argument(0));
  b_.CreateStore(lb, iv.ptr);
  auto *head = llvm::BasicBlock::Create(ctx_, "for.head", fn_);
  auto *bodybb = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
  auto *exit = llvm::BasicBlock::Create(ctx_, "for.exit", fn_);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::Value *cur = b_.CreateLoad(iv.elem, iv.ptr);
  b_.CreateCondBr(is_signed ? b_.CreateICmpSLT(cur, ub) : b_.CreateICmpULT(cur, ub), bodybb, exit);
  b_.SetInsertPoint(bodybb);
  lower_block(body, &op);
  copy_yield(*body.terminator(), carried);
  // iv + step; the loop ends when that would wrap around.
  llvm::Value *now = b_.CreateLoad(iv.elem, iv.ptr);
  llvm::Intrinsic::ID add_ov =
      is_signed ? llvm::Intrinsic::sadd_with_overflow : llvm::Intrinsic::uadd_with_overflow;
  llvm::Value *sum = b_.CreateBinaryIntrinsic(add_ov, now, step);
  b_.CreateStore(b_.CreateExtractValue(sum, 0), iv.ptr);
  b_.CreateCondBr(b_.CreateExtractValue(sum, 1), exit, head);
  b_.SetInsertPoint(exit);
}

void KernelCodegen::lower_if(const ir::Operation &op) {
  std::vector<Slot> results;
  for (size_t i = 0; i < op.num_results(); ++i)
    results.push_back(slot(op.result(i)));
  llvm::Value *cond = scalar(op.operand(0));
  auto *then_bb = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
  auto *else_bb = llvm::BasicBlock::Create(ctx_, "if.else", fn_);
  auto *join = llvm::BasicBlock::Create(ctx_, "if.join", fn_);
  b_.CreateCondBr(cond, then_bb, else_bb);
  for (unsigned r = 0; r < 2; ++r) {
    b_.SetInsertPoint(r == 0 ? then_bb : else_bb);
    if (r < op.num_regions()) {
      lower_block(*op.region(r), &op);
      copy_yield(*op.region(r)->terminator(), results);
    }
    b_.CreateBr(join);
  }
  b_.SetInsertPoint(join);
}

} // namespace tl::llvm_cpu
