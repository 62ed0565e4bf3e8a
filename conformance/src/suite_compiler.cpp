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
#include "case_args.h"
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
