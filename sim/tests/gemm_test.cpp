// The hand-assembled tiled GEMM (programs/gemm.s) on the shipped chips: bit-exact against the
// numerics reference in the program's accumulation order, within 1e-6 normwise of fp64 in f32
// mode, the same in functional mode, and deterministic. One scenario per process.
// SPDX-License-Identifier: Apache-2.0
#include "gemm.h"
#include "harness.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace tl::npu::test {
namespace {

struct GemmRun {
  SimReport report;
  std::vector<uint32_t> c;
};

GemmRun run_gemm(const ChipConfig &cfg, GemmProblem p, const std::vector<uint8_t> &a,
                 const std::vector<uint8_t> &b, SimOptions opts = {}) {
  Simulator sim(cfg, opts);
  sim.load_program(-1, assemble_file(program_path("gemm.s"), p.defines(cfg)));
  sim.write_hbm(p.a_addr, a.data(), a.size());
  sim.write_hbm(p.b_addr, b.data(), b.size());
  GemmRun r{run_checked(sim), std::vector<uint32_t>(static_cast<size_t>(p.M) * p.N)};
  TNPU_CHECK(r.report.status == SimStatus::Ok, r.report.message);
  sim.read_hbm(p.c_addr, r.c.data(), r.c.size() * 4);
  return r;
}

void expect_bit_exact(const std::vector<uint32_t> &got, const std::vector<uint32_t> &want,
                      const GemmProblem &p) {
  for (size_t i = 0; i < want.size(); ++i)
    TNPU_CHECK(got[i] == want[i], "C[" + std::to_string(i / p.N) + "][" + std::to_string(i % p.N) +
                                      "] = " + std::to_string(got[i]) + ", reference " +
                                      std::to_string(want[i]));
}

/// Runs an M x N x K GEMM in `mode` on chip `name` and checks it bit for bit.
void gemm_exact(const std::string &name, num::DType mode, int m, int n, int k,
                Fidelity fidelity = Fidelity::CycleApprox) {
  ChipConfig cfg = chip(name);
  GemmProblem p{m, n, k, mode};
  p.layout();
  auto a = random_matrix(mode, m, k, 1), b = random_matrix(mode, k, n, 2);
  SimOptions opts;
  opts.fidelity = fidelity;
  GemmRun r = run_gemm(cfg, p, a, b, opts);
  expect_bit_exact(r.c, gemm_in_program_order(p, cfg.core.matrix.rows, a, b), p);
  std::printf("%s %s %dx%dx%d: bit-exact, %llu cycles\n", name.c_str(), num::dtype_name(mode), m, n,
              k, static_cast<unsigned long long>(r.report.cycles));
  if (fidelity == Fidelity::Functional)
    TNPU_CHECK(r.report.cycles == 0, "functional mode takes no simulated time");
  else
    TNPU_CHECK(r.report.cycles > 0, "cycles");
}

/// f32 mode: bit-exact to the reference order and within 1e-6 normwise of fp64.
void gemm_f32() {
  ChipConfig cfg = chip("default");
  GemmProblem p{192, 160, 300, num::DType::F32};
  p.layout();
  auto a = random_matrix(p.mode, p.M, p.K, 3), b = random_matrix(p.mode, p.K, p.N, 4);
  GemmRun r = run_gemm(cfg, p, a, b);
  expect_bit_exact(r.c, gemm_in_program_order(p, cfg.core.matrix.rows, a, b), p);
  auto f = [](const std::vector<uint8_t> &v, size_t i) {
    float x;
    std::memcpy(&x, &v[4 * i], 4);
    return static_cast<double>(x);
  };
  double num2 = 0, den2 = 0;
  for (int i = 0; i < p.M; ++i)
    for (int j = 0; j < p.N; ++j) {
      double ref = 0;
      for (int kk = 0; kk < p.K; ++kk)
        ref += f(a, static_cast<size_t>(i) * p.K + kk) * f(b, static_cast<size_t>(kk) * p.N + j);
      float got;
      std::memcpy(&got, &r.c[static_cast<size_t>(i) * p.N + j], 4);
      num2 += (got - ref) * (got - ref);
      den2 += ref * ref;
    }
  const double err = std::sqrt(num2 / den2);
  std::printf("f32 gemm %dx%dx%d: normwise relative error vs fp64 %.3g\n", p.M, p.N, p.K, err);
  TNPU_CHECK(err <= 1e-6, "normwise error " + std::to_string(err));
}

/// Two runs in separate processes give identical stats and traces.
void deterministic() {
  auto once = [] {
    ChipConfig cfg = chip("default");
    GemmProblem p{160, 200, 150, num::DType::BF16};
    p.layout();
    SimOptions opts;
    opts.trace = true;
    GemmRun r = run_gemm(cfg, p, random_matrix(p.mode, p.M, p.K, 5),
                         random_matrix(p.mode, p.K, p.N, 6), opts);
    return r.report.stats_json + r.report.trace_json;
  };
  const std::string first = in_child(once), second = in_child(once);
  TNPU_CHECK(!first.empty() && first == second, "two runs differ");
  TNPU_CHECK(first.find("\"traceEvents\"") != std::string::npos, "trace present");
  TNPU_CHECK(first.find("\"mx.mm\"") != std::string::npos, "trace has matrix commands");
}

} // namespace
} // namespace tl::npu::test

int sc_main(int argc, char **argv) {
  using namespace tl::npu::test;
  using tl::npu::num::DType;
  return main_with(
      {{"bf16-default", [] { gemm_exact("default", DType::BF16, 200, 300, 260); }},
       {"f32-default", gemm_f32},
       {"i8-default", [] { gemm_exact("default", DType::I8, 130, 140, 300); }},
       {"f16-edge", [] { gemm_exact("edge", DType::F16, 70, 50, 90); }},
       {"bf16-datacenter", [] { gemm_exact("datacenter", DType::BF16, 260, 300, 200); }},
       {"bf16-functional",
        [] { gemm_exact("default", DType::BF16, 200, 300, 260, tl::npu::Fidelity::Functional); }},
       {"deterministic", deterministic}},
      argc, argv);
}
