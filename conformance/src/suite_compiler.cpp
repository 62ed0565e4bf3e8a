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
//
// Besides the corpus, compiler.random_programs.N: batches of random programs whose every op is
// exact (tl/interpreter/random_programs.h: arithmetic, casts, selects, reductions, scans,
// transposes, dots in order, loops, branches, blocks past the tensors' edges, scalar arithmetic,
// gathers, atomic adds of integers from every program),
// each compared bit for bit with the interpreter. A program the target refuses to compile is
// counted, not compared; a batch fails when its target refuses more than a third.
// SPDX-License-Identifier: Apache-2.0
#include "case_args.h"
#include "compare.h"
#include "device_run.h"

#include "tl/interpreter/host_tensor.h"
#include "tl/interpreter/random_programs.h"
#include "tl/ir/parser.h"

#include <cstring>
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

constexpr int kRandomBatches = 4, kRandomProgramsPerBatch = 25;
const std::string kRandomPrefix = "compiler.random_programs.";

std::vector<TestDef> list_compiler(const ListContext &ctx) {
  std::vector<TestDef> out;
  for (int b = 0; b < kRandomBatches; ++b)
    out.push_back({kRandomPrefix + std::to_string(b),
                   "compiler",
                   "core",
                   300,
                   false,
                   {{"programs", kRandomProgramsPerBatch}, {"batch", b}, {"dots", "in order"}}});
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

/// Element i of two tensors of one type: equal bits, or NaN both.
bool same_element(const interp::HostTensor &a, const interp::HostTensor &b, int64_t i) {
  const size_t size = interp::element_size(a.dtype());
  if (std::memcmp(a.data() + i * size, b.data() + i * size, size) == 0)
    return true;
  return ir::is_float(a.dtype()) && std::isnan(a.get(i)) && std::isnan(b.get(i));
}

/// A batch of random programs: the batch number (the id's last part) and the test's seed choose
/// them, so a failure reproduces from the report's seed.
Outcome run_random_programs(WorkerContext &ctx, const TestDef &t) {
  const std::string target = compile_target(ctx.info, ctx.paths);
  if (target.empty())
    return Outcome::not_supported("no compiler backend for the device's targets");
  const int programs = t.params.at("programs").get<int>();
  std::mt19937_64 rng(ctx.seed);
  std::map<std::string, int> refused; // the first line of each refusal, counted
  int ran = 0;
  for (int i = 0; i < programs; ++i) {
    interp::RandomProgramCase c = interp::random_program_case(rng);
    std::vector<uint8_t> blob;
    try {
      blob = compile_tlir(c.text, target, ctx.paths);
    } catch (const std::runtime_error &e) {
      const std::string what = e.what();
      ++refused[what.substr(0, what.find('\n'))];
      continue;
    }
    ++ran;
    std::vector<interp::HostTensor> want = c.tensors;
    std::vector<KernelArg> ref_args;
    for (interp::HostTensor &h : want)
      ref_args.push_back(&h);
    const std::array<uint64_t, 3> grid = {uint64_t(c.grid[0]), uint64_t(c.grid[1]),
                                          uint64_t(c.grid[2])};
    json failed = {{"program", i}, {"tlir", c.text}};
    try {
      hal::Device dev(ctx.device);
      hal::Executable exe = dev.load(blob.data(), blob.size());
      std::vector<hal::HostArg> host_args;
      for (interp::HostTensor &h : c.tensors)
        host_args.push_back(hal::HostArg::tensor(h.data(), h.size_bytes(),
                                                 static_cast<tl_dtype>(h.dtype()), h.shape()));
      hal::run_with_host_args(dev, exe, exe.find_kernel("rand"), grid, host_args);
    } catch (const std::exception &e) {
      return Outcome::fail(
          "random program " + std::to_string(i) + " failed on the device: " + e.what(), failed);
    }
    run_on_interpreter(c.text, "rand", grid, ref_args);
    for (size_t a = 0; a < want.size(); ++a)
      for (int64_t e = 0; e < want[a].num_elements(); ++e)
        if (!same_element(c.tensors[a], want[a], e)) {
          std::ostringstream m;
          m << "random program " << i << " (in the metrics' tlir): argument " << a << " element "
            << e << ": device " << c.tensors[a].get(e) << ", interpreter " << want[a].get(e);
          return Outcome::fail(m.str(), failed);
        }
  }
  json why = json::object();
  for (const auto &[what, n] : refused)
    why[what] = n;
  json m = {{"programs", programs}, {"ran", ran}, {"refused", why}};
  if (3 * ran < 2 * programs)
    return Outcome::fail("the target refused " + std::to_string(programs - ran) + " of " +
                             std::to_string(programs) + " programs (more than a third)",
                         m);
  return Outcome::pass(m);
}

Outcome run_compiler(WorkerContext &ctx, const TestDef &t) {
  if (t.id.rfind(kRandomPrefix, 0) == 0)
    return run_random_programs(ctx, t);
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
