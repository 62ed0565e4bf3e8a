// tlc run: runs a kernel on the reference interpreter with .npy, zero or random inputs.
// SPDX-License-Identifier: Apache-2.0
#include "tlc.h"

#include "tl/interpreter/host_tensor.h"
#include "tl/npy/npy.h"
#include "tl/ir/printer.h"

#include <boost/program_options.hpp>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>

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
    if (item.empty() || item.size() > 12 || item.find_first_not_of("0123456789") != std::string::npos)
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

interp::HostTensor make_tensor(const ir::Value &param, const std::string &spec,
                               std::mt19937_64 &rng) {
  const ir::Type &t = param.type();
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
    throw std::runtime_error("argument %" + param.name() + " needs a rank-" +
                             std::to_string(t.rank()) + " tensor, got rank " +
                             std::to_string(host.shape().size()) + " from '" + spec + "'");
  return host;
}

interp::ArgValue make_scalar(const ir::Value &param, const std::string &spec) {
  size_t used = 0;
  try {
    if (ir::is_float(param.type().elem())) {
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
  throw std::runtime_error("argument %" + param.name() + " of type " + param.type().str() +
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

} // namespace

int cmd_run(int argc, char **argv) {
  std::string input, kernel_name, grid = "1", out_dir;
  uint64_t seed = 0;
  bool reference = false;
  std::vector<std::string> arg_specs;
  po::options_description desc("tlc run options");
  desc.add_options()("help,h", "show this help")("input", po::value(&input), "input .tlir")(
      "kernel,k", po::value(&kernel_name), "kernel to run (default: the only one)")(
      "grid,g", po::value(&grid), "grid X[,Y[,Z]] (default 1)")(
      "seed", po::value(&seed), "seed of random inputs (default 0)")(
      "reference", po::bool_switch(&reference), "compute floating point in fp64 (ideal results)")(
      "out,o", po::value(&out_dir), "write every tensor argument after the run as DIR/<name>.npy")(
      "args", po::value(&arg_specs)->multitoken(), "name=spec arguments");
  po::positional_options_description pos;
  pos.add("input", 1).add("args", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: tlc run [options] <file.tlir> name=spec...\n"
                 "  spec: file.npy | AxBx... (random, --seed) | zeros:AxB | a number (scalars)\n"
              << desc;
    return 0;
  }
  if (input.empty())
    throw std::runtime_error("no input file");
  auto module = load_module(input);
  if (!module)
    return 1;
  const ir::Kernel *kernel = nullptr;
  if (kernel_name.empty()) {
    if (module->kernels().size() != 1)
      throw std::runtime_error("the file has " + std::to_string(module->kernels().size()) +
                               " kernels: choose one with --kernel");
    kernel = module->kernels()[0].get();
  } else if (!(kernel = module->find_kernel(kernel_name))) {
    throw std::runtime_error("no kernel @" + kernel_name + " in " + input);
  }
  std::map<std::string, std::string> specs;
  for (const std::string &a : arg_specs) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::runtime_error("argument '" + a + "' is not name=spec");
    specs[a.substr(0, eq)] = a.substr(eq + 1);
  }
  std::mt19937_64 rng(seed);
  std::vector<interp::HostTensor> tensors;
  tensors.reserve(kernel->body()->arguments().size());
  std::vector<interp::ArgValue> args;
  std::vector<std::string> tensor_names;
  for (auto &param : kernel->body()->arguments()) {
    auto it = specs.find(param->name());
    if (it == specs.end())
      throw std::runtime_error("missing argument " + param->name() + "=<spec> for %" +
                               param->name() + ": " + param->type().str());
    if (param->type().is_tensor()) {
      tensors.push_back(make_tensor(*param, it->second, rng));
      if (reference && ir::is_float(param->type().elem()))
        tensors.back() = tensors.back().converted(ir::ScalarKind::F64);
      args.push_back(tensors.back().arg());
      tensor_names.push_back(param->name());
    } else {
      args.push_back(make_scalar(*param, it->second));
    }
    specs.erase(it);
  }
  if (!specs.empty())
    throw std::runtime_error("kernel @" + kernel->name() + " has no argument '" +
                             specs.begin()->first + "'");
  std::vector<int64_t> g = parse_dims(grid, ',', "grid");
  if (g.size() > 3)
    throw std::runtime_error("grid has at most 3 dimensions");
  interp::RunOptions opts;
  for (size_t i = 0; i < g.size(); ++i)
    opts.grid[i] = g[i];
  opts.fp64_reference = reference;
  interp::RunResult r = interp::run(*kernel, args, opts);
  if (!r.ok) {
    std::cerr << r.error << "\n";
    return 1;
  }
  std::cout << "seed: " << seed << "\n";
  for (size_t i = 0; i < tensors.size(); ++i) {
    report(tensor_names[i], tensors[i]);
    if (!out_dir.empty()) {
      std::filesystem::create_directories(out_dir);
      npy::save(out_dir + "/" + tensor_names[i] + ".npy", tensors[i]);
    }
  }
  return 0;
}

} // namespace tl::tlc
