// nvptx lowering of pipelined K loops (plan_pipeline): the dot's operand tiles are copied by
// cp.async from global memory straight into a ring of shared-memory slots, in the swizzled
// layout both ldmatrix (mma.sync) and wgmma's descriptors read; on sm_90a the dot is wgmma.
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <algorithm>
#include <cstdlib>

namespace tl::nvptx {

namespace {
constexpr uint64_t kSwizzlePeriod = 1024; // bytes after which the 128-byte swizzle repeats

uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

int64_t log2_of(int64_t n) {
  int64_t l = 0;
  while ((int64_t(1) << l) < n)
    ++l;
  return l;
}
} // namespace

llvm::Value *KernelEmitter::operand_offset(llvm::Value *row, llvm::Value *col, int64_t rows,
                                           int64_t cols) {
  const int64_t w = std::min<int64_t>(cols, 64), chunks = w / 8;
  llvm::Value *atom = b_.CreateLShr(col, log2_of(w));
  llvm::Value *within = b_.CreateAnd(col, w - 1);
  // The chunk index XORs with address bits 7.. of the row's start: row bits from log2(8/chunks).
  llvm::Value *x = chunks >= 8 ? b_.CreateAnd(row, 7)
                               : b_.CreateAnd(b_.CreateLShr(row, log2_of(8 / chunks)),
                                              b_.getInt64(std::max<int64_t>(chunks - 1, 0)));
  llvm::Value *phys = b_.CreateXor(b_.CreateLShr(within, 3), x);
  llvm::Value *at = b_.CreateMul(atom, b_.getInt64(rows * w * 2));
  at = b_.CreateAdd(at, b_.CreateMul(row, b_.getInt64(w * 2)));
  at = b_.CreateAdd(at, b_.CreateShl(phys, 4));
  return b_.CreateAdd(at, b_.CreateShl(b_.CreateAnd(within, 7), 1));
}

llvm::Value *KernelEmitter::f32_operand_offset(llvm::Value *row, llvm::Value *col, int64_t cols) {
  const int64_t mask = std::min<int64_t>(cols / 4, 8) - 1;
  llvm::Value *chunk = b_.CreateLShr(col, 2);
  if (mask > 0)
    chunk = b_.CreateXor(chunk, b_.CreateAnd(b_.CreateLShr(row, 2), b_.getInt64(mask)));
  llvm::Value *at = b_.CreateMul(row, b_.getInt64(cols * 4));
  at = b_.CreateAdd(at, b_.CreateShl(chunk, 4));
  return b_.CreateAdd(at, b_.CreateShl(b_.CreateAnd(col, 3), 2));
}

const ir::Operation *KernelEmitter::pipelined_dot(const ir::Block &body) {
  for (auto &op : body.ops())
    if (op->opcode() == ir::Opcode::Dot && op->attr("nvptx.stages"))
      return op.get();
  return nullptr;
}

uint64_t KernelEmitter::plan_rings(const ir::Block &block, uint64_t base) {
  uint64_t end = base;
  for (auto &op : block.ops()) {
    uint64_t inner = base;
    if (op->opcode() == ir::Opcode::For)
      if (const ir::Operation *dot = pipelined_dot(*op->region(0))) {
        const int64_t *stages = dot->attr_as<int64_t>("nvptx.stages");
        const ir::Type &a = dot->operand(0)->type(), &b = dot->operand(1)->type();
        Ring r;
        r.stages = *stages;
        r.offset = base;
        const uint64_t bytes = ir::bit_width(a.elem()) / 8;
        r.b_offset = align_up(static_cast<uint64_t>(a.num_elements()) * bytes, kSwizzlePeriod);
        r.slot_bytes =
            r.b_offset + align_up(static_cast<uint64_t>(b.num_elements()) * bytes, kSwizzlePeriod);
        rings_[dot] = r;
        inner = base + r.slot_bytes * static_cast<uint64_t>(r.stages);
        end = std::max(end, inner);
      }
    for (unsigned i = 0; i < op->num_regions(); ++i)
      end = std::max(end, plan_rings(*op->region(i), inner));
  }
  return end;
}

void KernelEmitter::copy_tile_async(const ir::Operation &op, llvm::Value *slot, uint64_t offset) {
  const TensorArg &ta = tensors_.at(op.operand(0));
  const ir::Type &t = op.result()->type();
  // 16-byte chunks of `per_chunk` elements (8 of 16 bits, 4 of f32).
  const int64_t bytes = ir::bit_width(t.elem()) / 8, per_chunk = 16 / bytes;
  const int64_t rows = t.shape()[0], cols = t.shape()[1], row_chunks = cols / per_chunk;
  auto offset_of = [&](llvm::Value *row, llvm::Value *col) {
    return bytes == 2 ? operand_offset(row, col, rows, cols) : f32_operand_offset(row, col, cols);
  };
  const int64_t chunks = rows * row_chunks, threads = 32 * static_cast<int64_t>(num_warps_);
  llvm::Type *i64 = b_.getInt64Ty();
  std::vector<llvm::Value *> origin;
  for (int d = 0; d < 2; ++d) {
    const ir::Value *o = op.operand(1 + d);
    origin.push_back(ir::is_signed(o->type().elem()) ? b_.CreateSExt(scalar(o), i64)
                                                     : b_.CreateZExt(scalar(o), i64));
  }
  llvm::Value *base = b_.CreateInBoundsGEP(b_.getInt8Ty(), slot, b_.getInt64(int64_t(offset)));
  // 16-byte chunks are wholly inside or wholly outside the tensor when the columns start and end
  // on multiples of per_chunk elements, rows are unit-stride and every chunk is 16-byte aligned.
  auto zero = [&](llvm::Value *v, int64_t mask) {
    return b_.CreateICmpEQ(b_.CreateAnd(v, b_.getInt64(mask)), b_.getInt64(0));
  };
  llvm::Value *fast = b_.CreateICmpEQ(ta.strides[1], b_.getInt64(1));
  fast = b_.CreateAnd(fast, zero(origin[1], per_chunk - 1));
  fast = b_.CreateAnd(fast, zero(ta.shape[1], per_chunk - 1));
  fast = b_.CreateAnd(fast, zero(ta.strides[0], per_chunk - 1));
  fast = b_.CreateAnd(fast, zero(b_.CreatePtrToInt(ta.data, i64), 15));
  // Chunk q = tid + j * threads: row q / row_chunks, columns per_chunk (q % row_chunks) + [0,
  // per_chunk).
  auto chunk_at = [&](int64_t j, llvm::Value *&row, llvm::Value *&col) {
    llvm::Value *q = b_.CreateAdd(tid_, b_.getInt64(j * threads));
    row = b_.CreateUDiv(q, b_.getInt64(row_chunks));
    col = b_.CreateMul(b_.CreateURem(q, b_.getInt64(row_chunks)), b_.getInt64(per_chunk));
  };
  auto each_chunk = [&](const std::function<void(llvm::Value *, llvm::Value *)> &body) {
    for (int64_t j = 0; j * threads < chunks; ++j) {
      llvm::Value *row, *col;
      chunk_at(j, row, col);
      if ((j + 1) * threads <= chunks)
        body(row, col);
      else
        guarded(b_.CreateICmpULT(b_.CreateAdd(tid_, b_.getInt64(j * threads)), b_.getInt64(chunks)),
                [&] { body(row, col); });
    }
  };
  llvm::BasicBlock *async = llvm::BasicBlock::Create(ctx_, "copy.async", fn_);
  llvm::BasicBlock *edge = llvm::BasicBlock::Create(ctx_, "copy.edge", fn_);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "copy.end", fn_);
  b_.CreateCondBr(fast, async, edge);
  b_.SetInsertPoint(async);
  // Outside the tensor: nothing is read (source size 0) and the 16 bytes are zero-filled.
  auto copy_chunk = [&](llvm::Value *dst, llvm::Value *src, llvm::Value *inside) {
    b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s, {},
                       {dst, b_.CreateSelect(inside, src, ta.data),
                        b_.CreateSelect(inside, b_.getInt32(16), b_.getInt32(0))});
  };
  // When the threads cover whole rows, a thread's chunk j lies `step` rows below its chunk 0 in
  // the same columns; when `step` is also a multiple of the rows after which the swizzle
  // repeats (offset_of sees the row's low bits only through it), chunk j's shared offset and
  // global address are chunk 0's plus constants: one add each instead of the index math per
  // chunk, which was most of a pipelined GEMM's code (128 x 64 f16: 16 chunks a thread a stage).
  const int64_t step = threads / row_chunks;
  const int64_t period = bytes == 2 ? 8 : 4 * std::min<int64_t>(cols / 4, 8);
  if (threads % row_chunks == 0 && step % period == 0) {
    llvm::Value *row0, *col0;
    chunk_at(0, row0, col0);
    const std::vector<llvm::Value *> first = {b_.CreateAdd(origin[0], row0),
                                              b_.CreateAdd(origin[1], col0)};
    llvm::Value *col_inside = b_.CreateICmpULT(first[1], ta.shape[1]);
    llvm::Value *src0 = element_address(ta, first);
    llvm::Value *dst0 = b_.CreateInBoundsGEP(b_.getInt8Ty(), base, offset_of(row0, col0));
    llvm::Value *src_step = b_.CreateMul(ta.strides[0], b_.getInt64(step)); // elements
    const int64_t dst_step = step * (bytes == 2 ? std::min<int64_t>(cols, 64) * 2 : cols * 4);
    for (int64_t j = 0; j * threads < chunks; ++j) {
      auto body = [&] {
        llvm::Value *row = b_.CreateAdd(first[0], b_.getInt64(j * step));
        llvm::Value *inside = b_.CreateAnd(col_inside, b_.CreateICmpULT(row, ta.shape[0]));
        llvm::Value *src =
            b_.CreateGEP(memory_type(ta.elem), src0, b_.CreateMul(src_step, b_.getInt64(j)));
        copy_chunk(b_.CreateInBoundsGEP(b_.getInt8Ty(), dst0, b_.getInt64(j * dst_step)), src,
                   inside);
      };
      if ((j + 1) * threads <= chunks)
        body();
      else
        guarded(b_.CreateICmpULT(b_.CreateAdd(tid_, b_.getInt64(j * threads)), b_.getInt64(chunks)),
                body);
    }
  } else {
    each_chunk([&](llvm::Value *row, llvm::Value *col) {
      const std::vector<llvm::Value *> index = {b_.CreateAdd(origin[0], row),
                                                b_.CreateAdd(origin[1], col)};
      copy_chunk(b_.CreateInBoundsGEP(b_.getInt8Ty(), base, offset_of(row, col)),
                 element_address(ta, index), in_bounds(ta, index));
    });
  }
  b_.CreateBr(done);
  b_.SetInsertPoint(edge);
  // Element by element (unaligned or strided tensors): rolled loops over the thread's chunks and
  // their elements. Unaligned operands are rare and slow anyway (2-byte loads); unrolled, this
  // path was most of a GEMM's code and so most of its compile time (O3, PTX emission and ptxas
  // all scale with it). Aligned operands never come here: chunks past the tensor's end are
  // zero-filled by the copies above.
  llvm::Type *bits_type = b_.getIntNTy(static_cast<unsigned>(bytes * 8));
  loop(
      b_.getInt64((chunks + threads - 1) / threads), {},
      [&](llvm::Value *j, const Regs &) -> Regs {
        llvm::Value *q = b_.CreateAdd(tid_, b_.CreateMul(j, b_.getInt64(threads)));
        guarded(b_.CreateICmpULT(q, b_.getInt64(chunks)), [&] {
          llvm::Value *row = b_.CreateUDiv(q, b_.getInt64(row_chunks));
          llvm::Value *col =
              b_.CreateMul(b_.CreateURem(q, b_.getInt64(row_chunks)), b_.getInt64(per_chunk));
          // A chunk's elements are consecutive in its swizzled 16 bytes.
          llvm::Value *dst = b_.CreateInBoundsGEP(b_.getInt8Ty(), base, offset_of(row, col));
          llvm::Value *r = b_.CreateAdd(origin[0], row);
          loop(
              b_.getInt64(per_chunk), {},
              [&](llvm::Value *e, const Regs &) -> Regs {
                const std::vector<llvm::Value *> index = {
                    r, b_.CreateAdd(origin[1], b_.CreateAdd(col, e))};
                llvm::Value *bits =
                    guarded_load(in_bounds(ta, index), bits_type, element_address(ta, index),
                                 llvm::ConstantInt::get(bits_type, 0));
                b_.CreateStore(bits, b_.CreateInBoundsGEP(bits_type, dst, e));
                return {};
              },
              /*rolled=*/true);
        });
        return {};
      },
      /*rolled=*/true);
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

bool KernelEmitter::uses_wgmma(const ir::Operation &dot) {
  const int64_t W = num_warps_;
  const int64_t M = dot.result()->type().shape()[0], N = dot.result()->type().shape()[1];
  const Layout &l = layout_of(dot.result());
  return arch_ == "sm_90a" && rings_.count(&dot) && l.mma &&
         l.warps == std::vector<int64_t>{W, 1} && W % 4 == 0 && M == 16 * W && N % 16 == 0 &&
         N <= 256;
}

bool KernelEmitter::wgmma_in_flight(const ir::Operation &dot) {
  // TL_NVPTX_WGMMA_IN_FLIGHT=0: wait for every group in its iteration (measuring the overlap).
  static const bool allowed = [] {
    const char *e = std::getenv("TL_NVPTX_WGMMA_IN_FLIGHT");
    return !e || std::string(e) != "0";
  }();
  // Up to 64 accumulators a thread (N <= 128): past that, a second group's registers in flight
  // spill (128 x 256 on 8 warps: 255 registers, 0.93x the speed of waiting, H200).
  if (!allowed || !uses_wgmma(dot) || rings_.at(&dot).stages < 3 ||
      dot.result()->type().shape()[1] > 128)
    return false;
  int uses = 0;
  ir::walk(const_cast<ir::Block *>(dot.parent()), [&](ir::Operation *op) {
    for (const ir::Value *v : op->operands())
      uses += v == dot.result();
  });
  const ir::Operation *yield = dot.parent()->terminator();
  return uses == 1 && yield &&
         std::find(yield->operands().begin(), yield->operands().end(), dot.result()) !=
             yield->operands().end();
}

KernelEmitter::Regs KernelEmitter::wgmma_wait(const Regs &acc) {
  std::string constraints;
  for (size_t r = 0; r < acc.size(); ++r)
    constraints += "=f,";
  for (size_t r = 0; r < acc.size(); ++r)
    constraints += std::to_string(r) + (r + 1 < acc.size() ? "," : "");
  llvm::Type *f32 = b_.getFloatTy();
  auto *fn = llvm::InlineAsm::get(
      llvm::FunctionType::get(
          llvm::StructType::get(ctx_, std::vector<llvm::Type *>(acc.size(), f32)),
          std::vector<llvm::Type *>(acc.size(), f32), false),
      "wgmma.wait_group.sync.aligned 0;", constraints + ",~{memory}", /*hasSideEffects=*/true);
  llvm::Value *d = b_.CreateCall(fn, acc);
  Regs out;
  for (size_t r = 0; r < acc.size(); ++r)
    out.push_back(b_.CreateExtractValue(d, static_cast<unsigned>(r)));
  return out;
}

void KernelEmitter::wgmma_dot(const ir::Operation &op, llvm::Value *a, llvm::Value *b, Regs &acc) {
  // Warpgroup g (warps 4g .. 4g + 3) computes rows [64 g, 64 g + 64): one m64nNk16 per 16 of K,
  // A K-major, B N-major (imm-trans-b 1), both read from shared memory through descriptors.
  // Fragment of D: warp w % 4 holds rows 16 (w % 4) + lane / 4 (+ 8), columns 8 i + 2 (lane % 4)
  // (+ 1): the mma.sync m16n8 accumulator tile repeated along N, which the dot's layout
  // (warps = [num_warps, 1]) gives every warp.
  const ir::Value *av = op.operand(0), *bv = op.operand(1);
  const int64_t M = av->type().shape()[0], K = av->type().shape()[1], N = bv->type().shape()[1];
  const bool bf16 = av->type().elem() == ir::ScalarKind::BF16;
  llvm::Type *i64 = b_.getInt64Ty(), *f32 = b_.getFloatTy();
  auto swizzle_mode = [](int64_t w) -> uint64_t { return w == 64 ? 1 : w == 32 ? 2 : 3; };
  auto descriptor = [&](llvm::Value *addr, uint64_t lbo, uint64_t sbo, int64_t w) {
    // Start address, leading and stride byte offsets in 16-byte units (14 bits each), swizzle.
    llvm::Value *start = b_.CreateLShr(b_.CreateAnd(addr, b_.getInt64(0x3FFFF)), 4);
    const uint64_t fixed =
        ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32 | swizzle_mode(w) << 62;
    return b_.CreateOr(start, b_.getInt64(static_cast<int64_t>(fixed)));
  };
  const int64_t wa = std::min<int64_t>(K, 64), wb = std::min<int64_t>(N, 64);
  llvm::Value *group = b_.CreateLShr(warp_, 2);
  llvm::Value *a_base =
      b_.CreateAdd(b_.CreatePtrToInt(a, i64), b_.CreateMul(group, b_.getInt64(64 * wa * 2)));
  llvm::Value *b_base = b_.CreatePtrToInt(b, i64);
  std::vector<llvm::Value *> descs;
  for (int64_t k0 = 0; k0 < K; k0 += 16) {
    // A: the 16 columns at k0 lie in atom k0 / wa ([K / wa][M][wa]), 2 (k0 % wa) bytes into
    // each swizzled row; rows 8 apart are 16 wa bytes apart (SBO).
    llvm::Value *a_at = b_.CreateAdd(a_base, b_.getInt64((k0 / wa) * M * wa * 2 + (k0 % wa) * 2));
    descs.push_back(descriptor(a_at, 16, static_cast<uint64_t>(16 * wa), wa));
    // B: rows k0 .. k0 + 15 of every column atom ([N / wb][K][wb]): atoms K wb 2 bytes apart
    // (LBO), groups of 8 rows 16 wb bytes apart (SBO).
    llvm::Value *b_at = b_.CreateAdd(b_base, b_.getInt64(k0 * wb * 2));
    descs.push_back(
        descriptor(b_at, static_cast<uint64_t>(K * wb * 2), static_cast<uint64_t>(16 * wb), wb));
  }
  // One asm statement: fence, the K / 16 wgmmas, commit and wait, the accumulators tied in and
  // out, so that LLVM cannot touch them while the tensor cores own them.
  const int64_t regs = N / 2, scale_d = regs + 2 * (K / 16);
  // scale-d is a predicate (D = A B + D when true); it comes from an operand, set to 1.
  std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(scale_d) +
                     ", 0;\nwgmma.fence.sync.aligned;\n";
  std::string list = "{";
  for (int64_t r = 0; r < regs; ++r)
    list += (r ? ", $" : "$") + std::to_string(r);
  list += "}";
  for (int64_t s = 0; s < K / 16; ++s)
    text += "wgmma.mma_async.sync.aligned.m64n" + std::to_string(N) + "k16.f32." +
            (bf16 ? "bf16.bf16 " : "f16.f16 ") + list + ", $" + std::to_string(regs + 2 * s) +
            ", $" + std::to_string(regs + 2 * s + 1) + ", p, 1, 1, 0, 1;\n";
  // In flight (wgmma_in_flight): this group may run on while the next iteration waits for its
  // slot; the one before it is done (its slot is the one refilled next).
  text += "wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned " +
          std::string(wgmma_in_flight(op) ? "1" : "0") + ";\n}";
  std::string constraints;
  for (int64_t r = 0; r < regs; ++r)
    constraints += "=f,";
  std::vector<llvm::Type *> in_types;
  std::vector<llvm::Value *> args;
  for (llvm::Value *d : descs) {
    constraints += "l,";
    in_types.push_back(i64);
    args.push_back(d);
  }
  constraints += "r,";
  in_types.push_back(b_.getInt32Ty());
  args.push_back(b_.getInt32(1));
  for (int64_t r = 0; r < regs; ++r) {
    constraints += std::to_string(r) + ",";
    in_types.push_back(f32);
    args.push_back(acc[static_cast<size_t>(r)]);
  }
  constraints += "~{memory}";
  auto *fn = llvm::InlineAsm::get(
      llvm::FunctionType::get(
          llvm::StructType::get(ctx_, std::vector<llvm::Type *>(static_cast<size_t>(regs), f32)),
          in_types, false),
      text, constraints, /*hasSideEffects=*/true);
  llvm::Value *d = b_.CreateCall(fn, args);
  for (int64_t r = 0; r < regs; ++r)
    acc[static_cast<size_t>(r)] = b_.CreateExtractValue(d, static_cast<unsigned>(r));
}

} // namespace tl::nvptx
