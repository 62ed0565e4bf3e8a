// nvptx lowering of dot off the tensor cores: one fused multiply-add chain per result element
// over k in ascending order (ir.h's exact order, which the relaxed contract allows too).
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <map>

namespace tl::nvptx {
using ir::ScalarKind;

namespace {
// The dots' own double buffers are static shared memory (48 KiB at most in all): 32 KiB of them.
constexpr uint64_t kMaxDoubleBuffer = 32 * 1024;
} // namespace

llvm::Value *KernelEmitter::dot_buffer(uint64_t bytes) {
  if (static_shared_bytes_ + 2 * bytes <= kMaxDoubleBuffer) {
    // Two buffers of its own, alternating per execution (a phase variable that mem2reg turns
    // into a loop phi): execution i writes buffer i % 2 after the barrier of execution i - 1,
    // which every warp reaches only after its reads of execution i - 2 (the same buffer), so
    // the barrier before the writes goes; one per K step is left.
    auto *buffers = new llvm::GlobalVariable(
        module_, llvm::ArrayType::get(b_.getInt8Ty(), 2 * bytes), false,
        llvm::GlobalValue::InternalLinkage,
        llvm::UndefValue::get(llvm::ArrayType::get(b_.getInt8Ty(), 2 * bytes)), "tl_mma", nullptr,
        llvm::GlobalValue::NotThreadLocal, 3);
    buffers->setAlignment(llvm::Align(16));
    static_shared_bytes_ += 2 * bytes;
    Builder entry = at_entry();
    llvm::AllocaInst *phase = entry.CreateAlloca(b_.getInt64Ty());
    entry.CreateStore(entry.getInt64(0), phase);
    llvm::Value *p = b_.CreateLoad(b_.getInt64Ty(), phase);
    b_.CreateStore(b_.CreateXor(p, 1), phase);
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), buffers,
                                b_.CreateMul(p, b_.getInt64(static_cast<int64_t>(bytes))));
  }
  need_shared(bytes);
  barrier(); // earlier readers of the buffer are done
  shared_in_use_ = true;
  return scratch_;
}

llvm::Value *KernelEmitter::round_dot_input(const std::string *precision, llvm::Value *x) {
  if (!precision || *precision == "ieee")
    return x;
  if (*precision == "bf16")
    return round_to(ScalarKind::BF16, x);
  // tf32: 10 fraction bits, to nearest even (NaN and infinities kept).
  llvm::Value *bits = b_.CreateBitCast(x, b_.getInt32Ty());
  llvm::Value *lsb = b_.CreateAnd(b_.CreateLShr(bits, 13), b_.getInt32(1));
  llvm::Value *r =
      b_.CreateAnd(b_.CreateAdd(bits, b_.CreateAdd(lsb, b_.getInt32(0xfff))), b_.getInt32(~0x1fff));
  llvm::Value *special =
      b_.CreateICmpEQ(b_.CreateAnd(bits, b_.getInt32(0x7f800000)), b_.getInt32(0x7f800000));
  return b_.CreateBitCast(b_.CreateSelect(special, bits, r), b_.getFloatTy());
}

void KernelEmitter::lower_dot(const ir::Operation &op) {
  const ir::Value *a = op.operand(0), *bv = op.operand(1);
  const int64_t M = a->type().shape()[0], K = a->type().shape()[1], N = bv->type().shape()[1];
  const ScalarKind ak = a->type().elem(), acc = op.result()->type().elem();
  llvm::Type *at = value_type(ak, op), *ct = value_type(acc, op);
  const std::string *precision = op.attr_as<std::string>("input_precision");
  const std::string *order = op.attr_as<std::string>("order");
  const Layout &rl = layout_of(op.result());
  if (rl.mma && (ak == ScalarKind::BF16 || ak == ScalarKind::F16) && acc == ScalarKind::F32 &&
      !(order && *order == "exact"))
    return lower_dot_mma(op, rl);
  if (!rl.mma && rl.rank() == 2 && ak == ScalarKind::F32 && bv->type().elem() == ScalarKind::F32 &&
      acc == ScalarKind::F32)
    return lower_dot_fma(op);
  const uint64_t a_bytes =
      static_cast<uint64_t>(M * K) * module_.getDataLayout().getTypeAllocSize(at);
  // Other types: both operands in shared memory row-major, then each result element is one
  // fma chain over k in ascending order, scalar loads.
  Coords &c = coords_of(op.result());
  const size_t n = registers_per_thread(c.layout, c.shape);
  // The accumulator first: its layout change goes through the scratch the operands take next.
  const Regs init = op.num_operands() > 2 ? regs_in(op.operand(2), c.layout)
                                          : Regs(n, constant(acc, ir::Attr(int64_t(0)), op));
  llvm::Value *sa = spill(a);
  llvm::Value *sb = spill(bv, (a_bytes + 15) / 16 * 16);
  barrier();
  std::vector<llvm::Value *> row(n), col(n);
  for (size_t r = 0; r < n; ++r) {
    row[r] = coord(c, static_cast<int64_t>(r), 0);
    col[r] = coord(c, static_cast<int64_t>(r), 1);
  }
  Regs res = loop(b_.getInt64(K), init, [&](llvm::Value *kk, const Regs &cur) -> Regs {
    Regs next;
    for (size_t r = 0; r < n; ++r) {
      llvm::Value *x = b_.CreateLoad(
          at, shared_at(sa, at, b_.CreateAdd(b_.CreateMul(row[r], b_.getInt64(K)), kk)));
      llvm::Value *y = b_.CreateLoad(
          at, shared_at(sb, at, b_.CreateAdd(b_.CreateMul(kk, b_.getInt64(N)), col[r])));
      if (ir::is_float(acc)) {
        x = round_dot_input(precision, x);
        y = round_dot_input(precision, y);
        if (ct != at) {
          x = b_.CreateFPExt(x, ct);
          y = b_.CreateFPExt(y, ct);
        }
        next.push_back(
            round_to(acc, b_.CreateIntrinsic(llvm::Intrinsic::fma, {ct}, {x, y, cur[r]})));
      } else {
        const bool s = ir::is_signed(ak);
        x = s ? b_.CreateSExt(x, ct) : b_.CreateZExt(x, ct);
        y = s ? b_.CreateSExt(y, ct) : b_.CreateZExt(y, ct);
        next.push_back(b_.CreateAdd(cur[r], b_.CreateMul(x, y)));
      }
    }
    return next;
  });
  values_[op.result()] = res;
}

KernelEmitter::FmaRuns KernelEmitter::fma_runs(const Coords &c, int64_t va, int64_t vb) {
  std::map<int64_t, int64_t> rows, cols; // run start offset -> its index
  FmaRuns out;
  for (const std::vector<int64_t> &off : c.offset) {
    const int64_t dm = off[0], dn = off[1];
    rows.emplace(dm - dm % va, static_cast<int64_t>(rows.size()));
    cols.emplace(dn - dn % vb, static_cast<int64_t>(cols.size()));
    out.row.push_back({rows.at(dm - dm % va), dm % va});
    out.col.push_back({cols.at(dn - dn % vb), dn % vb});
  }
  out.m.resize(rows.size());
  out.n.resize(cols.size());
  for (auto [off, i] : rows)
    out.m[i] = b_.CreateAnd(b_.CreateAdd(c.base[0], b_.getInt64(off)), b_.getInt64(c.shape[0] - 1));
  for (auto [off, i] : cols)
    out.n[i] = b_.CreateAnd(b_.CreateAdd(c.base[1], b_.getInt64(off)), b_.getInt64(c.shape[1] - 1));
  return out;
}

void KernelEmitter::fma_step(const FmaRuns &runs, const std::vector<Regs> &x,
                             const std::vector<Regs> &y, Regs &acc) {
  for (size_t r = 0; r < acc.size(); ++r)
    acc[r] = b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()},
                                {x[runs.row[r].first][runs.row[r].second],
                                 y[runs.col[r].first][runs.col[r].second], acc[r]});
}

void KernelEmitter::lower_dot_fma(const ir::Operation &op) {
  const ir::Value *a = op.operand(0), *bv = op.operand(1);
  const int64_t M = a->type().shape()[0], K = a->type().shape()[1], N = bv->type().shape()[1];
  const std::string *precision = op.attr_as<std::string>("input_precision");
  const uint64_t b_offset = (static_cast<uint64_t>(M * K) * 4 + 15) / 16 * 16;
  const uint64_t bytes = b_offset + static_cast<uint64_t>(K * N) * 4;
  if (bytes > kMaxShared)
    unsupported(op, "operands need " + std::to_string(bytes) + " bytes of shared memory (at most " +
                        std::to_string(kMaxShared) + ")");
  Coords &c = coords_of(op.result());
  const Layout &l = c.layout;
  // A thread's rows (columns) come in aligned runs of per_thread: 4 of them are one 16-byte read.
  const int64_t va = l.per_thread[0] % 4 == 0 ? 4 : 1, vb = l.per_thread[1] % 4 == 0 ? 4 : 1;
  // A^T: element (m, k) at k M + m, its 16-byte chunks XOR-swizzled by k / 4, so that a warp
  // storing 8 consecutive groups of 4 k of one row of A hits 8 bank groups (the reads, all at one
  // k, see a permutation of the chunks).
  const int64_t swizzle = va == 4 ? std::min<int64_t>(8, M / 4) - 1 : 0;
  // x: (k / 4) & swizzle, the same for 4 consecutive k (computed once for them in the k loop).
  auto a_index = [&](llvm::Value *m, llvm::Value *k, llvm::Value *x) {
    llvm::Value *row = b_.CreateMul(k, b_.getInt64(M));
    if (!swizzle)
      return b_.CreateAdd(row, m);
    llvm::Value *chunk = b_.CreateXor(b_.CreateLShr(m, 2), x);
    return b_.CreateAdd(row, b_.CreateAdd(b_.CreateShl(chunk, 2), b_.CreateAnd(m, 3)));
  };
  auto swizzle_of = [&](llvm::Value *k) {
    return b_.CreateAnd(b_.CreateLShr(k, 2), b_.getInt64(swizzle));
  };
  llvm::Type *f32 = b_.getFloatTy();
  const int64_t n = registers_per_thread(l, c.shape);
  if (auto staged = staged_.find(a); staged != staged_.end()) // in a ring slot (lower_for)
    return lower_dot_fma_staged(op, staged->second, staged_.at(bv));
  // The accumulator first: its layout change goes through the scratch, which dot_buffer may
  // return for the operands (converted after them, it overwrote them: attention's P @ V at head
  // dimension 64 computed zeros).
  const Regs init =
      op.num_operands() > 2 ? regs_in(op.operand(2), l) : Regs(n, llvm::ConstantFP::get(f32, 0.0));
  llvm::Value *sa = dot_buffer(bytes);
  llvm::Value *sb =
      b_.CreateInBoundsGEP(b_.getInt8Ty(), sa, b_.getInt64(static_cast<int64_t>(b_offset)));
  {
    Coords &ca = coords_of(a);
    const Regs &ra = regs(a);
    for (size_t r = 0; r < ra.size(); ++r) {
      llvm::Value *k = coord(ca, static_cast<int64_t>(r), 1);
      b_.CreateStore(
          ra[r],
          shared_at(sa, f32, a_index(coord(ca, static_cast<int64_t>(r), 0), k, swizzle_of(k))));
    }
    Coords &cb = coords_of(bv);
    const Regs &rb = regs(bv);
    for (size_t r = 0; r < rb.size(); ++r)
      b_.CreateStore(rb[r], shared_at(sb, f32, linear_index(cb, static_cast<int64_t>(r))));
  }
  barrier();
  const FmaRuns runs = fma_runs(c, va, vb);
  const std::vector<llvm::Value *> &run_m = runs.m, &run_n = runs.n;
  auto read = [&](llvm::Value *base, llvm::Value *index, int64_t width) {
    std::vector<llvm::Value *> out;
    llvm::Value *ptr = shared_at(base, f32, index);
    if (width == 1) {
      out.push_back(round_dot_input(precision, b_.CreateLoad(f32, ptr)));
      return out;
    }
    llvm::Value *v =
        b_.CreateAlignedLoad(llvm::FixedVectorType::get(f32, width), ptr, llvm::Align(4 * width));
    for (int64_t j = 0; j < width; ++j)
      out.push_back(round_dot_input(precision, b_.CreateExtractElement(v, j)));
    return out;
  };
  // Unrolled by 8 k a trip (a multiple of the swizzle's 4): the reads of a step issue ahead of
  // the previous step's fmas, and the addresses are one base a trip plus constants. The trips
  // stay a loop: LLVM would unroll a few of them fully, and each copy costs every compile its
  // size (the library GEMM's K of 16: 64 more fmas and their reads in the PTX).
  const int64_t unroll = std::min<int64_t>(K, 8);
  Regs res = loop(
      b_.getInt64(K / unroll), init,
      [&](llvm::Value *i, const Regs &cur) -> Regs {
        Regs acc = cur;
        llvm::Value *k0 = b_.CreateMul(i, b_.getInt64(unroll)), *x = nullptr;
        std::vector<llvm::Value *> a_base(run_m.size());
        for (int64_t u = 0; u < unroll; ++u) {
          llvm::Value *k = b_.CreateAdd(k0, b_.getInt64(u));
          if (u % 4 == 0) { // the rows' swizzled chunks, for this k and the next 3
            x = swizzle_of(k);
            for (size_t j = 0; j < run_m.size(); ++j)
              a_base[j] = shared_at(sa, f32, a_index(run_m[j], k, x));
          }
          std::vector<Regs> xs(run_m.size()), ys(run_n.size());
          for (size_t j = 0; j < run_m.size(); ++j)
            xs[j] = read(a_base[j], b_.getInt64((u % 4) * M), va);
          for (size_t j = 0; j < run_n.size(); ++j)
            ys[j] = read(sb, b_.CreateAdd(b_.CreateMul(k, b_.getInt64(N)), run_n[j]), vb);
          fma_step(runs, xs, ys, acc);
        }
        return acc;
      },
      true);
  values_[op.result()] = res;
}

void KernelEmitter::lower_dot_fma_staged(const ir::Operation &op, llvm::Value *sa,
                                         llvm::Value *sb) {
  const ir::Value *a = op.operand(0), *bv = op.operand(1);
  const int64_t K = a->type().shape()[1], N = bv->type().shape()[1];
  const std::string *precision = op.attr_as<std::string>("input_precision");
  Coords &c = coords_of(op.result());
  const Layout &l = c.layout;
  const int64_t n = registers_per_thread(l, c.shape);
  llvm::Type *f32 = b_.getFloatTy();
  llvm::Type *v4 = llvm::FixedVectorType::get(f32, 4);
  const Regs init =
      op.num_operands() > 2 ? regs_in(op.operand(2), l) : Regs(n, llvm::ConstantFP::get(f32, 0.0));
  // Both operands row-major in f32_operand_offset's layout: a thread reads each of its rows of A
  // at 4 consecutive k (one 16-byte chunk) and, at each k, its runs of 4 columns of B. Rows
  // 4 q .. 4 q + 3 share their chunk's swizzle, and so do k = 4 g .. 4 g + 3: one address per
  // run and group of 4 k, the rest constant offsets.
  const int64_t va = l.per_thread[0] % 4 == 0 ? 4 : 1, vb = l.per_thread[1] % 4 == 0 ? 4 : 1;
  const FmaRuns runs = fma_runs(c, va, vb);
  const std::vector<llvm::Value *> &run_m = runs.m, &run_n = runs.n;
  auto at = [&](llvm::Value *base, llvm::Value *byte, int64_t plus = 0) {
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), base, b_.CreateAdd(byte, b_.getInt64(plus)));
  };
  auto element = [&](llvm::Value *v, int64_t j) {
    return round_dot_input(precision, b_.CreateExtractElement(v, j));
  };
  // Ascending k, one fma per element and k, 1024 of them a trip (8 to 32 k): ptxas schedules
  // the reads of a trip ahead of its fmas. A whole K of 32 on 32 accumulators is one trip
  // (H200: 1.07x the speed of trips of 8 k).
  const int64_t unroll = std::min<int64_t>(K, std::clamp<int64_t>(1024 / n, 8, 32));
  Regs res = loop(b_.getInt64(K / unroll), init, [&](llvm::Value *i, const Regs &cur) -> Regs {
    Regs acc = cur;
    llvm::Value *k0 = b_.CreateMul(i, b_.getInt64(unroll));
    for (int64_t g = 0; g < unroll; g += 4) {
      llvm::Value *kg = b_.CreateAdd(k0, b_.getInt64(g));
      // xs[run][row in run]: A at rows of the run, k = kg .. kg + 3.
      std::vector<Regs> xs(run_m.size());
      for (size_t j = 0; j < run_m.size(); ++j) {
        llvm::Value *first = f32_operand_offset(run_m[j], kg, K);
        for (int64_t e = 0; e < va; ++e)
          xs[j].push_back(b_.CreateAlignedLoad(v4, at(sa, first, e * K * 4), llvm::Align(16)));
      }
      std::vector<llvm::Value *> b_first(run_n.size());
      for (size_t j = 0; j < run_n.size(); ++j)
        b_first[j] = f32_operand_offset(kg, run_n[j], N);
      for (int64_t u = 0; u < std::min<int64_t>(4, unroll - g); ++u) {
        std::vector<Regs> ys(run_n.size());
        for (size_t j = 0; j < run_n.size(); ++j) {
          llvm::Value *ptr = at(sb, b_first[j], u * N * 4);
          if (vb == 4) {
            llvm::Value *y = b_.CreateAlignedLoad(v4, ptr, llvm::Align(16));
            for (int64_t e = 0; e < 4; ++e)
              ys[j].push_back(element(y, e));
          } else {
            ys[j].push_back(round_dot_input(precision, b_.CreateLoad(f32, ptr)));
          }
        }
        std::vector<Regs> x(xs.size()); // A at k = kg + u, once per row
        for (size_t j = 0; j < xs.size(); ++j)
          for (llvm::Value *chunk : xs[j])
            x[j].push_back(element(chunk, u));
        fma_step(runs, x, ys, acc);
      }
    }
    return acc;
  });
  values_[op.result()] = res;
}

} // namespace tl::nvptx
