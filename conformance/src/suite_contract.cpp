// The fp32 contract on device outputs (precision.contract.*): the library kernels (GEMM, softmax,
// layernorm, vector add) and blocked sums at user sizes on user-like inputs, run on the device
// and compared with the interpreter's fp64 mode on the same inputs: normwise error <= 1e-6.
// SPDX-License-Identifier: Apache-2.0
#include "compare.h"
#include "device_run.h"
#include "precision_cases.h"

#include "tl/interpreter/host_tensor.h"
#include "tl/reference/metrics.h"
#include "tl/reference/ops.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>

namespace tl::conform {
namespace {

using interp::HostTensor;
using ir::ScalarKind;

struct ContractCase {
  std::string op;             // gemm, softmax, layernorm, vector_add, sum, row_sum
  std::vector<int64_t> shape; // gemm: M, N, K; row kernels: rows x cols; sum, vector_add: n
  bool core;
  std::string id() const {
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i)
      s += (i ? "x" : "") + std::to_string(shape[i]);
    return "precision.contract." + op + "." + s;
  }
};

// K up to 4096 and rows up to 8192 wide (4097: ragged against every tile); `full` goes larger.
const std::vector<ContractCase> kCases = {{"gemm", {64, 64, 4096}, true},
                                          {"gemm", {128, 96, 1024}, true},
                                          {"softmax", {8, 8192}, true},
                                          {"softmax", {4, 4097}, true},
                                          {"layernorm", {8, 8192}, true},
                                          {"layernorm", {4, 4097}, true},
                                          {"sum", {8192}, true},
                                          {"sum", {65536}, true},
                                          {"row_sum", {64, 8192}, true},
                                          {"vector_add", {262147}, true},
                                          {"gemm", {256, 256, 4096}, false},
                                          {"gemm", {100, 300, 2049}, false},
                                          {"softmax", {32, 16384}, false},
                                          {"layernorm", {32, 16384}, false},
                                          {"sum", {1048576}, false},
                                          {"row_sum", {256, 16384}, false},
                                          {"vector_add", {4194307}, false}};

/// Library kernels, relative to the TL source tree.
std::string library_file(const std::string &op) {
  if (op == "gemm" || op == "softmax" || op == "layernorm" || op == "vector_add")
    return "kernels/tlir/" + op + ".tlir";
  return "";
}

// Sums as a library would write them: BLOCK-wide partial sums carried through the loop (each
// lane sums n / BLOCK terms), one tile reduction at the end.
const char *kSumKernel = R"(kernel @sum(%x: tensor<?xf32>, %y: tensor<?xf32>) {
  %n_i64 = dim %x {axis = 0} : i64
  %n = cast %n_i64 : i32
  %zero = constant {value = 0} : i32
  %block = constant {value = 1024} : i32
  %acc0 = full {value = 0.0} : tile<1024xf32>
  %acc = for %c = %zero to %n step %block iter_args(%a = %acc0) : tile<1024xf32> {
    %t = load %x, %c {padding = 0.0} : tile<1024xf32>
    %a_new = add %a, %t : tile<1024xf32>
    yield %a_new
  }
  %s = reduce %acc {axis = 0, kind = "sum"} : f32
  %st = splat %s : tile<1xf32>
  store %y, %zero, %st
  return
}
)";
const char *kRowSumKernel = R"(kernel @row_sum(%x: tensor<?x?xf32>, %y: tensor<?xf32>) {
  %row = program_id {axis = 0} : i32
  %cols_i64 = dim %x {axis = 1} : i64
  %cols = cast %cols_i64 : i32
  %zero = constant {value = 0} : i32
  %block = constant {value = 256} : i32
  %acc0 = full {value = 0.0} : tile<1x256xf32>
  %acc = for %c = %zero to %cols step %block iter_args(%a = %acc0) : tile<1x256xf32> {
    %t = load %x, %row, %c {padding = 0.0} : tile<1x256xf32>
    %a_new = add %a, %t : tile<1x256xf32>
    yield %a_new
  }
  %s = reduce %acc {axis = 1, kind = "sum"} : tile<1xf32>
  store %y, %row, %s
  return
}
)";

std::string inputs_of(const std::string &op) {
  if (op == "softmax")
    return "logits: normal, mean 0, sd 4";
  if (op == "layernorm")
    return "x: normal, mean 1, sd 2; weight: uniform [0.5, 1.5]; bias: uniform [-1, 1]";
  return "uniform [-1, 1]";
}

json contract_params(const ContractCase &c, const Paths &paths) {
  const std::string file = library_file(c.op);
  std::string sha = "";
  if (file.empty())
    sha = sha256_hex(c.op == "sum" ? kSumKernel : kRowSumKernel);
  else if (std::filesystem::exists(paths.source_dir + "/" + file))
    sha = sha256_file(paths.source_dir + "/" + file);
  return {{"op", c.op},
          {"in", "f32"},
          {"out", "f32"},
          {"shape", c.shape},
          {"tolerance_entry", "contract"},
          {"kernel", file.empty() ? "generated (suite_contract.cpp)" : file},
          {"kernel_sha256", sha},
          {"inputs", inputs_of(c.op)},
          {"reference", "the interpreter's fp64 mode on the same inputs"}};
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// The kernel's tensors (inputs then the output, last), its launch grid and source.
struct Setup {
  std::string src, kernel;
  std::array<uint64_t, 3> grid{1, 1, 1};
  std::vector<HostTensor> tensors;
};

Setup setup(const ContractCase &c, const Paths &paths, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto normal = [&](double mean, double sd) {
    return std::normal_distribution<double>(mean, sd)(rng);
  };
  auto filled = [&](std::vector<int64_t> shape, const std::function<double()> &f) {
    HostTensor t(ScalarKind::F32, std::move(shape));
    for (int64_t e = 0; e < t.num_elements(); ++e)
      t.set(e, f());
    return t;
  };
  auto u11 = [&] { return uniform(-1, 1); };
  auto zero = [] { return 0.0; };
  Setup s;
  s.kernel = c.op;
  const std::string file = library_file(c.op);
  s.src = file.empty() ? (c.op == "sum" ? kSumKernel : kRowSumKernel)
                       : read_file(paths.source_dir + "/" + file);
  const auto &d = c.shape;
  auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  if (c.op == "gemm") {
    s.tensors = {filled({d[0], d[2]}, u11), filled({d[2], d[1]}, u11), filled({d[0], d[1]}, zero)};
    s.grid = {u(ceil_div(d[0], 32)), u(ceil_div(d[1], 32)), 1};
  } else if (c.op == "softmax") {
    s.tensors = {filled(d, [&] { return normal(0, 4); }), filled(d, zero)};
    s.grid = {u(d[0]), 1, 1};
  } else if (c.op == "layernorm") {
    s.tensors = {filled(d, [&] { return normal(1, 2); }),
                 filled({d[1]}, [&] { return uniform(0.5, 1.5); }), filled({d[1]}, u11),
                 filled(d, zero)};
    s.grid = {u(d[0]), 1, 1};
  } else if (c.op == "vector_add") {
    s.tensors = {filled(d, u11), filled(d, u11), filled(d, zero)};
    s.grid = {u(ceil_div(d[0], 256)), 1, 1};
  } else if (c.op == "sum") {
    s.tensors = {filled(d, u11), filled({1}, zero)};
  } else { // row_sum
    s.tensors = {filled(d, u11), filled({d[0]}, zero)};
    s.grid = {u(d[0]), 1, 1};
  }
  return s;
}

std::vector<double> values(const HostTensor &t) {
  std::vector<double> v(t.num_elements());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.get(i);
  return v;
}

/// The op's answer from reference/ (compensated fp64), independent of the kernel: the
/// interpreter's fp64 run of the kernel must agree with it, or the kernel (not the device) is
/// wrong and the contract check would measure the wrong thing.
std::vector<double> independent_reference(const ContractCase &c, const Setup &s) {
  const auto &d = c.shape;
  std::vector<double> out(s.tensors.back().num_elements());
  const std::vector<double> x = values(s.tensors[0]);
  if (c.op == "gemm") {
    const std::vector<double> b = values(s.tensors[1]);
    tl::ref::gemm(false, false, d[0], d[1], d[2], 1, x.data(), d[2], b.data(), d[1], 0, out.data(),
                  d[1]);
  } else if (c.op == "softmax") {
    tl::ref::softmax_rows(d[0], d[1], x.data(), out.data());
  } else if (c.op == "layernorm") {
    const std::vector<double> w = values(s.tensors[1]), b = values(s.tensors[2]);
    tl::ref::layernorm_rows(d[0], d[1], x.data(), w.data(), b.data(), double(1e-5f), out.data());
  } else if (c.op == "vector_add") {
    const std::vector<double> y = values(s.tensors[1]);
    tl::ref::binary(tl::ref::BinaryMath::Add, d[0], x.data(), y.data(), out.data());
  } else {
    tl::ref::reduce(tl::ref::ReduceKind::Sum, c.op == "sum" ? 1 : d[0], d.back(), x.data(), 1,
                    out.data());
  }
  return out;
}

} // namespace

std::vector<TestDef> list_contract(const ListContext &ctx) {
  std::vector<TestDef> out;
  for (const ContractCase &c : kCases)
    out.push_back({c.id(), "precision", c.core ? "core" : "full", c.core ? 120.0 : 300.0, false,
                   contract_params(c, ctx.paths)});
  return out;
}

Outcome run_contract(WorkerContext &ctx, const TestDef &t) {
  const ContractCase *c = nullptr;
  for (const ContractCase &cc : kCases)
    if (cc.id() == t.id)
      c = &cc;
  if (!c)
    return Outcome::fail("no contract case '" + t.id + "'");
  if (!(ctx.info.supported_dtypes & (uint64_t(1) << static_cast<int>(ScalarKind::F32))))
    return Outcome::not_supported("the device does not support f32");
  if (compile_target(ctx.info, ctx.paths).empty())
    return Outcome::not_supported("no compiler backend in this build for the device's targets '" +
                                  std::string(ctx.info.targets) + "'");
  const auto table = ToleranceTable::load(ctx.paths.data_dir + "/tolerances.json");
  const Tolerance tol = table.lookup("contract", "f32");

  Setup s = setup(*c, ctx.paths, ctx.seed);
  const std::vector<double> indep = independent_reference(*c, s);
  // The reference: the same kernel on the same (f32) inputs, every float op in fp64.
  std::vector<HostTensor> ref_t;
  for (const HostTensor &h : s.tensors)
    ref_t.push_back(h.converted(ScalarKind::F64));
  HostTensor &out = s.tensors.back();
  for (int64_t e = 0; e < out.num_elements(); ++e) // lanes the device never writes are caught
    out.set(e, std::nan(""));
  std::vector<KernelArg> dev_args, ref_args;
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    dev_args.push_back(&s.tensors[i]);
    ref_args.push_back(&ref_t[i]);
  }
  run_on_interpreter(s.src, s.kernel, s.grid, ref_args, /*fp64_reference=*/true);
  run_on_device(ctx, s.src, s.kernel, s.grid, dev_args);

  const std::vector<double> actual = values(out), ref = values(ref_t.back());
  const double ref_error =
      tl::ref::normwise_relative_error(int64_t(ref.size()), ref.data(), indep.data());
  if (!(ref_error <= 1e-12)) {
    char e[32];
    std::snprintf(e, sizeof e, "%.3g", ref_error);
    return Outcome::fail("the kernel's fp64 run differs from reference/'s " + c->op + " by " + e +
                         " normwise (> 1e-12): the kernel is wrong, not the device");
  }
  CompareResult r = compare({ScalarKind::F32, &actual, &ref, nullptr, 1}, tol);
  r.metrics["op"] = "contract." + c->op;
  r.metrics["dtype"] = "f32";
  r.metrics["reference"] = "interpreter fp64 mode";
  r.metrics["reference_vs_reference_lib"] = ref_error;
  if (!r.ok)
    return Outcome::fail("fp32 contract violated: " + r.message, r.metrics);
  return Outcome::pass(r.metrics);
}

} // namespace tl::conform
