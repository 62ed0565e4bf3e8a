// Running generated Tile IR on a HAL device and on the reference interpreter.
// SPDX-License-Identifier: Apache-2.0
#include "device_run.h"

#include "process.h"

#include "tl/compiler/pipeline.h"
#include "tl/interpreter/interpreter.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace tl::conform {
namespace {

std::unique_ptr<ir::Module> parse_verified(const std::string &tlir) {
  ir::Diagnostics d;
  auto m = ir::parse(tlir, "generated.tlir", d);
  if (!m || !ir::verify(*m, d))
    throw std::runtime_error("invalid generated Tile IR:\n" + d.str());
  return m;
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);)
    if (!item.empty())
      out.push_back(item);
  return out;
}

} // namespace

std::vector<uint8_t> compile_tlir(const std::string &tlir, const std::string &target,
                                  const Paths &paths) {
  auto m = parse_verified(tlir);
  std::string error;
  std::vector<uint8_t> blob = compile::build_executable(*m, target, "tl-conform", &error);
  if (blob.empty())
    throw std::runtime_error("cannot compile for target " + target + ": " + error);
  return blob;
}

std::string compile_target(const tl_device_info &info, const Paths &paths) {
  const auto targets = split(info.targets, ',');
  if (!paths.target.empty())
    return std::find(targets.begin(), targets.end(), paths.target) != targets.end() ? paths.target
                                                                                    : "";
  std::string error;
  return compile::target_for_device(info.target, info.targets, &error);
}

LoadedKernel load_kernel(WorkerContext &ctx, const std::string &tlir, const std::string &kernel) {
  auto blob = compile_tlir(tlir, compile_target(ctx.info, ctx.paths), ctx.paths);
  hal::Device dev(ctx.device);
  LoadedKernel k{dev.load(blob.data(), blob.size()), 0};
  k.index = k.exe.find_kernel(kernel);
  return k;
}

void run_on_device(WorkerContext &ctx, const std::string &tlir, const std::string &kernel,
                   std::array<uint64_t, 3> grid, const std::vector<KernelArg> &args) {
  LoadedKernel k = load_kernel(ctx, tlir, kernel);
  std::vector<hal::HostArg> host_args;
  for (const KernelArg &a : args) {
    if (auto *t = std::get_if<interp::HostTensor *>(&a))
      host_args.push_back(hal::HostArg::tensor(
          (*t)->data(), (*t)->size_bytes(), static_cast<tl_dtype>((*t)->dtype()), (*t)->shape()));
    else if (auto *i = std::get_if<int64_t>(&a))
      host_args.push_back(hal::HostArg::integer(*i));
    else
      host_args.push_back(hal::HostArg::real(std::get<double>(a)));
  }
  hal::run_with_host_args(hal::Device(ctx.device), k.exe, k.index, grid, host_args);
}

void run_on_interpreter(const std::string &tlir, const std::string &kernel,
                        std::array<uint64_t, 3> grid, const std::vector<KernelArg> &args,
                        bool fp64_reference) {
  auto m = parse_verified(tlir);
  const ir::Kernel *k = m->find_kernel(kernel);
  if (!k)
    throw std::runtime_error("no kernel '" + kernel + "'");
  std::vector<interp::ArgValue> values;
  for (const KernelArg &a : args) {
    if (auto *t = std::get_if<interp::HostTensor *>(&a))
      values.push_back((*t)->arg());
    else if (auto *i = std::get_if<int64_t>(&a))
      values.push_back(*i);
    else
      values.push_back(std::get<double>(a));
  }
  interp::RunOptions opts;
  opts.grid = {int64_t(grid[0]), int64_t(grid[1]), int64_t(grid[2])};
  opts.fp64_reference = fp64_reference;
  interp::RunResult r = interp::run(*k, values, opts);
  if (!r.ok)
    throw std::runtime_error("interpreter: " + r.error);
}

namespace {

/// The blocking lead: one program spinning through a dependent chain of integer multiply-adds
/// (nothing can shorten it) that writes its 4-byte result, so that it cannot be removed.
constexpr const char *kLeadTlir = R"(kernel @tl_conform_lead(%out: tensor<?xi32>, %n: i32) {
  %c0 = constant {value = 0} : i32
  %c1 = constant {value = 1} : i32
  %mul = constant {value = 1103515245} : i32
  %inc = constant {value = 12345} : i32
  %x = for %i = %c0 to %n step %c1 iter_args(%v = %c1) : i32 {
    %p = mul %v, %mul : i32
    %q = add %p, %inc : i32
    yield %q
  }
  %t = splat %x : tile<1xi32>
  store %out, %c0, %t
  return
}
)";
constexpr double kLeadMs = 0.2; // past any host's queueing of two events and one op
constexpr int64_t kLeadMaxTrips = int64_t(1) << 30;

} // namespace

std::function<void()> blocking_lead(WorkerContext &ctx, const hal::Stream &stream) {
  hal::Device dev(ctx.device);
  struct Lead {
    LoadedKernel kernel;
    hal::Buffer out;
    int64_t trips = 4096;
  };
  auto lead = std::make_shared<Lead>(
      Lead{load_kernel(ctx, kLeadTlir, "tl_conform_lead"), dev.buffer(4, TL_BUFFER_DEVICE_LOCAL)});
  auto launch = [lead, &stream] {
    stream.launch(
        lead->kernel.exe, lead->kernel.index, {1, 1, 1},
        {hal::tensor_arg(lead->out, TL_DTYPE_I32, {1}), hal::int_arg(TL_DTYPE_I32, lead->trips)});
  };
  if (dev.info().flags & TL_DEVICE_SIMULATED_TIME)
    return launch; // unused: simulated intervals hold no host time
  // Trips for kLeadMs on this device, from its own idle-stream intervals. A device whose
  // clock runs slow or fast only shortens or lengthens its lead (implausible_clock checks the
  // clock); the host's wall clock bounds the lead's growth at 4 kLeadMs.
  using Clock = std::chrono::steady_clock;
  hal::Event start = dev.event(), end = dev.event();
  launch();
  for (int i = 0; i < 32; ++i) {
    const Clock::time_point w0 = Clock::now();
    stream.record(start);
    launch();
    stream.record(end);
    end.synchronize();
    const std::chrono::duration<double, std::milli> wall = Clock::now() - w0;
    const double ms = end.elapsed_ms_since(start);
    if (ms >= kLeadMs || wall.count() >= 4 * kLeadMs || lead->trips >= kLeadMaxTrips)
      break;
    const double scale = ms > 0 ? std::min(16.0, 1.25 * kLeadMs / ms) : 16.0;
    lead->trips = std::min<int64_t>(
        kLeadMaxTrips,
        std::max<int64_t>(lead->trips + 1, static_cast<int64_t>(lead->trips * scale)));
  }
  return launch;
}

Timing time_op(const hal::Device &device, const hal::Stream &stream,
               const std::function<void()> &op, int warmup, int reps,
               const std::function<void()> &lead) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i)
    op();
  stream.synchronize();
  hal::Event start = device.event(), end = device.event();
  // Simulated time is deterministic: once two repetitions agree, more would only repeat them.
  const bool simulated = device.info().flags & TL_DEVICE_SIMULATED_TIME;
  Timing t;
  for (int i = 0; i < reps; ++i) {
    const Clock::time_point w0 = Clock::now();
    stream.record(start);
    op();
    stream.record(end);
    end.synchronize();
    const std::chrono::duration<double> wall = Clock::now() - w0;
    double s = end.elapsed_ms_since(start) / 1e3;
    t.device_s.push_back(s);
    t.wall_s.push_back(wall.count());
    if (!simulated) {
      // On an idle stream the start event completes at once and the interval also holds the
      // host's launch of the op (microseconds: a third of a 20 us kernel). Behind the blocking
      // lead the stream is busy while the host queues the start event, the op and the end
      // event, so the interval is the op alone. A run of the op itself as the lead held part
      // of that run's end: a 1024^3 f32 GEMM on the H200 measured 65.5 us behind itself and
      // 62.1 behind a spin (bench/cuda/README.md).
      lead();
      stream.record(start);
      op();
      stream.record(end);
      end.synchronize();
      t.queued_s.push_back(end.elapsed_ms_since(start) / 1e3);
      s = std::min(s, t.queued_s.back());
    }
    if (i == 0 || s < t.best_s)
      t.best_s = s;
    if (simulated && i > 0 && s == t.device_s[i - 1])
      break;
  }
  return t;
}

std::string implausible_clock(const Timing &t, bool simulated_time) {
  if (simulated_time || t.wall_s.empty())
    return {};
  // The repetition the host saw finish soonest: the least disturbed by a loaded machine, which
  // only ever lengthens the wall time. A clock that runs fast is short in every repetition.
  const size_t i = std::min_element(t.wall_s.begin(), t.wall_s.end()) - t.wall_s.begin();
  if (t.device_s[i] >= 0.5 * t.wall_s[i] - 0.25e-3)
    return {};
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "implausible: repetition %zu took %.3f ms on the device's clock but %.3f ms on the "
                "host's wall clock (a device interval must be at least 0.5 x wall - 0.25 ms)",
                i, 1e3 * t.device_s[i], 1e3 * t.wall_s[i]);
  return buf;
}

} // namespace tl::conform
