// tl-check-kernels: runs the library kernels on the reference interpreter over random (ragged)
// shapes and compares fp32 results with the fp64 references of reference/.
// SPDX-License-Identifier: Apache-2.0
#include "tl/interpreter/host_tensor.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"
#include "tl/reference/metrics.h"
#include "tl/reference/ops.h"

#include <boost/program_options.hpp>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>

namespace po = boost::program_options;
using tl::interp::HostTensor;
using tl::ir::ScalarKind;

namespace {

constexpr double kFp32Bound = 1e-6; // normwise relative error against fp64 (the TL contract)

struct Case {
  std::string shape;
  std::vector<HostTensor> args; // fp32 inputs and outputs, in kernel argument order
  size_t output;                // index of the output tensor
  std::array<int64_t, 3> grid;
  std::vector<double> expected; // fp64 reference of the output
};

std::vector<double> to_doubles(const HostTensor &t) {
  std::vector<double> v(t.num_elements());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.get(i);
  return v;
}

HostTensor random_f32(std::vector<int64_t> shape, std::mt19937_64 &rng) {
  HostTensor t(ScalarKind::F32, std::move(shape));
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.set(i, u(rng));
  return t;
}

int64_t pick(std::mt19937_64 &rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

Case vector_add_case(std::mt19937_64 &rng) {
  const int64_t n = pick(rng, 1, 5000);
  Case c{std::to_string(n), {}, 2, {ceil_div(n, 256), 1, 1}, {}};
  c.args = {random_f32({n}, rng), random_f32({n}, rng), HostTensor(ScalarKind::F32, {n})};
  auto x = to_doubles(c.args[0]), y = to_doubles(c.args[1]);
  c.expected.resize(n);
  tl::ref::binary(tl::ref::BinaryMath::Add, n, x.data(), y.data(), c.expected.data());
  return c;
}

/// A GEMM of random shape on (BM, BN) tiles, K up to `k_max`.
Case gemm_case(std::mt19937_64 &rng, int64_t bm, int64_t bn, int64_t k_max) {
  const int64_t M = pick(rng, 1, 130), N = pick(rng, 1, 130), K = pick(rng, 1, k_max);
  Case c{std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K),
         {},
         2,
         {ceil_div(M, bm), ceil_div(N, bn), 1},
         {}};
  c.args = {random_f32({M, K}, rng), random_f32({K, N}, rng), HostTensor(ScalarKind::F32, {M, N})};
  auto a = to_doubles(c.args[0]), b = to_doubles(c.args[1]);
  c.expected.resize(M * N);
  tl::ref::gemm(false, false, M, N, K, 1.0, a.data(), K, b.data(), N, 0.0, c.expected.data(), N);
  return c;
}

Case softmax_case(std::mt19937_64 &rng) {
  const int64_t rows = pick(rng, 1, 40), cols = pick(rng, 1, 700);
  Case c{std::to_string(rows) + "x" + std::to_string(cols), {}, 1, {rows, 1, 1}, {}};
  c.args = {random_f32({rows, cols}, rng), HostTensor(ScalarKind::F32, {rows, cols})};
  auto x = to_doubles(c.args[0]);
  for (double &v : x) // scale up so that exp() sees a real range
    v *= 8;
  for (int64_t i = 0; i < c.args[0].num_elements(); ++i)
    c.args[0].set(i, x[i]);
  c.expected.resize(rows * cols);
  tl::ref::softmax_rows(rows, cols, x.data(), c.expected.data());
  return c;
}

Case layernorm_case(std::mt19937_64 &rng) {
  const int64_t rows = pick(rng, 1, 40), cols = pick(rng, 1, 700);
  Case c{std::to_string(rows) + "x" + std::to_string(cols), {}, 3, {rows, 1, 1}, {}};
  c.args = {random_f32({rows, cols}, rng), random_f32({cols}, rng), random_f32({cols}, rng),
            HostTensor(ScalarKind::F32, {rows, cols})};
  for (int64_t i = 0; i < c.args[0].num_elements(); ++i) // an offset: the mean must matter
    c.args[0].set(i, 2 + 3 * c.args[0].get(i));
  auto x = to_doubles(c.args[0]), w = to_doubles(c.args[1]), b = to_doubles(c.args[2]);
  c.expected.resize(rows * cols);
  tl::ref::layernorm_rows(rows, cols, x.data(), w.data(), b.data(), 1e-5, c.expected.data());
  return c;
}

struct KernelSpec {
  const char *name;
  const char *file;
  std::function<Case(std::mt19937_64 &)> make;
};

std::unique_ptr<tl::ir::Module> load(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  tl::ir::Diagnostics d;
  auto m = tl::ir::parse(ss.str(), path, d);
  if (!m || !tl::ir::verify(*m, d))
    throw std::runtime_error(d.str());
  return m;
}

/// Runs `kernel` on `args` (fp32, or converted to f64 storage in reference mode); returns the
/// output.
std::vector<double> run(const tl::ir::Kernel &kernel, const Case &c, bool fp64) {
  std::vector<HostTensor> args;
  std::vector<tl::interp::ArgValue> views;
  args.reserve(c.args.size());
  for (const HostTensor &t : c.args) {
    args.push_back(fp64 ? t.converted(ScalarKind::F64) : t);
    views.push_back(args.back().arg());
  }
  tl::interp::RunOptions opts;
  opts.grid = c.grid;
  opts.fp64_reference = fp64;
  tl::interp::RunResult r = tl::interp::run(kernel, views, opts);
  if (!r.ok)
    throw std::runtime_error(r.error);
  return to_doubles(args[c.output]);
}

} // namespace

int main(int argc, char **argv) {
  uint64_t seed = 1;
  int trials = 3;
  std::string dir = TL_KERNELS_DIR, only;
  po::options_description desc("tl-check-kernels options");
  desc.add_options()("help,h", "show this help")(
      "seed", po::value(&seed), "random seed (default 1)")("trials", po::value(&trials),
                                                           "random shapes per kernel (default 3)")(
      "kernels-dir", po::value(&dir), "directory of the .tlir kernels")("kernel", po::value(&only),
                                                                        "check only this kernel");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const std::exception &e) {
    std::cerr << "tl-check-kernels: error: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  const KernelSpec specs[] = {
      {"vector_add", "vector_add.tlir", vector_add_case},
      {"gemm", "gemm.tlir", [](std::mt19937_64 &r) { return gemm_case(r, 32, 32, 200); }},
      // K past one chunk of 1024 in about half the shapes
      {"gemm_nvptx", "gemm_nvptx.tlir",
       [](std::mt19937_64 &r) { return gemm_case(r, 128, 64, 2100); }},
      {"softmax", "softmax.tlir", softmax_case},
      {"layernorm", "layernorm.tlir", layernorm_case}};
  std::mt19937_64 rng(seed);
  int failures = 0, checked = 0;
  std::printf("seed: %llu\n", static_cast<unsigned long long>(seed));
  try {
    for (const KernelSpec &spec : specs) {
      if (!only.empty() && only != spec.name)
        continue;
      auto module = load(dir + "/" + spec.file);
      const tl::ir::Kernel &kernel = *module->kernels()[0];
      for (int t = 0; t < trials; ++t) {
        Case c = spec.make(rng);
        const std::vector<double> f32 = run(kernel, c, false), f64 = run(kernel, c, true);
        const int64_t n = static_cast<int64_t>(c.expected.size());
        const double err32 = tl::ref::normwise_relative_error(n, f32.data(), c.expected.data());
        const double err64 = tl::ref::normwise_relative_error(n, f64.data(), c.expected.data());
        const bool ok = err32 <= kFp32Bound && err64 <= 1e-12;
        failures += !ok;
        ++checked;
        std::printf("%-10s %-14s fp32 error %.3e  fp64-mode error %.3e  %s\n", spec.name,
                    c.shape.c_str(), err32, err64, ok ? "ok" : "FAIL");
      }
    }
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tl-check-kernels: error: %s\n", e.what());
    return 1;
  }
  std::printf("%d of %d checks within bounds (fp32 <= %.0e normwise vs fp64 reference)\n",
              checked - failures, checked, kFp32Bound);
  return failures ? 1 : 0;
}
