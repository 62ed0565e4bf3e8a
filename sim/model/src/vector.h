// The vector unit: W lanes over `rows` rows of n f32 elements (row strides in bytes). Timing:
// pipeline depth + rows * ceil(n / W) * passes (exp_passes for v.exp, else 1); reductions add
// log2(W) per row for the lane tree. Arithmetic is sim/numerics' f32, reductions in the order of
// SPEC.md (lane-strided partials, then a pairwise tree).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "unit.h"

namespace tl::npu::model {

class VectorUnit : public Unit {
public:
  VectorUnit(sc_core::sc_module_name name, CoreState &core, int track);

private:
  uint64_t execute(const Command &c) override;
  double flops(const Command &c) const override;
  void compute(const Command &c);
  void reduce(const Command &c);
};

} // namespace tl::npu::model
