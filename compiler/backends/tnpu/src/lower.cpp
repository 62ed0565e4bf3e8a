// Tile IR -> TNPU programs (see tnpu.h and README): scalar ops, dot, reduce, cast, the op
// dispatch, and compile(). Memory ops are in lower_memory.cpp, loops in lower_loop.cpp.
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

/// C = A (M x K) * B (K x N) [+ acc] on the matrix unit, C in its planned slot (the accumulator
/// when it fits, else the scratchpad; the acc operand's own slot when it dies here, else acc is
/// copied in first). B is split into k x n blocks of at most R x C, each latched with mx.pre
/// while all M rows of A stream through.
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
  const Range a = tile_range(op, op.operand(0)), b = tile_range(op, op.operand(1));
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
  command(sync_.vec(), kind == "sum" ? isa::Opcode::VRsum : isa::Opcode::VRmax, kT0, kT1,
          {tile_range(op, op.operand(0))}, {tile_range(op, op.result())});
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
  command(sync_.vec(), isa::Opcode::VCvt, kT0, kT1, {tile_range(op, op.operand(0))},
          {tile_range(op, op.result())});
}

void Lowering::lower(const ir::Operation &op) {
  const bool tile_result = op.num_results() == 1 && op.result()->type().is_tile();
  switch (op.opcode()) {
  case Opcode::ProgramId:
    regs_[op.result()] = pid_regs_[size_t(*op.attr_as<int64_t>("axis"))];
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
    emit(isa::Opcode::Shri, d, src, 0, es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : 3);
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
      const bool unary = op.num_operands() == 1;
      const uint64_t a = tile(op, op.operand(0));
      const uint64_t b = unary ? 0 : tile(op, op.operand(1));
      std::vector<Range> reads = {tile_range(op, op.operand(0))};
      if (!unary)
        reads.push_back(tile_range(op, op.operand(1)));
      const uint64_t d = alloc_tile(op);
      vec_shape(op.result()->type().num_elements());
      li(kT0, d), li(kT1, a), li(kT2, b);
      sync_.issue(sync_.vec(), reads, {tile_range(op, op.result())});
      if (unary)
        emit(isa::Opcode::VExp, kT0, kT1);
      else
        emit(kOps.at(op.opcode()), kT0, kT1, kT2);
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

} // namespace detail

std::string compile(const ir::Module &module, const CompileOptions &options,
                    std::vector<uint8_t> &code) {
  std::vector<Kernel> kernels;
  try {
    for (const auto &k : module.kernels()) {
      try {
        kernels.push_back(detail::Lowering(*k, options).run());
      } catch (const detail::Failure &) {
        if (!options.persistent) // a persistent kernel needs registers a plain one does not
          throw;
        CompileOptions plain = options;
        plain.persistent = false;
        kernels.push_back(detail::Lowering(*k, plain).run());
      }
    }
  } catch (const detail::Failure &f) {
    return f.message;
  }
  code = serialize_code(kernels);
  return {};
}

} // namespace tl::tnpu
