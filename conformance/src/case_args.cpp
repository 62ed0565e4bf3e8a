// The arguments of a corpus or library case: parsing its items, and host tensors for the
// device, the interpreter and its fp64 mode.
// SPDX-License-Identifier: Apache-2.0
#include "case_args.h"

#include <limits>
#include <sstream>

namespace tl::conform {

std::vector<int64_t> parse_shape(const std::string &s) {
  std::vector<int64_t> shape;
  std::istringstream in(s);
  for (std::string d; std::getline(in, d, 'x');)
    shape.push_back(std::stoll(d));
  return shape;
}

std::map<std::string, std::string> case_values(const std::string &line) {
  std::map<std::string, std::string> kv;
  std::istringstream in(line);
  std::string name, item;
  in >> name;
  while (in >> item)
    if (size_t eq = item.find('='); eq != std::string::npos)
      kv[item.substr(0, eq)] = item.substr(eq + 1);
  return kv;
}

std::array<uint64_t, 3> case_grid(const std::string &spec) {
  std::array<uint64_t, 3> grid{1, 1, 1};
  std::istringstream g(spec);
  std::string d;
  for (int i = 0; i < 3 && std::getline(g, d, ','); ++i)
    grid[i] = std::stoull(d);
  return grid;
}

interp::HostTensor case_tensor(ir::ScalarKind elem, const std::string &spec, std::mt19937_64 &rng) {
  std::string kind = "random", shape = spec;
  int64_t lo = -100, hi = 101;
  if (size_t colon = spec.rfind(':'); colon != std::string::npos) {
    shape = spec.substr(colon + 1);
    kind = spec.substr(0, spec.find(':'));
    if (kind == "int") {
      std::istringstream r(spec.substr(4));
      std::string a, b;
      std::getline(r, a, ':');
      std::getline(r, b, ':');
      lo = std::stoll(a);
      hi = std::stoll(b);
    }
  }
  interp::HostTensor h(elem, parse_shape(shape));
  for (int64_t e = 0; e < h.num_elements(); ++e) {
    double v = 0;
    if (kind == "iota")
      v = double(e);
    else if (kind == "nan")
      v = ir::is_float(h.dtype()) ? std::numeric_limits<double>::quiet_NaN() : -123.0;
    else if (kind == "int" || (kind == "random" && !ir::is_float(h.dtype())))
      v = double(std::uniform_int_distribution<int64_t>(lo, hi - 1)(rng));
    else if (kind == "random")
      v = std::uniform_real_distribution<double>(-1, 1)(rng);
    h.set(e, v);
  }
  return h;
}

std::string make_case_args(const ir::Kernel &kernel, std::map<std::string, std::string> &kv,
                           uint64_t seed, CaseArgs &a) {
  std::mt19937_64 rng(seed);
  const size_t n = kernel.body()->arguments().size();
  a.dev_t.reserve(n);
  a.ref_t.reserve(n);
  a.ref64_t.reserve(n);
  for (const auto &p : kernel.body()->arguments()) {
    const std::string spec = kv[p->name()];
    if (spec.empty())
      return "corpus case gives no value for argument '" + p->name() + "'";
    if (!p->type().is_tensor()) {
      const bool f = ir::is_float(p->type().elem());
      a.dev_args.push_back(f ? KernelArg(std::stod(spec)) : KernelArg(int64_t(std::stoll(spec))));
      a.ref_args.push_back(a.dev_args.back());
      a.ref64_args.push_back(a.dev_args.back());
      continue;
    }
    interp::HostTensor h = case_tensor(p->type().elem(), spec, rng);
    a.dev_t.push_back(h);
    a.ref_t.push_back(h);
    a.ref64_t.push_back(ir::is_float(h.dtype()) ? h.converted(ir::ScalarKind::F64) : h);
    a.dev_args.push_back(&a.dev_t.back());
    a.ref_args.push_back(&a.ref_t.back());
    a.ref64_args.push_back(&a.ref64_t.back());
  }
  return "";
}

} // namespace tl::conform
