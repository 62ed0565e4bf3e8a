// The performance suite: library kernels timed on the device (best of N after a warm-up) and
// placed on the roofline of the device's declared peaks, then held against a stored baseline
// (data/baseline-<plugin>.json): a regression beyond the baseline's margin fails.
// SPDX-License-Identifier: Apache-2.0
#include "datasheet.h"
#include "device_run.h"

#include <algorithm>
#include <filesystem>
#include <random>

namespace tl::conform {
namespace {

struct PerfCase {
  std::string name, kernel_file, kernel;
  std::vector<int64_t> dims; // gemm: M N K; softmax: rows cols; vector_add: n
  bool core;
};

const std::vector<PerfCase> &cases() {
  static const std::vector<PerfCase> c = {
      {"gemm.f32.256", "gemm.tlir", "gemm", {256, 256, 256}, true},
      {"softmax.f32.256x1024", "softmax.tlir", "softmax", {256, 1024}, true},
      {"vector_add.f32.4M", "vector_add.tlir", "vector_add", {1 << 22}, true},
      {"gemm.f32.512", "gemm.tlir", "gemm", {512, 512, 512}, false},
      {"gemm.f32.129x257x65", "gemm.tlir", "gemm", {129, 257, 65}, false},
  };
  return c;
}

std::vector<TestDef> list_performance(const ListContext &) {
  std::vector<TestDef> out;
  for (const PerfCase &c : cases())
    out.push_back({"performance." + c.name,
                   "performance",
                   c.core ? "core" : "full",
                   300,
                   true,
                   {{"kernel", "kernels/tlir/" + c.kernel_file},
                    {"dims", c.dims},
                    {"warmup", 1},
                    {"reps", 3}}});
  return out;
}

/// The baseline for the device's plugin, or an empty object when there is none.
json load_baseline(const WorkerContext &ctx) {
  const std::string path = ctx.paths.data_dir + "/baseline-" + ctx.plugin_name + ".json";
  if (!std::filesystem::exists(path))
    return json::object();
  return read_json(path);
}

/// What a case runs: operand shapes, grid, and the work it does (for the roofline).
struct Workload {
  std::vector<std::vector<int64_t>> shapes;
  std::array<uint64_t, 3> grid{1, 1, 1};
  double flops = 0, bytes = 0;
};

Workload workload_of(const PerfCase &c) {
  Workload w;
  const auto &d = c.dims;
  auto cdiv = [](int64_t a, int64_t b) { return static_cast<uint64_t>((a + b - 1) / b); };
  if (c.kernel == "gemm") {
    w.shapes = {{d[0], d[2]}, {d[2], d[1]}, {d[0], d[1]}};
    w.grid = {cdiv(d[0], 32), cdiv(d[1], 32), 1};
    w.flops = 2.0 * d[0] * d[1] * d[2];
    w.bytes = 4.0 * (d[0] * d[2] + d[2] * d[1] + d[0] * d[1]);
  } else if (c.kernel == "softmax") {
    w.shapes = {{d[0], d[1]}, {d[0], d[1]}};
    w.grid = {uint64_t(d[0]), 1, 1};
    w.flops = 5.0 * d[0] * d[1]; // max, subtract, exp, sum, divide per element
    w.bytes = 2.0 * 4 * d[0] * d[1];
  } else {
    w.shapes = {{d[0]}, {d[0]}, {d[0]}};
    w.grid = {cdiv(d[0], 256), 1, 1};
    w.flops = double(d[0]);
    w.bytes = 3.0 * 4 * d[0];
  }
  return w;
}

/// f32 device buffers of the given shapes, holding random values (timing must not depend on
/// zeros being special), and the tensor arguments naming them.
struct Operands {
  std::vector<hal::Buffer> buffers;
  std::vector<tl_arg> args;
};

void fill_operands(hal::Device &dev, hal::Stream &s, const Workload &w, uint64_t seed,
                   Operands &out) {
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::uniform_real_distribution<float> u(-1, 1);
  for (const auto &shape : w.shapes) {
    int64_t n = 1;
    for (int64_t e : shape)
      n *= e;
    std::vector<float> host(n);
    for (float &v : host)
      v = u(rng);
    out.buffers.push_back(dev.buffer(n * 4, TL_BUFFER_DEVICE_LOCAL));
    s.copy_to_device(host.data(), out.buffers.back(), n * 4);
    s.synchronize(); // `host` must outlive the asynchronous copy
    out.args.push_back(hal::tensor_arg(out.buffers.back(), TL_DTYPE_F32, shape));
  }
}

/// The achieved rate against the stored baseline: below its roofline fraction or beyond its
/// regression margin fails; without a stored result the rate is reported, not judged.
Outcome judge_against_baseline(const WorkerContext &ctx, const TestDef &t, double achieved,
                               double roof, json m) {
  const json baseline = load_baseline(ctx);
  const double margin = baseline.value("margin", 0.1);
  m["baseline_margin"] = margin;
  const double min_fraction = baseline.value("min_fraction_of_roofline", 0.0);
  if (min_fraction > 0 && achieved < min_fraction * roof)
    return Outcome::fail("reaches " + std::to_string(100 * achieved / roof) +
                             "% of the roofline, the baseline requires " +
                             std::to_string(100 * min_fraction) + "%",
                         m);
  if (baseline.contains("tests") && baseline["tests"].contains(t.id)) {
    const double base = baseline["tests"][t.id].value("achieved_flops_per_s", 0.0);
    m["baseline_flops_per_s"] = base;
    if (achieved < (1 - margin) * base)
      return Outcome::fail("regression: " + std::to_string(achieved / 1e9) +
                               " GFLOP/s against a "
                               "baseline of " +
                               std::to_string(base / 1e9) + " GFLOP/s (margin " +
                               std::to_string(int(margin * 100)) + "%)",
                           m);
  } else {
    m["baseline_flops_per_s"] = nullptr; // nothing stored yet: reported, not judged
  }
  return Outcome::pass(m);
}

Outcome run_performance(WorkerContext &ctx, const TestDef &t) {
  const PerfCase *c = nullptr;
  for (const PerfCase &pc : cases())
    if ("performance." + pc.name == t.id)
      c = &pc;
  if (!c)
    return Outcome::fail("no performance case '" + t.id + "'");
  if (compile_target(ctx.info, ctx.paths).empty())
    return Outcome::not_supported("no compiler backend for the device's targets");
  // The peaks are the datasheet's (datasheet.h), never what the plugin declares.
  const Datasheet ds = datasheet_for(ctx);
  if (!ds.ok)
    return Outcome::fail(ds.reason, {{"datasheet", ds.summary()}});
  const double peak_flops = ds.flops("f32");
  const double peak_bw = ds.memory_bandwidth;
  if (peak_flops <= 0 || peak_bw <= 0)
    return Outcome::fail("datasheet " + ds.path + " declares no peak_flops.f32 or " +
                         "memory_bandwidth_bytes_per_s");
  const std::string src = read_file(ctx.paths.source_dir + "/kernels/tlir/" + c->kernel_file);

  hal::Device dev(ctx.device);
  hal::Stream s = dev.stream();
  LoadedKernel k = load_kernel(ctx, src, c->kernel);
  const Workload w = workload_of(*c);
  Operands ops;
  fill_operands(dev, s, w, ctx.seed, ops);
  const double best = best_seconds(
      dev, s, [&] { s.launch(k.exe, k.index, w.grid, ops.args); }, t.params["warmup"],
      t.params["reps"]);
  const double achieved = best > 0 ? w.flops / best : 0;
  const double intensity = w.flops / w.bytes;
  const double roof = std::min(peak_flops, intensity * peak_bw);
  json m = {{"kernel", c->kernel},
            {"flops", w.flops},
            {"bytes", w.bytes},
            {"best_s", best},
            {"achieved_flops_per_s", achieved},
            {"intensity", intensity},
            {"peak_flops_per_s", peak_flops},
            {"peak_bytes_per_s", peak_bw},
            {"roofline_flops_per_s", roof},
            {"fraction_of_roofline", roof > 0 ? achieved / roof : 0}};
  m["datasheet"] = ds.summary();
  if (std::string why = implausible_fraction(achieved, roof, "the roofline of the datasheet");
      !why.empty())
    return Outcome::fail(why, m);
  return judge_against_baseline(ctx, t, achieved, roof, std::move(m));
}

} // namespace

Suite performance_suite() { return {"performance", list_performance, run_performance}; }

} // namespace tl::conform
