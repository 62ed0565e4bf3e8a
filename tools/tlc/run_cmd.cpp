// tlc run: runs a kernel on the reference interpreter with .npy, zero or random inputs.
// SPDX-License-Identifier: Apache-2.0
#include "tlc.h"

#include "tl/compiler/targets.h"
#include "tl/format/executable.h"
#include "tl/hal.hpp"
#include "tl/interpreter/host_tensor.h"
#include "tl/ir/printer.h"
#include "tl/npy/npy.h"

#include <boost/program_options.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>

namespace po = boost::program_options;

namespace tl::tlc {
namespace {

std::vector<int64_t> parse_dims(const std::string &s, char sep, const std::string &what) {
  std::vector<int64_t> dims;
  size_t p = 0;
  while (p <= s.size()) {
    size_t q = s.find(sep, p);
    if (q == std::string::npos)
      q = s.size();
    std::string item = s.substr(p, q - p);
    if (item.empty() || item.size() > 12 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      throw std::runtime_error("bad " + what + " '" + s + "'");
    dims.push_back(std::stoll(item));
    p = q + 1;
  }
  return dims;
}

void fill_random(interp::HostTensor &t, std::mt19937_64 &rng) {
  const ir::ScalarKind k = t.dtype();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (ir::is_float(k))
      t.set(i, std::uniform_real_distribution<double>(-1.0, 1.0)(rng));
    else if (k == ir::ScalarKind::I1)
      t.set(i, static_cast<double>(rng() & 1));
    else if (ir::is_signed(k))
      t.set(i, static_cast<double>(std::uniform_int_distribution<int>(-8, 8)(rng)));
    else
      t.set(i, static_cast<double>(std::uniform_int_distribution<int>(0, 16)(rng)));
  }
}

/// One `name=spec` argument: file.npy, zeros:AxB, AxB (random), or a scalar number.
struct ArgSpec {
  std::string name, spec;
};

/// A kernel parameter as the command line sees it: from the Tile IR or an executable's metadata.
struct Param {
  std::string name;
  ir::Type type;
};

interp::HostTensor make_tensor(const Param &param, const std::string &spec, std::mt19937_64 &rng) {
  const ir::Type &t = param.type;
  interp::HostTensor host;
  if (spec.size() > 4 && spec.substr(spec.size() - 4) == ".npy") {
    host = npy::load(spec);
    if (host.dtype() != t.elem())
      host = host.converted(t.elem());
  } else {
    const bool zeros = spec.rfind("zeros:", 0) == 0;
    host = interp::HostTensor(t.elem(), parse_dims(zeros ? spec.substr(6) : spec, 'x', "shape"));
    if (!zeros)
      fill_random(host, rng);
  }
  if (static_cast<int>(host.shape().size()) != t.rank())
    throw std::runtime_error("argument %" + param.name + " needs a rank-" +
                             std::to_string(t.rank()) + " tensor, got rank " +
                             std::to_string(host.shape().size()) + " from '" + spec + "'");
  return host;
}

interp::ArgValue make_scalar(const Param &param, const std::string &spec) {
  size_t used = 0;
  try {
    if (ir::is_float(param.type.elem())) {
      double d = std::stod(spec, &used);
      if (used == spec.size())
        return d;
    } else {
      long long v = std::stoll(spec, &used);
      if (used == spec.size())
        return static_cast<int64_t>(v);
    }
  } catch (const std::exception &) {
  }
  throw std::runtime_error("argument %" + param.name + " of type " + param.type.str() +
                           " cannot take '" + spec + "'");
}

void report(const std::string &name, const interp::HostTensor &t) {
  double sum = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i)
    sum += t.get(i);
  std::string shape;
  for (int64_t d : t.shape())
    shape += (shape.empty() ? "" : "x") + std::to_string(d);
  std::cout << name << ": " << ir::scalar_name(t.dtype()) << "[" << shape << "] sum=" << sum
            << " values=[";
  for (int64_t i = 0; i < std::min<int64_t>(t.num_elements(), 8); ++i)
    std::cout << (i ? ", " : "") << t.get(i);
  std::cout << (t.num_elements() > 8 ? ", ...]\n" : "]\n");
}

/// Runs `kernel` of `module` on a HAL device: compiled for the target the compiler chooses for
/// it, inputs copied in, outputs copied back into `tensors`.
void run_on_device(const std::string &device_name, ir::Module *module, std::vector<uint8_t> blob,
                   const std::string &kernel, const std::vector<Param> &params,
                   std::vector<interp::HostTensor> &tensors,
                   const std::vector<interp::ArgValue> &args, std::array<uint64_t, 3> grid) {
  hal::Runtime rt;
  hal::Device dev = rt.device(device_name);
  if (module) {
    const tl_device_info info = dev.info();
    std::string error;
    const std::string target = compile::target_for_device(info.target, info.targets, &error);
    if (target.empty())
      throw std::runtime_error("device '" + std::string(info.name) + "': " + error);
    blob = build_executable(*module, target, &error);
    if (blob.empty())
      throw std::runtime_error("cannot compile for " + target + ": " + error);
  }
  hal::Executable exe = dev.load(blob.data(), blob.size());
  std::vector<hal::HostArg> host_args;
  size_t t = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (params[i].type.is_tensor()) {
      interp::HostTensor &h = tensors[t++];
      host_args.push_back(hal::HostArg::tensor(h.data(), h.size_bytes(),
                                               static_cast<tl_dtype>(h.dtype()), h.shape()));
    } else if (auto *iv = std::get_if<int64_t>(&args[i])) {
      host_args.push_back(hal::HostArg::integer(*iv));
    } else {
      host_args.push_back(hal::HostArg::real(std::get<double>(args[i])));
    }
  }
  hal::run_with_host_args(dev, exe, exe.find_kernel(kernel), grid, host_args);
}

/// tlc run's command line.
struct RunArgs {
  std::string input, kernel_name, grid = "1", out_dir, device;
  uint64_t seed = 0;
  bool reference = false;
  std::vector<std::string> arg_specs;
};

/// The command line parsed, or nothing after printing the help.
std::optional<RunArgs> parse_run_args(int argc, char **argv) {
  RunArgs r;
  po::options_description desc("tlc run options");
  desc.add_options()("help,h", "show this help")("input", po::value(&r.input), "input .tlir")(
      "kernel,k", po::value(&r.kernel_name), "kernel to run (default: the only one)")(
      "grid,g", po::value(&r.grid), "grid X[,Y[,Z]] (default 1)")(
      "seed", po::value(&r.seed), "seed of random inputs (default 0)")(
      "reference", po::bool_switch(&r.reference), "compute floating point in fp64 (ideal results)")(
      "device,d", po::value(&r.device),
      "run on this HAL device (e.g. cpu), compiled for its target; default: the interpreter")(
      "out,o", po::value(&r.out_dir),
      "write every tensor argument after the run as DIR/<name>.npy")(
      "args", po::value(&r.arg_specs)->multitoken(), "name=spec arguments");
  if (!parse_options(
          argc, argv, desc,
          "usage: tlc run [options] <file.tlir> name=spec...\n"
          "  spec: file.npy | AxBx... (random, --seed) | zeros:AxB | a number (scalars)\n",
          "", "args"))
    return std::nullopt;
  return r;
}

/// The kernel to run: Tile IR (`module`, `kernel`) or an executable's code (`blob`).
struct LoadedKernel {
  std::unique_ptr<ir::Module> module;
  std::vector<uint8_t> blob;
  std::string name;
  std::vector<Param> params;
  const ir::Kernel *kernel = nullptr;
};

/// An executable's kernel: `kernel_name`, or its only one; the parameters from its metadata.
LoadedKernel load_executable_kernel(const std::string &input, const std::string &kernel_name) {
  exe::LoadResult loaded = exe::load_file(input);
  if (!loaded.ok)
    throw std::runtime_error(loaded.error);
  const exe::KernelInfo *info = nullptr;
  for (const exe::KernelInfo &k : loaded.exe.kernels)
    if (kernel_name.empty() ? loaded.exe.kernels.size() == 1 : k.name == kernel_name)
      info = &k;
  if (!info)
    throw std::runtime_error(kernel_name.empty()
                                 ? "the executable has several kernels: choose one with --kernel"
                                 : "no kernel @" + kernel_name + " in " + input);
  LoadedKernel k;
  k.name = info->name;
  for (const exe::ParamInfo &p : info->params)
    k.params.push_back({p.name, p.kind == exe::ParamKind::Tensor
                                    ? ir::Type::tensor(ir::ScalarKind(p.dtype), p.rank)
                                    : ir::Type::scalar(ir::ScalarKind(p.dtype))});
  std::ifstream in(input, std::ios::binary);
  k.blob.assign(std::istreambuf_iterator<char>(in), {});
  return k;
}

/// A Tile IR file's kernel: `kernel_name`, or its only one; no module when the file does not
/// parse or verify (load_module reported why).
LoadedKernel load_tlir_kernel(const std::string &input, const std::string &kernel_name) {
  LoadedKernel k;
  k.module = load_module(input);
  if (!k.module)
    return k;
  if (kernel_name.empty()) {
    if (k.module->kernels().size() != 1)
      throw std::runtime_error("the file has " + std::to_string(k.module->kernels().size()) +
                               " kernels: choose one with --kernel");
    k.kernel = k.module->kernels()[0].get();
  } else if (!(k.kernel = k.module->find_kernel(kernel_name))) {
    throw std::runtime_error("no kernel @" + kernel_name + " in " + input);
  }
  k.name = k.kernel->name();
  for (auto &p : k.kernel->body()->arguments())
    k.params.push_back({p->name(), p->type()});
  return k;
}

/// name=spec arguments by name.
std::map<std::string, std::string> parse_arg_specs(const std::vector<std::string> &arg_specs) {
  std::map<std::string, std::string> specs;
  for (const std::string &a : arg_specs) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::runtime_error("argument '" + a + "' is not name=spec");
    specs[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return specs;
}

/// The kernel's arguments: tensors (f64 for --reference) and scalars, in parameter order.
struct Inputs {
  std::vector<interp::HostTensor> tensors;
  std::vector<interp::ArgValue> args;
  std::vector<std::string> tensor_names;
};

/// Every parameter's argument from its spec; an error for a missing or an unknown name.
Inputs make_inputs(const LoadedKernel &k, std::map<std::string, std::string> specs, uint64_t seed,
                   bool reference) {
  std::mt19937_64 rng(seed);
  Inputs in;
  in.tensors.reserve(k.params.size()); // args point into these tensors: no reallocation
  for (const Param &param : k.params) {
    auto it = specs.find(param.name);
    if (it == specs.end())
      throw std::runtime_error("missing argument " + param.name + "=<spec> for %" + param.name +
                               ": " + param.type.str());
    if (param.type.is_tensor()) {
      in.tensors.push_back(make_tensor(param, it->second, rng));
      if (reference && ir::is_float(param.type.elem()))
        in.tensors.back() = in.tensors.back().converted(ir::ScalarKind::F64);
      in.args.push_back(in.tensors.back().arg());
      in.tensor_names.push_back(param.name);
    } else {
      in.args.push_back(make_scalar(param, it->second));
    }
    specs.erase(it);
  }
  if (!specs.empty())
    throw std::runtime_error("kernel @" + k.name + " has no argument '" + specs.begin()->first +
                             "'");
  return in;
}

/// Runs the kernel on --device, or on the interpreter; 1 after reporting a failed run.
int run_kernel(const RunArgs &r, const LoadedKernel &k, Inputs &in) {
  std::vector<int64_t> g = parse_dims(r.grid, ',', "grid");
  if (g.size() > 3)
    throw std::runtime_error("grid has at most 3 dimensions");
  interp::RunOptions opts;
  for (size_t i = 0; i < g.size(); ++i)
    opts.grid[i] = g[i];
  opts.fp64_reference = r.reference;
  if (r.device.empty()) {
    interp::RunResult res = interp::run(*k.kernel, in.args, opts);
    if (!res.ok) {
      std::cerr << res.error << "\n";
      return 1;
    }
    return 0;
  }
  if (r.reference)
    throw std::runtime_error("--reference runs on the interpreter only, not with --device");
  for (int64_t d : opts.grid)
    if (d < 0)
      throw std::runtime_error("grid dimensions must be non-negative");
  try {
    run_on_device(r.device, k.module.get(), k.blob, k.name, k.params, in.tensors, in.args,
                  {uint64_t(opts.grid[0]), uint64_t(opts.grid[1]), uint64_t(opts.grid[2])});
  } catch (const hal::Error &e) {
    std::cerr << "tlc run: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

/// Prints every tensor argument after the run, and writes it to `out_dir` when given.
void report_outputs(const RunArgs &r, const Inputs &in) {
  std::cout << "seed: " << r.seed << "\n";
  for (size_t i = 0; i < in.tensors.size(); ++i) {
    report(in.tensor_names[i], in.tensors[i]);
    if (!r.out_dir.empty()) {
      std::filesystem::create_directories(r.out_dir);
      npy::save(r.out_dir + "/" + in.tensor_names[i] + ".npy", in.tensors[i]);
    }
  }
}

} // namespace

int cmd_run(int argc, char **argv) {
  const std::optional<RunArgs> r = parse_run_args(argc, argv);
  if (!r)
    return 0;
  if (r->input.empty())
    throw std::runtime_error("no input file");
  // An executable (.tlx) runs on a device as compiled; Tile IR runs on the interpreter or is
  // compiled for the device.
  const bool is_executable = r->input.size() > 4 && r->input.substr(r->input.size() - 4) == ".tlx";
  if (is_executable && r->device.empty())
    throw std::runtime_error("an executable runs on a device: add --device (e.g. --device cpu)");
  const LoadedKernel k = is_executable ? load_executable_kernel(r->input, r->kernel_name)
                                       : load_tlir_kernel(r->input, r->kernel_name);
  if (!is_executable && !k.module)
    return 1;
  Inputs in = make_inputs(k, parse_arg_specs(r->arg_specs), r->seed, r->reference);
  if (int rc = run_kernel(*r, k, in))
    return rc;
  report_outputs(*r, in);
  return 0;
}

} // namespace tl::tlc
