// gather, scatter and atomic_add: the indexed DMA commands, one tensor element per lane.
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

namespace tl::tnpu {

using O = isa::Opcode;
using F = isa::VecField;
using D = isa::DmaField;

/// The vector unit checks every unmasked lane's indices against the tensor's extents (a lane
/// outside ends the program before any element is written: a probing dma.gather of that
/// dimension's indices faults naming the index and its lane, as the interpreter names them; a
/// negative index is reported by message) and computes
/// each lane's element offset k = sum of index_d * stride_d, -1 for a masked lane. Then one
/// dma.gather / dma.scatter / dma.atadd of L rows of one element (oob = 1: row -1 reads `other`
/// / is skipped). atomic_add's result (the old values) comes back in place of the values.
void Lowering::lower_indexed(const ir::Operation &op) {
  const ir::Value *tensor = op.operand(0);
  const unsigned p = param(op, tensor);
  const int rank = tensor->type().rank();
  const ir::ScalarKind e = tensor->type().elem();
  const int es = elem_bytes(op, e);
  const bool gather = op.opcode() == Opcode::Gather, atomic = op.opcode() == Opcode::AtomicAdd;
  const unsigned mask_at = unsigned(1 + rank + (gather ? 0 : 1));
  const ir::Value *mask = op.num_operands() > mask_at ? op.operand(mask_at) : nullptr;
  const int64_t L = op.operand(1)->type().num_elements();
  for (int d = 0; d < rank; ++d)
    if (op.operand(1 + unsigned(d))->type().elem() != ir::ScalarKind::I32)
      fail(op, "'" + std::string(op.name()) + "' with " +
                   op.operand(1 + unsigned(d))->type().str() +
                   " indices is not supported (i32 indices)");
  if (atomic && e != ir::ScalarKind::F32 && e != ir::ScalarKind::I32)
    fail(op, "'atomic_add' on " + tensor->type().str() + " is not supported (f32 or i32)");
  // Temporaries: valid and good masks (L bytes each), k and a scratch (4 L bytes each).
  const uint64_t lb = (uint64_t(L) + 63) / 64 * 64, wb = uint64_t(L) * 4;
  const uint64_t valid = mask ? tile(op, mask) : temp(op, 0, lb);
  const uint64_t good = temp(op, lb, lb), t8 = temp(op, 2 * lb, lb);
  const uint64_t k = temp(op, 3 * lb, wb), s = temp(op, 3 * lb + wb, wb);
  const Range vr{valid, valid + uint64_t(L)}, gr{good, good + uint64_t(L)},
      t8r{t8, t8 + uint64_t(L)}, kr{k, k + wb}, sr{s, s + wb};
  if (!mask) {
    li(kT4, 1);
    fill(op, valid, L, 3, kT4);
  }
  // good = every index inside its extent
  for (int d = 0; d < rank; ++d) {
    const ir::Value *idx = op.operand(1 + unsigned(d));
    const uint64_t ia = tile(op, idx);
    const Range ir = tile_range(op, idx);
    fill(op, s, L, 4, 0);
    vec_setup(L, 1, 4);
    vcmd(O::VCge, {d == 0 ? good : t8, ia, s}, {ir, sr}, {d == 0 ? gr : t8r});
    if (d > 0) {
      vec_setup(L, 1, 3);
      vcmd(O::VAnd, {good, good, t8}, {gr, t8r}, {gr});
    }
    load_bound(kT4, BindKind::Shape, p, uint16_t(d));
    fill(op, s, L, 4, kT4);
    vec_setup(L, 1, 4);
    vcmd(O::VClt, {t8, ia, s}, {ir, sr}, {t8r});
    vec_setup(L, 1, 3);
    vcmd(O::VAnd, {good, good, t8}, {gr, t8r}, {gr});
  }
  // any unmasked lane outside: the largest byte of (valid > good)
  vec_setup(L, 1, 3);
  vcmd(O::VCgt, {t8, valid, good}, {vr, gr}, {t8r});
  const uint64_t at = scalar_slot(3);
  vcmd(O::VRmax, {at, t8}, {t8r}, {{at, at + 8}});
  cp_wait_vec();
  read_scalar(kT4, at, ir::ScalarKind::I1);
  const size_t fine = branch(O::Beq, kT4, 0);
  { // an unmasked lane is outside: name its index (a probing gather of each dimension's indices
    // faults on the first one past the extent, naming it and its lane); a negative one, by message
    const auto before = sync_.known();
    const uint64_t probe = temp(op, 3 * lb + 2 * wb, uint64_t(L));
    for (int d = 0; d < rank; ++d) {
      const ir::Value *idx = op.operand(1 + unsigned(d));
      li(kT4, ~uint64_t(0));
      fill(op, s, L, 4, kT4);
      vec_setup(L, 1, 4);
      vcmd(O::VSel, {k, valid, tile(op, idx), s}, {vr, tile_range(op, idx), sr}, {kr});
      dmai(D::ESize, 1), dmai(D::N0, 1), dmai(D::N1, L), dmai(D::N2, 1), dmai(D::HS1, 0);
      dmai(D::LS1, 1), dmai(D::V0, 1), dmai(D::V2, 1), dmai(D::ISz, 4), dmai(D::Oob, 2);
      load_bound(kT4, BindKind::Shape, p, uint16_t(d));
      dmar(D::V1, kT4);
      load_bound(kT1, BindKind::Address, p, 0);
      li(kT0, probe), li(kT2, k);
      const int q = next_dma();
      sync_.issue(q, {hbm_range(p), kr}, {{probe, probe + uint64_t(L)}});
      emit(O::DmaGather, QueueSync::isa_queue(q, sync_.num_dma()), kT0, kT1, 0, kT2);
    }
    emit(O::Fence);
    report_unless(0, op.loc().str() + ": '" + std::string(op.name()) +
                         "' index out of bounds (negative) in an unmasked lane of tensor %" +
                         tensor->name());
    sync_.restore(before);
  }
  land(fine);
  // k = sum of index_d * stride_d (elements); -1 where masked
  for (int d = 0; d < rank; ++d) {
    const ir::Value *idx = op.operand(1 + unsigned(d));
    load_bound(kT4, BindKind::StrideBytes, p, uint16_t(d));
    emit(O::Shri, kT4, kT4, 0, es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3);
    vec_setup(L, 1, 4);
    vcmd(O::VMuls, {d == 0 ? k : s, tile(op, idx)}, {tile_range(op, idx)}, {d == 0 ? kr : sr},
         {kT4});
    if (d > 0)
      vcmd(O::VAdd, {k, k, s}, {kr, sr}, {kr});
  }
  li(kT4, ~uint64_t(0));
  fill(op, s, L, 4, kT4);
  vec_setup(L, 1, 4);
  vcmd(O::VSel, {k, valid, k, s}, {vr, kr, sr}, {kr});
  // the indexed transfer
  const ir::Value *value = gather ? nullptr : op.operand(1 + unsigned(rank));
  uint64_t local = 0;
  if (gather || atomic) {
    local = alloc_tile(op);
    if (atomic)
      copy_tile(op, local, tile(op, value), value->type());
  } else {
    local = tile(op, value);
  }
  const Range lr{local, local + uint64_t(L * es)};
  if (gather) {
    const ir::Attr *other = op.attr("other");
    li(kT0, other ? const_bits(op, other, e) : 0);
    dmar(D::Pad, kT0);
  }
  dmai(D::ESize, es);
  dmai(D::N0, 1);
  dmai(D::N1, L);
  dmai(D::N2, 1);
  dmai(D::HS1, es);
  dmai(D::LS1, es);
  dmai(D::V0, 1);
  li(kT0, uint64_t(1) << 40);
  dmar(D::V1, kT0);
  dmai(D::V2, 1);
  dmai(D::ISz, 4);
  dmai(D::Oob, 1);
  if (atomic)
    dmai(D::ADt, e == ir::ScalarKind::F32 ? 2 : 4);
  load_bound(kT1, BindKind::Address, p, 0);
  li(kT0, local);
  li(kT2, k);
  const int q = next_dma();
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
    if (mask) { // masked lanes return 0, as the interpreter
      fill(op, s, L, unit_dtype(op, e), 0);
      vec_setup(L, 1, unit_dtype(op, e));
      vcmd(O::VSel, {local, valid, local, s}, {vr, lr, sr}, {lr});
    }
  }
}

} // namespace tl::tnpu
