// GEMM test helpers (see gemm.h).
// SPDX-License-Identifier: Apache-2.0
#include "gemm.h"

#include <cstring>
#include <random>

namespace tl::npu::test {

std::map<std::string, int64_t> GemmProblem::defines(const ChipConfig &cfg) const {
  return {{"M", M},
          {"N", N},
          {"K", K},
          {"A", static_cast<int64_t>(a_addr)},
          {"B", static_cast<int64_t>(b_addr)},
          {"C", static_cast<int64_t>(c_addr)},
          {"MODE", static_cast<int64_t>(mode)},
          {"ES", num::dtype_size(mode)},
          {"TM", cfg.core.matrix.rows},
          {"TR", cfg.core.matrix.rows},
          {"TC", cfg.core.matrix.cols}};
}

void GemmProblem::layout() {
  auto align = [](uint64_t v) { return (v + 4095) & ~uint64_t{4095}; };
  const uint64_t es = static_cast<uint64_t>(num::dtype_size(mode));
  a_addr = 0x1000;
  b_addr = align(a_addr + static_cast<uint64_t>(M) * K * es);
  c_addr = align(b_addr + static_cast<uint64_t>(K) * N * es);
}

std::vector<uint8_t> random_matrix(num::DType t, int rows, int cols, uint32_t seed) {
  std::mt19937 gen(seed);
  const size_t n = static_cast<size_t>(rows) * cols;
  std::vector<uint8_t> out(n * num::dtype_size(t));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits;
    if (t == num::DType::I8) {
      bits = gen() & 0xff;
    } else {
      float f = u(gen);
      std::memcpy(&bits, &f, 4);
      if (t == num::DType::BF16)
        bits = num::f32_to_bf16(bits);
      else if (t == num::DType::F16)
        bits = num::f32_to_f16(bits);
    }
    num::store_bits(t, out.data(), i, bits);
  }
  return out;
}

std::vector<uint32_t> gemm_in_program_order(const GemmProblem &p, int tr,
                                            const std::vector<uint8_t> &a,
                                            const std::vector<uint8_t> &b) {
  const int kp = (p.K + tr - 1) / tr * tr;
  const size_t es = static_cast<size_t>(num::dtype_size(p.mode));
  std::vector<uint8_t> ap(static_cast<size_t>(p.M) * kp * es, 0),
      bp(static_cast<size_t>(kp) * p.N * es, 0);
  for (int i = 0; i < p.M; ++i)
    std::memcpy(&ap[i * kp * es], &a[i * p.K * es], p.K * es);
  std::memcpy(bp.data(), b.data(), b.size());
  std::vector<uint32_t> c(static_cast<size_t>(p.M) * p.N);
  num::gemm_reference(p.mode, p.M, p.N, kp, ap.data(), kp, bp.data(), p.N, c.data(), p.N, false);
  return c;
}

} // namespace tl::npu::test
