// Running generated Tile IR on a HAL device and on the reference interpreter.
// SPDX-License-Identifier: Apache-2.0
#include "device_run.h"

#include "process.h"

#include "tl/compiler/pipeline.h"
#include "tl/interpreter/interpreter.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <algorithm>
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
    return std::find(targets.begin(), targets.end(), paths.target) != targets.end()
               ? paths.target
               : "";
  // The device's preference order: its preferred target first, then the rest it accepts.
  std::vector<std::string> order{info.target};
  for (const std::string &t : targets)
    if (t != info.target)
      order.push_back(t);
  std::string error;
  return compile::target_for_device(order, &error);
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
  hal::Device dev(ctx.device);
  LoadedKernel k = load_kernel(ctx, tlir, kernel);
  hal::Stream s = dev.stream();
  std::vector<hal::Buffer> buffers;
  std::vector<tl_arg> launch_args;
  buffers.reserve(args.size());
  for (const KernelArg &a : args) {
    if (auto *t = std::get_if<interp::HostTensor *>(&a)) {
      interp::HostTensor &h = **t;
      buffers.push_back(dev.buffer(std::max<uint64_t>(1, h.size_bytes()), TL_BUFFER_DEVICE_LOCAL));
      if (h.size_bytes())
        s.copy_to_device(h.data(), buffers.back(), h.size_bytes());
      launch_args.push_back(
          hal::tensor_arg(buffers.back(), static_cast<tl_dtype>(h.dtype()), h.shape()));
    } else if (auto *i = std::get_if<int64_t>(&a)) {
      launch_args.push_back(hal::int_arg(TL_DTYPE_I32, *i));
    } else {
      launch_args.push_back(hal::float_arg(TL_DTYPE_F32, std::get<double>(a)));
    }
  }
  // Scalars take the kernel's declared dtype.
  for (uint32_t p = 0; p < launch_args.size(); ++p) {
    tl_param_info info{};
    info.struct_size = sizeof info;
    hal::check(tl_executable_param_info(k.exe.get(), k.index, p, &info));
    if (info.kind == TL_PARAM_SCALAR)
      launch_args[p].dtype = info.dtype;
  }
  s.launch(k.exe, k.index, grid, launch_args);
  size_t b = 0;
  for (const KernelArg &a : args)
    if (auto *t = std::get_if<interp::HostTensor *>(&a)) {
      if ((*t)->size_bytes())
        s.copy_to_host(buffers[b], (*t)->data(), (*t)->size_bytes());
      ++b;
    }
  s.synchronize();
}

void run_on_interpreter(const std::string &tlir, const std::string &kernel,
                        std::array<uint64_t, 3> grid, const std::vector<KernelArg> &args) {
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
  interp::RunResult r = interp::run(*k, values, opts);
  if (!r.ok)
    throw std::runtime_error("interpreter: " + r.error);
}

double best_seconds(const hal::Device &device, const hal::Stream &stream,
                    const std::function<void()> &op, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i)
    op();
  stream.synchronize();
  hal::Event start = device.event(), end = device.event();
  double best = 0;
  for (int i = 0; i < reps; ++i) {
    stream.record(start);
    op();
    stream.record(end);
    end.synchronize();
    const double s = end.elapsed_ms_since(start) / 1e3;
    if (i == 0 || s < best)
      best = s;
  }
  return best;
}

} // namespace tl::conform
