// Matrix unit (see matrix.h).
// SPDX-License-Identifier: Apache-2.0
#include "matrix.h"

#include "tl/npu/numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace tl::npu::model {

using num::DType;

MatrixUnit::MatrixUnit(sc_core::sc_module_name name, CoreState &core, int track)
    : Unit(name, core, "mx", track) {}

namespace {
float f32_of(DType t, uint32_t bits) {
  if (t == DType::BF16)
    bits = num::bf16_to_f32(static_cast<uint16_t>(bits));
  else if (t == DType::F16)
    bits = num::f16_to_f32(static_cast<uint16_t>(bits));
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

DType mode_dtype(uint64_t mode) {
  if (mode != static_cast<uint64_t>(DType::BF16) && mode != static_cast<uint64_t>(DType::F16) &&
      mode != static_cast<uint64_t>(DType::I8) && mode != static_cast<uint64_t>(DType::F32))
    throw ProgramError("matrix mode must be bf16, f16, i8 or f32, got " + std::to_string(mode));
  return static_cast<DType>(mode);
}
} // namespace

void MatrixUnit::preload(const Command &c) {
  const MxCfg &m = c.mx;
  const DType t = mode_dtype(m.mode);
  const auto &mc = chip_.cfg.core.matrix;
  if (m.k == 0 || m.k > static_cast<uint64_t>(mc.rows) || m.n == 0 ||
      m.n > static_cast<uint64_t>(mc.cols))
    throw ProgramError("weight tile " + std::to_string(m.k) + " x " + std::to_string(m.n) +
                       " does not fit the " + std::to_string(mc.rows) + " x " +
                       std::to_string(mc.cols) + " array");
  const uint64_t es = static_cast<uint64_t>(num::dtype_size(t));
  weights_.resize(m.k * m.n);
  for (uint64_t r = 0; r < m.k; ++r) { // the bounds checks hold with arithmetic off too
    const uint8_t *row = core_.mem.span(c.a + r * m.ldw, m.n * es, "mx.pre weights");
    if (chip_.opts.compute_data)
      for (uint64_t j = 0; j < m.n; ++j)
        weights_[r * m.n + j] = num::load_bits(t, row, j);
  }
  if (chip_.opts.compute_data && t != DType::I8) {
    weights_f32_.resize(weights_.size());
    for (size_t i = 0; i < weights_.size(); ++i)
      weights_f32_[i] = f32_of(t, weights_[i]);
  }
  wk_ = m.k;
  wn_ = m.n;
  wmode_ = m.mode;
  loaded_ = true;
}

void MatrixUnit::multiply(const Command &c, bool accumulate) {
  const MxCfg &m = c.mx;
  if (!loaded_)
    throw ProgramError("no weights preloaded");
  if (m.mode != wmode_)
    throw ProgramError("mode differs from the preloaded weights'");
  const DType t = mode_dtype(m.mode);
  const uint64_t es = static_cast<uint64_t>(num::dtype_size(t));
  if (!chip_.opts.compute_data) {
    // Arithmetic off: the same bounds checks, and C's rows hold stale values from now on.
    for (uint64_t i = 0; i < m.m; ++i) {
      core_.mem.span(c.b + i * m.lda, wk_ * es, "mx A row");
      core_.mem.span(c.a + i * m.ldc, wn_ * 4, "mx C row");
      core_.mem.set_stale(c.a + i * m.ldc, wn_ * 4, true);
    }
    return;
  }
  if (t != DType::I8) {
    multiply_float(c, accumulate);
    return;
  }
  std::vector<uint32_t> a(wk_);
  for (uint64_t i = 0; i < m.m; ++i) {
    const uint8_t *arow = core_.mem.span(c.b + i * m.lda, wk_ * es, "mx A row");
    uint8_t *crow = core_.mem.span(c.a + i * m.ldc, wn_ * 4, "mx C row");
    for (uint64_t k = 0; k < wk_; ++k)
      a[k] = num::load_bits(t, arow, k);
    for (uint64_t j = 0; j < wn_; ++j) {
      int32_t s = accumulate ? static_cast<int32_t>(num::load_bits(DType::F32, crow, j)) : 0;
      for (uint64_t k = 0; k < wk_; ++k)
        s = num::mac_i8(static_cast<int8_t>(a[k]), static_cast<int8_t>(weights_[k * wn_ + j]), s);
      num::store_bits(DType::F32, crow, j, static_cast<uint32_t>(s));
    }
  }
}

// The float modes: each output is the chain acc = fma(a[k], w[k][j], acc), k ascending, from -0
// (or the accumulator), rounded once per step: num::mac_f32, which numerics_test checks bit for
// bit against the host's fma. The host's fma on decoded floats, k outer and the columns inner,
// gives the same bits per column at a fraction of the host time (f32 GEMMs took minutes).
void MatrixUnit::multiply_float(const Command &c, bool accumulate) {
  const MxCfg &m = c.mx;
  const DType t = mode_dtype(m.mode);
  const uint64_t es = static_cast<uint64_t>(num::dtype_size(t));
  std::vector<float> a(wk_), acc(wn_);
  for (uint64_t i = 0; i < m.m; ++i) {
    const uint8_t *arow = core_.mem.span(c.b + i * m.lda, wk_ * es, "mx A row");
    uint8_t *crow = core_.mem.span(c.a + i * m.ldc, wn_ * 4, "mx C row");
    for (uint64_t k = 0; k < wk_; ++k)
      a[k] = f32_of(t, num::load_bits(t, arow, k));
    for (uint64_t j = 0; j < wn_; ++j)
      acc[j] = accumulate ? f32_of(DType::F32, num::load_bits(DType::F32, crow, j)) : -0.0f;
    for (uint64_t k = 0; k < wk_; ++k) {
      const float ak = a[k], *w = &weights_f32_[k * wn_];
      for (uint64_t j = 0; j < wn_; ++j)
        acc[j] = std::fma(ak, w[j], acc[j]);
    }
    for (uint64_t j = 0; j < wn_; ++j) {
      uint32_t bits;
      std::memcpy(&bits, &acc[j], 4);
      num::store_bits(DType::F32, crow, j, std::isnan(acc[j]) ? num::kF32CanonicalNaN : bits);
    }
  }
}

uint64_t MatrixUnit::execute(const Command &c) {
  const auto &mc = chip_.cfg.core.matrix;
  // Back to back (this command was queued when the previous one ended): the array is still
  // streaming, so the fill of this command overlapped the drain of the previous one, and a
  // preload went into the shadow weight buffer while the previous rows streamed.
  const bool warm = chained_ && ChipContext::now_ps() == end_ps_;
  uint64_t cycles = 0;
  if (c.op == isa::Opcode::MxPre) {
    preload(c);
    cycles =
        warm
            ? static_cast<uint64_t>(std::max<int64_t>(0, mc.rows - static_cast<int64_t>(streamed_)))
            : static_cast<uint64_t>(mc.rows);
    chained_ = warm; // a cold preload leaves nothing streaming
    streamed_ = 0;
  } else {
    multiply(c, c.op == isa::Opcode::MxMma);
    const int passes = c.mx.mode == static_cast<uint64_t>(DType::F32) ? mc.fp32_passes : 1;
    streamed_ = c.mx.m * static_cast<uint64_t>(passes);
    cycles = warm ? streamed_ : mc.rows + streamed_ + mc.cols;
    chained_ = true;
  }
  const uint64_t dur = chip_.cycles_ps(static_cast<double>(cycles));
  end_ps_ = ChipContext::now_ps() + dur;
  return dur;
}

double MatrixUnit::flops(const Command &c) const {
  return c.op == isa::Opcode::MxPre ? 0 : 2.0 * static_cast<double>(c.mx.m * wk_ * wn_);
}

} // namespace tl::npu::model
