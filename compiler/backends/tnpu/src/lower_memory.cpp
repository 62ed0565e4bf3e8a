// The tnpu lowering of load / store (DMA boxes, split over the engines) and full / splat (DMA
// pad fills).
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

#include "tl/reference/numerics.h"

#include <cmath>

namespace tl::tnpu::detail {

uint64_t Lowering::const_bits(const ir::Operation &op, const ir::Attr *a, ir::ScalarKind e) {
  double fv = 0;
  int64_t iv = 0;
  if (auto *i = std::get_if<int64_t>(a))
    iv = *i, fv = double(*i);
  else if (auto *d = std::get_if<double>(a)) {
    fv = *d; // a float constant may be infinite or NaN: only an integer one converts
    if (ir::is_integer(e) && !(std::isfinite(*d) && std::fabs(*d) < 0x1p63))
      fail(op, "the constant " + std::to_string(*d) + " is no " + std::string(ir::scalar_name(e)) +
                   " value");
    iv = std::isfinite(*d) && std::fabs(*d) < 0x1p63 ? int64_t(*d) : 0;
  } else if (auto *b = std::get_if<bool>(a))
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

/// kT1 = the HBM address of the box's first element: the tensor's address plus offset * stride
/// along every dimension.
void Lowering::box_address(const ir::Operation &op, unsigned p, int rank) {
  load_bound(kT1, BindKind::Address, p, 0);
  for (int d = 0; d < rank; ++d) {
    load_bound(kT0, BindKind::StrideBytes, p, d);
    emit(isa::Opcode::Mul, kT0, scalar(op, op.operand(1 + d)), kT0);
    emit(isa::Opcode::Add, kT1, kT1, kT0);
  }
}

/// The box's valid extents, max(shape - offset, 0): the innermost dimension's into kT2, the
/// rows' into kT3 (none when a 1 x R x C tile's plane is outside).
void Lowering::box_valid_extents(const ir::Operation &op, unsigned p, int rank) {
  auto valid = [&](uint8_t dst, int d) {
    load_bound(dst, BindKind::Shape, p, d);
    emit(isa::Opcode::Sub, dst, dst, scalar(op, op.operand(1 + d)));
    emit(isa::Opcode::Max, dst, dst, 0);
  };
  valid(kT2, rank - 1);
  if (rank >= 2)
    valid(kT3, rank - 2);
  else
    li(kT3, 1);
  if (rank == 3) { // the plane is in bounds when 0 <= offset < shape: min(valid, 1) (offset >= 0)
    valid(kT4, 0);
    li(kT5, 1);
    emit(isa::Opcode::Min, kT4, kT4, kT5);
    emit(isa::Opcode::Mul, kT3, kT3, kT4);
    emit(isa::Opcode::Addi, kT0, scalar(op, op.operand(1)), 0, 1);
    emit(isa::Opcode::Max, kT0, kT0, 0);
    emit(isa::Opcode::Min, kT0, kT0, kT5);
    emit(isa::Opcode::Mul, kT3, kT3, kT0);
  }
}

/// `dst` = max(-offset, 0): the first in-bounds index of a box at `offset` along a dimension
/// (a block shifted past the tensor's start); a constant offset >= 0 gives no code (-1).
int Lowering::box_first(uint8_t dst, const ir::Operation &op, const ir::Value *offset) {
  if (const ir::Operation *d = offset->def(); d && d->opcode() == Opcode::Constant)
    if (const auto *i = std::get_if<int64_t>(d->attr("value")); i && *i >= 0)
      return -1;
  emit(isa::Opcode::Sub, dst, 0, scalar(op, offset));
  emit(isa::Opcode::Max, dst, dst, 0);
  return dst;
}

/// The descriptor's dimensions for rows of `cols` elements: dimensions 0-1 are one contiguous
/// row (n0 = cols) when the innermost stride (kT4) is one element, else element by element
/// (n0 = 1, n1 = cols), chosen at run time; dimension 2 walks the rows (HBM stride in kT5).
void Lowering::box_dims(const ir::Operation &op, unsigned p, int rank, int64_t cols, uint64_t es) {
  const uint8_t outer_stride = rank >= 2 ? kT5 : 0;
  const ir::Value *col_offset = op.operand(rank);
  auto first = [&](isa::DmaField f, isa::DmaField other) { // the columns' first index
    if (box_first(kT0, op, col_offset) < 0)
      dmai(f, 0);
    else
      dmar(f, kT0);
    dmai(other, 0);
  };
  load_bound(kT4, BindKind::StrideBytes, p, rank - 1);
  if (rank >= 2)
    load_bound(kT5, BindKind::StrideBytes, p, rank - 2);
  li(kT0, es);
  const size_t strided = branch(isa::Opcode::Bne, kT4, kT0);
  dmai(isa::DmaField::N0, cols); // contiguous rows
  dmai(isa::DmaField::N1, 1);
  dmar(isa::DmaField::V0, kT2);
  dmai(isa::DmaField::V1, 1);
  first(isa::DmaField::L0, isa::DmaField::L1);
  const size_t join = branch(isa::Opcode::Jmp);
  land(strided); // element by element
  dmai(isa::DmaField::N0, 1);
  dmai(isa::DmaField::N1, cols);
  dmar(isa::DmaField::HS1, kT4);
  dmai(isa::DmaField::LS1, int64_t(es));
  dmai(isa::DmaField::V0, 1);
  dmar(isa::DmaField::V1, kT2);
  first(isa::DmaField::L1, isa::DmaField::L0);
  land(join);
  dmar(isa::DmaField::HS2, outer_stride);
  dmai(isa::DmaField::LS2, cols * int64_t(es));
}

/// The valid rows of a part of n rows from row r0, clamp(valid - r0, 0, n), and its first valid
/// row (the box's rows start at `row_offset`), into the descriptor; returns the register holding
/// the part's HBM address (kT4).
uint8_t Lowering::box_part_rows(const ir::Operation &op, int64_t r0, int64_t n,
                                const ir::Value *row_offset) {
  li(kT4, uint64_t(n));
  if (row_offset && box_first(kT2, op, row_offset) >= 0) { // clamp(max(-offset, 0) - r0, 0, n)
    emit(isa::Opcode::Addi, kT2, kT2, 0, -r0);
    emit(isa::Opcode::Max, kT2, kT2, 0);
    emit(isa::Opcode::Min, kT2, kT2, kT4);
    dmar(isa::DmaField::L2, kT2);
  } else {
    dmai(isa::DmaField::L2, 0);
  }
  emit(isa::Opcode::Addi, kT2, kT3, 0, -r0);
  emit(isa::Opcode::Max, kT2, kT2, 0);
  emit(isa::Opcode::Min, kT2, kT2, kT4);
  dmar(isa::DmaField::V2, kT2);
  li(kT4, uint64_t(r0));
  emit(isa::Opcode::Mul, kT4, kT4, kT5);
  emit(isa::Opcode::Add, kT4, kT4, kT1);
  return kT4;
}

/// The DMA engine of a box transfer's part: part p on engine p (the same rows of successive
/// transfers stay in order); a store on the engine its op got first (in every copy of a
/// pipelined body: the other transfers balance around it); else the least loaded.
int Lowering::box_engine(const ir::Operation &op, bool is_load, int parts, int part,
                         uint64_t bytes) {
  int fixed = parts > 1 ? part : -1;
  if (auto it = store_engine_.find(&op); parts == 1 && !is_load && it != store_engine_.end())
    fixed = it->second;
  const int q = next_dma(bytes + kCommandBytes, fixed);
  if (!is_load)
    store_engine_.emplace(&op, q);
  return q;
}

/// The DMA commands moving a rows x cols box to or from the tile at `local`; large boxes are
/// split by rows over every DMA engine.
void Lowering::box_transfers(const ir::Operation &op, bool is_load, unsigned p, uint64_t local,
                             int64_t rows, int64_t cols, uint64_t es, const ir::Value *row_offset) {
  const uint64_t bytes = uint64_t(cols * rows) * es;
  const int parts = bytes >= kSplitBytes ? int(std::min<int64_t>(sync_.num_dma(), rows)) : 1;
  const Range hbm = hbm_range(p);
  const int group = ++groups_;
  auto part_range = [&](int part) {
    const int64_t r0 = rows * part / parts, n = rows * (part + 1) / parts - r0;
    const uint64_t lo = local + uint64_t(r0 * cols) * es;
    return Range{lo, lo + uint64_t(n * cols) * es};
  };
  if (parts > 1) // every part's waits before the first part (see QueueSync::prepare)
    for (int part = 0; part < parts; ++part) {
      if (is_load)
        sync_.prepare(part, {hbm}, {part_range(part)}, group);
      else
        sync_.prepare(part, {part_range(part)}, {hbm}, group);
    }
  for (int part = 0; part < parts; ++part) {
    const int64_t r0 = rows * part / parts, n = rows * (part + 1) / parts - r0;
    dmai(isa::DmaField::N2, n);
    uint8_t at = kT1;
    if (parts == 1) {
      dmar(isa::DmaField::V2, kT3);
      if (row_offset && box_first(kT2, op, row_offset) >= 0)
        dmar(isa::DmaField::L2, kT2);
      else
        dmai(isa::DmaField::L2, 0);
    } else {
      at = box_part_rows(op, r0, n, row_offset);
    }
    const Range local_part = part_range(part);
    li(kT0, local_part.lo);
    const int q = box_engine(op, is_load, parts, part, local_part.hi - local_part.lo);
    if (is_load)
      command(q, isa::Opcode::DmaLd, kT0, at, {hbm}, {local_part}, group);
    else
      command(q, isa::Opcode::DmaSt, at, kT0, {local_part}, {hbm}, group);
  }
}

/// DMA between a tensor box and a row-major tile: the box's address and valid extents in
/// registers, the descriptor's dimensions (box_dims), then the transfers.
void Lowering::lower_memory(const ir::Operation &op, bool is_load) {
  const ir::Value *tensor = op.operand(0);
  const unsigned p = param(op, tensor);
  const int rank = tensor->type().rank();
  const ir::Type &tt = is_load ? op.result()->type() : op.operand(1 + rank)->type();
  if (rank < 1 || rank > 3 || (rank == 3 && tt.shape()[0] != 1))
    fail(op, "'" + std::string(op.name()) + "' of a rank-" + std::to_string(rank) + " tile " +
                 tt.str() + " is not supported (rank 1 or 2, or 1 x R x C)");
  const uint64_t es = elem_bytes(op, tt.elem());
  const uint64_t local = is_load ? alloc_tile(op) : tile(op, op.operand(1 + rank));
  if (is_load) {
    const ir::Attr *a = op.attr("padding");
    li(kT0, a ? const_bits(op, a, tt.elem()) : 0);
    dmar(isa::DmaField::Pad, kT0);
  }
  dmai(isa::DmaField::ESize, int64_t(es));
  box_address(op, p, rank);
  box_valid_extents(op, p, rank);
  const int64_t cols = tt.shape()[rank - 1], rows = rank >= 2 ? tt.shape()[rank - 2] : 1;
  box_dims(op, p, rank, cols, es);
  box_transfers(op, is_load, p, local, rows, cols, es, rank >= 2 ? op.operand(rank - 1) : nullptr);
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
    if (auto it = vscalars_.find(v); it != vscalars_.end() && !regs_.count(v) && !prefetching_) {
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
    // No HBM traffic: the setup and the scratchpad's write bandwidth (2 KiB a cycle by default).
    const uint64_t cost = kCommandBytes / 8 + uint64_t(count * es) / 16;
    command(next_dma(cost), isa::Opcode::DmaLd, kT0, 0, {}, {{lo, lo + uint64_t(count * es)}});
  }
}

} // namespace tl::tnpu::detail
