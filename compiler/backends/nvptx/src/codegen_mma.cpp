// nvptx lowering of dot on tensor cores: bf16/f16 inputs, f32 accumulation, mma.sync m16n8k16.
// Operands go to shared memory as 16-bit values with an XOR swizzle, fragments come back by
// ldmatrix (transposed for B), and the result stays in the mma accumulator layout (layout.h).
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include <llvm/IR/InlineAsm.h>

namespace tl::nvptx {
using ir::ScalarKind;

namespace {} // namespace

void KernelEmitter::stage_16bit(const ir::Value *v, llvm::Value *buffer, uint64_t offset) {
  const int64_t cols = v->type().shape()[1];
  const ScalarKind k = v->type().elem();
  Coords &c = coords_of(v);
  const Regs &r = regs(v);
  // A thread's run of consecutive columns (inside one 16-byte chunk: runs are aligned) moves as
  // one vector store.
  int64_t run = std::min<int64_t>(c.layout.per_thread[1], 8);
  if (run < 1 || static_cast<int64_t>(r.size()) % run)
    run = 1;
  const int64_t rows = v->type().shape()[0];
  for (int64_t g = 0; g < static_cast<int64_t>(r.size()); g += run) {
    llvm::Value *at = b_.CreateAdd(b_.getInt64(static_cast<int64_t>(offset)),
                                   operand_offset(coord(c, g, 0), coord(c, g, 1), rows, cols));
    llvm::Value *ptr = b_.CreateInBoundsGEP(b_.getInt8Ty(), buffer, at);
    if (run == 1) {
      b_.CreateStore(to_memory(k, r[g]), ptr);
      continue;
    }
    llvm::Value *vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getInt16Ty(), run));
    for (int64_t j = 0; j < run; ++j)
      vec = b_.CreateInsertElement(vec, to_memory(k, r[g + j]), j);
    b_.CreateAlignedStore(vec, ptr, llvm::Align(run * 2));
  }
}

void KernelEmitter::lower_dot_mma(const ir::Operation &op, const Layout &l) {
  const ir::Value *a = op.operand(0), *bv = op.operand(1);
  const int64_t M = a->type().shape()[0], K = a->type().shape()[1], N = bv->type().shape()[1];
  const bool bf16 = a->type().elem() == ScalarKind::BF16;
  const int64_t wn = l.warps[1], SM = M / l.warps[0], SN = N / wn;
  const int64_t TM = SM / 16, TN = SN / 8;
  const uint64_t b_offset = (static_cast<uint64_t>(M * K) * 2 + 15) / 16 * 16;
  const uint64_t bytes = b_offset + static_cast<uint64_t>(K * N) * 2;
  if (bytes > kMaxShared)
    unsupported(op, "operands need " + std::to_string(bytes) + " bytes of shared memory (at most " +
                        std::to_string(kMaxShared) + ")");
  llvm::Value *buffer = scratch_;
  Regs acc;
  auto init_acc = [&] {
    const int64_t n = registers_per_thread(l, op.result()->type().shape());
    acc = op.num_operands() > 2 ? regs_in(op.operand(2), l)
                                : Regs(n, llvm::ConstantFP::get(b_.getFloatTy(), 0.0));
  };
  auto staged = staged_.find(a);
  uint64_t b_at = b_offset;
  if (staged != staged_.end()) { // in a ring slot already (lower_for waited for it)
    init_acc();
    if (uses_wgmma(op)) {
      wgmma_dot(op, staged->second, staged_.at(bv), acc);
      values_[op.result()] = acc;
      return;
    }
    buffer = staged->second;
    b_at = rings_.at(&op).b_offset;
  } else {
    init_acc(); // before the operands: its layout change may go through the same scratch
    buffer = dot_buffer(bytes);
    stage_16bit(a, buffer, 0);
    stage_16bit(bv, buffer, b_at);
    barrier();
  }
  // Per lane: ldmatrix gives lane l the address of row (l % 8) + 8 ((l / 8) % 2) of the 16-row
  // block, at column offset 8 (l / 16): matrices 0..3 are (rows 0-7 | 8-15) x (cols 0-7 | 8-15).
  llvm::Value *warp = b_.CreateURem(warp_, b_.getInt64(l.num_warps())); // extra warps replicate
  llvm::Value *row_block = b_.CreateMul(b_.CreateUDiv(warp, b_.getInt64(wn)), b_.getInt64(SM));
  llvm::Value *col_block = b_.CreateMul(b_.CreateURem(warp, b_.getInt64(wn)), b_.getInt64(SN));
  llvm::Value *lrow = b_.CreateAdd(b_.CreateAnd(lane_, 7),
                                   b_.CreateShl(b_.CreateAnd(b_.CreateLShr(lane_, 3), 1), 3));
  llvm::Value *lcol = b_.CreateShl(b_.CreateLShr(lane_, 4), 3);
  llvm::Value *base = b_.CreatePtrToInt(buffer, b_.getInt64Ty());
  llvm::Type *i32 = b_.getInt32Ty();
  auto ldmatrix = [&](int count, bool trans, llvm::Value *byte_offset) {
    llvm::Value *addr = b_.CreateTrunc(b_.CreateAdd(base, byte_offset), i32);
    std::string text = "ldmatrix.sync.aligned.m8n8.x" + std::to_string(count) +
                       (trans ? ".trans" : "") + ".shared.b16 {";
    std::string constraints;
    for (int j = 0; j < count; ++j) {
      text += (j ? ", $" : "$") + std::to_string(j);
      constraints += "=r,";
    }
    text += "}, [$" + std::to_string(count) + "];";
    constraints += "r,~{memory}";
    auto *fn = llvm::InlineAsm::get(
        llvm::FunctionType::get(llvm::StructType::get(ctx_, std::vector<llvm::Type *>(count, i32)),
                                {i32}, false),
        text, constraints, /*hasSideEffects=*/true);
    llvm::Value *res = b_.CreateCall(fn, {addr});
    Regs out;
    for (int j = 0; j < count; ++j)
      out.push_back(b_.CreateExtractValue(res, static_cast<unsigned>(j)));
    return out;
  };
  const std::string mma = std::string("mma.sync.aligned.m16n8k16.row.col.f32.") +
                          (bf16 ? "bf16.bf16" : "f16.f16") +
                          ".f32 {$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, "
                          "{$10, $11, $12, $13};";
  llvm::Type *f32 = b_.getFloatTy();
  auto *mma_fn = llvm::InlineAsm::get(
      llvm::FunctionType::get(llvm::StructType::get(ctx_, std::vector<llvm::Type *>(4, f32)),
                              {i32, i32, i32, i32, i32, i32, f32, f32, f32, f32}, false),
      mma, "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3", /*hasSideEffects=*/false);
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    std::vector<Regs> af(TM), bf(TN);
    for (int64_t tm = 0; tm < TM; ++tm) {
      llvm::Value *row = b_.CreateAdd(row_block, b_.CreateAdd(lrow, b_.getInt64(tm * 16)));
      af[tm] = ldmatrix(4, false, operand_offset(row, b_.CreateAdd(lcol, b_.getInt64(k0)), M, K));
    }
    // B is [K][N] row-major: transposed 8x8 loads give the "col" fragment; one x4 covers two
    // n8 tiles (matrices 2 and 3 at columns + 8).
    llvm::Value *krow = b_.CreateAdd(lrow, b_.getInt64(k0));
    for (int64_t tn = 0; tn < TN; tn += 2) {
      llvm::Value *col = b_.CreateAdd(col_block, b_.getInt64(tn * 8));
      if (tn + 1 < TN) {
        Regs r = ldmatrix(4, true,
                          b_.CreateAdd(b_.getInt64(static_cast<int64_t>(b_at)),
                                       operand_offset(krow, b_.CreateAdd(col, lcol), K, N)));
        bf[tn] = {r[0], r[1]};
        bf[tn + 1] = {r[2], r[3]};
      } else { // x2: lanes 0-15 give the addresses
        bf[tn] = ldmatrix(
            2, true,
            b_.CreateAdd(b_.getInt64(static_cast<int64_t>(b_at)), operand_offset(krow, col, K, N)));
      }
    }
    for (int64_t tm = 0; tm < TM; ++tm)
      for (int64_t tn = 0; tn < TN; ++tn) {
        const size_t at = static_cast<size_t>((tm * TN + tn) * 4);
        llvm::Value *d =
            b_.CreateCall(mma_fn, {af[tm][0], af[tm][1], af[tm][2], af[tm][3], bf[tn][0], bf[tn][1],
                                   acc[at], acc[at + 1], acc[at + 2], acc[at + 3]});
        for (unsigned e = 0; e < 4; ++e)
          acc[at + e] = b_.CreateExtractValue(d, e);
      }
  }
  values_[op.result()] = acc;
}

} // namespace tl::nvptx
