// Vector unit: dispatch, timing and the elementwise commands (see vector.h).
// SPDX-License-Identifier: Apache-2.0
#include "vector.h"

#include <vector>

namespace tl::npu::model {

using isa::Opcode;
using num::DType;

VectorUnit::VectorUnit(sc_core::sc_module_name name, CoreState &core, int track)
    : Unit(name, core, "vec", track) {}

VecKind vec_kind(Opcode op) {
  switch (op) {
  case Opcode::VAdds:
  case Opcode::VMuls:
  case Opcode::VMaxs:
    return VecKind::Scalar;
  case Opcode::VExp:
  case Opcode::VNeg:
  case Opcode::VAbs:
  case Opcode::VNot:
  case Opcode::VSqrt:
  case Opcode::VRsqrt:
  case Opcode::VExp2:
  case Opcode::VLog:
  case Opcode::VLog2:
  case Opcode::VTanh:
  case Opcode::VErf:
  case Opcode::VSigmoid:
  case Opcode::VSin:
  case Opcode::VCos:
  case Opcode::VTan:
  case Opcode::VAsin:
  case Opcode::VAcos:
  case Opcode::VAtan:
  case Opcode::VSinh:
  case Opcode::VCosh:
  case Opcode::VLog1p:
  case Opcode::VExpm1:
  case Opcode::VErfinv:
  case Opcode::VNdtr:
  case Opcode::VRint:
  case Opcode::VFloor:
  case Opcode::VCeil:
  case Opcode::VTrunc:
  case Opcode::VPopcnt:
  case Opcode::VClz:
    return VecKind::Unary;
  case Opcode::VIsnan:
  case Opcode::VIsinf:
  case Opcode::VIsfinite:
    return VecKind::Classify;
  case Opcode::VCeq:
  case Opcode::VCne:
  case Opcode::VClt:
  case Opcode::VCle:
  case Opcode::VCgt:
  case Opcode::VCge:
    return VecKind::Compare;
  case Opcode::VFma:
    return VecKind::Fma;
  case Opcode::VSel:
    return VecKind::Select;
  case Opcode::VIota:
    return VecKind::Iota;
  case Opcode::VFill:
    return VecKind::Fill;
  case Opcode::VCvt:
  case Opcode::VIcvt:
    return VecKind::Convert;
  case Opcode::VCopy:
  case Opcode::VScopy:
    return VecKind::Copy;
  case Opcode::VRsum:
  case Opcode::VRmax:
  case Opcode::VRmin:
  case Opcode::VRargmax:
    return VecKind::RowReduce;
  case Opcode::VCsum:
  case Opcode::VCmax:
  case Opcode::VCmin:
  case Opcode::VCargmax:
    return VecKind::ColumnReduce;
  case Opcode::VCumsum:
  case Opcode::VCummax:
  case Opcode::VCummin:
    return VecKind::Scan;
  default:
    return VecKind::Binary;
  }
}

namespace {

num::BinOp bin_op(Opcode op) {
  switch (op) {
  case Opcode::VAdd:
  case Opcode::VAdds:
    return num::BinOp::Add;
  case Opcode::VSub:
    return num::BinOp::Sub;
  case Opcode::VMul:
  case Opcode::VMuls:
    return num::BinOp::Mul;
  case Opcode::VMax:
  case Opcode::VMaxs:
    return num::BinOp::Max;
  case Opcode::VMin:
    return num::BinOp::Min;
  case Opcode::VDiv:
    return num::BinOp::Div;
  case Opcode::VRem:
    return num::BinOp::Rem;
  case Opcode::VAnd:
    return num::BinOp::And;
  case Opcode::VOr:
    return num::BinOp::Or;
  case Opcode::VXor:
    return num::BinOp::Xor;
  case Opcode::VShl:
    return num::BinOp::Shl;
  case Opcode::VShr:
    return num::BinOp::Shr;
  case Opcode::VMaxnum:
    return num::BinOp::MaxNum;
  case Opcode::VMinnum:
    return num::BinOp::MinNum;
  case Opcode::VAtan2:
    return num::BinOp::Atan2;
  case Opcode::VFmod:
    return num::BinOp::Fmod;
  case Opcode::VCopysign:
    return num::BinOp::Copysign;
  default:
    return num::BinOp::Pow;
  }
}

num::UnOp un_op(Opcode op) {
  switch (op) {
  case Opcode::VExp:
    return num::UnOp::Exp;
  case Opcode::VNeg:
    return num::UnOp::Neg;
  case Opcode::VAbs:
    return num::UnOp::Abs;
  case Opcode::VNot:
    return num::UnOp::Not;
  case Opcode::VSqrt:
    return num::UnOp::Sqrt;
  case Opcode::VRsqrt:
    return num::UnOp::Rsqrt;
  case Opcode::VExp2:
    return num::UnOp::Exp2;
  case Opcode::VLog:
    return num::UnOp::Log;
  case Opcode::VLog2:
    return num::UnOp::Log2;
  case Opcode::VTanh:
    return num::UnOp::Tanh;
  case Opcode::VErf:
    return num::UnOp::Erf;
  case Opcode::VSigmoid:
    return num::UnOp::Sigmoid;
  case Opcode::VSin:
    return num::UnOp::Sin;
  case Opcode::VTan:
    return num::UnOp::Tan;
  case Opcode::VAsin:
    return num::UnOp::Asin;
  case Opcode::VAcos:
    return num::UnOp::Acos;
  case Opcode::VAtan:
    return num::UnOp::Atan;
  case Opcode::VSinh:
    return num::UnOp::Sinh;
  case Opcode::VCosh:
    return num::UnOp::Cosh;
  case Opcode::VLog1p:
    return num::UnOp::Log1p;
  case Opcode::VExpm1:
    return num::UnOp::Expm1;
  case Opcode::VErfinv:
    return num::UnOp::Erfinv;
  case Opcode::VNdtr:
    return num::UnOp::Ndtr;
  case Opcode::VRint:
    return num::UnOp::Rint;
  case Opcode::VFloor:
    return num::UnOp::Floor;
  case Opcode::VCeil:
    return num::UnOp::Ceil;
  case Opcode::VTrunc:
    return num::UnOp::Trunc;
  case Opcode::VPopcnt:
    return num::UnOp::Popcount;
  case Opcode::VClz:
    return num::UnOp::Clz;
  default:
    return num::UnOp::Cos;
  }
}

num::CmpOp cmp_op(Opcode op) {
  switch (op) {
  case Opcode::VCeq:
    return num::CmpOp::Eq;
  case Opcode::VCne:
    return num::CmpOp::Ne;
  case Opcode::VClt:
    return num::CmpOp::Lt;
  case Opcode::VCle:
    return num::CmpOp::Le;
  case Opcode::VCgt:
    return num::CmpOp::Gt;
  default:
    return num::CmpOp::Ge;
  }
}

num::ClassOp class_op(Opcode op) {
  return op == Opcode::VIsnan   ? num::ClassOp::IsNan
         : op == Opcode::VIsinf ? num::ClassOp::IsInf
                                : num::ClassOp::IsFinite;
}

/// Passes per element group (the config's figures for expensive operations).
uint64_t passes(Opcode op, const VectorConfig &vc) {
  switch (op) {
  case Opcode::VExp:
    return vc.exp_passes;
  case Opcode::VDiv:
  case Opcode::VRem:
  case Opcode::VSqrt:
  case Opcode::VRsqrt:
  case Opcode::VFmod: // a long division of the significands, like v.div
    return vc.div_passes;
  case Opcode::VPow:
  case Opcode::VExp2:
  case Opcode::VLog:
  case Opcode::VLog2:
  case Opcode::VTanh:
  case Opcode::VErf:
  case Opcode::VSigmoid:
  case Opcode::VSin:
  case Opcode::VCos:
  case Opcode::VTan:
  case Opcode::VAsin:
  case Opcode::VAcos:
  case Opcode::VAtan:
  case Opcode::VAtan2:
  case Opcode::VSinh:
  case Opcode::VCosh:
  case Opcode::VLog1p:
  case Opcode::VExpm1:
  case Opcode::VErfinv:
  case Opcode::VNdtr:
    return vc.transcendental_passes;
  default:
    return 1;
  }
}

uint32_t width_mask(DType t) {
  const int bytes = num::dtype_size(t);
  return bytes == 4 ? ~0u : (1u << (8 * bytes)) - 1;
}

} // namespace

DType checked_dtype(uint64_t v, const char *field) {
  if (v > static_cast<uint64_t>(DType::I32))
    throw ProgramError(std::string("vector ") + field + " dtype " + std::to_string(v) +
                       " is not a dtype");
  return static_cast<DType>(v);
}

uint32_t VectorUnit::load(uint64_t base, uint64_t i, DType t, const Command &c) const {
  const uint64_t es = static_cast<uint64_t>(num::dtype_size(t));
  return num::load_bits(t, core_.mem.span(base + i * es, es, isa::op_info(c.op).mnemonic), 0);
}

void VectorUnit::store(uint64_t base, uint64_t i, DType t, uint32_t bits, const Command &c) {
  const uint64_t es = static_cast<uint64_t>(num::dtype_size(t));
  num::store_bits(t, core_.mem.span(base + i * es, es, isa::op_info(c.op).mnemonic), 0, bits);
}

namespace {

/// The element dtype of an elementwise command (`dst` for v.fill, else `t`), checked against
/// what the operation is defined on.
DType elementwise_dtype(const Command &c, VecKind kind) {
  const DType t =
      kind == VecKind::Fill ? checked_dtype(c.vec.dst, "dst") : checked_dtype(c.vec.t, "t");
  if (c.vec.u > 1)
    throw ProgramError("vector u must be 0 (signed) or 1 (unsigned), got " +
                       std::to_string(c.vec.u));
  if (((kind == VecKind::Binary || kind == VecKind::Scalar) && !num::defined_on(bin_op(c.op), t)) ||
      (kind == VecKind::Unary && !num::defined_on(un_op(c.op), t)) ||
      (kind == VecKind::Classify && !num::is_float(t)) ||
      (kind == VecKind::Iota && t != DType::F32 && num::is_float(t)))
    throw ProgramError(std::string(isa::op_info(c.op).mnemonic) + " is not defined on " +
                       num::dtype_name(t));
  return t;
}

/// One result element from the operands x (a), y (b), z (c) of element i.
uint32_t element(const Command &c, VecKind kind, DType t, uint64_t i, uint32_t x, uint32_t y,
                 uint32_t z) {
  const bool u = c.vec.u != 0;
  switch (kind) {
  case VecKind::Binary:
    return num::binary(bin_op(c.op), t, x, y, u);
  case VecKind::Scalar:
    return num::binary(bin_op(c.op), t, x, static_cast<uint32_t>(c.c) & width_mask(t), u);
  case VecKind::Unary:
    return num::unary(un_op(c.op), t, x, u);
  case VecKind::Compare:
    return num::compare(cmp_op(c.op), t, x, y, u) ? 1 : 0;
  case VecKind::Classify:
    return num::classify(class_op(c.op), t, x) ? 1 : 0;
  case VecKind::Fma:
    return num::fma(t, x, y, z);
  case VecKind::Select:
    return x != 0 ? y : z;
  case VecKind::Iota: {
    const uint32_t start = static_cast<uint32_t>(c.b), step = static_cast<uint32_t>(c.c);
    if (num::is_float(t))
      return num::fma(DType::F32, num::convert(DType::I32, DType::F32, static_cast<uint32_t>(i)),
                      step, start);
    return (start + static_cast<uint32_t>(i) * step) & width_mask(t);
  }
  default: // v.fill
    return static_cast<uint32_t>(c.b);
  }
}

} // namespace

void VectorUnit::elementwise(const Command &c) {
  const VecCfg &v = c.vec;
  const VecKind kind = vec_kind(c.op);
  const char *name = isa::op_info(c.op).mnemonic;
  const DType t = elementwise_dtype(c, kind);
  const uint64_t es = static_cast<uint64_t>(num::dtype_size(t));
  const DType out_t =
      kind == VecKind::Compare || kind == VecKind::Classify ? DType::I8 : t; // masks are bytes
  const DType a_t = kind == VecKind::Select ? DType::I8 : t;
  const bool reads_a = kind != VecKind::Fill && kind != VecKind::Iota;
  const bool reads_b = kind == VecKind::Binary || kind == VecKind::Compare ||
                       kind == VecKind::Fma || kind == VecKind::Select;
  const bool reads_c = kind == VecKind::Fma || kind == VecKind::Select;
  const bool int_div = !num::is_float(t) && (c.op == Opcode::VDiv || c.op == Opcode::VRem);
  std::vector<uint32_t> out(v.n);
  for (uint64_t r = 0; r < v.rows; ++r) {
    const uint8_t *a =
        reads_a ? core_.mem.span(c.b + r * v.sa, v.n * num::dtype_size(a_t), name) : nullptr;
    const uint8_t *b = reads_b ? core_.mem.span(c.c + r * v.sb, v.n * es, name) : nullptr;
    const uint8_t *cc = reads_c ? core_.mem.span(c.d + r * v.sc, v.n * es, name) : nullptr;
    for (uint64_t i = 0; i < v.n; ++i) {
      const uint32_t x = a != nullptr ? num::load_bits(a_t, a, i) : 0;
      const uint32_t y = b != nullptr ? num::load_bits(t, b, i) : 0;
      const uint32_t z = cc != nullptr ? num::load_bits(t, cc, i) : 0;
      if (int_div && (y & width_mask(t)) == 0)
        throw ProgramError(std::string(name) + ": integer division by zero (row " +
                           std::to_string(r) + ", element " + std::to_string(i) + ")");
      out[i] = element(c, kind, t, i, x, y, z);
    }
    uint8_t *d = core_.mem.span(c.a + r * v.sd, v.n * num::dtype_size(out_t),
                                name); // after the reads: in place is fine
    for (uint64_t i = 0; i < v.n; ++i)
      num::store_bits(out_t, d, i, out[i]);
  }
}

void VectorUnit::convert(const Command &c) {
  const VecCfg &v = c.vec;
  const DType src = checked_dtype(v.src, "src"), dst = checked_dtype(v.dst, "dst");
  if (v.rm > 3)
    throw ProgramError("vector rm must be 0..3 (rne rtz rdn rup), got " + std::to_string(v.rm));
  if (c.op == Opcode::VIcvt && (num::is_float(src) || num::is_float(dst)))
    throw ProgramError(std::string("v.icvt converts integers, not ") +
                       num::dtype_name(num::is_float(src) ? src : dst));
  const char *name = isa::op_info(c.op).mnemonic;
  const uint64_t ss = num::dtype_size(src), ds = num::dtype_size(dst);
  std::vector<uint32_t> out(v.n);
  for (uint64_t r = 0; r < v.rows; ++r) {
    const uint8_t *a = core_.mem.span(c.b + r * v.sa, v.n * ss, name);
    for (uint64_t i = 0; i < v.n; ++i) {
      const uint32_t x = num::load_bits(src, a, i);
      out[i] = c.op == Opcode::VIcvt
                   ? num::int_resize(src, dst, x, v.u != 0)
                   : num::convert(src, dst, x, static_cast<num::Round>(v.rm), v.u != 0);
    }
    uint8_t *d = core_.mem.span(c.a + r * v.sd, v.n * ds, name);
    for (uint64_t i = 0; i < v.n; ++i)
      num::store_bits(dst, d, i, out[i]);
  }
}

uint64_t VectorUnit::execute(const Command &c) {
  const auto &vc = chip_.cfg.core.vector;
  const VecKind kind = vec_kind(c.op);
  // Vector commands compute in both modes: they are cheap next to the matrix unit's m·k·n, and
  // they compute the index tiles and addresses that timing depends on. With arithmetic off, an
  // output that depends on a stale input is stale too (LocalMemory::end_command).
  core_.mem.begin_command();
  switch (kind) {
  case VecKind::Convert:
    convert(c);
    break;
  case VecKind::Copy:
    strided_copy(c);
    break;
  case VecKind::RowReduce:
    row_reduce(c);
    break;
  case VecKind::ColumnReduce:
    column_reduce(c);
    break;
  case VecKind::Scan:
    scan(c);
    break;
  default:
    elementwise(c);
  }
  core_.mem.end_command();
  const uint64_t groups = (c.vec.n + vc.lanes - 1) / vc.lanes;
  int tree = 0;
  while ((1 << tree) < vc.lanes)
    ++tree;
  uint64_t per_row = groups * passes(c.op, vc);
  if (kind == VecKind::RowReduce)
    per_row += static_cast<uint64_t>(tree);
  if (kind == VecKind::Scan)
    per_row = groups * (1 + static_cast<uint64_t>(tree));
  return chip_.cycles_ps(static_cast<double>(vc.pipeline_depth + c.vec.rows * per_row));
}

double VectorUnit::flops(const Command &c) const {
  switch (vec_kind(c.op)) {
  case VecKind::Copy:
  case VecKind::Fill:
  case VecKind::Convert:
  case VecKind::Select:
  case VecKind::Iota:
    return 0;
  case VecKind::Fma:
    return static_cast<double>(2 * c.vec.n * c.vec.rows);
  default:
    return static_cast<double>(c.vec.n * c.vec.rows);
  }
}

} // namespace tl::npu::model
