// Auditing a package against the kit and the device (see verify.h).
// SPDX-License-Identifier: Apache-2.0
#include "verify.h"

#include "suite_pin.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

namespace tl::conform {
namespace {

/// `id` as an fnmatch pattern that matches only itself.
std::string exact_glob(const std::string &id) {
  std::string g;
  for (char c : id) {
    if (c == '*' || c == '?' || c == '[' || c == '\\')
      g += '\\';
    g += c;
  }
  return g;
}

bool is_api(const json &t) { return t["id"].get<std::string>().rfind("api.", 0) == 0; }

/// The manifest's tests without the device's api tests, keyed by id.
std::map<std::string, json> non_api_tests(const json &manifest) {
  std::map<std::string, json> out;
  for (const json &t : manifest.value("tests", json::array()))
    if (!is_api(t) || t["id"] == "api.PluginLoads")
      out[t["id"]] = t;
  return out;
}

/// The figure a timing test is judged on, 0 for other tests.
double timing_figure(const json &metrics) {
  for (const char *k : {"achieved_bytes_per_s", "achieved_flops_per_s"})
    if (metrics.contains(k) && metrics[k].is_number())
      return metrics[k].get<double>();
  return 0;
}

} // namespace

std::vector<std::string> kit_differences(const json &results, const json &manifest,
                                         const Paths &kit_paths) {
  std::vector<std::string> d;
  const json &run = results["run"];
  if (run.value("tool_version", "") != TL_CONFORM_VERSION)
    d.push_back("made by tl-conform " + run.value("tool_version", "?") + ", this kit is " +
                TL_CONFORM_VERSION);
  if (run.value("suite_version", "") != kSuiteVersion)
    d.push_back("suite definitions " + run.value("suite_version", "?") + ", this kit's are " +
                kSuiteVersion);
  const json prov = run.value("provenance", json::object());
  if (prov.value("suite_files_sha256", "") != kit_suite_files_sha256())
    d.push_back("the run read data and corpus files with SHA-256 " +
                prov.value("suite_files_sha256", "(none recorded)") + ", this kit's are " +
                kit_suite_files_sha256());
  // The tests and their parameters, as this kit defines them for the profile (the api tests
  // other than PluginLoads depend on the CTS run on the device and are covered by its hash).
  RunConfig cfg;
  cfg.profile = run.value("profile", "");
  cfg.paths = kit_paths;
  std::map<std::string, json> kit;
  try {
    const auto tests = select_tests(cfg, list_all(cfg.paths, DeviceDescription{}));
    const json m = suite_manifest(tests, cfg.paths, "", cfg.profile);
    kit = non_api_tests(m);
    if (m["profile_definition"] != manifest.value("profile_definition", json()))
      d.push_back("the profile " + cfg.profile + " is defined differently by this kit");
  } catch (const std::exception &e) {
    d.push_back(std::string("this kit cannot list the package's profile: ") + e.what());
    return d;
  }
  const auto pkg = non_api_tests(manifest);
  for (const auto &[id, t] : kit)
    if (!pkg.count(id))
      d.push_back("the package lacks " + id);
    else if (pkg.at(id) != t)
      d.push_back(id + " has other parameters than this kit's");
  for (const auto &[id, t] : pkg)
    if (!kit.count(id))
      d.push_back(id + " is not a test of this kit");
  return d;
}

std::vector<std::string> rerun_sample(const json &results, const std::string &package_sha256,
                                      size_t n) {
  std::vector<std::string> ids;
  for (const json &r : results.value("results", json::array()))
    ids.push_back(r["id"]);
  std::sort(ids.begin(), ids.end());
  std::seed_seq seq(package_sha256.begin(), package_sha256.end());
  std::mt19937_64 rng(seq);
  std::shuffle(ids.begin(), ids.end(), rng);
  if (n > 0 && n < ids.size())
    ids.resize(n);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<std::string> rerun_and_compare(const json &results, const json &manifest,
                                           const std::vector<std::string> &ids,
                                           const RerunOptions &opts, const Paths &kit_paths,
                                           json &report) {
  RunConfig cfg;
  cfg.device = opts.device;
  cfg.profile = results["run"]["profile"];
  cfg.seed = results["run"]["seed"];
  cfg.jobs = opts.jobs;
  cfg.out_dir = opts.out_dir;
  cfg.quiet = true;
  cfg.paths = kit_paths;
  for (const std::string &id : ids)
    cfg.filters.push_back(exact_glob(id));
  // Judged on the datasheet the package was: one the user gave travels in the package.
  const json ds = results["run"].value("datasheet", json::object());
  if (ds.value("given", false) && ds.contains("content") && ds["content"].is_object()) {
    std::filesystem::create_directories(opts.out_dir);
    cfg.paths.datasheet = std::filesystem::absolute(opts.out_dir + "/datasheet.json").string();
    std::ofstream(cfg.paths.datasheet) << ds["content"].dump(2) << "\n";
  }
  run_command(cfg);
  const json again = read_json(opts.out_dir + "/results.json");
  std::vector<std::string> mismatches;
  if (again["run"]["suite_sha256"] != results["run"]["suite_sha256"])
    mismatches.push_back("the re-run's suite (SHA-256 " +
                         again["run"]["suite_sha256"].get<std::string>() +
                         ") is not the package's: another device, plugin or kit");
  if (again["plugin"].value("sha256", "") != results["plugin"].value("sha256", ""))
    mismatches.push_back("the device's plugin (SHA-256 " + again["plugin"].value("sha256", "?") +
                         ") is not the package's (" + results["plugin"].value("sha256", "?") + ")");
  std::map<std::string, json> before, after;
  for (const json &r : results["results"])
    before[r["id"]] = r;
  for (const json &r : again["results"])
    after[r["id"]] = r;
  report = json::array();
  for (const std::string &id : ids) {
    json rec = {{"id", id}};
    if (!before.count(id) || !after.count(id)) {
      mismatches.push_back(
          id + ": " + (before.count(id) ? "did not run again" : "has no result in the package"));
      continue;
    }
    const json &b = before[id], &a = after[id];
    rec["package_status"] = b["status"];
    rec["rerun_status"] = a["status"];
    std::string why;
    if (b["status"] != a["status"])
      why = "the package says " + b["status"].get<std::string>() + ", the device gives " +
            a["status"].get<std::string>() + " (" + a.value("message", "") + ")";
    const double was = timing_figure(b.value("metrics", json::object())),
                 now = timing_figure(a.value("metrics", json::object()));
    if (was > 0) {
      rec["package_figure"] = was;
      rec["rerun_figure"] = now;
      if (why.empty() && now < 0.75 * was)
        why = "the package's figure " + std::to_string(was) +
              " is not reproduced: " + std::to_string(now) + " (" +
              std::to_string(int(100 * now / was)) + "%)";
    }
    rec["agrees"] = why.empty();
    if (!why.empty())
      mismatches.push_back(id + ": " + why);
    report.push_back(rec);
  }
  return mismatches;
}

} // namespace tl::conform
