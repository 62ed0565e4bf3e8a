// The vector unit: W lanes over `rows` rows of n elements (row strides in bytes). Elementwise
// arithmetic is typed by the `t` field (f32, f16, bf16, i32, i8; `u` for unsigned integers), with
// sim/numerics' operations. Timing: pipeline depth + rows * ceil(n / W) * passes, passes being
// exp_passes (v.exp), div_passes (v.div v.rem v.sqrt v.rsqrt), transcendental_passes (the other
// math functions) or 1; row reductions add log2(W) per row for the lane tree and scans log2(W)
// per element group; column reductions stream the rows through the lanes (one pass per group).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "unit.h"

#include "tl/npu/numerics.h"

namespace tl::npu::model {

class VectorUnit : public Unit {
public:
  VectorUnit(sc_core::sc_module_name name, CoreState &core, int track);

private:
  uint64_t execute(const Command &c) override;
  double flops(const Command &c) const override;
  void elementwise(const Command &c);
  void convert(const Command &c);
  void strided_copy(const Command &c);
  void row_reduce(const Command &c);
  void column_reduce(const Command &c);
  void scan(const Command &c);
  /// Element `i` of dtype `t` at local `base` (range-checked).
  uint32_t load(uint64_t base, uint64_t i, num::DType t, const Command &c) const;
  void store(uint64_t base, uint64_t i, num::DType t, uint32_t bits, const Command &c);
};

/// What a vector opcode does, for the unit's dispatch and timing.
enum class VecKind {
  Binary,  ///< d = a op b
  Scalar,  ///< d = a op (low bits of register rb)
  Unary,   ///< d = f(a)
  Compare, ///< byte mask d = a pred b
  Fma,     ///< d = a * b + c
  Select,  ///< d = mask a ? b : c
  Iota,    ///< d = start + i * step
  Fill,    ///< d = register value
  Convert, ///< v.cvt, v.icvt
  Copy,    ///< v.copy, v.scopy
  RowReduce,
  ColumnReduce,
  Scan,
  Classify, ///< byte mask d = class test of a (v.isnan v.isinf v.isfinite)
};
VecKind vec_kind(isa::Opcode op);
/// A dtype field's value, or ProgramError naming the field.
num::DType checked_dtype(uint64_t v, const char *field);

} // namespace tl::npu::model
