// Matrix unit (see matrix.h).
// SPDX-License-Identifier: Apache-2.0
#include "matrix.h"

#include "tl/npu/numerics.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace tl::npu::model {

using num::DType;

MatrixUnit::MatrixUnit(sc_core::sc_module_name name, CoreState &core, int track)
    : Unit(name, core, "mx", track),
      timing_(core.chip.cfg.core.matrix,
              MatrixTiming::sram_banks(core.chip.cfg.core.sram, isa::kAccBase)) {}

namespace {
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
  const uint8_t *first = nullptr;
  for (uint64_t r = 0; r < m.k; ++r) { // the bounds checks hold with arithmetic off too
    const uint8_t *row = core_.mem.span(c.a + r * m.ldw, m.n * es, "mx.pre weights");
    first = r == 0 ? row : first;
  }
  if (chip_.opts.compute_data) {
    const int k = static_cast<int>(m.k), n = static_cast<int>(m.n);
    if (m.ldw % es == 0) { // rows of whole elements, in one local range (the rows are in bounds)
      weights_.load(t, k, n, first, m.ldw / es);
    } else {
      std::vector<uint8_t> packed(m.k * m.n * es);
      for (uint64_t r = 0; r < m.k; ++r)
        std::memcpy(&packed[r * m.n * es], first + r * m.ldw, m.n * es);
      weights_.load(t, k, n, packed.data(), m.n);
    }
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
  if (m.m == 0)
    return;
  // Every row's bounds first (the messages name the row), then the whole tile in one call of
  // the numerics' tile: bit for bit the MACs of gemm_reference (sim/numerics, matrix_tile.h).
  std::vector<const uint8_t *> arows(m.m);
  std::vector<uint8_t *> crows(m.m);
  for (uint64_t i = 0; i < m.m; ++i) {
    arows[i] = core_.mem.span(c.b + i * m.lda, wk_ * es, "mx A row");
    crows[i] = core_.mem.span(c.a + i * m.ldc, wn_ * 4, "mx C row");
  }
  // One call needs element strides, C rows apart from each other and from A (mx.mma reads the
  // C row it writes only element by element); otherwise row by row, as the unit streams them.
  const uint64_t a_end = c.b + (m.m - 1) * m.lda + wk_ * es;
  const uint64_t c_end = c.a + (m.m - 1) * m.ldc + wn_ * 4;
  const bool whole = m.lda % es == 0 && m.ldc % 4 == 0 && (m.m == 1 || m.ldc >= wn_ * 4) &&
                     (a_end <= c.a || c_end <= c.b);
  if (whole) {
    num::matmul_tile(weights_, static_cast<int>(m.m), arows[0], m.lda / es, crows[0], m.ldc / 4,
                     accumulate);
    return;
  }
  std::vector<uint8_t> arow(wk_ * es);
  for (uint64_t i = 0; i < m.m; ++i) {
    std::memcpy(arow.data(), arows[i], arow.size());
    num::matmul_tile(weights_, 1, arow.data(), wk_, crows[i], wn_, accumulate);
  }
}

uint64_t MatrixUnit::execute(const Command &c) {
  const auto &mc = chip_.cfg.core.matrix;
  const bool pre = c.op == isa::Opcode::MxPre;
  if (pre)
    preload(c);
  else
    multiply(c, c.op == isa::Opcode::MxMma);
  if (!chip_.timed())
    return 0;
  const uint64_t es = static_cast<uint64_t>(num::dtype_size(static_cast<DType>(c.mx.mode)));
  MxTimingCommand t;
  t.preload = pre;
  t.accumulate = c.op == isa::Opcode::MxMma;
  t.m = c.mx.m;
  t.k = pre ? c.mx.k : wk_;
  t.n = pre ? c.mx.n : wn_;
  t.elem_bytes = es;
  t.passes = c.mx.mode == static_cast<uint64_t>(DType::F32) ? mc.fp32_passes : 1;
  t.src = pre ? c.a : c.b;
  t.src_stride = pre ? c.mx.ldw : c.mx.lda;
  t.dst = c.a;
  t.dst_stride = c.mx.ldc;
  // A command queued between two edges is offered at the next one.
  const uint64_t issue = chip_.edge_at_or_after(ChipContext::now_ps());
  const MxTimes times = timing_.command(t, issue);
  add_busy(
      static_cast<double>(times.done - std::min(times.done, std::max(times.accept, busy_until_))));
  busy_until_ = std::max(busy_until_, times.done);
  last_done_ = times.done;
  return ps_until(times.accept);
}

// Called when the command was taken (now): its slice runs on to its last C row / weight row.
uint64_t MatrixUnit::trace_duration(uint64_t duration) const {
  return duration + ps_until(last_done_);
}

uint64_t MatrixUnit::ps_until(uint64_t cycle) const {
  const auto at =
      static_cast<uint64_t>(std::llround(static_cast<double>(cycle) * chip_.ps_per_cycle));
  const uint64_t now = ChipContext::now_ps();
  return at > now ? at - now : 0;
}

bool MatrixUnit::results_pending() const { return chip_.timed() && ps_until(timing_.done()) > 0; }

uint64_t MatrixUnit::advance_results() { return ps_until(timing_.done()); }

double MatrixUnit::flops(const Command &c) const {
  return c.op == isa::Opcode::MxPre ? 0 : 2.0 * static_cast<double>(c.mx.m * wk_ * wn_);
}

} // namespace tl::npu::model
