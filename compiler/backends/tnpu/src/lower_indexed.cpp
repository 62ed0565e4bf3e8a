// gather, scatter and atomic_add: the indexed DMA commands, one tensor element per lane; a row
// gather (attr::kRowGather) one whole run of columns per row index.
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

namespace tl::tnpu::detail {

using O = isa::Opcode;
using D = isa::DmaField;

namespace {
Range bytes_at(uint64_t at, uint64_t n) { return {at, at + n}; }
} // namespace

/// The vector unit checks every unmasked lane's indices against the tensor's extents
/// (check_indices) and computes each lane's element offset (element_offsets); then one
/// dma.gather / dma.scatter / dma.atadd moves one element per lane (indexed_transfer).
void Lowering::lower_indexed(const ir::Operation &op) {
  const ir::Value *tensor = op.operand(0);
  const int rank = tensor->type().rank();
  const ir::ScalarKind e = tensor->type().elem();
  const bool gather = op.opcode() == Opcode::Gather;
  const unsigned mask_at = unsigned(1 + rank + (gather ? 0 : 1));
  const ir::Value *mask = op.num_operands() > mask_at ? op.operand(mask_at) : nullptr;
  for (int d = 0; d < rank; ++d)
    if (op.operand(1 + unsigned(d))->type().elem() != ir::ScalarKind::I32)
      fail(op, "'" + std::string(op.name()) + "' with " +
                   op.operand(1 + unsigned(d))->type().str() +
                   " indices is not supported (i32 indices)");
  if (op.opcode() == Opcode::AtomicAdd && e != ir::ScalarKind::F32 && e != ir::ScalarKind::I32)
    fail(op, "'atomic_add' on " + tensor->type().str() + " is not supported (f32 or i32)");
  // Temporaries: the valid (unless a mask is given), good and scratch masks (n bytes each), the
  // offsets k and an i32 scratch (4 n bytes each), the error path's probe (n bytes).
  Lanes l;
  l.n = op.operand(1)->type().num_elements();
  l.masked = mask != nullptr;
  const uint64_t lb = (uint64_t(l.n) + 63) / 64 * 64, wb = uint64_t(l.n) * 4;
  l.valid = mask ? tile(op, mask) : temp(op, 0, lb);
  l.good = temp(op, lb, lb), l.t8 = temp(op, 2 * lb, lb);
  l.k = temp(op, 3 * lb, wb), l.s = temp(op, 3 * lb + wb, wb);
  l.probe = temp(op, 3 * lb + 2 * wb, uint64_t(l.n));
  if (!mask) {
    li(kT4, 1);
    fill(op, l.valid, l.n, 3, kT4);
  }
  check_indices(op, l);
  element_offsets(op, l);
  indexed_transfer(op, l);
}

/// good = every index of a lane inside its extent; a lane that is valid but not good ends the
/// program (name_bad_index) before anything is written.
void Lowering::check_indices(const ir::Operation &op, const Lanes &l) {
  const unsigned p = param(op, op.operand(0));
  const int rank = op.operand(0)->type().rank();
  const uint64_t n = uint64_t(l.n);
  const Range vr = bytes_at(l.valid, n), gr = bytes_at(l.good, n), t8r = bytes_at(l.t8, n),
              sr = bytes_at(l.s, 4 * n);
  for (int d = 0; d < rank; ++d) {
    const ir::Value *idx = op.operand(1 + unsigned(d));
    const uint64_t ia = tile(op, idx);
    const Range ir = tile_range(op, idx);
    fill(op, l.s, l.n, 4, 0);
    vec_setup(l.n, 1, 4);
    vcmd(O::VCge, {d == 0 ? l.good : l.t8, ia, l.s}, {ir, sr}, {d == 0 ? gr : t8r});
    if (d > 0) {
      vec_setup(l.n, 1, 3);
      vcmd(O::VAnd, {l.good, l.good, l.t8}, {gr, t8r}, {gr});
    }
    load_bound(kT4, BindKind::Shape, p, uint16_t(d));
    fill(op, l.s, l.n, 4, kT4);
    vec_setup(l.n, 1, 4);
    vcmd(O::VClt, {l.t8, ia, l.s}, {ir, sr}, {t8r});
    vec_setup(l.n, 1, 3);
    vcmd(O::VAnd, {l.good, l.good, l.t8}, {gr, t8r}, {gr});
  }
  // any unmasked lane outside: the largest byte of (valid > good), read back
  vec_setup(l.n, 1, 3);
  vcmd(O::VCgt, {l.t8, l.valid, l.good}, {vr, gr}, {t8r});
  const uint64_t at = readback_slot(op);
  vcmd(O::VRmax, {at, l.t8}, {t8r}, {{at, at + 8}});
  cp_wait_vec();
  read_scalar(kT4, at, ir::ScalarKind::I1);
  const size_t fine = branch(O::Beq, kT4, 0);
  const auto before = sync_.known();
  name_bad_index(op, l);
  sync_.restore(before);
  land(fine);
}

/// A probing dma.gather (oob = 2) of each dimension's indices, -1 where masked, faults on the
/// first index past the extent, naming it and its lane as the interpreter does; if none does,
/// the bad index was negative: reported by message.
void Lowering::name_bad_index(const ir::Operation &op, const Lanes &l) {
  const ir::Value *tensor = op.operand(0);
  const unsigned p = param(op, tensor);
  const uint64_t n = uint64_t(l.n);
  for (int d = 0; d < tensor->type().rank(); ++d) {
    const ir::Value *idx = op.operand(1 + unsigned(d));
    li(kT4, ~uint64_t(0));
    fill(op, l.s, l.n, 4, kT4);
    vec_setup(l.n, 1, 4);
    vcmd(O::VSel, {l.k, l.valid, tile(op, idx), l.s},
         {bytes_at(l.valid, n), tile_range(op, idx), bytes_at(l.s, 4 * n)}, {bytes_at(l.k, 4 * n)});
    dmai(D::ESize, 1), dmai(D::N0, 1), dmai(D::N1, l.n), dmai(D::N2, 1), dmai(D::HS1, 0);
    dmai(D::LS1, 1), dmai(D::V0, 1), dmai(D::V2, 1), dmai(D::ISz, 4), dmai(D::Oob, 2);
    load_bound(kT4, BindKind::Shape, p, uint16_t(d));
    dmar(D::V1, kT4);
    load_bound(kT1, BindKind::Address, p, 0);
    li(kT0, l.probe), li(kT2, l.k);
    const int q = next_dma(uint64_t(l.n) * kCommandBytes);
    sync_.issue(q, {hbm_range(p), bytes_at(l.k, 4 * n)}, {bytes_at(l.probe, n)});
    emit(O::DmaGather, QueueSync::isa_queue(q, sync_.num_dma()), kT0, kT1, 0, kT2);
  }
  emit(O::Fence); // the probe faults before the program ends
  report_unless(0, op.loc().str() + ": '" + std::string(op.name()) +
                       "' index out of bounds (negative) in an unmasked lane of tensor %" +
                       tensor->name());
}

/// k = the sum of index_d * stride_d (in elements) per lane; -1 where masked.
void Lowering::element_offsets(const ir::Operation &op, const Lanes &l) {
  const ir::Value *tensor = op.operand(0);
  const unsigned p = param(op, tensor);
  const int es = elem_bytes(op, tensor->type().elem());
  const uint64_t n = uint64_t(l.n);
  const Range kr = bytes_at(l.k, 4 * n), sr = bytes_at(l.s, 4 * n);
  for (int d = 0; d < tensor->type().rank(); ++d) {
    const ir::Value *idx = op.operand(1 + unsigned(d));
    load_bound(kT4, BindKind::StrideBytes, p, uint16_t(d));
    emit(O::Shri, kT4, kT4, 0, es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3);
    vec_setup(l.n, 1, 4);
    vcmd(O::VMuls, {d == 0 ? l.k : l.s, tile(op, idx)}, {tile_range(op, idx)}, {d == 0 ? kr : sr},
         {kT4});
    if (d > 0)
      vcmd(O::VAdd, {l.k, l.k, l.s}, {kr, sr}, {kr});
  }
  li(kT4, ~uint64_t(0));
  fill(op, l.s, l.n, 4, kT4);
  vec_setup(l.n, 1, 4);
  vcmd(O::VSel, {l.k, l.valid, l.k, l.s}, {bytes_at(l.valid, n), kr, sr}, {kr});
}

/// L rows of one element at HBM base + k * esize (oob = 1: row -1 reads `other` / is skipped).
/// atomic_add's result (the old values) comes back in place of a copy of the values.
void Lowering::indexed_transfer(const ir::Operation &op, const Lanes &l) {
  const ir::Value *tensor = op.operand(0);
  const unsigned p = param(op, tensor);
  const ir::ScalarKind e = tensor->type().elem();
  const int es = elem_bytes(op, e);
  const bool gather = op.opcode() == Opcode::Gather, atomic = op.opcode() == Opcode::AtomicAdd;
  const ir::Value *value = gather ? nullptr : op.operand(1 + unsigned(tensor->type().rank()));
  uint64_t local = 0;
  if (gather || atomic) {
    local = alloc_tile(op);
    if (atomic)
      copy_tile(op, local, tile(op, value), value->type());
  } else {
    local = tile(op, value);
  }
  const Range lr = bytes_at(local, uint64_t(l.n * es)), kr = bytes_at(l.k, uint64_t(l.n) * 4);
  if (gather) {
    const ir::Attr *other = op.attr("other");
    li(kT0, other ? const_bits(op, other, e) : 0);
    dmar(D::Pad, kT0);
  }
  dmai(D::ESize, es), dmai(D::N0, 1), dmai(D::N1, l.n), dmai(D::N2, 1), dmai(D::HS1, es);
  dmai(D::LS1, es), dmai(D::V0, 1), dmai(D::V2, 1), dmai(D::ISz, 4), dmai(D::Oob, 1);
  li(kT0, uint64_t(1) << 40);
  dmar(D::V1, kT0);
  if (atomic)
    dmai(D::ADt, e == ir::ScalarKind::F32 ? 2 : 4);
  load_bound(kT1, BindKind::Address, p, 0);
  li(kT0, local);
  li(kT2, l.k);
  const int q = next_dma(uint64_t(l.n) * kCommandBytes); // a request per lane
  const Range hbm = hbm_range(p);
  const uint8_t qc = QueueSync::isa_queue(q, sync_.num_dma());
  if (gather) {
    sync_.issue(q, {hbm, kr}, {lr});
    emit(O::DmaGather, qc, kT0, kT1, 0, kT2);
  } else if (!atomic) {
    sync_.issue(q, {lr, kr}, {hbm});
    emit(O::DmaScatter, qc, kT1, kT0, 0, kT2);
  } else {
    sync_.issue(q, {lr, kr, hbm}, {hbm, lr});
    emit(O::DmaAtAdd, qc, kT1, kT0, 0, kT2);
    if (l.masked) { // masked lanes return 0, as the interpreter
      const uint64_t n = uint64_t(l.n);
      fill(op, l.s, l.n, unit_dtype(op, e), 0);
      vec_setup(l.n, 1, unit_dtype(op, e));
      vcmd(O::VSel, {local, l.valid, local, l.s}, {bytes_at(l.valid, n), lr, bytes_at(l.s, 4 * n)},
           {lr});
    }
  }
}

/// A row gather (attr::row_gather, planned by tnpu-plan-memory): the column run checked on the
/// command processor, then per DMA engine one dma.gather of its share of the rows, each row the
/// C elements at (ids[r], first column) (oob 0: an id outside [0, extent 0) faults naming it and
/// its entry in the engine's share). Where the tensor's columns are not contiguous (stride 1
/// other than one element), each share is C gathers of one-element rows, a counted loop.
void Lowering::lower_row_gather(const ir::Operation &op, const attr::RowGather &g) {
  const ir::Value *tensor = op.operand(0);
  const unsigned p = param(op, tensor);
  const int64_t es = elem_bytes(op, tensor->type().elem());
  const int64_t rows = op.result()->type().shape()[0], cols = op.result()->type().shape()[1];
  const uint8_t start = g.start ? scalar(op, g.start) : 0;
  const uint64_t local = alloc_tile(op), ids = tile(op, g.ids);
  // kT3 = the run's first column; the run must lie in [0, extent 1), as every lane is unmasked
  li(kT3, uint64_t(g.offset));
  if (g.start)
    emit(O::Add, kT3, kT3, start);
  emit(O::Addi, kT1, kT3, 0, cols);
  load_bound(kT2, BindKind::Shape, p, 1);
  li(kT0, 0);
  const size_t negative = branch(O::Blt, kT3, 0), past = branch(O::Blt, kT2, kT1);
  li(kT0, 1);
  land(negative), land(past);
  report_unless(kT0, op.loc().str() +
                         ": 'gather' index out of bounds in an unmasked lane of "
                         "tensor %" +
                         tensor->name() + " (its run of " + std::to_string(cols) + " columns)");
  load_bound(kT4, BindKind::StrideBytes, p, 1);
  emit(O::Mul, kT3, kT3, kT4);
  load_bound(kT1, BindKind::Address, p, 0);
  emit(O::Add, kT1, kT1, kT3); // the run's first element in row 0
  dmai(D::ESize, es), dmai(D::N2, 1), dmai(D::V0, cols), dmai(D::V2, 1);
  dmai(D::LS1, cols * es), dmai(D::ISz, 4), dmai(D::Oob, 0);
  load_bound(kT2, BindKind::Shape, p, 0);
  dmar(D::V1, kT2);
  load_bound(kT2, BindKind::StrideBytes, p, 0);
  dmar(D::HS1, kT2);
  dmai(D::N0, cols);
  li(kT2, uint64_t(es));
  const size_t contiguous = branch(O::Beq, kT4, kT2);
  dmai(D::N0, 1);
  land(contiguous);
  const uint64_t bytes = uint64_t(rows * cols * es);
  const int parts = bytes >= kSplitBytes ? int(std::min<int64_t>(sync_.num_dma(), rows)) : 1;
  const Range hbm = hbm_range(p);
  const int group = ++groups_;
  auto share = [&](int part, uint64_t base, uint64_t row_bytes) {
    const int64_t r0 = rows * part / parts, n = rows * (part + 1) / parts - r0;
    return Range{base + uint64_t(r0) * row_bytes, base + uint64_t(r0 + n) * row_bytes};
  };
  const uint64_t row_bytes = uint64_t(cols * es);
  if (parts > 1) // every part's waits before the first part (as box_transfers)
    for (int part = 0; part < parts; ++part)
      sync_.prepare(part, {hbm, share(part, ids, 4)}, {share(part, local, row_bytes)}, group);
  for (int part = 0; part < parts; ++part) {
    const Range lr = share(part, local, row_bytes), ir = share(part, ids, 4);
    dmai(D::N1, int64_t((ir.hi - ir.lo) / 4));
    li(kT0, uint64_t(es)); // kT3 = the commands: 1, or C where the columns are strided
    li(kT3, 1);
    const size_t one = branch(O::Beq, kT4, kT0);
    li(kT3, uint64_t(cols));
    land(one);
    li(kT0, lr.lo), li(kT2, ir.lo);
    emit(O::Mov, kT5, kT1);
    const int q = next_dma(lr.hi - lr.lo + kCommandBytes, parts > 1 ? part : -1);
    sync_.issue(q, {hbm, ir}, {lr}, group);
    emit(O::DmaGather, QueueSync::isa_queue(q, sync_.num_dma()), kT0, kT5, 0, kT2);
    emit(O::Addi, kT0, kT0, 0, es); // (strided: the next column)
    emit(O::Add, kT5, kT5, kT4);
    emit(O::Dbnz, kT3, 0, 0, -3);
  }
}

} // namespace tl::tnpu::detail
