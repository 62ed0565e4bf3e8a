// The compiler suite: a corpus of .tlir kernels compiled for the device's target and run
// through the HAL, every tensor compared with the reference interpreter's run of the same IR:
// float tensors with its fp64 mode (the fp32 contract's reference), integer tensors exactly with
// its normal mode (fp64 mode means nothing for them).
//
// A corpus file names its cases in comment lines:
//   // conform-case: NAME kernel=K grid=X[,Y[,Z]] ARG=SPEC ...
// SPEC: AxB (random: floats in [-1, 1), integers in [-100, 100]), zeros:AxB, iota:AxB,
// int:LO:HI:AxB (random integers in [LO, HI)), or a number for a scalar. corpus/library.cases
// names cases of the library kernels the same way, each line prefixed by the kernel file's
// path in the source tree. fp32_ref=ARG[,ARG] compares those float arguments with the
// interpreter's normal mode instead: outputs computed from the roundings the kernel asks for
// (a cast with a rounding mode, then arithmetic on the rounding residual), which fp64 mode removes.
// SPDX-License-Identifier: Apache-2.0
#include "compare.h"
#include "device_run.h"

#include "tl/interpreter/host_tensor.h"
#include "tl/ir/parser.h"

#include <filesystem>
#include <map>
#include <random>
#include <sstream>

namespace tl::conform {
namespace {

namespace fs = std::filesystem;

struct CorpusCase {
  std::string id, file, line; // file: absolute path; line: the case's spec
};

std::vector<CorpusCase> corpus(const Paths &paths) {
  std::vector<CorpusCase> out;
  auto add = [&](const std::string &file, const std::string &stem, const std::string &spec) {
    std::istringstream in(spec);
    std::string name;
    in >> name;
    out.push_back({"compiler." + stem + "." + name, file, spec});
  };
  std::vector<fs::path> files;
  if (fs::is_directory(paths.corpus_dir))
    for (auto &e : fs::directory_iterator(paths.corpus_dir))
      if (e.path().extension() == ".tlir")
        files.push_back(e.path());
  std::sort(files.begin(), files.end());
  const std::string tag = "// conform-case:";
  for (const fs::path &f : files) {
    std::istringstream in(read_file(f.string()));
    for (std::string line; std::getline(in, line);)
      if (line.rfind(tag, 0) == 0)
        add(f.string(), f.stem().string(), line.substr(tag.size()));
  }
  const fs::path lib = fs::path(paths.corpus_dir) / "library.cases";
  if (fs::exists(lib)) {
    std::istringstream in(read_file(lib.string()));
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#')
        continue;
      std::istringstream l(line);
      std::string rel, rest;
      l >> rel;
      std::getline(l, rest);
      add(paths.source_dir + "/" + rel, "library_" + fs::path(rel).stem().string(), rest);
    }
  }
  return out;
}

std::vector<int64_t> parse_shape(const std::string &s) {
  std::vector<int64_t> shape;
  std::istringstream in(s);
  for (std::string d; std::getline(in, d, 'x');)
    shape.push_back(std::stoll(d));
  return shape;
}

std::vector<TestDef> list_compiler(const ListContext &ctx) {
  std::vector<TestDef> out;
  for (const CorpusCase &c : corpus(ctx.paths)) {
    const std::string rel = fs::path(c.file).filename().string();
    out.push_back({c.id,
                   "compiler",
                   "core",
                   120,
                   false,
                   {{"file", rel}, {"file_sha256", sha256_file(c.file)}, {"case", c.line}}});
  }
  return out;
}

/// A case's NAME=VALUE items (kernel, grid, and one per argument).
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

/// grid=X[,Y[,Z]], 1 where not given.
std::array<uint64_t, 3> case_grid(const std::string &spec) {
  std::array<uint64_t, 3> grid{1, 1, 1};
  std::istringstream g(spec);
  std::string d;
  for (int i = 0; i < 3 && std::getline(g, d, ','); ++i)
    grid[i] = std::stoull(d);
  return grid;
}

/// A tensor argument from its SPEC (see the top of this file).
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
    else if (kind == "int" || (kind == "random" && !ir::is_float(h.dtype())))
      v = double(std::uniform_int_distribution<int64_t>(lo, hi - 1)(rng));
    else if (kind == "random")
      v = std::uniform_real_distribution<double>(-1, 1)(rng);
    h.set(e, v);
  }
  return h;
}

/// The same arguments three times: for the device, the interpreter and its fp64 mode (tensors
/// copied; floats in f64 storage for fp64 mode).
struct CaseArgs {
  std::vector<interp::HostTensor> dev_t, ref_t, ref64_t;
  std::vector<KernelArg> dev_args, ref_args, ref64_args;
};

/// Fills `a` with the kernel's arguments from the case's values; the error, or "".
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

/// Every tensor argument of the device's run against the interpreter's, within the compiler
/// suite's tolerances: floats against fp64 mode unless the case lists them in `fp32_ref`.
Outcome compare_case_tensors(const WorkerContext &ctx, const ir::Kernel &kernel, const CaseArgs &a,
                             const std::string &fp32_ref) {
  const auto table = ToleranceTable::load(ctx.paths.data_dir + "/tolerances.json");
  json per_tensor = json::array();
  std::string failure;
  size_t ti = 0;
  for (const auto &p : kernel.body()->arguments()) {
    if (!p->type().is_tensor())
      continue;
    const interp::HostTensor &d = a.dev_t[ti];
    const bool fp64 = ir::is_float(d.dtype()) &&
                      ("," + fp32_ref + ",").find("," + p->name() + ",") == std::string::npos;
    const interp::HostTensor &r = fp64 ? a.ref64_t[ti] : a.ref_t[ti];
    ++ti;
    std::vector<double> dv(d.num_elements()), rv(r.num_elements());
    for (size_t e = 0; e < dv.size(); ++e) {
      dv[e] = d.get(e);
      rv[e] = r.get(e);
    }
    const std::string dt(ir::scalar_name(d.dtype()));
    CompareResult cr = compare({d.dtype(), &dv, &rv, nullptr, 1}, table.lookup("compiler", dt));
    cr.metrics.erase("ulp_histogram");
    cr.metrics["argument"] = p->name();
    cr.metrics["reference"] = fp64 ? "interpreter fp64 mode" : "interpreter";
    per_tensor.push_back(cr.metrics);
    if (!cr.ok && failure.empty())
      failure = std::string(fp64 ? "the interpreter's fp64 mode" : "the interpreter") +
                ": argument '" + p->name() + "': " + cr.message;
  }
  json m = {{"tensors", per_tensor}};
  if (!failure.empty())
    return Outcome::fail("device differs from " + failure, m);
  return Outcome::pass(m);
}

Outcome run_compiler(WorkerContext &ctx, const TestDef &t) {
  const CorpusCase *c = nullptr;
  const auto all = corpus(ctx.paths);
  for (const CorpusCase &cc : all)
    if (cc.id == t.id)
      c = &cc;
  if (!c)
    return Outcome::fail("no corpus case '" + t.id + "'");
  if (compile_target(ctx.info, ctx.paths).empty())
    return Outcome::not_supported("no compiler backend for the device's targets");
  const std::string src = read_file(c->file);
  std::map<std::string, std::string> kv = case_values(c->line);
  ir::Diagnostics diags;
  auto module = ir::parse(src, c->file, diags);
  const ir::Kernel *kernel = module ? module->find_kernel(kv["kernel"]) : nullptr;
  if (!kernel)
    return Outcome::fail("corpus case names kernel '" + kv["kernel"] + "' that " + c->file +
                         " does not define\n" + diags.str());
  const std::array<uint64_t, 3> grid = case_grid(kv["grid"]);
  CaseArgs a;
  if (std::string error = make_case_args(*kernel, kv, ctx.seed, a); !error.empty())
    return Outcome::fail(error);
  run_on_interpreter(src, kv["kernel"], grid, a.ref_args);
  run_on_interpreter(src, kv["kernel"], grid, a.ref64_args, /*fp64_reference=*/true);
  run_on_device(ctx, src, kv["kernel"], grid, a.dev_args);
  return compare_case_tensors(ctx, *kernel, a, kv["fp32_ref"]);
}

} // namespace

Suite compiler_suite() { return {"compiler", list_compiler, run_compiler}; }

} // namespace tl::conform
