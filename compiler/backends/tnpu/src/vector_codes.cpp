// The vector unit's codes for Tile IR ops: elementwise opcodes, compare predicates, rounding.
// SPDX-License-Identifier: Apache-2.0
#include "vector_codes.h"

namespace tl::tnpu::detail {
namespace {

using V = isa::Opcode;

} // namespace

isa::Opcode vector_opcode(Opcode op) {
  switch (op) {
  case Opcode::Add:
    return V::VAdd;
  case Opcode::Sub:
    return V::VSub;
  case Opcode::Mul:
    return V::VMul;
  case Opcode::Div:
    return V::VDiv;
  case Opcode::Rem:
    return V::VRem;
  case Opcode::And:
    return V::VAnd;
  case Opcode::Or:
    return V::VOr;
  case Opcode::Xor:
    return V::VXor;
  case Opcode::Shl:
    return V::VShl;
  case Opcode::Shr:
    return V::VShr;
  case Opcode::Min:
    return V::VMin;
  case Opcode::Max:
    return V::VMax;
  case Opcode::Pow:
    return V::VPow;
  case Opcode::Neg:
    return V::VNeg;
  case Opcode::Not:
    return V::VNot;
  case Opcode::Abs:
    return V::VAbs;
  case Opcode::Exp:
    return V::VExp;
  case Opcode::Exp2:
    return V::VExp2;
  case Opcode::Log:
    return V::VLog;
  case Opcode::Log2:
    return V::VLog2;
  case Opcode::Sqrt:
    return V::VSqrt;
  case Opcode::Rsqrt:
    return V::VRsqrt;
  case Opcode::Tanh:
    return V::VTanh;
  case Opcode::Erf:
    return V::VErf;
  case Opcode::Sigmoid:
    return V::VSigmoid;
  case Opcode::Sin:
    return V::VSin;
  case Opcode::Cos:
    return V::VCos;
  case Opcode::Tan:
    return V::VTan;
  case Opcode::Asin:
    return V::VAsin;
  case Opcode::Acos:
    return V::VAcos;
  case Opcode::Atan:
    return V::VAtan;
  case Opcode::Sinh:
    return V::VSinh;
  case Opcode::Cosh:
    return V::VCosh;
  case Opcode::Log1p:
    return V::VLog1p;
  case Opcode::Expm1:
    return V::VExpm1;
  case Opcode::Erfinv:
    return V::VErfinv;
  case Opcode::Ndtr:
    return V::VNdtr;
  case Opcode::Rint:
    return V::VRint;
  case Opcode::Floor:
    return V::VFloor;
  case Opcode::Ceil:
    return V::VCeil;
  case Opcode::Trunc:
    return V::VTrunc;
  case Opcode::IsNan:
    return V::VIsnan;
  case Opcode::IsInf:
    return V::VIsinf;
  case Opcode::IsFinite:
    return V::VIsfinite;
  case Opcode::Popcount:
    return V::VPopcnt;
  case Opcode::Clz:
    return V::VClz;
  case Opcode::MaxNum:
    return V::VMaxnum;
  case Opcode::MinNum:
    return V::VMinnum;
  case Opcode::Atan2:
    return V::VAtan2;
  case Opcode::Fmod:
    return V::VFmod;
  case Opcode::Copysign:
    return V::VCopysign;
  case Opcode::Clamp: // v.max, then v.min (is_clamp: the callers emit both)
    return V::VMax;
  case Opcode::Fma:
    return V::VFma;
  case Opcode::Select:
    return V::VSel;
  default:
    return V::Nop;
  }
}

isa::Opcode compare_opcode(const std::string &pred) {
  if (pred == "eq")
    return V::VCeq;
  if (pred == "ne")
    return V::VCne;
  if (pred == "lt")
    return V::VClt;
  if (pred == "le")
    return V::VCle;
  if (pred == "gt")
    return V::VCgt;
  return V::VCge;
}

int rounding_code(const ir::Operation &op) {
  const std::string_view r = ir::cast_rounding(op); // rtz for float -> int unless it says
  return r == "rne" ? 0 : r == "rtz" ? 1 : r == "rd" ? 2 : 3;
}

} // namespace tl::tnpu::detail
