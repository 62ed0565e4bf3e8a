// Vector unit (see vector.h).
// SPDX-License-Identifier: Apache-2.0
#include "vector.h"

#include "tl/npu/numerics.h"

#include <vector>

namespace tl::npu::model {

using isa::Opcode;
using num::DType;

VectorUnit::VectorUnit(sc_core::sc_module_name name, CoreState &core, int track)
    : Unit(name, core, "vec", track) {}

namespace {

DType checked_dtype(uint64_t v, const char *field) {
  if (v > static_cast<uint64_t>(DType::I32))
    throw ProgramError(std::string("vector ") + field + " dtype " + std::to_string(v) +
                       " is not a dtype");
  return static_cast<DType>(v);
}

uint32_t convert(DType from, DType to, uint32_t bits) {
  uint32_t f;
  switch (from) { // to f32 first: exact for every source but i32, which rounds
  case DType::BF16:
    f = num::bf16_to_f32(static_cast<uint16_t>(bits));
    break;
  case DType::F16:
    f = num::f16_to_f32(static_cast<uint16_t>(bits));
    break;
  case DType::I8:
    f = num::i32_to_f32(static_cast<int8_t>(bits));
    break;
  case DType::I32:
    if (to == DType::I32 || to == DType::I8) // integer to integer: saturate, no float step
      return to == DType::I32 ? bits
                              : static_cast<uint8_t>(std::max(-128, std::min(127, static_cast<int32_t>(bits))));
    f = num::i32_to_f32(static_cast<int32_t>(bits));
    break;
  default:
    f = bits;
  }
  switch (to) {
  case DType::BF16:
    return num::f32_to_bf16(f);
  case DType::F16:
    return num::f32_to_f16(f);
  case DType::I8:
    return static_cast<uint8_t>(num::f32_to_i8(f));
  case DType::I32:
    return static_cast<uint32_t>(num::f32_to_i32(f));
  default:
    return f;
  }
}

uint32_t binary(Opcode op, uint32_t a, uint32_t b) {
  switch (op) {
  case Opcode::VAdd:
  case Opcode::VAdds:
    return num::f32_add(a, b);
  case Opcode::VSub:
    return num::f32_sub(a, b);
  case Opcode::VMul:
  case Opcode::VMuls:
    return num::f32_mul(a, b);
  case Opcode::VMax:
  case Opcode::VMaxs:
    return num::f32_max(a, b);
  default:
    return num::f32_min(a, b);
  }
}

} // namespace

void VectorUnit::compute(const Command &c) {
  const VecCfg &v = c.vec;
  const Opcode op = c.op;
  DType src = DType::F32, dst = DType::F32;
  if (op == Opcode::VCvt || op == Opcode::VCopy)
    src = checked_dtype(v.src, "src");
  if (op == Opcode::VCvt || op == Opcode::VFill)
    dst = checked_dtype(v.dst, "dst");
  if (op == Opcode::VCopy)
    dst = src;
  const uint64_t ss = num::dtype_size(src), ds = num::dtype_size(dst);
  const bool two = op == Opcode::VAdd || op == Opcode::VSub || op == Opcode::VMul ||
                   op == Opcode::VMax || op == Opcode::VMin;
  const bool scalar = op == Opcode::VAdds || op == Opcode::VMuls || op == Opcode::VMaxs;
  const char *name = isa::op_info(op).mnemonic;
  std::vector<uint32_t> out(v.n);
  for (uint64_t r = 0; r < v.rows; ++r) {
    const uint8_t *a = op == Opcode::VFill ? nullptr : core_.mem.span(c.b + r * v.sa, v.n * ss, name);
    const uint8_t *b = two ? core_.mem.span(c.c + r * v.sb, v.n * 4, name) : nullptr;
    for (uint64_t i = 0; i < v.n; ++i) {
      const uint32_t x = a != nullptr ? num::load_bits(src, a, i) : 0;
      if (two)
        out[i] = binary(op, x, num::load_bits(DType::F32, b, i));
      else if (scalar)
        out[i] = binary(op, x, static_cast<uint32_t>(c.c));
      else if (op == Opcode::VExp)
        out[i] = num::f32_exp(x);
      else if (op == Opcode::VCvt)
        out[i] = convert(src, dst, x);
      else if (op == Opcode::VFill)
        out[i] = static_cast<uint32_t>(c.b);
      else // v.copy
        out[i] = x;
    }
    uint8_t *d = core_.mem.span(c.a + r * v.sd, v.n * ds, name); // after the reads: in place is fine
    for (uint64_t i = 0; i < v.n; ++i)
      num::store_bits(dst, d, i, out[i]);
  }
}

void VectorUnit::reduce(const Command &c) {
  const VecCfg &v = c.vec;
  const uint64_t w = static_cast<uint64_t>(chip_.cfg.core.vector.lanes);
  const bool sum = c.op == Opcode::VRsum;
  std::vector<uint32_t> lane(w);
  for (uint64_t r = 0; r < v.rows; ++r) {
    const uint8_t *a = core_.mem.span(c.b + r * v.sa, v.n * 4, isa::op_info(c.op).mnemonic);
    // Lane l folds elements l, l + W, ... in order, from the first one it gets.
    uint64_t used = std::min(w, v.n);
    for (uint64_t l = 0; l < used; ++l) {
      uint32_t acc = num::load_bits(DType::F32, a, l);
      for (uint64_t i = l + w; i < v.n; i += w)
        acc = sum ? num::f32_add(acc, num::load_bits(DType::F32, a, i))
                  : num::f32_max(acc, num::load_bits(DType::F32, a, i));
      lane[l] = acc;
    }
    // Pairwise tree over the used lanes: (0,1), (2,3), ... then (0,2), ...
    for (uint64_t step = 1; step < used; step *= 2)
      for (uint64_t l = 0; l + step < used; l += 2 * step)
        lane[l] = sum ? num::f32_add(lane[l], lane[l + step]) : num::f32_max(lane[l], lane[l + step]);
    const uint32_t result = used == 0 ? (sum ? 0u : 0xff800000u) : lane[0];
    num::store_bits(DType::F32, core_.mem.span(c.a + r * v.sd, 4, isa::op_info(c.op).mnemonic), 0,
                    result);
  }
}

uint64_t VectorUnit::execute(const Command &c) {
  const auto &vc = chip_.cfg.core.vector;
  const bool red = c.op == Opcode::VRsum || c.op == Opcode::VRmax;
  if (chip_.opts.compute_data)
    red ? reduce(c) : compute(c);
  const uint64_t groups = (c.vec.n + vc.lanes - 1) / vc.lanes;
  const uint64_t passes = c.op == Opcode::VExp ? vc.exp_passes : 1;
  int tree = 0;
  while ((1 << tree) < vc.lanes)
    ++tree;
  const uint64_t per_row = groups * passes + (red ? tree : 0);
  return chip_.cycles_ps(static_cast<double>(vc.pipeline_depth + c.vec.rows * per_row));
}

double VectorUnit::flops(const Command &c) const {
  if (c.op == Opcode::VCopy || c.op == Opcode::VFill || c.op == Opcode::VCvt)
    return 0;
  return static_cast<double>(c.vec.n * c.vec.rows);
}

} // namespace tl::npu::model
