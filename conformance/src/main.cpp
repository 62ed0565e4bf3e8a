// tl-conform: the conformance and certification kit. `list`, `run`, `report`, `verify`; the
// hidden `__worker` mode is how the runner isolates each test in a process of its own.
// SPDX-License-Identifier: Apache-2.0
#include "conform.h"
#include "host_anchor.h"
#include "package.h"
#include "profiles.h"
#include "report.h"
#include "runner.h"
#include "verify.h"
#include "worker.h"

#include <boost/program_options.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace po = boost::program_options;
using namespace tl::conform;

namespace {

constexpr uint64_t kDefaultSeed = 20240607;

const char *kUsage = R"(usage: tl-conform <command> [options]

commands:
  list      list the tests of the selected suites and profile
  run       run them, each in its own process; writes results.jsonl (as tests finish),
            results.json, junit.xml, report.html and a certification package into --out
  report    rewrite the outputs of --out from its results.jsonl (e.g. after a killed run)
  verify    check a certification package: every byte, every hash, the verdict, that its
            suite is this kit's; --rerun --device D re-executes a sample of its tests on D
  anchors   measure the host anchors the bandwidth and performance suites judge a device on
            the host by (JSON; --size-mib N, --reps R); --schedule prints their passes only

)";

void add_selection(po::options_description &d) {
  d.add_options()("device", po::value<std::string>()->default_value("cpu"),
                  "device name or plugin name (as tl-info lists them)")(
      "suite", po::value<std::vector<std::string>>()->composing(),
      "api, precision, compiler, ops, bandwidth, performance (repeatable; default all)")(
      "profile", po::value<std::string>()->default_value("core"),
      "core, npu-core (core with f64/i64 exempted) or full: data/profiles.json")(
      "filter", po::value<std::vector<std::string>>()->composing(),
      "test id glob, '-glob' excludes (repeatable)")(
      "plugin-path", po::value<std::string>(), "extra plugin files or directories (':'-separated)")(
      "data-dir", po::value<std::string>()->default_value(TL_CONFORM_DATA_DIR),
      "tolerances, expected failures, baselines")(
      "corpus-dir", po::value<std::string>()->default_value(TL_CONFORM_CORPUS_DIR),
      "compiler suite corpus")("source-dir", po::value<std::string>()->default_value(TL_SOURCE_DIR),
                               "TL source tree (library kernels)")(
      "cts", po::value<std::string>()->default_value(TL_CONFORM_CTS),
      "the HAL conformance program (tl_hal_cts)")(
      "target", po::value<std::string>()->default_value(""),
      "compile for this target (default: the device's preferred one)")(
      "datasheet", po::value<std::string>()->default_value(""),
      "the device's declared peaks (JSON; default data/datasheets/<plugin>.json); recorded");
}

RunConfig config_from(const po::variables_map &vm) {
  RunConfig c;
  c.device = vm["device"].as<std::string>();
  c.profile = vm["profile"].as<std::string>();
  if (vm.count("suite"))
    c.suites = vm["suite"].as<std::vector<std::string>>();
  for (const std::string &s : c.suites)
    if (!find_suite(s))
      throw std::runtime_error("unknown suite '" + s + "'");
  if (vm.count("filter"))
    c.filters = vm["filter"].as<std::vector<std::string>>();
  c.paths = {vm["data-dir"].as<std::string>(), vm["corpus-dir"].as<std::string>(),
             vm["source-dir"].as<std::string>(), vm["cts"].as<std::string>(),
             vm["target"].as<std::string>()};
  load_profile(c.paths.data_dir, c.profile); // an unknown profile is a usage error, named
  if (const std::string ds = vm["datasheet"].as<std::string>(); !ds.empty()) {
    if (!std::filesystem::is_regular_file(ds))
      throw std::runtime_error("--datasheet " + ds + ": no such file");
    c.paths.datasheet = std::filesystem::absolute(ds).string(); // workers run elsewhere
  }
  if (vm.count("plugin-path")) {
    // Workers and the CTS inherit it: they see exactly the devices this run names.
    std::string p = std::filesystem::absolute(vm["plugin-path"].as<std::string>()).string();
    if (const char *old = std::getenv("TL_PLUGIN_PATH"); old && *old)
      p += std::string(":") + old;
    setenv("TL_PLUGIN_PATH", p.c_str(), 1);
  }
  return c;
}

int cmd_list(const std::vector<std::string> &args) {
  po::options_description d("list options");
  add_selection(d);
  d.add_options()("json", "print the suite manifest as JSON");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(d).run(), vm);
  po::notify(vm);
  RunConfig cfg = config_from(vm);
  const std::string tmp = "/tmp/tl-conform-list-" + std::to_string(getpid()) + ".log";
  DeviceDescription desc = describe_device(cfg, tmp);
  std::filesystem::remove(tmp);
  if (!desc.ok)
    std::cerr << "tl-conform: " << desc.error << "\n(api tests of the device are not listed)\n";
  const auto tests = select_tests(cfg, list_all(cfg.paths, desc));
  if (vm.count("json")) {
    std::cout << suite_manifest(tests, cfg.paths, desc.plugin.value("name", cfg.device),
                                cfg.profile)
                     .dump(2)
              << "\n";
    return 0;
  }
  for (const TestDef &t : tests)
    std::cout << t.id << (t.profile == "full" ? "  [full]" : "") << "\n";
  std::cerr << tests.size() << " tests\n";
  return 0;
}

int cmd_run(const std::vector<std::string> &args) {
  po::options_description d("run options");
  add_selection(d);
  d.add_options()("jobs,j", po::value<int>()->default_value(1), "tests run in parallel")(
      "seed", po::value<uint64_t>()->default_value(kDefaultSeed), "the run's random seed")(
      "resume", "continue the run in --out: finished tests are not repeated")(
      "out", po::value<std::string>()->default_value("conform-out"), "output directory")(
      "timeout", po::value<double>()->default_value(0),
      "per-test timeout in seconds (0: each "
      "test's own)")("timeout-scale", po::value<double>()->default_value(1),
                     "multiplies each test's own timeout (for slow hosts, e.g. sanitizer builds)")(
      "quiet,q", "print only the progress and the summary");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(d).run(), vm);
  po::notify(vm);
  RunConfig cfg = config_from(vm);
  cfg.jobs = vm["jobs"].as<int>();
  cfg.seed = vm["seed"].as<uint64_t>();
  cfg.resume = vm.count("resume") > 0;
  cfg.out_dir = vm["out"].as<std::string>();
  cfg.timeout_override = vm["timeout"].as<double>();
  cfg.timeout_scale = vm["timeout-scale"].as<double>();
  if (!(cfg.timeout_scale > 0) || cfg.timeout_scale > 1000)
    throw std::runtime_error("--timeout-scale must be in (0, 1000], not " +
                             std::to_string(cfg.timeout_scale));
  cfg.quiet = vm.count("quiet") > 0;
  return run_command(cfg);
}

int cmd_report(const std::vector<std::string> &args) {
  po::options_description d("report options");
  d.add_options()("out", po::value<std::string>()->default_value("conform-out"),
                  "the run's output directory")(
      "write-baseline", po::value<std::string>(),
      "also write the performance results as a baseline file");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(d).run(), vm);
  po::notify(vm);
  const std::string out = vm["out"].as<std::string>();
  const int rc = write_outputs(out, true, /*rebuilt=*/true);
  if (vm.count("write-baseline")) {
    const json results = read_json(out + "/results.json");
    json b = {{"device", results["plugin"].value("name", "")},
              {"device_name", results["device"].value("name", "")},
              {"margin", 0.5},
              {"tests", json::object()}};
    for (const json &r : results["results"])
      if (r["suite"] == "performance" && r["metrics"].contains("achieved_flops_per_s"))
        b["tests"][r["id"].get<std::string>()] = {
            {"achieved_flops_per_s", r["metrics"]["achieved_flops_per_s"]}};
    std::ofstream(vm["write-baseline"].as<std::string>()) << b.dump(2) << "\n";
  }
  return rc;
}

Paths kit_paths() {
  return {TL_CONFORM_DATA_DIR, TL_CONFORM_CORPUS_DIR, TL_SOURCE_DIR, TL_CONFORM_CTS, ""};
}

int cmd_verify(const std::vector<std::string> &args) {
  po::options_description d("verify options");
  d.add_options()("package", po::value<std::string>()->required(), "the certification package")(
      "rerun", "re-execute a sample of the package's tests on --device and compare")(
      "device", po::value<std::string>(), "the device to re-run on (with --rerun)")(
      "sample", po::value<size_t>()->default_value(16),
      "how many tests --rerun executes (0: all), drawn from the package's SHA-256")(
      "out", po::value<std::string>()->default_value("conform-rerun"),
      "where the re-run's outputs go")("jobs,j", po::value<int>()->default_value(1),
                                       "tests re-run in parallel")(
      "plugin-path", po::value<std::string>(), "extra plugin files or directories");
  po::positional_options_description pos;
  pos.add("package", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(d).positional(pos).run(), vm);
  po::notify(vm);
  const std::string path = vm["package"].as<std::string>();
  if (vm.count("rerun") && !vm.count("device"))
    throw std::runtime_error("--rerun needs --device: the device the package certifies");
  if (vm.count("plugin-path")) {
    std::string p = std::filesystem::absolute(vm["plugin-path"].as<std::string>()).string();
    setenv("TL_PLUGIN_PATH", p.c_str(), 1);
  }
  VerifyResult v = verify_package(path);
  if (!v.intact) {
    std::cout << "verify: " << path << " FAILED\n";
    for (const std::string &p : v.problems)
      std::cout << "  " << p << "\n";
    return 2;
  }
  std::cout << "verify: " << path << " intact (every member matches SHA256SUMS, canonical "
            << "archive bytes)\n  plugin " << v.package["plugin"].value("name", "?") << " sha256 "
            << v.package["plugin"].value("sha256", "?") << "\n  suite "
            << v.package["suite_version"].get<std::string>() << " sha256 "
            << v.package["suite_sha256"].get<std::string>() << ", seed " << v.package["seed"]
            << "\n";
  for (const json &f : v.verdict["failing"])
    std::cout << "  " << f["status"].get<std::string>() << "  " << f["id"].get<std::string>()
              << "\n";
  bool ok = v.verdict.value("certified", false);
  // A package is evidence only for the suite this kit defines: the same tests, parameters,
  // tolerance table, profiles and corpus.
  const auto kit = kit_differences(v.results, v.manifest, kit_paths());
  if (kit.empty()) {
    std::cout << "kit: the package's suite is this kit's canonical suite for its profile\n";
  } else {
    std::cout << "kit: the package was NOT made with this kit's suite:\n";
    for (const std::string &k : kit)
      std::cout << "  " << k << "\n";
    ok = false;
  }
  std::cout << "verdict: " << verdict_line(v.verdict) << "\n";
  if (vm.count("rerun")) {
    RerunOptions r;
    r.device = vm["device"].as<std::string>();
    r.sample = vm["sample"].as<size_t>();
    r.out_dir = vm["out"].as<std::string>();
    r.jobs = vm["jobs"].as<int>();
    const auto ids = rerun_sample(v.results, sha256_file(path), r.sample);
    std::cout << "rerun: " << ids.size() << " test(s) drawn from the package's SHA-256, on device "
              << r.device << " (outputs in " << r.out_dir << ")\n";
    json report;
    const auto mismatches = rerun_and_compare(v.results, v.manifest, ids, r, kit_paths(), report);
    std::ofstream(r.out_dir + "/rerun.json") << report.dump(2) << "\n";
    if (mismatches.empty()) {
      std::cout << "rerun: REPRODUCED: every re-run test gives the package's result\n";
    } else {
      std::cout << "rerun: NOT REPRODUCED (" << mismatches.size() << " mismatch(es)):\n";
      for (const std::string &m : mismatches)
        std::cout << "  " << m << "\n";
      ok = false;
    }
  }
  return ok ? 0 : 1;
}

/// The kit's host anchors as the runner measures them (host_anchor.h), or with --schedule the
/// order of their passes (ctest conform.anchor_schedule checks it).
int cmd_anchors(const std::vector<std::string> &args) {
  po::options_description d;
  uint64_t size_mib = 64;
  int reps = kAnchorReps;
  d.add_options()("size-mib", po::value(&size_mib))("reps", po::value(&reps))("schedule", "");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(d).run(), vm);
  po::notify(vm);
  if (size_mib < 1 || reps < 1)
    throw std::runtime_error("anchors: --size-mib and --reps must be at least 1");
  if (vm.count("schedule")) {
    for (const AnchorPass &p : anchor_schedule(reps))
      std::cout << anchor_kernel_name(p.kernel) << " " << p.piece
                << (p.timed ? " timed" : " warmup") << "\n";
    return 0;
  }
  std::cout << measure_host_anchors(size_mib << 20, reps).to_json().dump(2) << "\n";
  return 0;
}

int cmd_worker(const std::vector<std::string> &args) {
  po::options_description d;
  WorkerArgs w;
  d.add_options()("mode", po::value(&w.mode)->required())("device", po::value(&w.device))(
      "test-def", po::value(&w.test_def))("seed", po::value(&w.seed))(
      "result", po::value(&w.result)->required())("data-dir", po::value(&w.paths.data_dir))(
      "corpus-dir", po::value(&w.paths.corpus_dir))("source-dir", po::value(&w.paths.source_dir))(
      "cts", po::value(&w.paths.cts))("target", po::value(&w.paths.target))(
      "datasheet", po::value(&w.paths.datasheet))("host-anchors", po::value(&w.host_anchors));
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(d).run(), vm);
  po::notify(vm);
  return worker_main(w);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::cout << kUsage << "run `tl-conform <command> --help` for its options\n";
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (std::find(args.begin(), args.end(), "--help") != args.end()) {
    po::options_description d(cmd + " options");
    add_selection(d);
    std::cout << kUsage << d << "\nrun also takes --jobs N, --seed S (default " << kDefaultSeed
              << "), --resume, --out DIR, --timeout S, --timeout-scale F, --quiet\n";
    return 0;
  }
  try {
    if (cmd == "list")
      return cmd_list(args);
    if (cmd == "run")
      return cmd_run(args);
    if (cmd == "report")
      return cmd_report(args);
    if (cmd == "verify")
      return cmd_verify(args);
    if (cmd == "anchors")
      return cmd_anchors(args);
    if (cmd == "__worker")
      return cmd_worker(args);
    std::cerr << "tl-conform: unknown command '" << cmd << "'\n" << kUsage;
    return 2;
  } catch (const std::exception &e) {
    std::cerr << "tl-conform: error: " << e.what() << "\n";
    return 2;
  }
}
