// llvm-cpu lowering of tile ops: sources, shapes, dot (a register-blocked micro-kernel) and
// reduce/scan. Exact against the reference interpreter: no fast-math flags, no FMA contraction,
// reductions in ascending index order (a float sum may reassociate, as tl/ir/ir.h allows).
// SPDX-License-Identifier: Apache-2.0
#include "codegen.h"
#include "plan_attrs.h"

#include <limits>

#include <llvm/IR/Intrinsics.h>

namespace tl::llvm_cpu {
using ir::Opcode;
using ir::ScalarKind;

namespace {
// lower_row_argmax: lanes a step (one AVX-512 vector of f32; two AVX2 ones), and independent
// running maxima (chains) a row
constexpr int64_t kArgmaxLanes = 16, kArgmaxChains = 4;
// lower_row_scan_steps: lanes a vector, and rows stepping through their columns together
constexpr int64_t kScanStepLanes = 16, kScanStepRows = 4;
std::vector<int64_t> strides_of(const std::vector<int64_t> &shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * shape[i + 1];
  return s;
}
} // namespace

void KernelCodegen::lower_source(const ir::Operation &op) {
  const ir::Type &t = op.result()->type();
  Slot &out = slot(op.result());
  auto fill = [&](llvm::Value *v) {
    loop(out.n, [&](llvm::Value *i) { b_.CreateStore(v, elem_ptr(out, i)); });
  };
  auto constant = [&](const ir::Attr *a) { return attr_constant(t.elem(), *a); };
  switch (op.opcode()) {
  case Opcode::ProgramId:
    return fill(b_.CreateTrunc(pid_[*op.attr_as<int64_t>("axis")], out.elem));
  case Opcode::NumPrograms: {
    auto *lt = llvm::StructType::get(
        ctx_, {b_.getPtrTy(), llvm::ArrayType::get(b_.getInt64Ty(), 3), b_.getPtrTy()});
    llvm::Value *g = b_.CreateInBoundsGEP(
        lt, launch_, {i64(0), b_.getInt32(1), i64(*op.attr_as<int64_t>("axis"))});
    return fill(b_.CreateTrunc(b_.CreateLoad(b_.getInt64Ty(), g), out.elem));
  }
  case Opcode::Constant:
  case Opcode::Full:
    return fill(constant(op.attr("value")));
  case Opcode::Constexpr: {
    const ir::ConstexprParam *p = kernel_.find_constexpr(*op.attr_as<std::string>("name"));
    ir::Attr a = std::visit([](auto v) { return ir::Attr(v); }, p->value);
    return fill(constant(&a));
  }
  case Opcode::TensorDim:
  case Opcode::TensorStride:
    return fill(arg_field(arg_index_.at(op.operand(0)), op.opcode() == Opcode::TensorDim ? 1 : 2,
                          i64(*op.attr_as<int64_t>("axis"))));
  case Opcode::Arange: {
    const int64_t start = *op.attr_as<int64_t>("start");
    return loop(out.n, [&](llvm::Value *i) {
      b_.CreateStore(b_.CreateTrunc(b_.CreateAdd(i, i64(start)), out.elem), elem_ptr(out, i));
    });
  }
  default:
    unsupported(op, "unknown op");
  }
}

void KernelCodegen::lower_shape(const ir::Operation &op) {
  const ir::Type &in_t = op.operand(0)->type(), &out_t = op.result()->type();
  if (op.opcode() == Opcode::Reshape || op.opcode() == Opcode::ExpandDims) {
    slots_[op.result()] = slot(op.operand(0)); // same elements in the same order: share storage
    return;
  }
  Slot src = slot(op.operand(0)), &out = slot(op.result());
  if (op.opcode() == Opcode::Splat) {
    llvm::Value *v = b_.CreateLoad(src.elem, src.ptr);
    return loop(out.n, [&](llvm::Value *i) { b_.CreateStore(v, elem_ptr(out, i)); });
  }
  if (op.opcode() == Opcode::Transpose && transpose_8x8(op, src, out))
    return;
  // broadcast, slice and transpose: out[idx] = in[base + map(idx)], walking out's multi-index
  // by division.
  const std::vector<int64_t> in_strides = strides_of(in_t.shape());
  const std::vector<int64_t> out_strides = strides_of(out_t.shape());
  std::vector<int64_t> src_stride_of_dim(out_t.rank());
  int64_t base = 0;
  if (op.opcode() == Opcode::Broadcast) {
    for (int d = 0; d < out_t.rank(); ++d)
      src_stride_of_dim[d] = in_t.shape()[d] == 1 ? 0 : in_strides[d];
  } else if (op.opcode() == Opcode::Slice) {
    const auto &offsets = *op.attr_as<std::vector<int64_t>>("offsets");
    for (int d = 0; d < out_t.rank(); ++d)
      src_stride_of_dim[d] = in_strides[d], base += offsets[d] * in_strides[d];
  } else {
    const auto &perm = *op.attr_as<std::vector<int64_t>>("perm");
    for (int d = 0; d < out_t.rank(); ++d)
      src_stride_of_dim[d] = in_strides[perm[d]];
  }
  // A loop over the rows (every dimension but the last; their source offset by division, once
  // per row) around one over the last dimension, whose source stride is 0 (a row broadcast: a
  // splat the vectorizer stores whole vectors of), 1 (a copy) or constant: a division per
  // element kept the vectorizer out (layernorm's five (BM, 1) and (1, N) broadcasts took most
  // of its time).
  const int r = out_t.rank();
  const int64_t cols = r ? out_t.shape()[r - 1] : 1, col_stride = r ? src_stride_of_dim[r - 1] : 0;
  loop(
      out.n / std::max<int64_t>(cols, 1),
      [&](llvm::Value *row) {
        llvm::Value *src_row = i64(base);
        for (int d = 0; d + 1 < r; ++d) {
          llvm::Value *coord =
              b_.CreateURem(b_.CreateUDiv(row, i64(out_strides[d] / cols)), i64(out_t.shape()[d]));
          src_row = b_.CreateAdd(src_row, b_.CreateMul(coord, i64(src_stride_of_dim[d])));
        }
        llvm::Value *out_row = b_.CreateMul(row, i64(cols));
        loop(
            cols,
            [&](llvm::Value *j) {
              llvm::Value *at = b_.CreateAdd(src_row, b_.CreateMul(j, i64(col_stride)));
              b_.CreateStore(b_.CreateLoad(src.elem, elem_ptr(src, at)),
                             elem_ptr(out, b_.CreateAdd(out_row, j)));
            },
            "col");
      },
      "row");
}

/// A transpose of the last two dimensions (the others kept, e.g. `tl.trans` of an M x N tile)
/// with both multiples of 8, in 8 x 8 blocks in registers (transpose_rows). Element by element,
/// each output row gathered lanes N apart (transpose of 64 x 64 blocks at 0.35 of the triad).
/// False: not this case.
bool KernelCodegen::transpose_8x8(const ir::Operation &op, const Slot &src, const Slot &out) {
  const ir::Type &in_t = op.operand(0)->type();
  const auto &perm = *op.attr_as<std::vector<int64_t>>("perm");
  const int r = in_t.rank();
  if (r < 2 || perm[r - 2] != r - 1 || perm[r - 1] != r - 2)
    return false;
  for (int d = 0; d + 2 < r; ++d)
    if (perm[d] != d)
      return false;
  const int64_t M = in_t.shape()[r - 2], N = in_t.shape()[r - 1];
  if (M % 8 || N % 8 || M * N == 0)
    return false;
  loop(
      in_t.num_elements() / (M * N),
      [&](llvm::Value *batch) {
        llvm::Value *base = b_.CreateMul(batch, i64(M * N));
        transpose_rows(elem_ptr(src, base), i64(N), elem_ptr(out, base), i64(M), M, N, src.elem,
                       nullptr);
      },
      "tb");
  return true;
}

/// Blocks of L x L: L = 16 for 32-bit elements with AVX-512, so that each row vector is one
/// whole cache line. Then every source line is read once and every destination line written
/// once, although the lines of a block share a cache set (rows a power of two apart: the L1 is
/// 8-way, and in 8 x 8 blocks each 64-byte line was fetched twice, by two blocks, with the other
/// rows' lines evicting it in between: `ops.transpose` from 64 x 64 blocks of a 1024-wide
/// tensor at 0.27 of the triad). 16-bit elements (bf16, f16, as their stored bits) with
/// AVX-512BW: L = 32, also one line a row (transpose_pairs; in 8 x 8 blocks of 16-byte rows
/// bf16 16384 x 1024 took 0.41 of the triad). N need only be a multiple of 8: its last columns
/// are L x 16 and L x 8 blocks (L x 8: two 8 x 8 transposes, each destination row's halves
/// joined). Source rows in the outer loop, as the copies before. With `stream` (true at
/// run time), the destination is written with non-temporal stores (not read for ownership):
/// whole lines where its rows are whole lines; else (L lanes a line) each row's lines inside
/// the block (its L-lane pieces shifted to the row's line boundaries across consecutive
/// blocks), the partial lines at its two ends stored plainly with masks (the neighbouring
/// blocks' programs write the rest of those lines). A transpose of 16777 x 1000 f32 wrote rows
/// of 16777 floats plainly: each output line read before it was written (0.22 of the triad).
void KernelCodegen::transpose_rows(llvm::Value *src, llvm::Value *src_rs, llvm::Value *dst,
                                   llvm::Value *dst_rs, int64_t M, int64_t N, llvm::Type *elem,
                                   llvm::Value *stream) {
  const int64_t esize = int64_t(module_.getDataLayout().getTypeAllocSize(elem));
  const bool wide = vector_bits_ >= 512 && isa_.avx512f;
  const int64_t L = wide && esize == 4 && M % 16 == 0 && N % 8 == 0                    ? 16
                    : wide && isa_.avx512bw && esize == 2 && M % 32 == 0 && N % 8 == 0 ? 32
                                                                                       : 8;
  // Groups of L destination rows, then (N not a multiple of L) groups of 16 and 8 rows:
  // `tails` holds their first rows and widths.
  const int64_t full_groups = N / L;
  std::vector<std::pair<int64_t, int64_t>> tails;
  for (int64_t j = full_groups * L, w = L / 2; j < N && w >= 8; w /= 2)
    if (N - j >= w)
      tails.push_back({j, w}), j += w;
  const int64_t groups = full_groups + int64_t(tails.size());
  const llvm::Align align(esize);
  auto load_row = [&](llvm::Value *i, llvm::Value *j0, int64_t lanes) {
    return b_.CreateAlignedLoad(
        llvm::FixedVectorType::get(elem, unsigned(lanes)),
        b_.CreateInBoundsGEP(elem, src, b_.CreateAdd(b_.CreateMul(i, src_rs), j0)), align);
  };
  // Destination rows j0 .. j0 + width - 1, columns i0 .. i0 + L - 1: `width` vectors of L lanes.
  auto columns = [&](llvm::Value *i0, llvm::Value *j0, int64_t width) {
    std::vector<llvm::Value *> rows(L);
    if (L == 32) { // 16-bit elements
      for (int64_t k = 0; k < L; ++k)
        rows[k] = load_row(b_.CreateAdd(i0, i64(k)), j0, width);
      return transpose_pairs(rows);
    }
    if (width == L) {
      for (int64_t k = 0; k < L; ++k)
        rows[k] = load_row(b_.CreateAdd(i0, i64(k)), j0, L);
      return L == 16 ? transpose16(rows) : transpose8(rows);
    }
    std::vector<llvm::Value *> top(8), bottom(8), cols(8);
    for (int64_t k = 0; k < 8; ++k) {
      top[k] = load_row(b_.CreateAdd(i0, i64(k)), j0, 8);
      bottom[k] = load_row(b_.CreateAdd(i0, i64(8 + k)), j0, 8);
    }
    top = transpose8(top);
    bottom = transpose8(bottom);
    std::vector<int> join(16);
    for (int e = 0; e < 16; ++e)
      join[e] = e;
    for (int64_t c = 0; c < 8; ++c)
      cols[c] = b_.CreateShuffleVector(top[c], bottom[c], join);
    return cols;
  };
  auto dst_at = [&](llvm::Value *j, llvm::Value *i) {
    return b_.CreateInBoundsGEP(elem, dst, b_.CreateAdd(b_.CreateMul(j, dst_rs), i));
  };
  auto nontemporal = [&](llvm::StoreInst *st) {
    st->setMetadata(llvm::LLVMContext::MD_nontemporal,
                    llvm::MDNode::get(ctx_, {llvm::ConstantAsMetadata::get(b_.getInt32(1))}));
  };
  // The group of `width` destination rows from j0 at block row bi, plainly or non-temporally
  // (whole-line destination rows).
  auto block = [&](llvm::Value *bi, llvm::Value *j0, int64_t width, bool streamed) {
    llvm::Value *i0 = b_.CreateMul(bi, i64(L));
    const std::vector<llvm::Value *> cols = columns(i0, j0, width);
    for (int64_t c = 0; c < width; ++c) {
      auto *st = b_.CreateAlignedStore(cols[c], dst_at(b_.CreateAdd(j0, i64(c)), i0),
                                       streamed ? llvm::Align(64) : align);
      if (streamed)
        nontemporal(st);
    }
  };
  auto plain = [&] { // source rows in the outer loop, as the copies before
    loop(
        M / L,
        [&](llvm::Value *bi) {
          loop(
              full_groups, [&](llvm::Value *bj) { block(bi, b_.CreateMul(bj, i64(L)), L, false); },
              "tj");
          for (auto [j, w] : tails)
            block(bi, i64(j), w, false);
        },
        "ti");
  };
  // Streamed: the blocks of a column group one after the other, so that each destination row
  // gets its M / L lines back to back (whole runs of a DRAM page, where 16-row passes wrote one
  // line of each of N rows 64 KiB apart per pass). The source rows are then read L at a time
  // down the block, so each step fetches its share of the M rows below (the next program's
  // block where programs walk down the rows, as ops.transpose's do) into L2 in row order. Zen 4,
  // 16384 x 1024 f32 in C: 32-row blocks so 0.81-0.87 of a non-temporal triad, 16-row ones
  // 0.74-0.77 with or without the fetch, 32-row ones without it 0.32-0.51.
  const int64_t steps = (M / L) * groups, line_bytes = 64;
  const int64_t row_lines = (N * esize + line_bytes - 1) / line_bytes; // a source row's lines
  const int64_t per_step = M * row_lines / steps;
  const bool fetch = per_step > 0 && M * row_lines % steps == 0;
  auto fetch_step = [&](llvm::Value *g, llvm::Value *bi) { // group g (tails after the full ones)
    if (!fetch)
      return;
    llvm::Value *step = b_.CreateAdd(b_.CreateMul(g, i64(M / L)), bi);
    for (int64_t q = 0; q < per_step; ++q) {
      llvm::Value *l = b_.CreateAdd(b_.CreateMul(step, i64(per_step)), i64(q));
      llvm::Value *row = b_.CreateAdd(b_.CreateUDiv(l, i64(row_lines)), i64(M));
      llvm::Value *at =
          b_.CreateAdd(b_.CreateMul(b_.CreateMul(row, src_rs), i64(esize)),
                       b_.CreateMul(b_.CreateURem(l, i64(row_lines)), i64(line_bytes)));
      b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                         {b_.CreateGEP(b_.getInt8Ty(), src, at), b_.getInt32(0), b_.getInt32(2),
                          b_.getInt32(1)}); // into L2, data
    }
  };
  auto streamed_lines = [&](llvm::Value *g, llvm::Value *j0, int64_t width) {
    loop(
        M / L,
        [&](llvm::Value *bi) {
          fetch_step(g, bi);
          block(bi, j0, width, true);
        },
        "ti");
  };
  // Rows not whole lines: destination row j starts s_j lanes into a line. Its line t inside the
  // block (t >= 1) is the last s_j lanes of block row t - 1's piece and the first L - s_j of
  // row t's (lanes L - s_j .. of the pair). The row's first and last lines are partial: stored
  // plainly under masks, each shifted into its own line (a masked store across two lines owned
  // the next line too, and the non-temporal store into that cached line then cost more than the
  // plain stores: 16777 x 1000 at 0.27 of the triad).
  auto streamed_shifted = [&](llvm::Value *g, llvm::Value *j0, int64_t width) {
    auto *vec_t = llvm::FixedVectorType::get(elem, unsigned(L));
    llvm::Type *lane_t = b_.getIntNTy(unsigned(8 * esize)); // vpermi2d / vpermi2w indices
    std::vector<llvm::Constant *> iota_lanes;
    for (int64_t e = 0; e < L; ++e)
      iota_lanes.push_back(llvm::ConstantInt::get(lane_t, uint64_t(e)));
    llvm::Value *iota = llvm::ConstantVector::get(iota_lanes);
    std::vector<llvm::Value *> line0(width), shift(width), first(width), lead(width);
    for (int64_t c = 0; c < width; ++c) {
      llvm::Value *row = dst_at(b_.CreateAdd(j0, i64(c)), i64(0));
      shift[c] = b_.CreateAnd(b_.CreateUDiv(b_.CreatePtrToInt(row, b_.getInt64Ty()), i64(esize)),
                              i64(L - 1));
      // The row's first line (it may start before the tensor: only the row's lanes are stored).
      line0[c] = b_.CreateGEP(elem, row, b_.CreateNeg(shift[c]));
      llvm::Value *s = b_.CreateVectorSplat(unsigned(L), b_.CreateTrunc(shift[c], lane_t));
      first[c] =
          b_.CreateSub(llvm::ConstantVector::getSplat(llvm::ElementCount::getFixed(unsigned(L)),
                                                      llvm::ConstantInt::get(lane_t, uint64_t(L))),
                       s);
      lead[c] = b_.CreateICmpULT(iota, s); // the line's lanes before the row
    }
    // The next group's partial lines fetched for ownership now: their masked stores, each a
    // line read from memory, then no longer wait at the head of the store queue (16777 x 1024
    // f32: 6.9-8.2 -> 4.3-5.4 ms, alternating processes).
    for (int64_t c = 0; c < L; ++c) {
      llvm::Value *next =
          dst_at(b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, b_.CreateAdd(j0, i64(width + c)),
                                          i64(N - 1)),
                 i64(0));
      for (int64_t at : {int64_t(0), M - 1})
        b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {b_.getPtrTy()},
                           {b_.CreateGEP(elem, next, i64(at)), b_.getInt32(1), b_.getInt32(3),
                            b_.getInt32(1)}); // for writing, data
    }
    auto *kept = b_.CreateAlloca(llvm::ArrayType::get(vec_t, uint64_t(width)), nullptr, "piece");
    kept->setAlignment(llvm::Align(64));
    auto kept_at = [&](int64_t c) {
      return b_.CreateConstInBoundsGEP2_64(kept->getAllocatedType(), kept, 0, uint64_t(c));
    };
    fetch_step(g, i64(0));
    std::vector<llvm::Value *> cols = columns(i64(0), j0, width);
    for (int64_t c = 0; c < width; ++c) {
      b_.CreateMaskedStore(x86::lanes_of_pair(b_, cols[c], cols[c], first[c]), line0[c],
                           llvm::Align(64), b_.CreateNot(lead[c]));
      b_.CreateAlignedStore(cols[c], kept_at(c), llvm::Align(64));
    }
    loop(
        i64(1), i64(M / L),
        [&](llvm::Value *bi) {
          fetch_step(g, bi);
          llvm::Value *i0 = b_.CreateMul(bi, i64(L));
          const std::vector<llvm::Value *> now = columns(i0, j0, width);
          for (int64_t c = 0; c < width; ++c) {
            llvm::Value *before = b_.CreateAlignedLoad(vec_t, kept_at(c), llvm::Align(64));
            llvm::Value *line = x86::lanes_of_pair(b_, before, now[c], first[c]);
            nontemporal(
                b_.CreateAlignedStore(line, b_.CreateGEP(elem, line0[c], i0), llvm::Align(64)));
            b_.CreateAlignedStore(now[c], kept_at(c), llvm::Align(64));
          }
        },
        "ti");
    for (int64_t c = 0; c < width; ++c) { // the row's last line: its lanes of the last piece
      llvm::Value *last = b_.CreateAlignedLoad(vec_t, kept_at(c), llvm::Align(64));
      b_.CreateMaskedStore(x86::lanes_of_pair(b_, last, last, first[c]),
                           b_.CreateGEP(elem, line0[c], i64(M)), llvm::Align(64), lead[c]);
    }
  };
  auto streamed = [&](bool shifted) {
    auto group = [&](llvm::Value *g, llvm::Value *j0, int64_t width) {
      shifted ? streamed_shifted(g, j0, width) : streamed_lines(g, j0, width);
    };
    loop(
        full_groups, [&](llvm::Value *bj) { group(bj, b_.CreateMul(bj, i64(L)), L); }, "tj");
    for (size_t t = 0; t < tails.size(); ++t)
      group(i64(full_groups + int64_t(t)), i64(tails[t].first), tails[t].second);
  };
  if (!stream || L * esize != 64) {
    plain();
    return;
  }
  llvm::Value *dst_lo = b_.CreatePtrToInt(dst, b_.getInt64Ty());
  llvm::Value *lines = b_.CreateAnd(
      stream, b_.CreateICmpEQ(b_.CreateAnd(b_.CreateOr(dst_lo, b_.CreateMul(dst_rs, i64(esize))),
                                           i64(line_bytes - 1)),
                              i64(0)));
  // Shifting needs the rows' starts whole elements into their lines (vpermi2d / vpermi2w).
  llvm::Value *shifts =
      (L == 16 && esize == 4) || L == 32
          ? b_.CreateAnd(stream, b_.CreateICmpEQ(b_.CreateAnd(dst_lo, i64(esize - 1)), i64(0)))
          : nullptr;
  versions(
      lines,
      [&](bool whole) {
        if (whole)
          return streamed(false);
        versions(
            shifts, [&](bool shift) { shift ? streamed(true) : plain(); }, "transpose.shifted");
      },
      "transpose");
}

void KernelCodegen::lower_dot(const ir::Operation &op) {
  const ir::Type &at = op.operand(0)->type(), &bt = op.operand(1)->type();
  const int64_t M = at.shape()[0], K = at.shape()[1], N = bt.shape()[1];
  Slot a = slot(op.operand(0)), bs = slot(op.operand(1)), &c = slot(op.result());
  const ScalarKind acc = op.result()->type().elem();
  if (const std::string *p = op.attr_as<std::string>("input_precision"); p && *p != "ieee") {
    // Round copies of the inputs first (the verifier allows this for f32 inputs only).
    auto rounded = [&](const Slot &src) {
      Slot r = new_slot(ir::Type::tile(ScalarKind::F32, {src.n}));
      loop(
          src.n,
          [&](llvm::Value *i) {
            llvm::Value *x = b_.CreateLoad(src.elem, elem_ptr(src, i));
            b_.CreateStore(*p == "bf16" ? round_to(ScalarKind::BF16, x) : round_tf32(x),
                           elem_ptr(r, i));
          },
          "prec");
      return r;
    };
    a = rounded(a);
    bs = rounded(bs);
  }
  const uint64_t bytes = module_.getDataLayout().getTypeAllocSize(c.elem) * c.n;
  if (op.num_operands() == 3) {
    Slot init = slot(op.operand(2));
    if (init.ptr != c.ptr) // in place when the accumulator is a loop-carried value (lower_for)
      b_.CreateMemCpy(c.ptr, llvm::MaybeAlign(64), init.ptr, element_align(init), bytes);
  } else {
    b_.CreateMemSet(c.ptr, b_.getInt8(0), bytes, llvm::MaybeAlign(64));
  }
  const bool fl = ir::is_float(acc);
  int64_t m_done = 0, n_done = 0;
  // f16 / bf16 / f8 inputs are held as the f32 values they are, so with an f32 (or f64)
  // accumulator every step is the same fma as for f32 inputs: the micro-kernel applies as is.
  // (avx512_bf16's vdpbf16ps is not used: it adds each pair of products in the opposite order
  // and flushes subnormals, where the IR's dot is one fma per k in ascending order.)
  if (fl && (acc == ScalarKind::F32 || acc == ScalarKind::F64) && a.elem == c.elem &&
      bs.elem == c.elem)
    dot_microkernel(a, bs, c, M, K, N, op.parent(), &m_done, &n_done);
  auto widen = [&](llvm::Value *x, ScalarKind from) {
    return fl ? b_.CreateFPCast(x, c.elem) : b_.CreateIntCast(x, c.elem, ir::is_signed(from));
  };
  // What the micro-kernel left (all of it for integers): the rows below m_done, and the columns
  // right of n_done. i-k-j order: each c[i][j] still accumulates k in ascending order.
  auto rest = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (i0 >= i1 || j0 >= j1)
      return;
    loop(
        i64(i0), i64(i1),
        [&](llvm::Value *i) {
          loop(
              K,
              [&](llvm::Value *k) {
                llvm::Value *aik = widen(
                    b_.CreateLoad(a.elem, elem_ptr(a, b_.CreateAdd(b_.CreateMul(i, i64(K)), k))),
                    at.elem());
                loop(
                    i64(j0), i64(j1),
                    [&](llvm::Value *j) {
                      llvm::Value *bkj = widen(
                          b_.CreateLoad(bs.elem,
                                        elem_ptr(bs, b_.CreateAdd(b_.CreateMul(k, i64(N)), j))),
                          bt.elem());
                      llvm::Value *cp = elem_ptr(c, b_.CreateAdd(b_.CreateMul(i, i64(N)), j));
                      llvm::Value *cij = b_.CreateLoad(c.elem, cp);
                      llvm::Value *sum =
                          fl ? b_.CreateIntrinsic(llvm::Intrinsic::fma, {c.elem}, {aik, bkj, cij})
                             : b_.CreateAdd(cij, b_.CreateMul(aik, bkj));
                      b_.CreateStore(round_to(acc, sum), cp);
                    },
                    "j");
              },
              "k");
        },
        "i");
  };
  rest(0, m_done, n_done, N);
  rest(m_done, M, 0, N);
}

/// The register-blocked micro-kernel: MR x NR blocks of c held in vector registers across the
/// whole k loop (one broadcast of a and NR/VL loads of b per k and row block, one fma each).
void KernelCodegen::dot_microkernel(const Slot &a, const Slot &bs, const Slot &c, int64_t M,
                                    int64_t K, int64_t N, const ir::Block *block, int64_t *m_done,
                                    int64_t *n_done) {
  const unsigned elem_bits = c.elem->getPrimitiveSizeInBits();
  const unsigned VL = std::max(1u, vector_bits_ / elem_bits);
  const int64_t NV = 2, NR = NV * VL, MR = vector_bits_ >= 512 ? 8 : 4;
  const int64_t mb = M / MR, nb = N / NR;
  if (mb == 0 || nb == 0 || VL < 2)
    return;
  *m_done = mb * MR;
  *n_done = nb * NR;
  auto *vt = llvm::FixedVectorType::get(c.elem, VL);
  const llvm::Align align(c.elem->getPrimitiveSizeInBits() / 8);
  loop(
      mb,
      [&](llvm::Value *ib) {
        llvm::Value *i0 = b_.CreateMul(ib, i64(MR));
        loop(
            nb,
            [&](llvm::Value *jb) {
              fetch_next_rows(block, b_.CreateAdd(b_.CreateMul(ib, i64(nb)), jb), mb * nb);
              llvm::Value *j0 = b_.CreateMul(jb, i64(NR));
              auto cptr = [&](int64_t r, int64_t v) {
                return elem_ptr(c, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(i0, i64(r)), i64(N)),
                                                b_.CreateAdd(j0, i64(v * VL))));
              };
              std::vector<llvm::Value *> init;
              for (int64_t r = 0; r < MR; ++r)
                for (int64_t v = 0; v < NV; ++v)
                  init.push_back(b_.CreateAlignedLoad(vt, cptr(r, v), align));
              llvm::BasicBlock *pre = b_.GetInsertBlock();
              auto *body = llvm::BasicBlock::Create(ctx_, "mk.k", fn_);
              auto *exit = llvm::BasicBlock::Create(ctx_, "mk.exit", fn_);
              b_.CreateBr(body);
              b_.SetInsertPoint(body);
              llvm::PHINode *k = b_.CreatePHI(b_.getInt64Ty(), 2, "k");
              k->addIncoming(i64(0), pre);
              std::vector<llvm::PHINode *> accs;
              for (llvm::Value *v : init) {
                accs.push_back(b_.CreatePHI(vt, 2));
                accs.back()->addIncoming(v, pre);
              }
              std::vector<llvm::Value *> bv;
              for (int64_t v = 0; v < NV; ++v)
                bv.push_back(
                    b_.CreateAlignedLoad(vt,
                                         elem_ptr(bs, b_.CreateAdd(b_.CreateMul(k, i64(N)),
                                                                   b_.CreateAdd(j0, i64(v * VL)))),
                                         align));
              std::vector<llvm::Value *> next(accs.size());
              for (int64_t r = 0; r < MR; ++r) {
                llvm::Value *ar = b_.CreateLoad(
                    a.elem,
                    elem_ptr(a, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(i0, i64(r)), i64(K)), k)));
                llvm::Value *splat = b_.CreateVectorSplat(VL, ar);
                for (int64_t v = 0; v < NV; ++v)
                  next[r * NV + v] = b_.CreateIntrinsic(llvm::Intrinsic::fma, {vt},
                                                        {splat, bv[v], accs[r * NV + v]});
              }
              llvm::Value *k1 = b_.CreateAdd(k, i64(1));
              for (size_t x = 0; x < accs.size(); ++x)
                accs[x]->addIncoming(next[x], b_.GetInsertBlock());
              k->addIncoming(k1, b_.GetInsertBlock());
              b_.CreateCondBr(b_.CreateICmpSLT(k1, i64(K)), body, exit);
              b_.SetInsertPoint(exit);
              for (int64_t r = 0; r < MR; ++r)
                for (int64_t v = 0; v < NV; ++v)
                  b_.CreateAlignedStore(next[r * NV + v], cptr(r, v), align);
            },
            "jb");
      },
      "ib");
}

/// The next trip's blocks of the k loop's loads (cpu.prefetch_next) fetched a few rows per
/// micro-kernel block (`t` of `count`), so that the fetches spread over the dot's compute
/// instead of filling the miss queue at once: each row's lines, the last one at its last byte (a
/// row that does not start on a line touches one more).
void KernelCodegen::fetch_next_rows(const ir::Block *block, llvm::Value *t, int64_t count) {
  for (const RowStream &s : row_streams_) {
    if (s.block != block)
      continue;
    const int64_t per = (s.tile_rows + count - 1) / count, lines = s.row_bytes / 64 + 1;
    for (int64_t i = 0; i < per; ++i) {
      llvm::Value *r = b_.CreateAdd(b_.CreateMul(t, i64(per)), i64(i));
      auto *fetch = llvm::BasicBlock::Create(ctx_, "next.row", fn_);
      auto *done = llvm::BasicBlock::Create(ctx_, "next.done", fn_);
      b_.CreateCondBr(b_.CreateICmpSLT(r, s.rows), fetch, done);
      b_.SetInsertPoint(fetch);
      llvm::Value *row = b_.CreateGEP(b_.getInt8Ty(), s.at, b_.CreateMul(r, s.stride));
      for (int64_t l = 0; l < lines; ++l)
        b_.CreateIntrinsic(
            llvm::Intrinsic::prefetch, {b_.getPtrTy()},
            {b_.CreateGEP(b_.getInt8Ty(), row, i64(std::min(l * 64, s.row_bytes - 1))),
             b_.getInt32(0), b_.getInt32(2), b_.getInt32(1)}); // read, into L2, data
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
    }
  }
}

llvm::Value *KernelCodegen::combine(const std::string &kind, ScalarKind k, llvm::Value *acc,
                                    llvm::Value *x) {
  const bool fl = ir::is_float(k), s = ir::is_signed(k);
  if (kind == "sum")
    return fl ? b_.CreateFAdd(acc, x) : b_.CreateAdd(acc, x);
  if (kind == "max")
    return b_.CreateBinaryIntrinsic(fl  ? llvm::Intrinsic::maximum
                                    : s ? llvm::Intrinsic::smax
                                        : llvm::Intrinsic::umax,
                                    acc, x);
  return b_.CreateBinaryIntrinsic(fl  ? llvm::Intrinsic::minimum
                                  : s ? llvm::Intrinsic::smin
                                      : llvm::Intrinsic::umin,
                                  acc, x);
}

/// x with combine(kind, identity, x) == x for every x of type `k` (NaN included).
llvm::Value *KernelCodegen::reduce_identity(const std::string &kind, ScalarKind k, llvm::Type *t) {
  if (ir::is_float(k)) {
    const double inf = std::numeric_limits<double>::infinity();
    return llvm::ConstantFP::get(t, kind == "sum" ? -0.0 : kind == "max" ? -inf : inf);
  }
  const unsigned bits = t->getIntegerBitWidth();
  if (kind == "sum")
    return llvm::ConstantInt::get(t, 0);
  const bool s = ir::is_signed(k), max = kind == "max";
  return llvm::ConstantInt::get(
      t->getContext(),
      s ? (max ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getSignedMaxValue(bits))
        : (max ? llvm::APInt::getMinValue(bits) : llvm::APInt::getMaxValue(bits)));
}

/// The 8 x 8 transpose of 8 vectors of 8 lanes (row u, lane j -> row j, lane u): unpacks of
/// lanes, then of pairs, then the 128-bit halves (AVX's unpcklps / shufps / vperm2f128).
std::vector<llvm::Value *> KernelCodegen::transpose8(const std::vector<llvm::Value *> &r) {
  auto shuffle = [&](llvm::Value *a, llvm::Value *b, std::initializer_list<int> mask) {
    return b_.CreateShuffleVector(a, b, llvm::ArrayRef<int>(mask.begin(), mask.size()));
  };
  std::vector<llvm::Value *> t(8), q(8), out(8);
  for (int i = 0; i < 4; ++i) { // lanes of rows 2i, 2i + 1 interleaved, per 128-bit half
    t[2 * i] = shuffle(r[2 * i], r[2 * i + 1], {0, 8, 1, 9, 4, 12, 5, 13});
    t[2 * i + 1] = shuffle(r[2 * i], r[2 * i + 1], {2, 10, 3, 11, 6, 14, 7, 15});
  }
  for (int i = 0; i < 2; ++i) // pairs of t[4i + 0/1] with t[4i + 2/3]
    for (int h = 0; h < 2; ++h) {
      q[4 * i + 2 * h] = shuffle(t[4 * i + h], t[4 * i + 2 + h], {0, 1, 8, 9, 4, 5, 12, 13});
      q[4 * i + 2 * h + 1] = shuffle(t[4 * i + h], t[4 * i + 2 + h], {2, 3, 10, 11, 6, 7, 14, 15});
    }
  for (int j = 0; j < 4; ++j) { // the low halves of rows 0-3 with those of 4-7, then the high
    out[j] = shuffle(q[j], q[4 + j], {0, 1, 2, 3, 8, 9, 10, 11});
    out[4 + j] = shuffle(q[j], q[4 + j], {4, 5, 6, 7, 12, 13, 14, 15});
  }
  return out;
}

/// The transpose of 32 vectors of W = 32, 16 or 8 lanes of 16 bits (AVX-512BW) into W vectors of
/// 32 lanes: rows 2k and 2k + 1 interleaved lane by lane are vectors of 32-bit pairs (row 2k's
/// element the low half), whose 16 x 16 transposes (transpose16) hold in row c, pair k, column
/// c of rows 2k and 2k + 1: the 32 lanes of output row c in order. bf16 rows of whole 64-byte
/// lines, as f32's 16 x 16 blocks.
std::vector<llvm::Value *> KernelCodegen::transpose_pairs(const std::vector<llvm::Value *> &r) {
  const int W = int(llvm::cast<llvm::FixedVectorType>(r[0]->getType())->getNumElements());
  auto *pairs_t = llvm::FixedVectorType::get(b_.getInt32Ty(), 16);
  auto *out_t = llvm::FixedVectorType::get(r[0]->getType()->getScalarType(), 32);
  std::vector<llvm::Value *> out;
  if (W == 8) { // a 16 x 8 matrix of pairs: two 8 x 8 transposes, each output row's halves joined
    std::vector<llvm::Value *> top(8), bottom(8);
    auto *half_t = llvm::FixedVectorType::get(b_.getInt32Ty(), 8);
    std::vector<int> mask, join;
    for (int c = 0; c < 8; ++c)
      mask.push_back(c), mask.push_back(8 + c);
    for (int e = 0; e < 16; ++e)
      join.push_back(e);
    for (int k = 0; k < 8; ++k) {
      top[k] = b_.CreateBitCast(b_.CreateShuffleVector(r[2 * k], r[2 * k + 1], mask), half_t);
      bottom[k] =
          b_.CreateBitCast(b_.CreateShuffleVector(r[16 + 2 * k], r[17 + 2 * k], mask), half_t);
    }
    top = transpose8(top);
    bottom = transpose8(bottom);
    for (int c = 0; c < 8; ++c)
      out.push_back(b_.CreateBitCast(b_.CreateShuffleVector(top[c], bottom[c], join), out_t));
    return out;
  }
  for (int half = 0; half < W / 16; ++half) { // output rows 16 half ..
    std::vector<llvm::Value *> p(16);
    for (int k = 0; k < 16; ++k) {
      std::vector<int> mask;
      for (int c = 0; c < 16; ++c)
        mask.push_back(16 * half + c), mask.push_back(W + 16 * half + c);
      p[k] = b_.CreateBitCast(b_.CreateShuffleVector(r[2 * k], r[2 * k + 1], mask), pairs_t);
    }
    for (llvm::Value *q : transpose16(p))
      out.push_back(b_.CreateBitCast(q, out_t));
  }
  return out;
}

/// The 16 x 16 transpose of 16 vectors of 16 lanes (AVX-512): within each 128-bit lane, unpacks
/// of lanes, then of pairs (vunpcklps, vunpcklpd), leave u[4i + c] holding, in lane L, column
/// 4L + c of rows 4i .. 4i + 3; two rounds of 128-bit lane shuffles (vshuff32x4) gather lane L
/// of u[c], u[4 + c], u[8 + c], u[12 + c] into output row 4L + c.
std::vector<llvm::Value *> KernelCodegen::transpose16(const std::vector<llvm::Value *> &r) {
  auto shuffle = [&](llvm::Value *a, llvm::Value *b, const std::vector<int> &mask) {
    return b_.CreateShuffleVector(a, b, llvm::ArrayRef<int>(mask));
  };
  // Element masks per 128-bit lane: `first` (indices into lane 0, +16 for the second operand)
  // repeated in every lane.
  auto per_lane = [](std::initializer_list<int> first) {
    std::vector<int> m;
    for (int l = 0; l < 4; ++l)
      for (int e : first)
        m.push_back(e + 4 * l);
    return m;
  };
  // The 128-bit lanes {a, b} of the first operand and {c, d} of the second.
  auto lanes = [](int a, int b, int c, int d) {
    std::vector<int> m;
    for (int l : {a, b, 4 + c, 4 + d})
      for (int e = 0; e < 4; ++e)
        m.push_back(4 * l + e);
    return m;
  };
  std::vector<llvm::Value *> t(16), u(16), v(16), out(16);
  for (int i = 0; i < 8; ++i) { // rows 2i, 2i + 1: lanes 0 and 1, then 2 and 3, interleaved
    t[2 * i] = shuffle(r[2 * i], r[2 * i + 1], per_lane({0, 16, 1, 17}));
    t[2 * i + 1] = shuffle(r[2 * i], r[2 * i + 1], per_lane({2, 18, 3, 19}));
  }
  for (int i = 0; i < 4; ++i) // pairs: u[4i + c] lane L = column 4L + c of rows 4i .. 4i + 3
    for (int h = 0; h < 2; ++h) {
      u[4 * i + 2 * h] = shuffle(t[4 * i + h], t[4 * i + 2 + h], per_lane({0, 1, 16, 17}));
      u[4 * i + 2 * h + 1] = shuffle(t[4 * i + h], t[4 * i + 2 + h], per_lane({2, 3, 18, 19}));
    }
  for (int c = 0; c < 4; ++c) {
    // A = u[c], B = u[4 + c], C = u[8 + c], D = u[12 + c]: {A0 A2 B0 B2}, {A1 A3 B1 B3}, and
    // the same of C, D; then row 4L + c = {A_L B_L C_L D_L}.
    v[c] = shuffle(u[c], u[4 + c], lanes(0, 2, 0, 2));
    v[4 + c] = shuffle(u[c], u[4 + c], lanes(1, 3, 1, 3));
    v[8 + c] = shuffle(u[8 + c], u[12 + c], lanes(0, 2, 0, 2));
    v[12 + c] = shuffle(u[8 + c], u[12 + c], lanes(1, 3, 1, 3));
    out[c] = shuffle(v[c], v[8 + c], lanes(0, 2, 0, 2));           // lane 0
    out[8 + c] = shuffle(v[c], v[8 + c], lanes(1, 3, 1, 3));       // lane 2
    out[4 + c] = shuffle(v[4 + c], v[12 + c], lanes(0, 2, 0, 2));  // lane 1
    out[12 + c] = shuffle(v[4 + c], v[12 + c], lanes(1, 3, 1, 3)); // lane 3
  }
  return out;
}

/// argmax along rows of f32 (`rows` x `len`, from memory), kArgmaxLanes columns a step into one
/// of kArgmaxChains running maxima: lane j of chain a keeps the first maximum among the columns
/// of its steps (value and column; a NaN is the largest value, the first one kept), as the
/// scalar loop below does for a row. The chains combine lane by lane, then the lanes in a tree:
/// the largest value, and among equal values (or NaNs) the smallest column, which is the row's
/// first maximum. The columns past the last whole step follow one by one, where only a
/// larger value wins. LLVM does not vectorize the scalar form (a select of the index): ~2 ns an
/// element, argmax of 16384 x 1024 f32 rows at 0.03 of the triad; one chain is bound by its
/// compare-select latency (0.59).
void KernelCodegen::lower_row_argmax(const ir::Operation &op, const ir::Value &x, int64_t rows,
                                     int64_t len) {
  constexpr int64_t W = kArgmaxLanes, A = kArgmaxChains;
  Slot &out = slot(op.result());
  Slot &src = slot(&x);
  llvm::Type *f = b_.getFloatTy(), *i32 = b_.getInt32Ty();
  auto *vf = llvm::FixedVectorType::get(f, W);
  auto *vi = llvm::FixedVectorType::get(i32, W);
  std::vector<llvm::Constant *> iota_lanes;
  for (int64_t j = 0; j < W; ++j)
    iota_lanes.push_back(b_.getInt32(uint32_t(j)));
  llvm::Value *iota = llvm::ConstantVector::get(iota_lanes);
  // a (the later column) wins over b: b is not a NaN, and a is one or is larger
  auto greater = [&](llvm::Value *a, llvm::Value *b) {
    return b_.CreateAnd(b_.CreateFCmpORD(b, b),
                        b_.CreateOr(b_.CreateFCmpUNO(a, a), b_.CreateFCmpOGT(a, b)));
  };
  // a at column ia wins over b at ib, in either order: larger, or equal (both NaN or neither)
  // at a smaller column
  auto first_greater = [&](llvm::Value *a, llvm::Value *ia, llvm::Value *b, llvm::Value *ib) {
    llvm::Value *same = b_.CreateOr(b_.CreateFCmpOEQ(a, b),
                                    b_.CreateAnd(b_.CreateFCmpUNO(a, a), b_.CreateFCmpUNO(b, b)));
    return b_.CreateOr(greater(a, b), b_.CreateAnd(same, b_.CreateICmpSLT(ia, ib)));
  };
  Slot best = new_slot(ir::Type::tile(ScalarKind::F32, {A * W}));
  Slot index = new_slot(ir::Type::tile(ScalarKind::I32, {A * W}));
  auto chain = [&](Slot &s, int64_t a) { return elem_ptr(s, i64(a * W)); };
  const int64_t whole = len / W, groups = whole / A;
  // The next program's rows (the load view's next block), a few lines a group of columns, as
  // the row scan fetches them: nothing had fetched ahead of the hardware prefetcher (argmax of
  // 16384 x 1024 f32 rows 0.56-0.62 -> 0.82-0.88 of the triad on session 32's Xeon; the compare
  // -selects are not the bound: a two-pass form, vmaxps then the first equal column, measured
  // the same).
  const std::vector<Fetch> fetches = open_streams(rows * groups, 8 * 64);
  loop(
      rows,
      [&](llvm::Value *o) {
        llvm::Value *row = b_.CreateMul(o, i64(len));
        auto vload = [&](llvm::Value *k0) {
          return b_.CreateAlignedLoad(vf, elem_ptr(src, b_.CreateAdd(row, k0)), llvm::Align(4));
        };
        auto columns = [&](llvm::Value *k0) {
          return b_.CreateAdd(b_.CreateVectorSplat(unsigned(W), b_.CreateTrunc(k0, i32)), iota);
        };
        auto step = [&](int64_t a, llvm::Value *k0) {
          llvm::Value *xv = vload(k0), *cur = b_.CreateLoad(vf, chain(best, a));
          llvm::Value *win = greater(xv, cur);
          b_.CreateStore(b_.CreateSelect(win, xv, cur), chain(best, a));
          b_.CreateStore(b_.CreateSelect(win, columns(k0), b_.CreateLoad(vi, chain(index, a))),
                         chain(index, a));
        };
        auto fetch = [&](llvm::Value *g) {
          fetch_trip(fetches, b_.CreateAdd(b_.CreateMul(o, i64(groups)), g), rows * groups);
        };
        fetch(i64(0));
        for (int64_t a = 0; a < A; ++a) {
          b_.CreateStore(vload(i64(a * W)), chain(best, a));
          b_.CreateStore(columns(i64(a * W)), chain(index, a));
        }
        loop(
            i64(1), i64(groups),
            [&](llvm::Value *g) {
              fetch(g);
              for (int64_t a = 0; a < A; ++a)
                step(a, b_.CreateMul(b_.CreateAdd(b_.CreateMul(g, i64(A)), i64(a)), i64(W)));
            },
            "kg");
        loop(
            i64(groups * A), i64(whole),
            [&](llvm::Value *kb) { step(0, b_.CreateMul(kb, i64(W))); }, "kb");
        for (int64_t a = 1; a < A; ++a) { // the chains into chain 0, lane by lane
          llvm::Value *v = b_.CreateLoad(vf, chain(best, a)),
                      *i = b_.CreateLoad(vi, chain(index, a));
          llvm::Value *bv = b_.CreateLoad(vf, chain(best, 0));
          llvm::Value *bi = b_.CreateLoad(vi, chain(index, 0));
          llvm::Value *win = first_greater(v, i, bv, bi);
          b_.CreateStore(b_.CreateSelect(win, v, bv), chain(best, 0));
          b_.CreateStore(b_.CreateSelect(win, i, bi), chain(index, 0));
        }
        // Chain 0's lanes into its lane 0 in a tree: each step, lane j against lane j + h (h =
        // W/2, ..., 1). A scalar loop over the lanes was a chain of 15 compare-selects a row,
        // which held the next row's loads back (argmax ~0.65 of the triad).
        llvm::Value *bv = b_.CreateLoad(vf, chain(best, 0)),
                    *bi = b_.CreateLoad(vi, chain(index, 0));
        for (int64_t h = W / 2; h >= 1; h /= 2) {
          std::vector<int> upper;
          for (int64_t j = 0; j < W; ++j)
            upper.push_back(int(j + h < W ? j + h : j));
          llvm::Value *v = b_.CreateShuffleVector(bv, upper),
                      *i = b_.CreateShuffleVector(bi, upper);
          llvm::Value *win = first_greater(v, i, bv, bi);
          bv = b_.CreateSelect(win, v, bv);
          bi = b_.CreateSelect(win, i, bi);
        }
        llvm::Value *bv_ptr = elem_ptr(best, i64(0)), *bi_ptr = elem_ptr(index, i64(0));
        b_.CreateStore(b_.CreateExtractElement(bv, uint64_t(0)), bv_ptr);
        b_.CreateStore(b_.CreateExtractElement(bi, uint64_t(0)), bi_ptr);
        loop(
            i64(whole * W), i64(len),
            [&](llvm::Value *k) {
              llvm::Value *v = b_.CreateLoad(f, elem_ptr(src, b_.CreateAdd(row, k)));
              llvm::Value *bv = b_.CreateLoad(f, bv_ptr);
              llvm::Value *win = greater(v, bv);
              b_.CreateStore(b_.CreateSelect(win, v, bv), bv_ptr);
              b_.CreateStore(
                  b_.CreateSelect(win, b_.CreateTrunc(k, i32), b_.CreateLoad(i32, bi_ptr)), bi_ptr);
            },
            "k");
        b_.CreateStore(b_.CreateLoad(i32, bi_ptr), elem_ptr(out, o));
      },
      "o", /*rolled=*/true);
}

/// A float sum scan along rows (`rows` x `len`, from memory) in any order (no order = "exact":
/// ir.h's bound): each vector of kScanStepLanes columns scanned in log2(lanes) shift-and-add
/// steps, plus the row's running total (its last lane, broadcast); kScanStepRows rows step
/// together so that their carry chains (an add and a broadcast a vector) overlap. The exact
/// order's 8 x 8 transposes are 6 shuffles an 8-column vector, all on one port of an Intel core
/// (cumsum of 16384 x 1024 f32 rows at 0.56-0.70 of the triad on session 32's Xeon); these are
/// 5 a 16-column vector. The columns past the last whole vector follow one by one.
void KernelCodegen::lower_row_scan_steps(const ir::Operation &op, const ir::Value &x, int64_t rows,
                                         int64_t len) {
  constexpr int64_t W = kScanStepLanes, R = kScanStepRows;
  Slot &out = slot(op.result());
  Slot &src = slot(&x);
  llvm::Type *f = b_.getFloatTy();
  auto *vf = llvm::FixedVectorType::get(f, W);
  llvm::Value *zero = llvm::Constant::getNullValue(vf);
  const std::vector<int> last(W, int(W - 1));
  Slot carry = new_slot(ir::Type::tile(ScalarKind::F32, {R * W}));
  const int64_t whole = len / W, groups = (rows + R - 1) / R;
  // The next program's rows (the load view's next block), paced over every group's vectors
  const std::vector<Fetch> fetches = open_streams(groups * whole, 2 * R * W * 4);
  auto group = [&](llvm::Value *g, int64_t count) {
    llvm::Value *o0 = b_.CreateMul(g, i64(R));
    auto at = [&](int64_t r, llvm::Value *k) {
      return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(o0, i64(r)), i64(len)), k);
    };
    for (int64_t r = 0; r < count; ++r)
      b_.CreateStore(zero, elem_ptr(carry, i64(r * W)));
    loop(
        whole,
        [&](llvm::Value *kv) {
          fetch_trip(fetches, b_.CreateAdd(b_.CreateMul(g, i64(whole)), kv), groups * whole);
          llvm::Value *k0 = b_.CreateMul(kv, i64(W));
          for (int64_t r = 0; r < count; ++r) {
            llvm::Value *v = b_.CreateAlignedLoad(vf, elem_ptr(src, at(r, k0)), llvm::Align(4));
            for (int64_t h = 1; h < W; h *= 2) { // lane j += lane j - h (zero below h)
              std::vector<int> shifted;
              for (int64_t j = 0; j < W; ++j)
                shifted.push_back(int(j < h ? W : j - h));
              v = b_.CreateFAdd(v, b_.CreateShuffleVector(v, zero, shifted));
            }
            llvm::Value *c = elem_ptr(carry, i64(r * W));
            v = b_.CreateFAdd(v, b_.CreateLoad(vf, c));
            b_.CreateAlignedStore(v, elem_ptr(out, at(r, k0)), llvm::Align(4));
            b_.CreateStore(b_.CreateShuffleVector(v, v, last), c);
          }
        },
        "kv");
    for (int64_t r = 0; r < count; ++r) { // the ragged columns, from the row's total
      llvm::Value *c = elem_ptr(carry, i64(r * W));
      loop(
          i64(whole * W), i64(len),
          [&](llvm::Value *k) {
            llvm::Value *next =
                b_.CreateFAdd(b_.CreateLoad(f, c), b_.CreateLoad(f, elem_ptr(src, at(r, k))));
            b_.CreateStore(next, c);
            b_.CreateStore(next, elem_ptr(out, at(r, k)));
          },
          "kt");
    }
  };
  loop(
      rows / R, [&](llvm::Value *g) { group(g, R); }, "og");
  if (rows % R)
    group(i64(rows / R), rows % R);
}

/// sum, max or min along the middle axis of x (outer x len x inner, in memory), `block` lanes of
/// the inner axis at a time: their running values stay in registers while k steps down the
/// axis, one load an element vector. The lane-by-lane form kept them in the output tile, a load
/// and a store of it per element vector besides x's (column sums of 16384 x 1024 f32 in 16-row
/// chunks at 0.63-0.77 of the triad on session 32's Xeon). The same combinations in the same
/// order: from the identity, then k ascending.
void KernelCodegen::lower_column_reduce(const ir::Operation &op, const ir::Value &x, int64_t outer,
                                        int64_t len, int64_t inner, int64_t block) {
  const ir::Type &t = op.operand(0)->type();
  const std::string &kind = *op.attr_as<std::string>("kind");
  Slot &out = slot(op.result());
  Slot &src = slot(&x);
  auto *vt = llvm::FixedVectorType::get(src.elem, unsigned(block));
  const llvm::Align align(module_.getDataLayout().getTypeAllocSize(src.elem));
  Slot acc = new_slot(ir::Type::tile(t.elem(), {block}));
  const int64_t trips = outer * (inner / block) * len;
  std::vector<Fetch> fetches = open_streams(trips, 4 * 64);
  loop(
      outer,
      [&](llvm::Value *o) {
        loop(
            inner / block,
            [&](llvm::Value *ib) {
              llvm::Value *in0 = b_.CreateMul(ib, i64(block));
              b_.CreateStore(
                  b_.CreateVectorSplat(unsigned(block), reduce_identity(kind, t.elem(), out.elem)),
                  acc.ptr);
              loop(
                  len,
                  [&](llvm::Value *k) {
                    fetch_trip(
                        fetches,
                        b_.CreateAdd(
                            b_.CreateMul(b_.CreateAdd(b_.CreateMul(o, i64(inner / block)), ib),
                                         i64(len)),
                            k),
                        trips);
                    llvm::Value *at = b_.CreateAdd(
                        b_.CreateMul(b_.CreateAdd(b_.CreateMul(o, i64(len)), k), i64(inner)), in0);
                    llvm::Value *xv = b_.CreateAlignedLoad(vt, elem_ptr(src, at), align);
                    b_.CreateStore(combine(kind, t.elem(), b_.CreateLoad(vt, acc.ptr), xv),
                                   acc.ptr);
                  },
                  "ck");
              b_.CreateAlignedStore(b_.CreateLoad(vt, acc.ptr),
                                    elem_ptr(out, b_.CreateAdd(b_.CreateMul(o, i64(inner)), in0)),
                                    align);
            },
            "cb");
      },
      "co");
}

int lane_cost(const ir::Operation &op) {
  switch (op.opcode()) {
  case Opcode::Reshape:
  case Opcode::ExpandDims:
  case Opcode::Broadcast:
  case Opcode::Splat:
  case Opcode::Full:
  case Opcode::Load:
    return 0;
  case Opcode::Exp:
  case Opcode::Exp2:
  case Opcode::Log:
  case Opcode::Log2:
  case Opcode::Erf:
  case Opcode::Ndtr:
  case Opcode::Tanh:
  case Opcode::Sigmoid:
  case Opcode::Sin:
  case Opcode::Cos:
  case Opcode::Pow:
    return kFetchingLaneWork;
  default:
    return 1;
  }
}

namespace {
/// A load whose next block the lane loops after it fetch: a view, or a converting copy of a
/// block that would be one (cpu.stream_copy: bf16 rows).
bool streams_ahead(const ir::Operation &def) {
  return def.opcode() == Opcode::Load &&
         (def.attr(plan::kView) || plan::flag(def, plan::kStreamCopy));
}
} // namespace

bool widens_in_place(const ir::Operation &def) {
  if (def.opcode() != Opcode::Cast || def.result()->type().elem() != ScalarKind::F32)
    return false;
  const ScalarKind from = def.operand(0)->type().elem();
  return ir::is_float(from) && !plan::held_as_stored(from);
}

void inlined_views(const ir::Value &x, std::vector<const ir::Operation *> &views) {
  const ir::Operation *def = x.def();
  if (def && streams_ahead(*def))
    views.push_back(def);
  // reshape and expand_dims share their operand's storage (lower_shape), as a widening cast
  if (def && (plan::flag(*def, plan::kInline) || def->opcode() == Opcode::Reshape ||
              def->opcode() == Opcode::ExpandDims || widens_in_place(*def)))
    for (const ir::Value *v : def->operands())
      inlined_views(*v, views);
}

int lane_work(const ir::Value &x, bool *reads_view) {
  bool local = false;
  bool &view = reads_view ? *reads_view : local;
  const ir::Operation *def = x.def();
  if (def && streams_ahead(*def))
    view = true;
  if (def && widens_in_place(*def) && !plan::flag(*def, plan::kInline)) {
    lane_work(*def->operand(0), &view); // its tile is its operand's
    return 0;
  }
  if (!def || !plan::flag(*def, plan::kInline))
    return 0;
  int work = lane_cost(*def);
  for (const ir::Value *v : def->operands())
    work += lane_work(*v, &view);
  return reads_view || view ? work : 0;
}

/// reduce/scan along `axis`: outer x len x inner. The k loop is outside the inner loop so that
/// the inner loop vectorizes while each element still combines in ascending k.
void KernelCodegen::lower_reduce_scan(const ir::Operation &op) {
  const ir::Type &t = op.operand(0)->type();
  const int64_t axis = *op.attr_as<int64_t>("axis");
  const std::string &kind = *op.attr_as<std::string>("kind");
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < t.rank(); ++d)
    (d < axis ? outer : inner) *= d == axis ? 1 : t.shape()[d];
  const int64_t len = t.shape()[axis];
  Slot &out = slot(op.result());
  const ir::Value *x = op.operand(0);
  const bool scan = op.opcode() == Opcode::Scan, argmax = kind == "argmax";
  auto at = [&](llvm::Value *o, llvm::Value *k, llvm::Value *in) {
    return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(o, i64(len)), k), i64(inner)), in);
  };
  auto dst = [&](llvm::Value *o, llvm::Value *k, llvm::Value *in) {
    return scan ? at(o, k, in) : b_.CreateAdd(b_.CreateMul(o, i64(inner)), in);
  };
  if (!scan && !argmax && outer == 1 && inner == 1) {
    // One accumulator over all lanes, from the kind's identity (the same result as starting
    // from element 0, and the loads stay aligned). A lane loop that fetches the next blocks
    // where it computes enough from a load view to spread a row's fetches (log_softmax's sum
    // of exponentials had fetched nothing: 4.0 -> 3.4 ms for 16384 x 1024 f32, two threads of
    // session 33's Xeon). A cheap reduction runs a 4 KiB row in ~100-200 cycles, and the row's
    // fetches came as a burst that stalled it (quantize's absolute maximum: 1.8 ms without,
    // 2.4 with; softmax's row max 3.4 against 3.9 ms; timed back to back).
    // A second reduction of a view the first read (var's squares after its sum, with one row a
    // program) reads the cache: it fetches into L2 too, as the pass over x - mean did before
    // that pass was inlined into the squares.
    std::vector<const ir::Operation *> views;
    inlined_views(*x, views);
    bool again = !views.empty();
    for (const ir::Operation *v : views)
      again &= !reduced_views_.insert(v).second;
    const bool busy = lane_work(*x) >= kFetchingLaneWork;
    reduce_lanes(
        len, {{kind, t.elem(), &out}},
        [&](llvm::Value *k) { return std::vector<llvm::Value *>{lane_value(x, k)}; }, busy || again,
        /*to_l1=*/busy);
    return;
  }
  if (scan && inner == 1) {
    // A scan along the last axis keeps its running values in registers (a slot that SROA
    // promotes): loading the previous output element back each step put a store-to-load
    // forward (~5 cycles) into the serial add chain (cumsum along rows 0.25 of the triad).
    // Rows are independent chains: up to kScanRows of them step through k together, so that
    // their adds overlap (one row's chain is bound by the add latency, ~3 cycles an element on
    // Zen 3). Each row keeps the same order: element 0, then each k in ascending order.
    constexpr int64_t kScanRows = 8;
    const ir::Operation *xdef = x->def();
    if (!op.attr("order") && kind == "sum" && t.elem() == ScalarKind::F32 &&
        len >= kScanStepLanes && !(xdef && plan::flag(*xdef, plan::kInline)) && !slot(x).row_stride)
      return lower_row_scan_steps(op, *x, outer, len);
    Slot acc = new_slot(ir::Type::tile(t.elem(), {kScanRows}));
    // f32 rows read from memory (not a fused expression), 8 at a time: 8 x 8 blocks, each
    // transposed so that a vector's lanes are the 8 rows, the 8 columns then combined into one
    // running vector in ascending order (the same adds, in the same order, as the scalar chains:
    // bit-identical) and transposed back. The scalar form was 2 memory operations and a scalar
    // add an element (cumsum along rows of f32 at ~0.5 of the triad).
    const bool blocks = t.elem() == ScalarKind::F32 && kind != "argmax" && len >= kScanRows &&
                        !(xdef && plan::flag(*xdef, plan::kInline));
    auto rows = [&](llvm::Value *o0, int64_t count) {
      int64_t k_first = 1; // the first column the scalar loop below combines
      if (blocks && count == kScanRows) {
        auto *vt = llvm::FixedVectorType::get(acc.elem, kScanRows);
        auto row_ptr = [&](Slot &sl, int64_t u, llvm::Value *k0) {
          return elem_ptr(sl, at(b_.CreateAdd(o0, i64(u)), k0, i64(0)));
        };
        // One block of columns [k0, k0 + 8): `first` starts each row's chain at column k0.
        auto block = [&](llvm::Value *k0, llvm::Value *running, bool first) {
          std::vector<llvm::Value *> v(kScanRows);
          for (int64_t u = 0; u < kScanRows; ++u)
            v[u] = b_.CreateAlignedLoad(vt, row_ptr(slot(x), u, k0), llvm::Align(4));
          v = transpose8(v);
          for (int64_t j = 0; j < kScanRows; ++j)
            running = v[j] = first && j == 0 ? v[j] : combine(kind, t.elem(), running, v[j]);
          v = transpose8(v);
          for (int64_t u = 0; u < kScanRows; ++u)
            b_.CreateAlignedStore(v[u], row_ptr(out, u, k0), llvm::Align(4));
          return running;
        };
        llvm::Value *running = block(i64(0), nullptr, true);
        Slot carry = new_slot(ir::Type::tile(t.elem(), {kScanRows}));
        b_.CreateStore(running, carry.ptr);
        const int64_t whole = len / kScanRows;
        // The next program's rows (the load view's next block), up to 8 lines a block of
        // columns, as lane_loop paces its streams: no loop of a scan kernel is a lane loop, so
        // nothing had fetched ahead of the hardware prefetcher, which follows 8 rows 32 bytes
        // at a time (cumsum rows 16384 x 1024 f32 0.65-0.73 -> 0.81-0.88 of the triad, Zen 4).
        const std::vector<Fetch> fetches =
            open_streams(whole, 2 * kScanRows * kScanRows * int64_t(sizeof(float)));
        loop(
            i64(1), i64(whole),
            [&](llvm::Value *kb) {
              fetch_trip(fetches, kb, whole);
              llvm::Value *r =
                  block(b_.CreateMul(kb, i64(kScanRows)), b_.CreateLoad(vt, carry.ptr), false);
              b_.CreateStore(r, carry.ptr);
            },
            "kb");
        b_.CreateStore(b_.CreateLoad(vt, carry.ptr), acc.ptr); // the ragged tail's start
        k_first = whole * kScanRows;
      } else {
        for (int64_t u = 0; u < count; ++u) {
          llvm::Value *o = b_.CreateAdd(o0, i64(u));
          llvm::Value *x0 = lane_value(x, at(o, i64(0), i64(0)));
          b_.CreateStore(x0, elem_ptr(acc, i64(u)));
          b_.CreateStore(x0, elem_ptr(out, at(o, i64(0), i64(0))));
        }
      }
      loop(
          i64(k_first), i64(len),
          [&](llvm::Value *k) {
            for (int64_t u = 0; u < count; ++u) {
              llvm::Value *o = b_.CreateAdd(o0, i64(u));
              llvm::Value *a = elem_ptr(acc, i64(u));
              llvm::Value *next =
                  round_to(t.elem(), combine(kind, t.elem(), b_.CreateLoad(acc.elem, a),
                                             lane_value(x, at(o, k, i64(0)))));
              b_.CreateStore(next, a);
              b_.CreateStore(next, elem_ptr(out, at(o, k, i64(0))));
            }
          },
          "k");
    };
    const int64_t whole = outer / kScanRows, rest = outer % kScanRows;
    loop(
        whole, [&](llvm::Value *ob) { rows(b_.CreateMul(ob, i64(kScanRows)), kScanRows); }, "o");
    if (rest)
      rows(i64(whole * kScanRows), rest);
    return;
  }
  // The tile in memory that x's lanes are, in the same order (through inlined reshapes and
  // expand_dims), or null where x is computed lane by lane.
  const ir::Value *stored = x;
  while (stored && stored->def() && plan::flag(*stored->def(), plan::kInline))
    stored =
        stored->def()->opcode() == Opcode::Reshape || stored->def()->opcode() == Opcode::ExpandDims
            ? stored->def()->operand(0)
            : nullptr;
  if (stored && argmax && inner == 1 && t.elem() == ScalarKind::F32 &&
      len >= kArgmaxChains * kArgmaxLanes)
    return lower_row_argmax(op, *stored, outer, len);
  const bool plain_elements = t.elem() == ScalarKind::F32 || t.elem() == ScalarKind::F64 ||
                              t.elem() == ScalarKind::I32 || t.elem() == ScalarKind::I64;
  if (stored && !scan && !argmax && inner > 1 && plain_elements && !slot(stored).row_stride) {
    const int64_t lanes = 64 / (ir::bit_width(t.elem()) / 8); // one 64-byte vector
    for (int64_t vectors : {4, 2, 1})
      if (inner % (vectors * lanes) == 0)
        return lower_column_reduce(op, *stored, outer, len, inner, vectors * lanes);
  }
  if (!scan && !argmax && inner == 1) {
    // Rows reduced one after another (gemv's 8 rows of 1024), each as the full reduction above,
    // and, where they read a load view, fetching its next block paced over all the rows: gemv
    // had fetched nothing (0.82-0.90 -> 0.92-0.98 of the triad, max of rows 0.79-0.87 ->
    // 0.84-0.98, 16384 x 1024 f32, four alternating rounds on session 34's Xeon). Not a float
    // maximum or minimum without AVX-512DQ: its one running value in an unchunked loop is what
    // sse_minmax (x86_isa.cpp) rewrites into vmaxps / vminps steps.
    bool view = false;
    const int work = lane_work(*x, &view);
    if ((kind == "max" || kind == "min") && ir::is_float(t.elem()) && !isa_.avx512dq)
      view = false;
    // Four rows side by side where they read a view (one loop of four rows' running values):
    // a row at a time kept one stream of lines in flight per thread, and read-only rows sat at
    // a hand-written one-row C loop's 0.69-0.75 of the triad where its four-row loop read
    // 0.74-0.82 (session 36's Xeon, 64 MiB). 16384 x 1024 f32, medians of alternating
    // processes: sums of rows 0.72 -> 0.74 (0.70 -> 0.80 in a fourth pair), maxima 0.68 ->
    // 0.74, means 0.72 -> 0.75, gemv 0.70 -> 0.72; at 512 MiB level (sums 0.70 -> 0.70, gemv
    // 0.73 -> 0.70). Without the fetches the four rows were level at 64 MiB.
    const int64_t jam = view ? std::min<int64_t>(kJamRows, outer) : 1;
    const int64_t groups = outer / jam, rest = outer % jam;
    auto rows = [&](llvm::Value *group, llvm::Value *o0, int64_t count) {
      std::vector<Slot> accs;
      for (int64_t u = 0; u < count; ++u)
        accs.push_back(Slot{elem_ptr(out, b_.CreateAdd(o0, i64(u))), out.elem, 1});
      std::vector<LaneReduce> reduces;
      for (const Slot &acc : accs)
        reduces.push_back({kind, t.elem(), &acc});
      lane_rows_ = {group, groups + (rest ? 1 : 0), count};
      reduce_lanes(
          len, reduces,
          [&](llvm::Value *k) {
            std::vector<llvm::Value *> v;
            for (int64_t u = 0; u < count; ++u) {
              llvm::Value *o = b_.CreateAdd(o0, i64(u));
              row_lane_ = {o, k}; // for inlined row and column broadcasts (lane_value)
              v.push_back(lane_value(x, at(o, k, i64(0))));
              row_lane_ = {};
            }
            return v;
          },
          view, /*to_l1=*/work >= kFetchingLaneWork);
    };
    loop(
        groups, [&](llvm::Value *g) { rows(g, b_.CreateMul(g, i64(jam)), jam); }, "o");
    if (rest)
      rows(i64(groups), i64(groups * jam), rest);
    return;
  }
  Slot best = argmax ? new_slot(ir::Type::tile(t.elem(), {inner})) : Slot{};
  // A reduction starts from the kind's identity and combines every element, so that the loop
  // over the axis runs whole vectors (from element 0 it ran len - 1 iterations: a row of 1024
  // left 31 elements to a serial scalar tail, half the time of softmax's row max on AVX2).
  // Scans and argmax start from element 0.
  const bool from_identity = !scan && !argmax;
  loop(
      outer,
      [&](llvm::Value *o) {
        loop(
            inner,
            [&](llvm::Value *in) { // element 0 (or the identity) starts every combination
              if (from_identity) {
                b_.CreateStore(reduce_identity(kind, t.elem(), out.elem),
                               elem_ptr(out, dst(o, i64(0), in)));
                return;
              }
              llvm::Value *x0 = lane_value(x, at(o, i64(0), in));
              if (argmax) {
                b_.CreateStore(x0, elem_ptr(best, in));
                b_.CreateStore(b_.getInt32(0), elem_ptr(out, dst(o, i64(0), in)));
              } else {
                b_.CreateStore(x0, elem_ptr(out, dst(o, i64(0), in)));
              }
            },
            "in0");
        loop(
            i64(from_identity ? 0 : 1), i64(len),
            [&](llvm::Value *k) {
              loop(
                  inner,
                  [&](llvm::Value *in) {
                    if (inner == 1) // for inlined row and column broadcasts (lane_value)
                      row_lane_ = {o, k};
                    llvm::Value *xv = lane_value(x, at(o, k, in));
                    row_lane_ = {};
                    if (argmax) { // the first maximum; NaN counts as the largest value
                      llvm::Value *bp = elem_ptr(best, in);
                      llvm::Value *cur = b_.CreateLoad(best.elem, bp);
                      llvm::Value *greater;
                      if (ir::is_float(t.elem()))
                        greater = b_.CreateAnd(
                            b_.CreateFCmpORD(cur, cur),
                            b_.CreateOr(b_.CreateFCmpUNO(xv, xv), b_.CreateFCmpOGT(xv, cur)));
                      else
                        greater = ir::is_signed(t.elem()) ? b_.CreateICmpSGT(xv, cur)
                                                          : b_.CreateICmpUGT(xv, cur);
                      b_.CreateStore(b_.CreateSelect(greater, xv, cur), bp);
                      llvm::Value *op_ = elem_ptr(out, dst(o, k, in));
                      b_.CreateStore(b_.CreateSelect(greater, b_.CreateTrunc(k, b_.getInt32Ty()),
                                                     b_.CreateLoad(b_.getInt32Ty(), op_)),
                                     op_);
                      return;
                    }
                    llvm::Value *prev = b_.CreateLoad(
                        out.elem, elem_ptr(out, dst(o, scan ? b_.CreateSub(k, i64(1)) : k, in)));
                    llvm::Value *next = round_to(t.elem(), combine(kind, t.elem(), prev, xv));
                    // A float reduce-sum may associate freely (tl/ir/ir.h): let the vectorizer
                    // split it.
                    if (!scan && kind == "sum" &&
                        (t.elem() == ScalarKind::F32 || t.elem() == ScalarKind::F64))
                      llvm::cast<llvm::Instruction>(next)->setHasAllowReassoc(true);
                    b_.CreateStore(next, elem_ptr(out, dst(o, k, in)));
                  },
                  "in");
            },
            "k");
      },
      "o", /*rolled=*/inner == 1);
}

} // namespace tl::llvm_cpu
