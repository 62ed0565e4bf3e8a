// The performance suite: library kernels timed on the device (best of N after a warm-up), their
// outputs checked against fp64 afterwards, placed on the roofline of the device's peaks and
// judged: each test passes only at its profile's floor fraction of the roofline bound, and a
// stored baseline (data/baseline-<plugin>.json) can only raise that bar.
// SPDX-License-Identifier: Apache-2.0
#include "compare.h"
#include "datasheet.h"
#include "device_run.h"
#include "host_anchor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <thread>

namespace tl::conform {
namespace {

/// The fraction of the roofline bound a test must reach, by its profile (the full profile's larger
/// and ragged sizes are as reachable as core's). Why 0.5: conformance/README.md.
double floor_of(const std::string &profile) {
  static const std::map<std::string, double> floors = {{"core", 0.5}, {"full", 0.5}};
  return floors.at(profile);
}

/// fp32 contract for every output: normwise error against fp64 (conformance/README.md).
constexpr double kNormwise = 1e-6;
/// On a device judged on host anchors: rounds of the winning candidate, each followed by the
/// anchor's 2 x kPairedReps timed passes of each choice (loop form x piece size; paired_rounds);
/// odd, so that one round's ratio is the median. The candidate runs kPairedReps x the pieces of
/// a form repetitions a round (idle and queued: 2 intervals each): its figure is the best of as
/// many samples as the anchor's of one loop form, as in the bandwidth suite.
constexpr int kPairedRounds = 9, kPairedReps = 1;

struct PerfCase {
  std::string name, kernel;  // kernel: gemm, softmax, vector_add
  std::vector<int64_t> dims; // gemm: M N K; softmax: rows cols; vector_add: n
  bool core;
};

const std::vector<PerfCase> &cases() {
  static const std::vector<PerfCase> c = {
      {"gemm.f32.1024", "gemm", {1024, 1024, 1024}, true},
      {"softmax.f32.2048x4096", "softmax", {2048, 4096}, true},
      {"vector_add.f32.16M", "vector_add", {1 << 24}, true},
      {"gemm.f32.2048x2048x1024", "gemm", {2048, 2048, 1024}, false},
      {"gemm.f32.2047x1025x1000", "gemm", {2047, 1025, 1000}, false},
      {"softmax.f32.2048x8192", "softmax", {2048, 8192}, false},
      {"vector_add.f32.64M", "vector_add", {1 << 26}, false},
  };
  return c;
}

/// The kernels a case may run: the library kernel on every target, a target's tuned variant on
/// that target. `tile`: the output each program covers (gemm: rows, cols of c; vector_add:
/// elements; softmax: rows); `max_dims`: limits the kernel asserts (0: none). `file`: under
/// kernels/ (tlir/: hand-written; ops/: the op library's generated specializations).
json candidates_of(const std::string &kernel) {
  auto cand = [](const std::string &file, const std::string &name, const std::string &target,
                 std::vector<int64_t> tile, std::vector<int64_t> max_dims) {
    return json{{"file", "kernels/" + file},
                {"kernel", name},
                {"target", target},
                {"tile", tile},
                {"max_dims", max_dims}};
  };
  // The op library's GEMM at each target's tile (python/tl/ops TUNING["gemm_tile"], generated
  // gemm_tile<BM>x<BN>x<BK>_f32, the C API's plain GEMM), in its argument form. On llvm-cpu it
  // replaced the per-device copy gemm_cpu.tlir (the same 128 x 128 x 64 tile; 13.44-13.65 ms
  // against its 13.10-13.36 at 1024^3 in the same runs). nvptx and the tnpu keep their tuned
  // copies beside it: the tnpu's resident-b form is 4.6x the portable 128^3 tile on npusim.
  auto ops_gemm = [&](int bm, int bn, int bk, const std::string &target) {
    const std::string name = "gemm_tile" + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
                             std::to_string(bk) + "_f32";
    json c = cand("ops/" + name + ".tlir", name, target, {bm, bn}, {0, 0, 0});
    c["args"] = "ops_gemm";
    return c;
  };
  if (kernel == "gemm")
    return {cand("tlir/gemm.tlir", "gemm", "*", {32, 32}, {0, 0, 0}),
            ops_gemm(128, 128, 64, "llvm-cpu"), // replaced gemm_cpu.tlir (suite 1.8)
            cand("tlir/gemm_nvptx.tlir", "gemm_nvptx", "nvptx", {128, 64}, {0, 0, 0}),
            ops_gemm(128, 64, 64, "nvptx"),
            cand("tlir/gemm_f32_tnpu.tlir", "gemm_f32_tnpu", "tnpu", {1024, 256}, {0, 0, 1024}),
            ops_gemm(128, 128, 128, "tnpu")};
  if (kernel == "softmax")
    return {
        cand("tlir/softmax.tlir", "softmax", "*", {1}, {0, 0}),
        // The op library's one-pass form (python/tl/ops/rows.py, generated): a row of up
        // to 4096 columns read once, on every target (on a GPU 16 f32 a thread over 8
        // warps; the two-pass kernel above reads it twice). It replaced the per-device
        // copies softmax_cpu.tlir (llvm-cpu, nvptx) and softmax_tnpu.tlir (16 rows a
        // program: 0.435 ms simulated against its 0.345) in suite 1.7.
        cand("ops/softmax_onepass4096_f32.tlir", "softmax_onepass4096_f32", "*", {1}, {0, 4096})};
  return {cand("tlir/vector_add.tlir", "vector_add", "*", {256}, {0}),
          cand("tlir/vector_add_cpu.tlir", "vector_add_cpu", "llvm-cpu", {8192}, {0}),
          cand("tlir/vector_add_tnpu.tlir", "vector_add_tnpu", "tnpu", {65536}, {0})};
}

std::vector<TestDef> list_performance(const ListContext &) {
  std::vector<TestDef> out;
  for (const PerfCase &c : cases()) {
    const std::string profile = c.core ? "core" : "full";
    out.push_back({"performance." + c.name,
                   "performance",
                   profile,
                   300,
                   true,
                   {{"kernel", c.kernel},
                    {"dims", c.dims},
                    {"candidates", candidates_of(c.kernel)},
                    {"warmup", 1},
                    {"reps", 3},
                    {"paired_rounds", kPairedRounds},
                    {"paired_reps", kPairedReps},
                    {"min_fraction_of_roofline", floor_of(profile)},
                    {"normwise_tolerance", kNormwise}}});
  }
  return out;
}

/// The peaks the roofline is drawn from. The only place the suite reads them.
/// The peaks a case is judged on: the datasheet's (datasheet.h), never what the plugin declares.
struct Peaks {
  double flops = 0, bytes_per_s = 0;
  Datasheet datasheet;
};
Peaks peaks_of(const WorkerContext &ctx) {
  Peaks p;
  p.datasheet = datasheet_for(ctx);
  if (p.datasheet.ok) {
    p.flops = p.datasheet.flops("f32");
    p.bytes_per_s = p.datasheet.memory_bandwidth;
  }
  return p;
}

/// What a case does: operand shapes (the last is the output) and its work (for the roofline).
struct Workload {
  std::vector<std::vector<int64_t>> shapes;
  double flops = 0, bytes = 0;
  // The least elementwise work any kernel for the case does on a vector unit: simple
  // operations and exponentials (the vector ceilings of the roofline, where a datasheet has them).
  double vector_ops = 0, exp_ops = 0;
};

Workload workload_of(const std::string &kernel, const std::vector<int64_t> &d) {
  Workload w;
  if (kernel == "gemm") {
    w.shapes = {{d[0], d[2]}, {d[2], d[1]}, {d[0], d[1]}};
    w.flops = 2.0 * d[0] * d[1] * d[2];
    w.bytes = 4.0 * (d[0] * d[2] + d[2] * d[1] + d[0] * d[1]);
  } else if (kernel == "softmax") {
    w.shapes = {{d[0], d[1]}, {d[0], d[1]}};
    w.flops = 5.0 * d[0] * d[1]; // max, subtract, exp, sum, divide per element
    w.bytes = 2.0 * 4 * d[0] * d[1];
    // per element at least: the max, the sum and the normalization (the subtraction may fuse
    // into the exponential's argument), and one exponential
    w.vector_ops = 3.0 * d[0] * d[1];
    w.exp_ops = 1.0 * d[0] * d[1];
  } else {
    w.shapes = {{d[0]}, {d[0]}, {d[0]}};
    w.flops = double(d[0]);
    w.bytes = 3.0 * 4 * d[0];
    w.vector_ops = double(d[0]);
  }
  return w;
}

std::array<uint64_t, 3> grid_of(const std::string &kernel, const std::vector<int64_t> &d,
                                const std::vector<int64_t> &tile) {
  auto cdiv = [](int64_t a, int64_t b) { return static_cast<uint64_t>((a + b - 1) / b); };
  if (kernel == "gemm")
    return {cdiv(d[0], tile[0]), cdiv(d[1], tile[1]), 1};
  return {cdiv(d[0], tile[0]), 1, 1}; // softmax: rows, vector_add: elements
}

/// The fp64 result of the case on the f32 inputs, row-major like the output.
std::vector<double> reference(const std::string &kernel, const std::vector<int64_t> &d,
                              const std::vector<std::vector<float>> &in) {
  if (kernel == "gemm") {
    const int64_t m = d[0], n = d[1], k = d[2];
    std::vector<double> c(m * n, 0.0), row(n);
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t p = 0; p < k; ++p) {
        const double a = in[0][i * k + p];
        const float *b = &in[1][p * n];
        for (int64_t j = 0; j < n; ++j)
          row[j] += a * double(b[j]);
      }
      std::copy(row.begin(), row.end(), c.begin() + i * n);
    }
    return c;
  }
  if (kernel == "softmax") {
    const int64_t rows = d[0], cols = d[1];
    std::vector<double> y(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      const float *x = &in[0][r * cols];
      const double mx = *std::max_element(x, x + cols);
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c)
        sum += y[r * cols + c] = std::exp(double(x[c]) - mx);
      for (int64_t c = 0; c < cols; ++c)
        y[r * cols + c] /= sum;
    }
    return y;
  }
  std::vector<double> out(d[0]);
  for (int64_t i = 0; i < d[0]; ++i)
    out[i] = double(in[0][i]) + double(in[1][i]);
  return out;
}

/// f32 device buffers of the workload's shapes: random inputs in [-1, 1) (timing must not
/// depend on zeros being special), kept on the host for the reference, and the output.
struct Operands {
  std::vector<std::vector<float>> host; // the inputs
  std::vector<hal::Buffer> buffers;
  std::vector<tl_arg> args;
  int64_t out_elems = 0;
};

void fill_operands(hal::Device &dev, hal::Stream &s, const Workload &w, uint64_t seed,
                   Operands &out) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> u(-1, 1);
  for (size_t i = 0; i < w.shapes.size(); ++i) {
    int64_t n = 1;
    for (int64_t e : w.shapes[i])
      n *= e;
    out.buffers.push_back(dev.buffer(n * 4, TL_BUFFER_DEVICE_LOCAL));
    out.args.push_back(hal::tensor_arg(out.buffers.back(), TL_DTYPE_F32, w.shapes[i]));
    if (i + 1 == w.shapes.size()) {
      out.out_elems = n;
      break;
    }
    out.host.emplace_back(n);
    for (float &v : out.host.back())
      v = u(rng);
    s.copy_to_device(out.host.back().data(), out.buffers.back(), n * 4);
  }
  s.synchronize();
}

/// The launch arguments of candidate `cand`: the workload's tensors as they are, or in the op
/// library's GEMM form ("args": "ops_gemm", linear.gemm_kernel: a, b, bias, res, out as
/// (batch 1, rows, cols) views, the bias and residual unread, alpha 1).
std::vector<tl_arg> candidate_args(const json &cand, const Operands &ops,
                                   const std::vector<int64_t> &dims) {
  if (cand.value("args", "") != "ops_gemm")
    return ops.args;
  const int64_t m = dims[0], n = dims[1], k = dims[2];
  const hal::Buffer &a = ops.buffers[0], &b = ops.buffers[1], &c = ops.buffers[2];
  return {hal::tensor_arg(a, TL_DTYPE_F32, {1, m, k}), hal::tensor_arg(b, TL_DTYPE_F32, {1, k, n}),
          hal::tensor_arg(c, TL_DTYPE_F32, {n}),       hal::tensor_arg(c, TL_DTYPE_F32, {1, m, n}),
          hal::tensor_arg(c, TL_DTYPE_F32, {1, m, n}), hal::float_arg(TL_DTYPE_F32, 1.0)};
}

/// One candidate's figure: its time and whether its output after the timed runs is right.
struct Measured {
  double best_s = 0;
  std::string wrong; // "" or why the output is wrong
  json metrics;
};

/// Best device seconds of `op` (device_run's time_op: both clocks; an implausible device clock
/// throws, which the worker records as the test's failure); `ran`: repetitions run.
double timed_best(const WorkerContext &ctx, const hal::Device &dev, const hal::Stream &s,
                  const std::function<void()> &op, int warmup, int reps, int &ran) {
  const Timing t = time_op(dev, s, op, warmup, reps);
  if (std::string why = implausible_clock(t, datasheet_for(ctx).simulated_time); !why.empty())
    throw std::runtime_error(why);
  ran = static_cast<int>(t.device_s.size());
  return t.best_s;
}

/// Reads the output back into `out` (after the stream's work) and compares it with the fp64
/// reference under the fp32 contract.
CompareResult read_and_compare(const hal::Stream &s, const Operands &ops, std::vector<float> &out,
                               const TestDef &t, const std::vector<double> &ref) {
  s.copy_to_host(ops.buffers.back(), out.data(), out.size() * 4);
  s.synchronize();
  const std::vector<double> actual(out.begin(), out.end());
  Tolerance tol;
  tol.normwise = t.params["normwise_tolerance"].get<double>();
  tol.source = "the fp32 contract";
  return compare({ir::ScalarKind::F32, &actual, &ref, nullptr, 1}, tol);
}

/// Poisons the output (NaN: an unwritten element fails the check), times the candidate, then
/// reads the output back and compares it with the fp64 reference.
Measured measure(WorkerContext &ctx, const TestDef &t, const json &cand, LoadedKernel &k,
                 const Operands &ops, const std::vector<double> &ref) {
  const std::string kernel = t.params["kernel"];
  const std::vector<int64_t> dims = t.params["dims"];
  hal::Device dev(ctx.device);
  hal::Stream s = dev.stream();
  const auto grid = grid_of(kernel, dims, cand["tile"]);
  const std::vector<tl_arg> args = candidate_args(cand, ops, dims);
  std::vector<float> out(ops.out_elems, std::numeric_limits<float>::quiet_NaN());
  s.copy_to_device(out.data(), ops.buffers.back(), out.size() * 4);
  Measured r;
  int ran = 0;
  const double cpu0 = process_cpu_seconds();
  const auto wall0 = std::chrono::steady_clock::now();
  int executions = 0;
  r.best_s = timed_best(
      ctx, dev, s,
      [&] {
        ++executions;
        s.launch(k.exe, k.index, grid, args);
      },
      t.params["warmup"], t.params["reps"], ran);
  const double cpu_s = process_cpu_seconds() - cpu0,
               wall_s =
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  const CompareResult cmp = read_and_compare(s, ops, out, t, ref);
  r.metrics = {{"best_s", r.best_s},
               {"reps_run", ran},
               {"normwise", cmp.metrics["normwise"]},
               {"process_cpu_s", cpu_s},
               {"timed_wall_s", wall_s},
               {"busy_s", (executions - t.params["warmup"].get<int>()) * r.best_s}};
  if (!cmp.ok)
    r.wrong = "output check after the timed runs of " + cand["file"].get<std::string>() + ": " +
              cmp.message;
  return r;
}

/// A candidate's entry in the test's metrics: its file, and the target where it is a tuned
/// variant.
std::string candidate_key(const json &cand) {
  const std::string file = cand["file"], target = cand["target"];
  return target == "*" ? file : file + " [" + target + "]";
}

/// Whether `cand` runs here: its target and the limits it asserts.
std::string skip_reason(const json &cand, const std::string &target,
                        const std::vector<int64_t> &dims) {
  if (cand["target"] != "*" && cand["target"] != target)
    return "for target " + cand["target"].get<std::string>();
  const std::vector<int64_t> max_dims = cand["max_dims"];
  for (size_t i = 0; i < dims.size(); ++i)
    if (max_dims[i] > 0 && dims[i] > max_dims[i])
      return "dimension " + std::to_string(i) + " above its limit " + std::to_string(max_dims[i]);
  return {};
}

/// The bar: the floor's fraction of the roofline, raised (never lowered) by a stored baseline
/// less its margin. Records which bar applied and why.
double bar_of(const WorkerContext &ctx, const TestDef &t, double roof, json &m) {
  const double floor_bar = t.params["min_fraction_of_roofline"].get<double>() * roof;
  m["floor_flops_per_s"] = floor_bar;
  m["bar"] = "floor";
  m["baseline_flops_per_s"] = nullptr;
  const std::string path = ctx.paths.data_dir + "/baseline-" + ctx.plugin_name + ".json";
  if (!std::filesystem::exists(path)) {
    m["bar_why"] = "no baseline for plugin " + ctx.plugin_name;
    return floor_bar;
  }
  const json b = read_json(path);
  if (!b.contains("tests") || !b["tests"].contains(t.id)) {
    m["bar_why"] = "the baseline has no entry for the test";
    return floor_bar;
  }
  // A baseline is one device's figure: npusim simulates whatever chip its config describes (an
  // RTL matrix unit, a smaller array), and another chip's baseline would be a wrong bar.
  if (b.contains("device_name") && b["device_name"] != ctx.info.name) {
    m["bar_why"] = "the baseline was recorded on " + b["device_name"].get<std::string>() +
                   ", the device is " + ctx.info.name;
    return floor_bar;
  }
  const double margin = b.value("margin", 0.1);
  const double base = b["tests"][t.id].value("achieved_flops_per_s", 0.0);
  m["baseline_flops_per_s"] = base;
  m["baseline_margin"] = margin;
  if ((1 - margin) * base <= floor_bar) {
    m["bar_why"] = "the baseline less its margin is under the floor";
    return floor_bar;
  }
  m["bar"] = "baseline";
  m["bar_why"] = "the baseline less its margin is above the floor";
  return (1 - margin) * base;
}

std::string gflops(double v) { return std::to_string(v / 1e9) + " GFLOP/s"; }

/// A device on the host (a measured datasheet) is judged in paired rounds, as the bandwidth
/// suite judges it: each round times the winning candidate, then the kit's anchor of the
/// resource that bounds it by the run's anchors (memory: every STREAM kernel and memcpy at every
/// piece size; compute: the clock over windows as long as the candidate's run, on every
/// thread), and the round's roofline uses that figure. Adds one entry per round to `pairs`;
/// returns "" or why the test fails (the output wrong after the rounds, the plugin's threads
/// busy during an anchor, an implausible device clock).
std::string paired_rounds(WorkerContext &ctx, const TestDef &t, const Workload &w, const json &cand,
                          LoadedKernel &k, const Operands &ops, const std::vector<double> &ref,
                          const Peaks &peaks, json &pairs) {
  const HostAnchors before = HostAnchors::from_json(ctx.host_anchors);
  const bool memory_bound = w.bytes / peaks.bytes_per_s >= w.flops / peaks.flops;
  // The clock needs only the bench's threads, not its arrays.
  AnchorBench bench(memory_bound ? before.array_bytes : 64, before.threads);
  hal::Device dev(ctx.device);
  hal::Stream s = dev.stream();
  const auto grid = grid_of(t.params["kernel"], t.params["dims"], cand["tile"]);
  const std::vector<tl_arg> args = candidate_args(cand, ops, t.params["dims"]);
  std::vector<float> out(ops.out_elems, std::numeric_limits<float>::quiet_NaN());
  s.copy_to_device(out.data(), ops.buffers.back(), out.size() * 4);
  const int rounds = t.params["paired_rounds"], reps = t.params["paired_reps"];
  // The candidate's figure is the best of as many samples as each of the anchor's loop forms
  // (every piece size of it; the clock: its windows): on a noisy host the larger sample finds
  // the higher maximum (conformance/README.md, "Paired rounds": softmax's 2 intervals judged
  // against forms of 6 passes each).
  const int device_reps = reps * (memory_bound ? anchor_pieces_per_form("memory") : 1);
  Timing clock_samples; // every round's repetitions: the clock is judged on all of them
  for (int round = 0; round < rounds; ++round) {
    const Timing tm = time_op(
        dev, s, [&] { s.launch(k.exe, k.index, grid, args); }, 1, device_reps);
    append_samples(clock_samples, tm);
    std::this_thread::sleep_for(std::chrono::milliseconds(50)); // the plugin's pool sleeps
    const AnchorRound ar = memory_bound ? anchor_round(bench, "memory", 2 * reps)
                                        : clock_round(bench, tm.best_s, 2 * reps);
    if (!ar.wrong.empty())
      return ar.wrong;
    const double flops = memory_bound ? peaks.flops
                                      : double(before.f32_lanes) * before.fma_pipes * 2.0 *
                                            before.threads * ar.clock_hz;
    const double bytes = memory_bound ? ar.bytes_per_s : peaks.bytes_per_s;
    const double roof = w.flops / std::max(w.flops / flops, w.bytes / bytes);
    const double achieved = tm.best_s > 0 ? w.flops / tm.best_s : 0;
    pairs.push_back({{"achieved_flops_per_s", achieved},
                     {"peak_flops_per_s", flops},
                     {"peak_bytes_per_s", bytes},
                     {"paired", memory_bound ? "memory" : "compute"},
                     {"anchor_choice", ar.choice},
                     {"anchor_by_choice", ar.by_choice},
                     {"anchor_clock_hz", ar.clock_hz},
                     {"roofline_flops_per_s", roof},
                     {"ratio", roof > 0 ? achieved / roof : 0},
                     {"device_samples", tm.device_s.size() + tm.queued_s.size()},
                     {"anchor_samples_per_choice", ar.samples_per_choice},
                     {"anchor_samples_per_form", ar.samples_per_choice * device_reps / reps},
                     {"anchor_wall_s", ar.wall_s},
                     {"anchor_other_cpu_s", ar.other_cpu_s}});
    if (std::string why = anchor_busy(ar, round); !why.empty())
      return why;
  }
  if (std::string why = implausible_clock(clock_samples, peaks.datasheet.simulated_time);
      !why.empty())
    return why;
  if (const CompareResult cmp = read_and_compare(s, ops, out, t, ref); !cmp.ok)
    return "output check after the paired rounds of " + cand["file"].get<std::string>() + ": " +
           cmp.message;
  return {};
}

Outcome run_performance(WorkerContext &ctx, const TestDef &t) {
  const std::string target = compile_target(ctx.info, ctx.paths);
  if (target.empty())
    return Outcome::not_supported("no compiler backend for the device's targets");
  Peaks peaks = peaks_of(ctx);
  if (!peaks.datasheet.ok)
    return Outcome::fail(peaks.datasheet.reason, {{"datasheet", peaks.datasheet.summary()}});
  if (peaks.flops <= 0 || peaks.bytes_per_s <= 0)
    return Outcome::fail("datasheet " + peaks.datasheet.path +
                         " declares no peak_flops.f32 or memory_bandwidth_bytes_per_s");
  const std::string kernel = t.params["kernel"];
  const std::vector<int64_t> dims = t.params["dims"];
  const Workload w = workload_of(kernel, dims);
  hal::Device dev(ctx.device);
  hal::Stream s = dev.stream();
  Operands ops;
  fill_operands(dev, s, w, ctx.seed, ops);
  const std::vector<double> ref = reference(kernel, dims, ops.host);

  json per = json::object();
  LoadedKernel winner_kernel;
  json winner_cand;
  double best = 0, cpu_s = 0, timed_wall_s = 0, busy_s = 0;
  std::string winner;
  std::string winner_key;
  for (const json &cand : t.params["candidates"]) {
    const std::string file = cand["file"];
    // One file may be a candidate for several targets (suite 1.6 timed softmax_cpu.tlir on
    // llvm-cpu and nvptx): keyed by file alone, the skipped target's entry replaced the measured
    // one.
    const std::string key = candidate_key(cand);
    if (std::string why = skip_reason(cand, target, dims); !why.empty()) {
      per[key] = {{"skipped", why}};
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    const std::string text = read_file(ctx.paths.source_dir + "/" + file);
    std::vector<uint8_t> blob;
    try {
      blob = compile_tlir(text, target, ctx.paths);
    } catch (const std::runtime_error &e) {
      // A tuned variant may not fit this device (another chip's scratchpad): it does not count,
      // and the metrics say why. The library kernel must compile everywhere.
      if (cand["target"] == "*")
        throw;
      per[key] = {{"skipped", std::string("does not compile for the device: ") + e.what()}};
      continue;
    }
    LoadedKernel k{dev.load(blob.data(), blob.size()), 0};
    k.index = k.exe.find_kernel(cand["kernel"]);
    Measured r = measure(ctx, t, cand, k, ops, ref);
    // the host's time for compile, runs and check: what a simulator costs, for sizing the suite
    r.metrics["host_s"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.metrics["achieved_flops_per_s"] = r.best_s > 0 ? w.flops / r.best_s : 0;
    per[key] = r.metrics;
    cpu_s += r.metrics["process_cpu_s"].get<double>();
    timed_wall_s += r.metrics["timed_wall_s"].get<double>();
    busy_s += r.metrics["busy_s"].get<double>();
    if (!r.wrong.empty())
      return Outcome::fail(r.wrong, {{"candidates", per}});
    if (r.best_s > 0 && (best == 0 || r.best_s < best)) {
      best = r.best_s;
      winner = file;
      winner_key = key;
      winner_kernel = std::move(k);
      winner_cand = cand;
    }
  }
  json anchor_metrics = json::object(), pairs = json::array();
  std::string busy;
  if (peaks.datasheet.measured) {
    // A device on the host: the winner in paired rounds with the kit's anchor (above).
    anchor_metrics["host_anchors_before"] = ctx.host_anchors;
    if (best > 0)
      busy = paired_rounds(ctx, t, w, winner_cand, winner_kernel, ops, ref, peaks, pairs);
  }
  double achieved = best > 0 ? w.flops / best : 0;
  const double intensity = w.flops / w.bytes;
  // The roofline as the least time any kernel needs: the arithmetic at the f32 peak, the bytes
  // at the memory bandwidth, and, where the datasheet declares a vector unit, its elementwise
  // work (one unit runs every elementwise operation, so those times add).
  const Datasheet &ds = peaks.datasheet;
  const double compute_s = w.flops / peaks.flops, memory_s = w.bytes / peaks.bytes_per_s;
  const double vector_s = (ds.vector_ops > 0 ? w.vector_ops / ds.vector_ops : 0) +
                          (ds.exp_ops > 0 ? w.exp_ops / ds.exp_ops : 0);
  const double bound_s = std::max({compute_s, memory_s, vector_s});
  double roof = w.flops / bound_s;
  const char *bound = bound_s == memory_s ? "memory" : bound_s == compute_s ? "compute" : "vector";
  double peak_flops = peaks.flops, peak_bytes = peaks.bytes_per_s;
  if (!pairs.empty()) {
    // Judged on the round whose ratio is the median (an odd count: its figures give the
    // fraction exactly); the best over the candidates stays in best_s.
    const json &median = pairs[median_round(pairs)];
    achieved = median["achieved_flops_per_s"];
    roof = median["roofline_flops_per_s"];
    peak_flops = median["peak_flops_per_s"];
    peak_bytes = median["peak_bytes_per_s"];
  }
  json m = {{"kernel", kernel},
            {"target", target},
            {"winner", winner},
            {"winner_candidate", winner_key},
            {"candidates", per},
            {"flops", w.flops},
            {"bytes", w.bytes},
            {"best_s", best},
            {"achieved_flops_per_s", achieved},
            {"intensity", intensity},
            {"best_flops_per_s", best > 0 ? w.flops / best : 0},
            {"peak_flops_per_s", peak_flops},
            {"peak_bytes_per_s", peak_bytes},
            {"roofline_flops_per_s", roof},
            {"roofline_bound", bound},
            {"bound_s", {{"compute", compute_s}, {"memory", memory_s}, {"vector", vector_s}}},
            {"fraction_of_roofline", roof > 0 ? achieved / roof : 0}};
  m["datasheet"] = peaks.datasheet.summary();
  m["process_cpu_s"] = cpu_s;
  m["timed_wall_s"] = timed_wall_s;
  m["busy_s"] = busy_s;
  m.update(anchor_metrics);
  if (!pairs.empty())
    m["paired_rounds"] = pairs;
  if (!busy.empty())
    return Outcome::fail(busy, m);
  if (peaks.datasheet.measured)
    if (std::string why = host_cpu_evidence(cpu_s, busy_s); !why.empty())
      return Outcome::fail(why, m);
  if (peaks.flops <= 0 || peaks.bytes_per_s <= 0)
    return Outcome::fail("datasheet " + peaks.datasheet.path +
                             " declares no peak_flops.f32 or memory_bandwidth_bytes_per_s",
                         m);
  if (std::string why = implausible_fraction(
          achieved, roof,
          pairs.empty() ? std::string("the roofline of the datasheet")
                        : "the roofline of the kit's anchors in the same rounds (the median of " +
                              std::to_string(pairs.size()) + " rounds' ratios)");
      !why.empty())
    return Outcome::fail(why, m);
  const double bar = bar_of(ctx, t, roof, m);
  m["bar_flops_per_s"] = bar;
  if (!(achieved >= bar))
    return Outcome::fail(gflops(achieved) + " (" + winner +
                             ") = " + std::to_string(100 * achieved / roof) + "% of the roofline " +
                             gflops(roof) + ", under the " + m["bar"].get<std::string>() + " bar " +
                             gflops(bar) + " (" + m["bar_why"].get<std::string>() + ")",
                         m);
  return Outcome::pass(m);
}

} // namespace

Suite performance_suite() { return {"performance", list_performance, run_performance}; }

} // namespace tl::conform
