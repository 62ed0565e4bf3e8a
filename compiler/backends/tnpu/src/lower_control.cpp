// Integer scalar ops beyond add / sub / mul / bitwise / min / max (division with its run-time
// error, shifts, unary ops, select, clamp, popcount / clz), `if` with results, and `assert` on
// scalars and masks. SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

namespace tl::tnpu::detail {

using O = isa::Opcode;

void Lowering::report_unless(uint8_t c, const std::string &message) {
  out_.asserts.push_back(message);
  emit(O::Bne, c, 0, 0, 3); // holds: skip the report
  li(kAssertReg, out_.asserts.size());
  emit(O::Halt); // ends this program (the wrapper turns it into a jump)
}

void Lowering::wrap_scalar(uint8_t r, ir::ScalarKind e) {
  const int bits = ir::bit_width(e);
  if (bits >= 64 || e == ir::ScalarKind::I1)
    return;
  emit(O::Shli, r, r, 0, 64 - bits);
  if (!ir::is_signed(e)) {
    emit(O::Shri, r, r, 0, 64 - bits);
    return;
  }
  li(kT5, uint64_t(64 - bits));
  emit(O::Sra, r, r, kT5);
}

/// Registers hold integer scalars as 64-bit values, sign-extended (zero-extended if unsigned);
/// results that can leave their type's range wrap (wrap_scalar), as the interpreter's.
void Lowering::lower_scalar_int(const ir::Operation &op) {
  const ir::ScalarKind e = op.result()->type().elem();
  if (!ir::is_integer(e) && e != ir::ScalarKind::I1 && op.opcode() != Opcode::Select)
    fail(op, "scalar '" + std::string(op.name()) + "' on " + op.result()->type().str() +
                 " is not supported");
  const int bits = ir::bit_width(e);
  const bool is_signed = ir::is_signed(e);
  const uint8_t a = scalar(op, op.operand(0));
  const uint8_t d = regs_[op.result()] = new_reg(op);
  switch (op.opcode()) {
  case Opcode::Div:
  case Opcode::Rem: {
    const uint8_t b = scalar(op, op.operand(1));
    report_unless(b,
                  op.loc().str() + ": '" + std::string(op.name()) + "': integer division by zero");
    const bool div = op.opcode() == Opcode::Div;
    emit(is_signed ? (div ? O::Div : O::Rem) : (div ? O::Divu : O::Remu), d, a, b);
    wrap_scalar(d, e); // INT_MIN / -1
    return;
  }
  case Opcode::Shl:
  case Opcode::Shr: {
    emit(O::Andi, kT0, scalar(op, op.operand(1)), 0, bits - 1);
    if (op.opcode() == Opcode::Shl) {
      emit(O::Shl, d, a, kT0);
      wrap_scalar(d, e);
    } else {
      emit(is_signed ? O::Sra : O::Shr, d, a, kT0);
    }
    return;
  }
  case Opcode::Neg:
    emit(O::Sub, d, 0, a);
    wrap_scalar(d, e);
    return;
  case Opcode::Not:
    if (e == ir::ScalarKind::I1) {
      li(kT0, 1);
    } else {
      li(kT0, ~uint64_t(0));
    }
    emit(O::Xor, d, a, kT0);
    return;
  case Opcode::Abs:
    emit(O::Sub, kT0, 0, a);
    emit(O::Max, d, a, kT0);
    wrap_scalar(d, e);
    return;
  case Opcode::Popcount:
  case Opcode::Clz: { // a loop over the bits of a zero-extended to the width (at most w turns)
    emit(O::Mov, kT0, a);
    if (bits < 64) {
      emit(O::Shli, kT0, kT0, 0, 64 - bits);
      emit(O::Shri, kT0, kT0, 0, 64 - bits);
    }
    const bool pop = op.opcode() == Opcode::Popcount;
    li(d, pop ? 0 : uint64_t(bits)); // clz = w - the number of significant bits
    const int body = pop ? 2 : 1;
    emit(O::Beq, kT0, 0, 0, body + 3); // done: past the jmp
    if (pop) {                         // clear the lowest set bit
      emit(O::Addi, kT1, kT0, 0, -1);
      emit(O::And, kT0, kT0, kT1);
    } else {
      emit(O::Shri, kT0, kT0, 0, 1);
    }
    emit(O::Addi, d, d, 0, pop ? 1 : -1);
    emit(O::Jmp, 0, 0, 0, -(body + 2));
    return;
  }
  case Opcode::Clamp: { // min(max(x, lo), hi); u8..u32 are zero-extended, so signed compares
    if (!is_signed && bits > 32)
      fail(op, "scalar clamp on " + op.result()->type().str() + " is not supported");
    const uint8_t lo = scalar(op, op.operand(1)), hi = scalar(op, op.operand(2));
    emit(O::Max, d, a, lo);
    emit(O::Min, d, d, hi);
    return;
  }
  case Opcode::Select: { // d = a ? b : c (any scalar: registers hold the bits)
    const uint8_t b = scalar(op, op.operand(1)), c = scalar(op, op.operand(2)); // before the skip
    emit(O::Mov, d, c);
    emit(O::Beq, a, 0, 0, 2);
    emit(O::Mov, d, b);
    return;
  }
  default:
    fail(op, "scalar '" + std::string(op.name()) + "' is not supported");
  }
}

/// A branch around each region; results live in registers / tile slots that both regions'
/// yields move into. What the queues are known to have waited for is restored after each region
/// (code that may not run), as for a guarded prefetch.
void Lowering::lower_if(const ir::Operation &op) {
  const uint8_t c = scalar(op, op.operand(0));
  for (unsigned i = 0; i < op.num_results(); ++i) {
    if (op.result(i)->type().is_tile())
      alloc_tile(op, op.result(i));
    else
      regs_[op.result(i)] = new_reg(op);
  }
  const auto before = sync_.known();
  auto region = [&](unsigned r) {
    const auto regs = regs_;
    const auto free_regs = free_regs_;
    const uint8_t next_reg = next_reg_;
    for (const auto &inner : op.region(r)->ops()) {
      if (inner->opcode() != Opcode::Yield) {
        lower(*inner);
        continue;
      }
      for (unsigned i = 0; i < inner->num_operands(); ++i)
        move_to(*inner, inner->operand(i), op.result(i));
    }
    regs_ = regs, free_regs_ = free_regs, next_reg_ = next_reg;
    sync_.restore(before);
  };
  const size_t to_else = branch(O::Beq, c, 0);
  region(0);
  if (op.num_regions() > 1 && !op.region(1)->ops().empty()) {
    const size_t to_end = branch(O::Jmp);
    land(to_else);
    region(1);
    land(to_end);
  } else {
    land(to_else);
  }
}

/// A scalar condition, or every lane of a mask (v.rmin over its bytes, read back).
void Lowering::lower_assert(const ir::Operation &op) {
  const ir::Value *v = op.operand(0);
  uint8_t c = 0;
  if (v->type().is_tile()) {
    const uint64_t at = readback_slot(op);
    vec_setup(v->type().num_elements(), 1, 3);
    vcmd(O::VRmin, {at, tile(op, v)}, {tile_range(op, v)}, {{at, at + 8}});
    cp_wait_vec();
    read_scalar(kT4, at, ir::ScalarKind::I1);
    c = kT4;
  } else {
    c = scalar(op, v);
  }
  report_unless(c, *op.attr_as<std::string>("message"));
}

} // namespace tl::tnpu::detail
