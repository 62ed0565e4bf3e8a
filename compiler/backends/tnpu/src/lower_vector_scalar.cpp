// Scalars on the vector unit: float scalar ops as 1-element vector commands on scratchpad
// slots, read back by the command processor only when it needs them.
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

#include "vector_codes.h"

namespace tl::tnpu::detail {
namespace {

using V = isa::Opcode;
using F = isa::VecField;

} // namespace

void Lowering::read_scalar(uint8_t rd, uint64_t at, ir::ScalarKind e) {
  const int bytes = e == ir::ScalarKind::I1 ? 1 : ir::bit_width(e) / 8;
  if (bytes == 1)
    emit(V::Ldb, rd, 0, 0, int64_t(at));
  else if (bytes == 8)
    emit(V::Ld, rd, 0, 0, int64_t(at));
  else
    emit(V::Ldw, rd, 0, 0, int64_t(at));
  if (bytes == 2)
    emit(V::Andi, rd, rd, 0, 0xffff);
  else if (unsigned_int(e))
    wrap_scalar(rd, e); // zero-extended
}

uint64_t Lowering::readback_slot(const ir::Operation &op) {
  temp(op, 0, 0); // the slots fit below the temporaries
  return scalar_slot(3);
}

uint64_t Lowering::vector_scalar_slot(const ir::Operation &op) {
  if (next_vslot_ >= kScalarSlots)
    fail(op, "the kernel computes more than " + std::to_string(kScalarSlots - 4) +
                 " scalars on the vector unit");
  temp(op, 0, 0);
  return scalar_slot(next_vslot_++);
}

uint64_t Lowering::vector_operand(const ir::Operation &op, const ir::Value *v) {
  if (auto it = vscalars_.find(v); it != vscalars_.end())
    return it->second;
  const uint64_t at = vector_scalar_slot(op);
  fill(op, at, 1, unit_dtype(op, v->type().elem()), scalar(op, v)); // the register at issue
  return at;
}

uint8_t Lowering::materialize(const ir::Operation &op, const ir::Value *v, uint64_t at) {
  cp_wait_vec();
  const uint8_t r = regs_[v] = new_reg(op);
  read_scalar(r, at, v->type().elem());
  return r;
}

void Lowering::broadcast_scalar(const ir::Operation &op, uint64_t at) {
  const ir::Type &t = op.result()->type();
  const int es = elem_bytes(op, t.elem());
  const uint64_t d = alloc_tile(op);
  veci(F::N, t.num_elements());
  veci(F::Rows, 1);
  veci(F::Src, raw_code(es));
  veci(F::Ea, 0);
  veci(F::Ed, es);
  vcmd(V::VScopy, {d, at}, {{at, at + 8}}, {tile_range(op, op.result())});
}

/// A float scalar op (or a cast / compare involving one) as a 1-element vector command on scalar
/// slots: operands the vector unit computed are in theirs, register operands are filled into
/// one (v.fill takes the register's value at issue, so no wait); the result stays in its slot
/// until the command processor needs it (vscalars_).
void Lowering::lower_scalar_on_vec(const ir::Operation &op) {
  const ir::ScalarKind re = op.result()->type().elem(), oe = op.operand(0)->type().elem();
  for (const ir::Value *v : op.operands())
    if (v->type().elem() != ir::ScalarKind::F32 &&
        !(op.opcode() == Opcode::Cast && ir::is_integer(v->type().elem()) &&
          ir::bit_width(v->type().elem()) <= 32))
      fail(op, "scalar '" + std::string(op.name()) + "' on " + v->type().str() +
                   " is not supported (f32 scalars, integers of at most 32 bits)");
  if (ir::is_float(re) ? re != ir::ScalarKind::F32
                       : re != ir::ScalarKind::I1 && ir::bit_width(re) > 32)
    fail(op, "scalar '" + std::string(op.name()) + "' into " + op.result()->type().str() +
                 " is not supported");
  uint64_t a[3] = {0, 0, 0};
  std::vector<Range> reads;
  for (unsigned i = 0; i < op.num_operands(); ++i) {
    a[i] = vector_operand(op, op.operand(i));
    reads.push_back({a[i], a[i] + 8});
  }
  const uint64_t d = vector_scalar_slot(op);
  const Range w{d, d + 8};
  if (op.opcode() == Opcode::Cast) {
    convert(op, d, a[0], oe, re, 1, rounding_code(op));
  } else if (op.opcode() == Opcode::Cmp) {
    vec_setup(1, 1, 2);
    vcmd(compare_opcode(*op.attr_as<std::string>("pred")), {d, a[0], a[1]}, reads, {w});
  } else {
    vec_setup(1, 1, 2);
    const isa::Opcode vop = vector_opcode(op.opcode());
    if (op.opcode() == Opcode::Clamp) { // min(max(x, lo), hi)
      vcmd(V::VMax, {d, a[0], a[1]}, {reads[0], reads[1]}, {w});
      vcmd(V::VMin, {d, d, a[2]}, {w, reads[2]}, {w});
    } else if (op.num_operands() == 1)
      vcmd(vop, {d, a[0]}, reads, {w});
    else if (op.num_operands() == 2)
      vcmd(vop, {d, a[0], a[1]}, reads, {w});
    else
      vcmd(vop, {d, a[0], a[1], a[2]}, reads, {w});
  }
  vscalars_[op.result()] = d;
}

} // namespace tl::tnpu::detail
