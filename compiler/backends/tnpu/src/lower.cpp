// Tile IR -> TNPU programs (see tnpu.h and README). Scalars live in registers; tiles at the
// addresses plan.h gives them; unit commands are ordered by semaphores (sync.h), never fenced;
// `for` loops prefetch their loads one iteration ahead into double buffers.
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

#include "tl/reference/numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <tuple>

namespace tl::tnpu {

uint64_t Lowering::const_bits(const ir::Operation &op, const ir::Attr *a, ir::ScalarKind e) {
  double fv = 0;
  int64_t iv = 0;
  if (auto *i = std::get_if<int64_t>(a))
    iv = *i, fv = double(*i);
  else if (auto *d = std::get_if<double>(a))
    fv = *d, iv = int64_t(*d);
  else if (auto *b = std::get_if<bool>(a))
    iv = *b, fv = *b;
  if (ir::is_integer(e) || e == ir::ScalarKind::I1)
    return uint64_t(iv);
  namespace num = tl::numerics; // rounded once from the attribute's double, as the interpreter
  switch (e) {
  case ir::ScalarKind::F32:
    return num::encode(num::FloatFormat::F32, fv);
  case ir::ScalarKind::F16:
    return num::encode(num::FloatFormat::F16, fv);
  case ir::ScalarKind::BF16:
    return num::encode(num::FloatFormat::BF16, fv);
  default:
    fail(op, "constants of type " + std::string(ir::scalar_name(e)) + " are not supported");
  }
}

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
  if (op.opcode() == Opcode::Add || op.opcode() == Opcode::Sub || op.opcode() == Opcode::Mul)
    wrap_scalar(d, op.result()->type().elem()); // lower_control.cpp
}

void Lowering::lower_cmp(const ir::Operation &op) {
  const ir::ScalarKind e = op.operand(0)->type().elem();
  if (!op.result()->type().is_scalar() || !(ir::is_integer(e) || e == ir::ScalarKind::I1))
    fail(op, "'cmp' on " + op.operand(0)->type().str() + " is not supported");
  const bool is_unsigned = !ir::is_signed(e); // registers hold unsigned values zero-extended
  const std::string pred = *op.attr_as<std::string>("pred");
  uint8_t a = scalar(op, op.operand(0)), b = scalar(op, op.operand(1));
  isa::Opcode br;
  if (pred == "eq")
    br = isa::Opcode::Beq;
  else if (pred == "ne")
    br = isa::Opcode::Bne;
  else if (pred == "lt" || pred == "gt")
    br = is_unsigned ? isa::Opcode::Bltu : isa::Opcode::Blt;
  else if (pred == "ge" || pred == "le")
    br = is_unsigned ? isa::Opcode::Bgeu : isa::Opcode::Bge;
  else
    fail(op, "cmp predicate '" + pred + "' is not supported");
  if (pred == "gt" || pred == "le")
    std::swap(a, b);
  const uint8_t d = regs_[op.result()] = new_reg(op);
  emit(isa::Opcode::Li, d, 0, 0, 1);
  emit(br, a, b, 0, 2); // true: skip the li 0
  emit(isa::Opcode::Li, d, 0, 0, 0);
}

/// DMA between a tensor box and a row-major tile: dimension 2 of the descriptor walks the tile's
/// rows; dimensions 0-1 are one contiguous row (n0 = cols) when the innermost stride is one
/// element, else element by element (n0 = 1, n1 = cols), chosen at run time from the stride.
/// Large boxes are split by rows over every DMA engine.
void Lowering::lower_memory(const ir::Operation &op, bool is_load) {
  const ir::Value *tensor = op.operand(0);
  const unsigned p = param(op, tensor);
  const int rank = tensor->type().rank();
  const ir::Type &tt = is_load ? op.result()->type() : op.operand(1 + rank)->type();
  if (rank < 1 || rank > 3 || (rank == 3 && tt.shape()[0] != 1))
    fail(op, "'" + std::string(op.name()) + "' of a rank-" + std::to_string(rank) +
                 " tile " + tt.str() + " is not supported (rank 1 or 2, or 1 x R x C)");
  const uint64_t es = elem_bytes(op, tt.elem());
  const uint64_t local = is_load ? alloc_tile(op) : tile(op, op.operand(1 + rank));
  if (is_load) {
    const ir::Attr *a = op.attr("padding");
    li(kT0, a ? const_bits(op, a, tt.elem()) : 0);
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
  // valid extent of dim d: max(shape - offset, 0), into kT2 (inner) and kT3 (rows).
  auto valid = [&](uint8_t dst, int d) {
    load_bound(dst, BindKind::Shape, p, d);
    emit(isa::Opcode::Sub, dst, dst, scalar(op, op.operand(1 + d)));
    emit(isa::Opcode::Max, dst, dst, 0);
  };
  const int inner = rank - 1;
  const int64_t cols = tt.shape()[inner], rows = rank >= 2 ? tt.shape()[rank - 2] : 1;
  valid(kT2, inner);
  if (rank >= 2)
    valid(kT3, rank - 2);
  else
    li(kT3, 1);
  if (rank == 3) { // a 1 x R x C tile: no valid rows when its plane is outside
    valid(kT4, 0);
    li(kT5, 1);
    emit(isa::Opcode::Min, kT4, kT4, kT5);
    emit(isa::Opcode::Mul, kT3, kT3, kT4);
  }
  const uint8_t outer_stride = rank >= 2 ? kT5 : 0;
  load_bound(kT4, BindKind::StrideBytes, p, inner);
  if (rank >= 2)
    load_bound(kT5, BindKind::StrideBytes, p, rank - 2);
  li(kT0, es);
  const size_t strided = branch(isa::Opcode::Bne, kT4, kT0);
  dmai(isa::DmaField::N0, cols); // contiguous rows
  dmai(isa::DmaField::N1, 1);
  dmar(isa::DmaField::V0, kT2);
  dmai(isa::DmaField::V1, 1);
  const size_t join = branch(isa::Opcode::Jmp);
  land(strided); // element by element
  dmai(isa::DmaField::N0, 1);
  dmai(isa::DmaField::N1, cols);
  dmar(isa::DmaField::HS1, kT4);
  dmai(isa::DmaField::LS1, int64_t(es));
  dmai(isa::DmaField::V0, 1);
  dmar(isa::DmaField::V1, kT2);
  land(join);
  dmar(isa::DmaField::HS2, outer_stride);
  dmai(isa::DmaField::LS2, cols * int64_t(es));
  const uint64_t bytes = uint64_t(cols * rows) * es;
  const int parts = bytes >= kSplitBytes ? int(std::min<int64_t>(sync_.num_dma(), rows)) : 1;
  const Range hbm = hbm_range(p);
  const int group = ++groups_;
  for (int part = 0; part < parts; ++part) {
    const int64_t r0 = rows * part / parts, n = rows * (part + 1) / parts - r0;
    dmai(isa::DmaField::N2, n);
    uint8_t at = kT1;
    if (parts == 1) {
      dmar(isa::DmaField::V2, kT3);
    } else { // valid rows of this part: clamp(valid - r0, 0, n); its HBM address
      emit(isa::Opcode::Addi, kT2, kT3, 0, -r0);
      emit(isa::Opcode::Max, kT2, kT2, 0);
      li(kT4, uint64_t(n));
      emit(isa::Opcode::Min, kT2, kT2, kT4);
      dmar(isa::DmaField::V2, kT2);
      li(kT4, uint64_t(r0));
      emit(isa::Opcode::Mul, kT4, kT4, kT5);
      emit(isa::Opcode::Add, kT4, kT4, kT1);
      at = kT4;
    }
    const uint64_t lo = local + uint64_t(r0 * cols) * es;
    const Range part_range{lo, lo + uint64_t(n * cols) * es};
    li(kT0, lo);
    // Part p always on engine p: the same rows of successive transfers stay in order.
    const int q = parts == 1 ? next_dma() : part;
    if (is_load)
      command(q, isa::Opcode::DmaLd, kT0, at, {hbm}, {part_range}, group);
    else
      command(q, isa::Opcode::DmaSt, at, kT0, {part_range}, {hbm}, group);
  }
}

/// full / splat: a DMA "load" whose every element is out of bounds writes the pad pattern (the
/// scratchpad's write bandwidth, no HBM traffic).
void Lowering::lower_fill(const ir::Operation &op) {
  const ir::Type &t = op.result()->type();
  const int64_t es = elem_bytes(op, t.elem());
  if (op.opcode() == Opcode::Splat) {
    if (!ir::is_float(t.elem()) && !ir::is_integer(t.elem()))
      fail(op, "splat into " + t.str() + " is not supported");
    const ir::Value *v = op.operand(0);
    if (auto it = vscalars_.find(v); it != vscalars_.end() && !regs_.count(v)) {
      broadcast_scalar(op, it->second); // computed on the vector unit: no read-back
      return;
    }
    dmar(isa::DmaField::Pad, scalar(op, op.operand(0)));
  } else {
    li(kT0, const_bits(op, op.attr("value"), t.elem()));
    dmar(isa::DmaField::Pad, kT0);
  }
  const uint64_t dst = alloc_tile(op);
  dmai(isa::DmaField::ESize, es);
  dmai(isa::DmaField::N1, 1);
  dmai(isa::DmaField::N2, 1);
  dmai(isa::DmaField::V0, 0);
  const int64_t n = t.num_elements();
  const int parts = uint64_t(n * es) >= kSplitBytes ? sync_.num_dma() : 1;
  for (int part = 0; part < parts; ++part) {
    const int64_t e0 = n * part / parts, count = n * (part + 1) / parts - e0;
    dmai(isa::DmaField::N0, count);
    const uint64_t lo = dst + uint64_t(e0 * es);
    li(kT0, lo);
    command(next_dma(), isa::Opcode::DmaLd, kT0, 0, {}, {{lo, lo + uint64_t(count * es)}});
  }
}

/// Lowers a `for` (iv and carried scalars in registers, carried tiles in their planned slots).
/// Without pipelined loads: one body, every queue synchronized at the back edge. With them
/// (software pipelining, depth D = CompileOptions::pipeline_depth): the loads of the first D - 1
/// iterations go to buffers 0..D-2 before the loop, and the body is emitted D times (buffer b in
/// copy b). Each copy
///  1. waits for the loads of its iteration: every queue waits for the signals each DMA engine
///     sent right behind that prefetch (eager semaphores: later commands on the engine, such
///     as the previous iteration's stores, are not waited for);
///  2. orders every other queue after the previous iteration's compute (the buffers the
///     prefetch overwrites) and the DMA engines after each other (stores in order);
///  3. prefetches the loads of iteration i + D - 1 into the buffer of iteration i - 1 and
///     signals behind them;
///  4. computes; its tiles that are stored have D buffers too, so the store of iteration i
///     overlaps the compute of the next ones.
/// The command processor never waits; the body copies' registers are released after each.
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
  bool pipelined = false;
  for (const auto &inner : body.ops())
    pipelined = pipelined || (inner->opcode() == Opcode::Load && plan_.pipelined.count(inner.get()));
  const int depth = pipelined ? plan_.depth : 1;
  Signals signalled(static_cast<size_t>(depth), std::vector<uint64_t>{});
  for (int b = 0; b + 1 < depth; ++b) { // the first depth - 1 iterations' loads
    uint8_t ivb = iv;
    if (b > 0) {
      ivb = new_reg(op);
      emit(isa::Opcode::Mov, ivb, iv);
      for (int i = 0; i < b; ++i)
        emit(isa::Opcode::Add, ivb, ivb, step);
    }
    guarded_prefetch(op, ivb, b, signalled[size_t(b)]);
  }
  const auto head = sync_.known();
  forget_vec(); // the back edge joins here
  const size_t loop = out_.program.size();
  std::vector<size_t> exits = {branch(isa::Opcode::Bge, iv, ub)};
  for (int buffer = 0; buffer < depth; ++buffer) {
    if (buffer > 0)
      exits.push_back(branch(isa::Opcode::Bge, iv, ub));
    lower_body(op, pipelined ? buffer : -1, signalled);
    emit(isa::Opcode::Add, iv, iv, step);
  }
  emit(isa::Opcode::Jmp);
  out_.program.back().imm = int32_t(int64_t(loop) - int64_t(out_.program.size() - 1));
  for (size_t e : exits)
    land(e);
  sync_.restore(head); // the loop may run zero times
  for (unsigned i = 0; i < op.num_results(); ++i) {
    const ir::Value *slot = body.argument(i + 1);
    if (slot->type().is_tile())
      tiles_[op.result(i)] = tiles_[slot];
    else
      regs_[op.result(i)] = regs_[slot];
  }
}

/// If iv < ub: the pipelined loads for iv into `buffer`, then each DMA engine's eager signals;
/// `signalled` gets the engines' issue counts at the signals.
void Lowering::guarded_prefetch(const ir::Operation &loop, uint8_t iv, int buffer,
                                std::vector<uint64_t> &signalled) {
  const auto before = sync_.known();
  const size_t last = branch(isa::Opcode::Bge, iv, scalar(loop, loop.operand(1)));
  prefetch(loop, iv, buffer);
  for (int e = 0; e < sync_.num_dma(); ++e)
    sync_.signal_ahead(e);
  signalled = sync_.issued();
  land(last);
  sync_.restore(before);
}

/// One copy of a loop body (see lower_for); buffer < 0: not pipelined.
void Lowering::lower_body(const ir::Operation &loop, int buffer, Signals &signalled) {
  const ir::Block &body = *loop.region(0);
  const auto regs = regs_;
  const auto tiles = tiles_;
  const uint8_t next_reg = next_reg_;
  const int outer_buffer = buffer_;
  const uint8_t iv = regs_[body.argument(0)], step = scalar(loop, loop.operand(2));
  if (buffer >= 0) {
    sync_.wait_ahead(signalled[size_t(buffer)]);
    for (int c : {sync_.mx(), sync_.vec()})
      for (int q = 0; q < sync_.vec() + 1; ++q)
        if (q != c)
          sync_.order(c, q);
    for (int p = 0; p < sync_.num_dma(); ++p)
      for (int q = 0; q < sync_.num_dma(); ++q)
        if (q != p)
          sync_.order(p, q);
    const uint8_t ivn = new_reg(loop);
    emit(isa::Opcode::Add, ivn, iv, step);
    for (int i = 2; i < plan_.depth; ++i)
      emit(isa::Opcode::Add, ivn, ivn, step);
    const int ahead = (buffer + plan_.depth - 1) % plan_.depth;
    guarded_prefetch(loop, ivn, ahead, signalled[size_t(ahead)]);
  }
  buffer_ = std::max(buffer, 0);
  for (const auto &inner : body.ops()) {
    if (inner->opcode() == Opcode::Yield)
      continue;
    if (inner->opcode() == Opcode::Load && buffer >= 0 && plan_.pipelined.count(inner.get()))
      alloc_tile(*inner); // prefetched
    else
      lower(*inner);
  }
  const ir::Operation *yield = body.terminator();
  for (unsigned i = 0; yield && i < yield->num_operands(); ++i)
    move_to(*yield, yield->operand(i), body.argument(i + 1)); // (no swaps of carried values)
  if (buffer < 0)
    sync_.sync_all();
  regs_ = regs, tiles_ = tiles, next_reg_ = next_reg, buffer_ = outer_buffer;
}

/// The pipelined loads of the loop's body for the iteration whose induction variable is in `iv`,
/// into buffer `buffer` (the scalar ops they depend on are recomputed from iv).
void Lowering::prefetch(const ir::Operation &loop, uint8_t iv, int buffer) {
  const ir::Block &body = *loop.region(0);
  const auto regs = regs_;
  const uint8_t next_reg = next_reg_;
  const int outer_buffer = buffer_;
  regs_[body.argument(0)] = iv;
  buffer_ = buffer;
  for (const auto &inner : body.ops())
    if (plan_.prefetch_scalars.count(inner.get()))
      lower(*inner);
  for (const auto &inner : body.ops())
    if (inner->opcode() == Opcode::Load && plan_.pipelined.count(inner.get()))
      lower_memory(*inner, true);
  regs_ = regs, next_reg_ = next_reg, buffer_ = outer_buffer;
}

/// C = A (M x K) * B (K x N) [+ acc] on the matrix unit, C in its planned slot (the accumulator
/// when it fits, else the scratchpad; the acc operand's own slot when it dies here, else acc is
/// copied in first). B is split into k x n blocks of at most R x C, each latched with mx.pre
/// while all M rows of A stream through.
void Lowering::lower_dot(const ir::Operation &op) {
  const ir::Type &at = op.operand(0)->type(), &bt = op.operand(1)->type();
  const ir::Type &ct = op.result()->type();
  if (at.rank() != 2 || bt.rank() != 2)
    fail(op, "'dot' of rank-3 tiles is not supported");
  int mode = -1;
  const ir::ScalarKind in = at.elem(), acc = ct.elem();
  const std::string *prec = op.attr_as<std::string>("input_precision");
  const bool rounded = prec && in == ir::ScalarKind::F32 && (*prec == "tf32" || *prec == "bf16");
  // rounding f16 / bf16 inputs to tf32, or bf16 ones to bf16, changes nothing
  const bool exact = prec && ((*prec == "tf32" && in != ir::ScalarKind::F32) ||
                              (*prec == "bf16" && in == ir::ScalarKind::BF16));
  if (prec && *prec != "ieee" && !rounded && !exact)
    fail(op, "'dot' input_precision '" + *prec + "' is not supported");
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
  Range a = tile_range(op, op.operand(0)), b = tile_range(op, op.operand(1));
  if (rounded) { // the inputs rounded first (lower_vector.cpp)
    a = rounded_input(op, op.operand(0), *prec, 0);
    b = rounded_input(op, op.operand(1), *prec, 2 * (a.hi - a.lo + 63) / 64 * 64);
  }
  const bool has_acc = op.num_operands() > 2;
  const uint64_t c = alloc_tile(op);
  const Range cr = range(op, c, ct);
  if (has_acc && tile(op, op.operand(2)) != c)
    copy_tile(op, c, tile(op, op.operand(2)), ct);
  mxi(isa::MxField::Mode, mode);
  mxi(isa::MxField::M, M);
  mxi(isa::MxField::Lda, K * es);
  mxi(isa::MxField::Ldw, N * es);
  mxi(isa::MxField::Ldc, N * 4);
  for (int64_t j0 = 0; j0 < N; j0 += opts_.matrix_cols) {
    mxi(isa::MxField::N, std::min<int64_t>(opts_.matrix_cols, N - j0));
    for (int64_t k0 = 0; k0 < K; k0 += opts_.matrix_rows) {
      mxi(isa::MxField::K, std::min<int64_t>(opts_.matrix_rows, K - k0));
      li(kT0, b.lo + uint64_t((k0 * N + j0) * es));
      command(sync_.mx(), isa::Opcode::MxPre, kT0, 0, {b}, {});
      li(kT1, c + uint64_t(j0 * 4));
      li(kT2, a.lo + uint64_t(k0 * es));
      const bool fresh = k0 == 0 && !has_acc;
      command(sync_.mx(), fresh ? isa::Opcode::MxMm : isa::Opcode::MxMma, kT1, kT2,
              fresh ? std::vector<Range>{a} : std::vector<Range>{a, cr}, {cr});
    }
  }
}

void Lowering::lower_cast(const ir::Operation &op) {
  const ir::Type &from = op.operand(0)->type(), &to = op.result()->type();
  if (!ir::is_integer(from.elem()) || !ir::is_integer(to.elem()))
    fail(op, "scalar casts are supported between integers only");
  // Registers hold 64-bit values; a narrowing cast keeps the value (kernels cast extents).
  regs_[op.result()] = scalar(op, op.operand(0));
}

void Lowering::lower(const ir::Operation &op) {
  if (lower_vector(op)) // tiles on the vector unit, float scalars (lower_vector.cpp)
    return;
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
    const uint8_t src = bind(op, BindKind::StrideBytes, p, axis);
    const uint8_t d = regs_[op.result()] = new_reg(op);
    emit(isa::Opcode::Shri, d, src, 0,
         es == 1   ? 0
         : es == 2 ? 1
         : es == 4 ? 2
                   : 3);
    return;
  }
  case Opcode::Constant:
  case Opcode::Full:
    if (tile_result) {
      lower_fill(op);
      return;
    }
    {
      const ir::Type &t = op.result()->type();
      if (t.elem() != ir::ScalarKind::F32 && !ir::is_integer(t.elem()))
        fail(op, "constants of type " + t.str() + " are not supported");
      const uint64_t bits = const_bits(op, op.attr("value"), t.elem());
      li(regs_[op.result()] = new_reg(op), bits);
    }
    return;
  case Opcode::Splat:
    lower_fill(op);
    return;
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
  case Opcode::And:
  case Opcode::Or:
  case Opcode::Xor:
    lower_scalar_binary(op);
    return;
  case Opcode::Div:
  case Opcode::Rem:
  case Opcode::Shl:
  case Opcode::Shr:
  case Opcode::Neg:
  case Opcode::Not:
  case Opcode::Abs:
  case Opcode::Select:
    lower_scalar_int(op);
    return;
  case Opcode::Cmp:
    lower_cmp(op);
    return;
  case Opcode::If:
    lower_if(op);
    return;
  case Opcode::Assert:
    lower_assert(op);
    return;
  case Opcode::Gather:
  case Opcode::Scatter:
  case Opcode::AtomicAdd:
    lower_indexed(op);
    return;
  case Opcode::Print:
    fail(op, "'print' is not supported: the TNPU has no channel to the host's output");
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
