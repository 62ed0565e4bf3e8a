// nvptx lowering of print: the device's printf (vprintf, which the CUDA driver provides and
// flushes to the host's stdout at the next synchronize).
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

namespace tl::nvptx {
using ir::ScalarKind;

namespace {

/// `text` with printf's conversion character escaped.
std::string escape_percent(const std::string &text) {
  std::string out;
  for (char c : text)
    out += c == '%' ? std::string("%%") : std::string(1, c);
  return out;
}

} // namespace

void KernelEmitter::lower_print(const ir::Operation &op) {
  // One line per scalar, one line per tile element ("program (x, y, z): prefix [i] value", i the
  // row-major index), printed by thread 0 of the program: lines of one tile come out in order,
  // lines of different programs interleave as the hardware runs them.
  llvm::Type *i64 = b_.getInt64Ty(), *ptr = b_.getPtrTy();
  llvm::FunctionCallee vprintf = module_.getOrInsertFunction(
      "vprintf", llvm::FunctionType::get(b_.getInt32Ty(), {ptr, ptr}, false));
  const std::string *p = op.attr_as<std::string>("prefix");
  const std::string prefix = p && !p->empty() ? escape_percent(*p) + " " : "";
  llvm::Value *pid[3] = {
      b_.CreateZExt(special("ctaid.x"), i64),
      b_.CreateZExt(b_.CreateAdd(special("ctaid.y"), grid_base_[1]), i64),
      b_.CreateZExt(b_.CreateAdd(special("ctaid.z"), grid_base_[2]), i64)}; // (run())
  // The arguments' buffer: every field 8 bytes (vprintf aligns each to its size).
  llvm::Type *args_t = llvm::ArrayType::get(i64, 5);
  Builder entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin(), IdentityFolder());
  llvm::Value *args = entry.CreateAlloca(args_t);
  llvm::Value *first_thread = b_.CreateICmpEQ(tid_, llvm::ConstantInt::get(tid_->getType(), 0));
  auto emit = [&](const std::string &format, std::vector<llvm::Value *> fields) {
    llvm::Value *fmt = b_.CreateGlobalStringPtr(format, "tl_print_format", 1, &module_);
    for (size_t i = 0; i < fields.size(); ++i)
      b_.CreateStore(fields[i], b_.CreateConstInBoundsGEP2_32(args_t, args, 0, unsigned(i)));
    b_.CreateCall(vprintf, {b_.CreateAddrSpaceCast(fmt, ptr), b_.CreateAddrSpaceCast(args, ptr)});
  };
  for (const ir::Value *v : op.operands()) {
    const ScalarKind k = v->type().elem();
    const bool fl = ir::is_float(k);
    const char *conv = fl ? "%.9g" : ir::is_signed(k) || k == ScalarKind::I1 ? "%lld" : "%llu";
    // Widened to 8 bytes as printf's varargs are: f64 for floats, i64 for integers.
    auto widen = [&](llvm::Value *x) -> llvm::Value * {
      if (fl)
        return b_.CreateBitCast(b_.CreateFPExt(x, b_.getDoubleTy()), i64);
      return ir::is_signed(k) ? b_.CreateSExt(x, i64) : b_.CreateZExt(x, i64);
    };
    const std::string head = "program (%lld, %lld, %lld): " + prefix;
    if (!v->type().is_tile()) {
      llvm::Value *x = widen(scalar(v));
      guarded(first_thread, [&] { emit(head + conv + "\n", {pid[0], pid[1], pid[2], x}); });
      continue;
    }
    llvm::Type *t = value_type(k, op);
    llvm::Value *base = spill(v);
    barrier(); // every thread's elements are in shared memory
    guarded(first_thread, [&] {
      loop(b_.getInt64(v->type().num_elements()), {}, [&](llvm::Value *i, const Regs &) {
        llvm::Value *x = widen(b_.CreateLoad(t, shared_at(base, t, i)));
        emit(head + "[%lld] " + conv + "\n", {pid[0], pid[1], pid[2], i, x});
        return Regs{};
      });
    });
  }
}

} // namespace tl::nvptx
