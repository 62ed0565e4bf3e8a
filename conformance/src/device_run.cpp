// Running generated Tile IR on a HAL device and on the reference interpreter.
// SPDX-License-Identifier: Apache-2.0
#include "device_run.h"

#include "host_anchor.h"

#include "process.h"

#include "tl/compiler/pipeline.h"
#include "tl/interpreter/interpreter.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
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

Timing time_op(const hal::Device &device, const hal::Stream &stream,
               const std::function<void()> &op, int warmup, int reps) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < warmup; ++i)
    op();
  stream.synchronize();
  hal::Event start = device.event(), end = device.event();
  // Simulated time is deterministic: once two repetitions agree, more would only repeat them.
  const bool simulated = device.info().flags & TL_DEVICE_SIMULATED_TIME;
  Timing t;
  const Clock::time_point loop0 = Clock::now();
  const double cpu0 = process_cpu_seconds();
  for (int i = 0; i < reps; ++i) {
    const Clock::time_point w0 = Clock::now();
    stream.record(start);
    op();
    ++t.ops_timed;
    stream.record(end);
    end.synchronize();
    const std::chrono::duration<double> wall = Clock::now() - w0;
    double s = end.elapsed_ms_since(start) / 1e3;
    t.device_s.push_back(s);
    t.wall_s.push_back(wall.count());
    if (!simulated) {
      // On an idle stream the start event completes at once and the interval also holds the
      // host's launch of the op (microseconds: a third of a 20 us kernel). Behind a leading op
      // the stream is busy while the host queues the start event, the op and the end event,
      // so the interval is the op alone (an op shorter than a launch still shows part of it).
      op();
      stream.record(start);
      op();
      stream.record(end);
      t.ops_timed += 2;
      end.synchronize();
      t.queued_s.push_back(end.elapsed_ms_since(start) / 1e3);
      s = std::min(s, t.queued_s.back());
    }
    if (i == 0 || s < t.best_s)
      t.best_s = s;
    if (simulated && i > 0 && s == t.device_s[i - 1])
      break;
  }
  t.cpu_s = process_cpu_seconds() - cpu0;
  t.loop_wall_s = std::chrono::duration<double>(Clock::now() - loop0).count();
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

void append_samples(Timing &all, const Timing &more) {
  all.device_s.insert(all.device_s.end(), more.device_s.begin(), more.device_s.end());
  all.wall_s.insert(all.wall_s.end(), more.wall_s.begin(), more.wall_s.end());
  all.queued_s.insert(all.queued_s.end(), more.queued_s.begin(), more.queued_s.end());
}

} // namespace tl::conform
