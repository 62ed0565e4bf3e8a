// Tile IR -> TNPU programs (see tnpu.h and README): scalar ops, dot, the op dispatch, and
// lower_kernel(). Memory ops are in lower_memory.cpp, loops in lower_loop.cpp, vector-unit ops in
// lower_vector.cpp (with lower_reduce.cpp, lower_shape.cpp, lower_vector_scalar.cpp for float
// scalars), integer scalars / if / assert in lower_control.cpp, gather / scatter / atomic_add in
// lower_indexed.cpp.
// SPDX-License-Identifier: Apache-2.0
#include "lowering.h"

namespace tl::tnpu {
namespace detail {

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
  if (rounded) { // the inputs rounded first (vector_unit.cpp)
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
  // Registers hold 64-bit values, sign-extended (zero-extended if unsigned): a cast that keeps
  // every value (wider, or as wide and of the same signedness) shares the register; a narrower
  // one, or one changing the sign's meaning, wraps a copy (as the interpreter: i64 2^32 + 5 ->
  // i32 5, i32 -1 -> u32 4294967295; they kept the 64-bit value before session 23).
  const ir::ScalarKind f = from.elem(), t = to.elem();
  const int fb = ir::bit_width(f), tb = ir::bit_width(t);
  const bool keeps = t == ir::ScalarKind::I1 || f == ir::ScalarKind::I1 ? f == t
                     : tb > fb ? ir::is_signed(t) || !ir::is_signed(f)
                               : tb == fb && ir::is_signed(t) == ir::is_signed(f);
  if (keeps) {
    regs_[op.result()] = scalar(op, op.operand(0));
    return;
  }
  const uint8_t d = regs_[op.result()] = new_reg(op);
  emit(isa::Opcode::Mov, d, scalar(op, op.operand(0)));
  wrap_scalar(d, t);
}

/// program_id, num_programs, a tensor's dims and strides: launch values bound to registers
/// (a stride in elements: the bound byte stride shifted right).
void Lowering::lower_launch_value(const ir::Operation &op) {
  if (op.opcode() == Opcode::ProgramId) {
    regs_[op.result()] = pid_regs_[size_t(*op.attr_as<int64_t>("axis"))];
    return;
  }
  if (op.opcode() == Opcode::NumPrograms) {
    regs_[op.result()] = bind(op, BindKind::Grid, 0, uint16_t(*op.attr_as<int64_t>("axis")));
    return;
  }
  const unsigned p = param(op, op.operand(0));
  const auto axis = uint16_t(*op.attr_as<int64_t>("axis"));
  if (op.opcode() == Opcode::TensorDim) {
    regs_[op.result()] = bind(op, BindKind::Shape, p, axis);
    return;
  }
  const int es = elem_bytes(op, op.operand(0)->type().elem());
  const uint8_t src = bind(op, BindKind::StrideBytes, p, axis);
  const uint8_t d = regs_[op.result()] = new_reg(op);
  emit(isa::Opcode::Shri, d, src, 0, es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3);
}

/// A scalar constant (f32 or integer bits) in a fresh register.
void Lowering::lower_scalar_constant(const ir::Operation &op) {
  const ir::Type &t = op.result()->type();
  if (t.elem() != ir::ScalarKind::F32 && !ir::is_integer(t.elem()))
    fail(op, "constants of type " + t.str() + " are not supported");
  const uint64_t bits = const_bits(op, op.attr("value"), t.elem());
  li(regs_[op.result()] = new_reg(op), bits);
}

/// An integer constexpr's value in a fresh register.
void Lowering::lower_constexpr(const ir::Operation &op) {
  const ir::ConstexprParam *c = kernel_.find_constexpr(*op.attr_as<std::string>("name"));
  const auto *i = c ? std::get_if<int64_t>(&c->value) : nullptr;
  if (!i || !ir::is_integer(op.result()->type().elem()))
    fail(op, "only integer constexprs are supported");
  li(regs_[op.result()] = new_reg(op), uint64_t(*i));
}

/// Scalar arithmetic and compares on the command processor; false: not one of those ops.
bool Lowering::lower_scalar(const ir::Operation &op) {
  switch (op.opcode()) {
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Max:
  case Opcode::Min:
  case Opcode::And:
  case Opcode::Or:
  case Opcode::Xor:
    lower_scalar_binary(op);
    return true;
  case Opcode::Div:
  case Opcode::Rem:
  case Opcode::Shl:
  case Opcode::Shr:
  case Opcode::Neg:
  case Opcode::Not:
  case Opcode::Abs:
  case Opcode::Select:
  case Opcode::Clamp:
  case Opcode::Popcount:
  case Opcode::Clz:
    lower_scalar_int(op);
    return true;
  case Opcode::Cmp:
    lower_cmp(op);
    return true;
  default:
    return false;
  }
}

void Lowering::lower(const ir::Operation &op) {
  lower_op(op);
  release_dead(op);
}

void Lowering::lower_op(const ir::Operation &op) {
  if (lower_vector(op)) // tiles on the vector unit, float scalars (lower_vector.cpp)
    return;
  if (lower_scalar(op)) // scalars the command processor computes
    return;
  const bool tile_result = op.num_results() == 1 && op.result()->type().is_tile();
  switch (op.opcode()) {
  case Opcode::ProgramId:
  case Opcode::NumPrograms:
  case Opcode::TensorDim:
  case Opcode::TensorStride:
    lower_launch_value(op);
    return;
  case Opcode::Constant:
  case Opcode::Full:
    if (tile_result)
      lower_fill(op);
    else
      lower_scalar_constant(op);
    return;
  case Opcode::Constexpr:
    lower_constexpr(op);
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
  case Opcode::If:
    lower_if(op);
    return;
  case Opcode::Assert:
    lower_assert(op);
    return;
  case Opcode::Gather:
    if (attr::has(&op, attr::kRowGather)) {
      lower_row_gather(op, *attr::row_gather(op));
      return;
    }
    [[fallthrough]];
  case Opcode::Scatter:
  case Opcode::AtomicAdd:
    lower_indexed(op);
    return;
  case Opcode::Print:
    fail(op, "'print' is not supported: the TNPU has no channel to the host's output");
  case Opcode::Return:
    return;
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

std::string lower_kernel(const ir::Kernel &kernel, const CompileOptions &options, Kernel &out) {
  try {
    out = Lowering(kernel, options).run();
  } catch (const Failure &f) {
    return f.message;
  }
  return {};
}

} // namespace detail
} // namespace tl::tnpu
