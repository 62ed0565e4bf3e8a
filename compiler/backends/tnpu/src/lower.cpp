// Tile IR -> TNPU programs: a straight-line lowering of a subset (see tnpu.h). Scalars live in
// registers, tiles in the scratchpad (row-major, bump-allocated), every unit command is followed
// by a fence (no overlap yet: correctness first).
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/tnpu.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

namespace tl::tnpu {
namespace {

using ir::Opcode;
using npu::isa::Instr;
namespace isa = npu::isa;

/// r1..r17 hold values and register-bound arguments; r18..r23 are scratch.
constexpr uint8_t kLastValueReg = 17, kT0 = 18, kT1 = 19, kT2 = 20, kT3 = 21, kT4 = 22, kT5 = 23;
constexpr uint64_t kTileAlign = 64;

struct Failure {
  std::string message;
};

class Lowering {
public:
  Lowering(const ir::Kernel &k, const CompileOptions &o) : kernel_(k), opts_(o) {
    for (unsigned i = 0; i < k.body()->arguments().size(); ++i)
      params_[k.body()->argument(i)] = i;
  }

  Kernel run() {
    for (const auto &op : kernel_.body()->ops())
      lower(*op);
    emit(isa::Opcode::Halt);
    return std::move(out_);
  }

private:
  [[noreturn]] void fail(const ir::Operation &op, const std::string &what) {
    throw Failure{op.loc().str() + ": error: tnpu: " + what};
  }

  void emit(isa::Opcode op, uint8_t a = 0, uint8_t b = 0, uint8_t c = 0, int64_t imm = 0) {
    Instr in;
    in.op = op;
    in.slot[0] = a, in.slot[1] = b, in.slot[2] = c;
    in.imm = static_cast<int32_t>(imm);
    out_.program.push_back(in);
  }
  void li(uint8_t rd, uint64_t v) {
    const auto lo = static_cast<int32_t>(static_cast<uint32_t>(v));
    emit(isa::Opcode::Li, rd, 0, 0, lo);
    if (static_cast<uint64_t>(static_cast<int64_t>(lo)) != v)
      emit(isa::Opcode::Lih, rd, 0, 0, static_cast<int32_t>(v >> 32));
  }
  void dmai(isa::DmaField f, int64_t v) { emit(isa::Opcode::DmaCfgi, uint8_t(f), 0, 0, v); }
  void dmar(isa::DmaField f, uint8_t r) { emit(isa::Opcode::DmaCfg, uint8_t(f), r); }
  void veci(isa::VecField f, int64_t v) { emit(isa::Opcode::VCfgi, uint8_t(f), 0, 0, v); }

  uint8_t new_reg(const ir::Operation &op) {
    if (next_reg_ > kLastValueReg)
      fail(op, "the kernel needs more than 17 scalar registers");
    return next_reg_++;
  }
  uint8_t bind(const ir::Operation &op, BindKind kind, uint16_t param, uint16_t dim) {
    auto key = std::make_tuple(int(kind), int(param), int(dim));
    if (auto it = bound_.find(key); it != bound_.end())
      return it->second;
    const uint8_t r = new_reg(op);
    out_.bindings.push_back({kind, r, param, dim});
    return bound_[key] = r;
  }
  /// rd = a launch value, patched into li + lih by the device (holds no register).
  void load_bound(uint8_t rd, BindKind kind, uint16_t param, uint16_t dim) {
    out_.bindings.push_back({kind, 0, param, dim, int32_t(out_.program.size())});
    emit(isa::Opcode::Li, rd);
    emit(isa::Opcode::Lih, rd);
  }
  unsigned param(const ir::Operation &op, const ir::Value *v) {
    auto it = params_.find(v);
    if (it == params_.end())
      fail(op, "expected a kernel argument");
    return it->second;
  }
  uint8_t scalar(const ir::Operation &op, const ir::Value *v) {
    if (auto it = regs_.find(v); it != regs_.end())
      return it->second;
    if (auto it = params_.find(v); it != params_.end()) {
      const ir::ScalarKind e = v->type().elem();
      if (e == ir::ScalarKind::F32)
        return regs_[v] = bind(op, BindKind::ScalarF32, it->second, 0);
      if (ir::is_integer(e))
        return regs_[v] = bind(op, BindKind::ScalarInt, it->second, 0);
      fail(op,
           "scalar arguments of type " + std::string(ir::scalar_name(e)) + " are not supported");
    }
    fail(op, "operand is not a scalar the target holds in a register");
  }
  uint64_t tile(const ir::Operation &op, const ir::Value *v) {
    auto it = tiles_.find(v);
    if (it == tiles_.end())
      fail(op, "operand is not a tile in the scratchpad");
    return it->second;
  }
  uint64_t alloc_tile(const ir::Operation &op) { return alloc_tile(op, op.result()); }
  uint64_t alloc_tile(const ir::Operation &op, const ir::Value *v) {
    const ir::Type &t = v->type();
    if (t.rank() > 2)
      fail(op, "tiles of rank " + std::to_string(t.rank()) + " are not supported (rank 1 or 2)");
    const uint64_t bytes = uint64_t(t.num_elements()) * elem_bytes(op, t.elem());
    const uint64_t at = (sram_used_ + kTileAlign - 1) / kTileAlign * kTileAlign;
    if (at + bytes > opts_.sram_bytes)
      fail(op, "tile " + t.str() + " does not fit the scratchpad (" + std::to_string(at + bytes) +
                   " of " + std::to_string(opts_.sram_bytes) +
                   " bytes; the lowering does not reuse scratchpad yet)");
    sram_used_ = at + bytes;
    return tiles_[v] = at;
  }
  int elem_bytes(const ir::Operation &op, ir::ScalarKind e) {
    const int bits = ir::bit_width(e);
    if (bits < 8)
      fail(op, "element type " + std::string(ir::scalar_name(e)) + " is not supported");
    return bits / 8;
  }
  void require_f32_tile(const ir::Operation &op) {
    const ir::Type &t = op.result()->type();
    if (!t.is_tile() || t.elem() != ir::ScalarKind::F32)
      fail(op, "'" + std::string(op.name()) + "' on " + t.str() +
                   " is not supported (the vector unit computes f32 tiles)");
  }
  void vec_shape(int64_t n) {
    veci(isa::VecField::N, n);
    veci(isa::VecField::Rows, 1);
  }

  /// The vector / matrix unit's dtype code (isa dtype names), or -1.
  static int dtype_code(ir::ScalarKind e) {
    switch (e) {
    case ir::ScalarKind::BF16:
      return 0;
    case ir::ScalarKind::F16:
      return 1;
    case ir::ScalarKind::F32:
      return 2;
    case ir::ScalarKind::I8:
      return 3;
    case ir::ScalarKind::I32:
      return 4;
    default:
      return -1;
    }
  }
  int unit_dtype(const ir::Operation &op, ir::ScalarKind e) {
    const int c = dtype_code(e);
    if (c < 0)
      fail(op, "tiles of " + std::string(ir::scalar_name(e)) +
                   " are not supported by the vector unit (bf16, f16, f32, i8, i32)");
    return c;
  }
  /// dst = src, `n` elements of `dtype` (v.copy), then fence.
  void copy_tile(const ir::Operation &op, uint64_t dst, uint64_t src, int64_t n, ir::ScalarKind e) {
    vec_shape(n);
    veci(isa::VecField::Src, unit_dtype(op, e));
    veci(isa::VecField::Dst, unit_dtype(op, e));
    li(kT0, dst), li(kT1, src);
    emit(isa::Opcode::VCopy, kT0, kT1);
    emit(isa::Opcode::Fence);
  }
  void lower_block(const ir::Block &block) {
    for (const auto &op : block.ops())
      lower(*op);
  }
  /// Moves a value into a carried slot (a register or a scratchpad tile).
  void move_to(const ir::Operation &op, const ir::Value *from, const ir::Value *slot) {
    if (slot->type().is_tile())
      copy_tile(op, tile(op, slot), tile(op, from), slot->type().num_elements(),
                slot->type().elem());
    else
      emit(isa::Opcode::Mov, scalar(op, slot), scalar(op, from));
  }

  void lower(const ir::Operation &op);
  void lower_for(const ir::Operation &op);
  void lower_dot(const ir::Operation &op);
  void lower_reduce(const ir::Operation &op);
  void lower_cast(const ir::Operation &op);
  void lower_memory(const ir::Operation &op, bool is_load);
  void lower_scalar_binary(const ir::Operation &op);
  void lower_cmp(const ir::Operation &op);

  const ir::Kernel &kernel_;
  const CompileOptions &opts_;
  Kernel out_;
  std::map<const ir::Value *, unsigned> params_;
  std::map<const ir::Value *, uint8_t> regs_;
  std::map<const ir::Value *, uint64_t> tiles_;
  std::map<std::tuple<int, int, int>, uint8_t> bound_;
  uint8_t next_reg_ = 1;
  uint64_t sram_used_ = 0;
};

void Lowering::lower_scalar_binary(const ir::Operation &op) {
  if (!ir::is_integer(op.result()->type().elem()))
    fail(op, "scalar float arithmetic is not supported");
  const uint8_t a = scalar(op, op.operand(0)), b = scalar(op, op.operand(1));
  const uint8_t d = regs_[op.result()] = new_reg(op);
  static const std::map<Opcode, isa::Opcode> kOps = {
      {Opcode::Add, isa::Opcode::Add}, {Opcode::Sub, isa::Opcode::Sub},
      {Opcode::Mul, isa::Opcode::Mul}, {Opcode::And, isa::Opcode::And},
      {Opcode::Or, isa::Opcode::Or},   {Opcode::Xor, isa::Opcode::Xor},
      {Opcode::Min, isa::Opcode::Min}, {Opcode::Max, isa::Opcode::Max}};
  auto it = kOps.find(op.opcode());
  if (it == kOps.end())
    fail(op, "scalar '" + std::string(op.name()) + "' is not supported");
  if ((op.opcode() == Opcode::Min || op.opcode() == Opcode::Max) &&
      !ir::is_signed(op.result()->type().elem()))
    fail(op, "unsigned min/max is not supported");
  emit(it->second, d, a, b);
}

void Lowering::lower_cmp(const ir::Operation &op) {
  if (!op.result()->type().is_scalar() || !ir::is_integer(op.operand(0)->type().elem()) ||
      !ir::is_signed(op.operand(0)->type().elem()))
    fail(op, "'cmp' is supported on signed integer scalars only");
  const std::string pred = *op.attr_as<std::string>("pred");
  uint8_t a = scalar(op, op.operand(0)), b = scalar(op, op.operand(1));
  isa::Opcode br;
  if (pred == "eq")
    br = isa::Opcode::Beq;
  else if (pred == "ne")
    br = isa::Opcode::Bne;
  else if (pred == "lt" || pred == "gt")
    br = isa::Opcode::Blt;
  else if (pred == "ge" || pred == "le")
    br = isa::Opcode::Bge;
  else
    fail(op, "cmp predicate '" + pred + "' is not supported");
  if (pred == "gt" || pred == "le")
    std::swap(a, b);
  const uint8_t d = regs_[op.result()] = new_reg(op);
  emit(isa::Opcode::Li, d, 0, 0, 1);
  emit(br, a, b, 0, 2); // true: skip the li 0
  emit(isa::Opcode::Li, d, 0, 0, 0);
}

/// DMA between a tensor box and a row-major tile. Contiguous innermost dimension: rows of n0
/// elements; otherwise element by element (n0 = 1), chosen at run time from the stride.
void Lowering::lower_memory(const ir::Operation &op, bool is_load) {
  const ir::Value *tensor = op.operand(0);
  const unsigned p = param(op, tensor);
  const int rank = tensor->type().rank();
  const ir::Type &tt = is_load ? op.result()->type() : op.operand(1 + rank)->type();
  if (rank < 1 || rank > 2)
    fail(op, "'" + std::string(op.name()) + "' of a rank-" + std::to_string(rank) +
                 " tensor is not supported (rank 1 or 2)");
  const uint64_t es = elem_bytes(op, tt.elem());
  const uint64_t local = is_load ? alloc_tile(op) : tile(op, op.operand(1 + rank));
  if (is_load) {
    uint64_t pad = 0;
    if (const ir::Attr *a = op.attr("padding")) {
      double v = 0;
      if (auto *i = std::get_if<int64_t>(a))
        v = double(*i);
      else if (auto *d = std::get_if<double>(a))
        v = *d;
      if (tt.elem() == ir::ScalarKind::F32) {
        const float f = float(v);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        pad = bits;
      } else if (ir::is_integer(tt.elem())) {
        pad = uint64_t(int64_t(v));
      } else if (v != 0) {
        fail(op, "padding of " + std::string(ir::scalar_name(tt.elem())) + " must be 0");
      }
    }
    li(kT0, pad);
    dmar(isa::DmaField::Pad, kT0);
  }
  dmai(isa::DmaField::ESize, int64_t(es));
  // kT1 = HBM address of the box's first element.
  load_bound(kT1, BindKind::Address, p, 0);
  for (int d = 0; d < rank; ++d) {
    load_bound(kT0, BindKind::StrideBytes, p, d);
    emit(isa::Opcode::Mul, kT0, scalar(op, op.operand(1 + d)), kT0);
    emit(isa::Opcode::Add, kT1, kT1, kT0);
  }
  // valid extent of dim d: max(shape - offset, 0), into kT2 (inner) and kT3 (outer).
  auto valid = [&](uint8_t dst, int d) {
    load_bound(dst, BindKind::Shape, p, d);
    emit(isa::Opcode::Sub, dst, dst, scalar(op, op.operand(1 + d)));
    emit(isa::Opcode::Max, dst, dst, 0);
  };
  const int inner = rank - 1;
  const int64_t cols = tt.shape()[inner], rows = rank == 2 ? tt.shape()[0] : 1;
  valid(kT2, inner);
  if (rank == 2)
    valid(kT3, 0);
  else
    li(kT3, 1);
  const uint8_t inner_stride = kT4, outer_stride = rank == 2 ? kT5 : 0;
  load_bound(kT4, BindKind::StrideBytes, p, inner);
  if (rank == 2)
    load_bound(kT5, BindKind::StrideBytes, p, 0);
  li(kT0, es);
  const size_t branch = out_.program.size();
  emit(isa::Opcode::Bne, inner_stride, kT0); // -> strided
  // contiguous rows: (n0 = cols, n1 = rows, n2 = 1)
  dmai(isa::DmaField::N0, cols);
  dmai(isa::DmaField::N1, rows);
  dmai(isa::DmaField::N2, 1);
  dmar(isa::DmaField::HS1, outer_stride);
  dmai(isa::DmaField::LS1, cols * int64_t(es));
  dmar(isa::DmaField::V0, kT2);
  dmar(isa::DmaField::V1, kT3);
  dmai(isa::DmaField::V2, 1);
  const size_t jump = out_.program.size();
  emit(isa::Opcode::Jmp);
  out_.program[branch].imm = int32_t(out_.program.size() - branch);
  // strided: (n0 = 1, n1 = cols with the inner stride, n2 = rows with the outer stride)
  dmai(isa::DmaField::N0, 1);
  dmai(isa::DmaField::N1, cols);
  dmai(isa::DmaField::N2, rows);
  dmar(isa::DmaField::HS1, inner_stride);
  dmar(isa::DmaField::HS2, outer_stride);
  dmai(isa::DmaField::LS1, int64_t(es));
  dmai(isa::DmaField::LS2, cols * int64_t(es));
  dmai(isa::DmaField::V0, 1);
  dmar(isa::DmaField::V1, kT2);
  dmar(isa::DmaField::V2, kT3);
  out_.program[jump].imm = int32_t(out_.program.size() - jump);
  li(kT0, local);
  if (is_load)
    emit(isa::Opcode::DmaLd, uint8_t(isa::Queue::Dma0), kT0, kT1);
  else
    emit(isa::Opcode::DmaSt, uint8_t(isa::Queue::Dma0), kT1, kT0);
  emit(isa::Opcode::Fence);
}

/// iv and carried scalars in registers, carried tiles in fixed scratchpad slots; the body's own
/// tiles are allocated once (the same addresses every iteration).
void Lowering::lower_for(const ir::Operation &op) {
  const ir::Block &body = *op.region(0);
  const uint8_t iv = regs_[body.argument(0)] = new_reg(op);
  emit(isa::Opcode::Mov, iv, scalar(op, op.operand(0)));
  const uint8_t ub = scalar(op, op.operand(1)), step = scalar(op, op.operand(2));
  for (unsigned i = 3; i < op.num_operands(); ++i) {
    const ir::Value *slot = body.argument(i - 2);
    if (slot->type().is_tile())
      alloc_tile(op, slot);
    else
      regs_[slot] = new_reg(op);
    move_to(op, op.operand(i), slot);
  }
  const size_t loop = out_.program.size();
  emit(isa::Opcode::Bge, iv, ub); // -> end
  for (const auto &inner : body.ops())
    if (inner->opcode() != Opcode::Yield)
      lower(*inner);
  const ir::Operation *yield = body.terminator();
  for (unsigned i = 0; yield && i < yield->num_operands(); ++i)
    move_to(*yield, yield->operand(i), body.argument(i + 1)); // (no swaps of carried values)
  emit(isa::Opcode::Add, iv, iv, step);
  emit(isa::Opcode::Jmp);
  out_.program.back().imm = int32_t(int64_t(loop) - int64_t(out_.program.size() - 1));
  out_.program[loop].imm = int32_t(out_.program.size() - loop);
  for (unsigned i = 0; i < op.num_results(); ++i) {
    const ir::Value *slot = body.argument(i + 1);
    if (slot->type().is_tile())
      tiles_[op.result(i)] = tiles_[slot];
    else
      regs_[op.result(i)] = regs_[slot];
  }
}

/// C = A (M x K) * B (K x N) [+ acc] on the matrix unit: the accumulator holds C; B is split into
/// k x n blocks of at most R x C, each latched with mx.pre while A streams through.
void Lowering::lower_dot(const ir::Operation &op) {
  const ir::Type &at = op.operand(0)->type(), &bt = op.operand(1)->type();
  const ir::Type &ct = op.result()->type();
  if (at.rank() != 2 || bt.rank() != 2)
    fail(op, "'dot' of rank-3 tiles is not supported");
  if (const std::string *p = op.attr_as<std::string>("input_precision"); p && *p != "ieee")
    fail(op, "'dot' input_precision '" + *p + "' is not supported");
  int mode = -1;
  const ir::ScalarKind in = at.elem(), acc = ct.elem();
  if (in == bt.elem() && acc == ir::ScalarKind::F32 &&
      (in == ir::ScalarKind::BF16 || in == ir::ScalarKind::F16 || in == ir::ScalarKind::F32))
    mode = dtype_code(in);
  else if (in == ir::ScalarKind::I8 && bt.elem() == in && acc == ir::ScalarKind::I32)
    mode = 3;
  if (mode < 0)
    fail(op, "'dot' of " + at.str() + " and " + bt.str() + " into " + ct.str() +
                 " is not supported (bf16/f16/f32 into f32, i8 into i32)");
  const int64_t M = at.shape()[0], K = at.shape()[1], N = bt.shape()[1];
  const int64_t es = elem_bytes(op, in);
  if (uint64_t(M * N * 4) > opts_.accumulator_bytes)
    fail(op, "the result " + ct.str() + " does not fit the accumulator (" +
                 std::to_string(opts_.accumulator_bytes) + " bytes)");
  const uint64_t a = tile(op, op.operand(0)), b = tile(op, op.operand(1));
  const bool has_acc = op.num_operands() > 2;
  if (has_acc)
    copy_tile(op, isa::kAccBase, tile(op, op.operand(2)), M * N, acc);
  const uint64_t c = alloc_tile(op);
  emit(isa::Opcode::MxCfgi, uint8_t(isa::MxField::Mode), 0, 0, mode);
  emit(isa::Opcode::MxCfgi, uint8_t(isa::MxField::M), 0, 0, M);
  emit(isa::Opcode::MxCfgi, uint8_t(isa::MxField::Lda), 0, 0, K * es);
  emit(isa::Opcode::MxCfgi, uint8_t(isa::MxField::Ldw), 0, 0, N * es);
  emit(isa::Opcode::MxCfgi, uint8_t(isa::MxField::Ldc), 0, 0, N * 4);
  for (int64_t j0 = 0; j0 < N; j0 += opts_.matrix_cols) {
    emit(isa::Opcode::MxCfgi, uint8_t(isa::MxField::N), 0, 0,
         std::min<int64_t>(opts_.matrix_cols, N - j0));
    for (int64_t k0 = 0; k0 < K; k0 += opts_.matrix_rows) {
      emit(isa::Opcode::MxCfgi, uint8_t(isa::MxField::K), 0, 0,
           std::min<int64_t>(opts_.matrix_rows, K - k0));
      li(kT0, b + uint64_t((k0 * N + j0) * es));
      emit(isa::Opcode::MxPre, kT0);
      li(kT1, isa::kAccBase + uint64_t(j0 * 4));
      li(kT2, a + uint64_t(k0 * es));
      emit(k0 == 0 && !has_acc ? isa::Opcode::MxMm : isa::Opcode::MxMma, kT1, kT2);
    }
  }
  emit(isa::Opcode::Fence);
  copy_tile(op, c, isa::kAccBase, M * N, acc);
}

/// Per row of a rank-2 f32 tile: v.rsum / v.rmax (the sum's order is SPEC.md's; Tile IR lets a
/// float sum associate in any order).
void Lowering::lower_reduce(const ir::Operation &op) {
  const ir::Type &in = op.operand(0)->type();
  const std::string kind = *op.attr_as<std::string>("kind");
  const int64_t axis = *op.attr_as<int64_t>("axis");
  if (in.rank() != 2 || axis != 1 || in.elem() != ir::ScalarKind::F32 ||
      (kind != "sum" && kind != "max"))
    fail(op, "'reduce' " + kind + " over axis " + std::to_string(axis) + " of " + in.str() +
                 " is not supported (sum / max over the last axis of a rank-2 f32 tile)");
  const int64_t rows = in.shape()[0], cols = in.shape()[1];
  const uint64_t src = tile(op, op.operand(0)), dst = alloc_tile(op);
  veci(isa::VecField::N, cols);
  veci(isa::VecField::Rows, rows);
  veci(isa::VecField::Sa, cols * 4);
  veci(isa::VecField::Sd, 4);
  li(kT0, dst), li(kT1, src);
  emit(kind == "sum" ? isa::Opcode::VRsum : isa::Opcode::VRmax, kT0, kT1);
  emit(isa::Opcode::Fence);
}

void Lowering::lower_cast(const ir::Operation &op) {
  const ir::Type &from = op.operand(0)->type(), &to = op.result()->type();
  if (!to.is_tile()) {
    if (!ir::is_integer(from.elem()) || !ir::is_integer(to.elem()))
      fail(op, "scalar casts are supported between integers only");
    // Registers hold 64-bit values; a narrowing cast keeps the value (kernels cast extents).
    regs_[op.result()] = scalar(op, op.operand(0));
    return;
  }
  if (const std::string *r = op.attr_as<std::string>("rounding"); r && *r != "rne")
    fail(op, "cast rounding '" + *r + "' is not supported (rne)");
  const int src = unit_dtype(op, from.elem()), dst = unit_dtype(op, to.elem());
  const uint64_t a = tile(op, op.operand(0)), d = alloc_tile(op);
  vec_shape(to.num_elements());
  veci(isa::VecField::Src, src);
  veci(isa::VecField::Dst, dst);
  li(kT0, d), li(kT1, a);
  emit(isa::Opcode::VCvt, kT0, kT1);
  emit(isa::Opcode::Fence);
}

void Lowering::lower(const ir::Operation &op) {
  const bool tile_result = op.num_results() == 1 && op.result()->type().is_tile();
  switch (op.opcode()) {
  case Opcode::ProgramId:
    regs_[op.result()] = uint8_t(kPidReg + *op.attr_as<int64_t>("axis"));
    return;
  case Opcode::NumPrograms:
    regs_[op.result()] = bind(op, BindKind::Grid, 0, uint16_t(*op.attr_as<int64_t>("axis")));
    return;
  case Opcode::TensorDim:
  case Opcode::TensorStride: {
    const unsigned p = param(op, op.operand(0));
    const auto axis = uint16_t(*op.attr_as<int64_t>("axis"));
    if (op.opcode() == Opcode::TensorDim) {
      regs_[op.result()] = bind(op, BindKind::Shape, p, axis);
      return;
    }
    const int es = elem_bytes(op, op.operand(0)->type().elem());
    const uint8_t d = regs_[op.result()] = new_reg(op);
    emit(isa::Opcode::Shri, d, bind(op, BindKind::StrideBytes, p, axis), 0,
         es == 1   ? 0
         : es == 2 ? 1
         : es == 4 ? 2
                   : 3);
    return;
  }
  case Opcode::Constant:
  case Opcode::Full: {
    const ir::Type &t = op.result()->type();
    uint64_t bits = 0;
    const ir::Attr *a = op.attr("value");
    double fv = 0;
    int64_t iv = 0;
    if (auto *i = std::get_if<int64_t>(a))
      iv = *i, fv = double(*i);
    else if (auto *d = std::get_if<double>(a))
      fv = *d, iv = int64_t(*d);
    else if (auto *b = std::get_if<bool>(a))
      iv = *b, fv = *b;
    if (t.elem() == ir::ScalarKind::F32) {
      const float f = float(fv);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      bits = u;
    } else if (ir::is_integer(t.elem())) {
      bits = uint64_t(iv);
    } else {
      fail(op, "constants of type " + t.str() + " are not supported");
    }
    if (!tile_result) {
      li(regs_[op.result()] = new_reg(op), bits);
      return;
    }
    if (t.elem() != ir::ScalarKind::F32 && t.elem() != ir::ScalarKind::I32)
      fail(op, "tiles of " + t.str() + " cannot be filled (f32 and i32 only)");
    const uint64_t dst = alloc_tile(op);
    li(kT0, bits);
    li(kT1, dst);
    vec_shape(t.num_elements());
    veci(isa::VecField::Dst, t.elem() == ir::ScalarKind::F32 ? 2 : 4);
    emit(isa::Opcode::VFill, kT1, kT0);
    emit(isa::Opcode::Fence);
    return;
  }
  case Opcode::Splat: {
    const ir::Type &t = op.result()->type();
    if (t.elem() != ir::ScalarKind::F32 && t.elem() != ir::ScalarKind::I32)
      fail(op, "splat into " + t.str() + " is not supported (f32 and i32 only)");
    const uint8_t s = scalar(op, op.operand(0));
    const uint64_t dst = alloc_tile(op);
    li(kT1, dst);
    vec_shape(t.num_elements());
    veci(isa::VecField::Dst, t.elem() == ir::ScalarKind::F32 ? 2 : 4);
    emit(isa::Opcode::VFill, kT1, s);
    emit(isa::Opcode::Fence);
    return;
  }
  case Opcode::Load:
    lower_memory(op, true);
    return;
  case Opcode::Store:
    lower_memory(op, false);
    return;
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Max:
  case Opcode::Min:
  case Opcode::Exp:
    if (!tile_result) {
      if (op.opcode() == Opcode::Exp)
        fail(op, "scalar 'exp' is not supported");
      lower_scalar_binary(op);
      return;
    }
    {
      require_f32_tile(op);
      static const std::map<Opcode, isa::Opcode> kOps = {
          {Opcode::Add, isa::Opcode::VAdd}, {Opcode::Sub, isa::Opcode::VSub},
          {Opcode::Mul, isa::Opcode::VMul}, {Opcode::Max, isa::Opcode::VMax},
          {Opcode::Min, isa::Opcode::VMin}, {Opcode::Exp, isa::Opcode::VExp}};
      const uint64_t a = tile(op, op.operand(0));
      const uint64_t b = op.num_operands() > 1 ? tile(op, op.operand(1)) : 0;
      const uint64_t d = alloc_tile(op);
      vec_shape(op.result()->type().num_elements());
      li(kT0, d), li(kT1, a), li(kT2, b);
      if (op.opcode() == Opcode::Exp)
        emit(isa::Opcode::VExp, kT0, kT1);
      else
        emit(kOps.at(op.opcode()), kT0, kT1, kT2);
      emit(isa::Opcode::Fence);
    }
    return;
  case Opcode::And:
  case Opcode::Or:
  case Opcode::Xor:
    if (tile_result)
      fail(op, "'" + std::string(op.name()) + "' on tiles is not supported");
    lower_scalar_binary(op);
    return;
  case Opcode::Cmp:
    lower_cmp(op);
    return;
  case Opcode::Assert: {
    if (!op.operand(0)->type().is_scalar())
      fail(op, "'assert' on tiles is not supported (scalars only)");
    const uint8_t c = scalar(op, op.operand(0));
    out_.asserts.push_back(*op.attr_as<std::string>("message"));
    emit(isa::Opcode::Bne, c, 0, 0, 3); // holds: skip the report
    li(kAssertReg, out_.asserts.size());
    emit(isa::Opcode::Halt); // ends this program (the wrapper turns it into a jump)
    return;
  }
  case Opcode::Return:
    return;
  case Opcode::Constexpr: {
    const ir::ConstexprParam *c = kernel_.find_constexpr(*op.attr_as<std::string>("name"));
    const auto *i = c ? std::get_if<int64_t>(&c->value) : nullptr;
    if (!i || !ir::is_integer(op.result()->type().elem()))
      fail(op, "only integer constexprs are supported");
    li(regs_[op.result()] = new_reg(op), uint64_t(*i));
    return;
  }
  case Opcode::For:
    lower_for(op);
    return;
  case Opcode::Dot:
    lower_dot(op);
    return;
  case Opcode::Reduce:
    lower_reduce(op);
    return;
  case Opcode::Cast:
    lower_cast(op);
    return;
  case Opcode::ExpandDims:
  case Opcode::Reshape: // row-major data unchanged
    tiles_[op.result()] = tile(op, op.operand(0));
    return;
  default:
    fail(op, "'" + std::string(op.name()) + "' is not supported by the tnpu target yet");
  }
}

} // namespace

std::string compile(const ir::Module &module, const CompileOptions &options,
                    std::vector<uint8_t> &code) {
  std::vector<Kernel> kernels;
  try {
    for (const auto &k : module.kernels())
      kernels.push_back(Lowering(*k, options).run());
  } catch (const Failure &f) {
    return f.message;
  }
  code = serialize_code(kernels);
  return {};
}

} // namespace tl::tnpu
