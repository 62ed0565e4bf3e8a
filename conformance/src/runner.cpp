// The runner: worker processes with timeouts, the JSONL results log, resume, progress.
// SPDX-License-Identifier: Apache-2.0
#include "runner.h"

#include "datasheet.h"
#include "host_anchor.h"
#include "process.h"
#include "profiles.h"
#include "report.h"
#include "suite_pin.h"
#include "worker.h"

#include "tl/compiler/targets.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fnmatch.h>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace tl::conform {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }

std::vector<std::string> worker_argv(const RunConfig &cfg, const std::string &mode,
                                     const std::string &result, const std::string &def) {
  std::vector<std::string> a = {self_exe(),     "__worker",
                                "--mode",       mode,
                                "--device",     cfg.device,
                                "--seed",       std::to_string(cfg.seed),
                                "--result",     result,
                                "--data-dir",   cfg.paths.data_dir,
                                "--corpus-dir", cfg.paths.corpus_dir,
                                "--source-dir", cfg.paths.source_dir,
                                "--cts",        cfg.paths.cts,
                                "--target",     cfg.paths.target,
                                "--datasheet",  cfg.paths.datasheet};
  if (!cfg.host_anchors.empty()) {
    a.push_back("--host-anchors");
    a.push_back(cfg.host_anchors);
  }
  if (!def.empty()) {
    a.push_back("--test-def");
    a.push_back(def);
  }
  return a;
}

std::string file_tail(const std::string &path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return s.size() > n ? s.substr(s.size() - n) : s;
}

std::string safe_name(const std::string &id) {
  std::string s = id;
  for (char &c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_')
      c = '_';
  return s;
}

/// The expected-failure entries for the device's plugin: [{test: glob, reason}].
json load_expected(const Paths &paths, const std::string &plugin) {
  const std::string p = paths.data_dir + "/expected-failures-" + plugin + ".json";
  return fs::exists(p) ? read_json(p).value("entries", json::array()) : json::array();
}

struct Running {
  TestDef test;
  pid_t pid;
  Clock::time_point start;
  std::string result_path, log_path;
  bool timed_out = false;
};

/// Appends one line to the log and forces it to disk: results are never lost.
void append_line(const std::string &path, const json &j) {
  FILE *f = std::fopen(path.c_str(), "a");
  if (!f)
    throw std::runtime_error("cannot append to " + path);
  const std::string line = j.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), f);
  std::fflush(f);
  fsync(fileno(f));
  std::fclose(f);
}

class Progress {
public:
  Progress(size_t total, size_t done, bool quiet)
      : total_(total), done_(done), quiet_(quiet), tty_(isatty(STDOUT_FILENO)) {}
  void finished(const json &r) {
    ++done_;
    const std::string st = r["status"];
    ++counts_[expected_failure(r) ? "xfail" : st];
    const bool notable = st == "fail" || st == "crash" || st == "timeout";
    if (tty_)
      std::cout << "\r\033[K";
    if (notable && !quiet_)
      std::cout << "  " << st << (r.value("expected_failure", false) ? " (expected)" : "") << "  "
                << r["id"].get<std::string>() << "\n";
    if (tty_ || done_ % 25 == 0 || done_ == total_)
      std::cout << line() << (tty_ ? "" : "\n") << std::flush;
  }
  std::string line() const {
    std::string s = "[" + std::to_string(done_) + "/" + std::to_string(total_) + "]";
    for (const char *k : {"pass", "fail", "xfail", "not-supported", "crash", "timeout"})
      if (counts_.count(k))
        s += " " + std::to_string(counts_.at(k)) + " " + k;
    return s;
  }
  void end() {
    if (tty_)
      std::cout << "\n";
  }

private:
  size_t total_, done_;
  bool quiet_, tty_;
  std::map<std::string, size_t> counts_;
};

json finish_record(const Running &r, int wait_status, const json &expected) {
  json rec = {
      {"type", "result"}, {"id", r.test.id}, {"suite", r.test.suite}, {"profile", r.test.profile}};
  const std::chrono::duration<double> dt = Clock::now() - r.start;
  rec["log"] = "logs/" + fs::path(r.log_path).filename().string();
  if (r.timed_out) {
    rec["status"] = "timeout";
    rec["message"] = "no result after " + std::to_string(int(r.test.timeout_s)) +
                     " s: the worker was killed\n" + file_tail(r.log_path, 1500);
    rec["metrics"] = json::object();
    rec["duration_s"] = dt.count();
  } else if (fs::exists(r.result_path)) {
    json w = read_json(r.result_path);
    fs::remove(r.result_path);
    rec["status"] = w["status"];
    rec["message"] = w["message"];
    rec["metrics"] = w["metrics"];
    rec["duration_s"] = w["duration_s"];
  } else {
    rec["status"] = "crash";
    rec["message"] = "the worker " + describe_exit(wait_status) + " before reporting\n" +
                     file_tail(r.log_path, 1500);
    rec["metrics"] = json::object();
    rec["duration_s"] = dt.count();
  }
  // Not supported is an answer only for what the profile makes optional; a required dtype,
  // capability or backend the device lacks fails the test.
  if (rec["status"] == "not-supported" && r.test.optional_because.empty()) {
    rec["status"] = "fail";
    rec["message"] =
        "required by the profile, but not supported: " + rec["message"].get<std::string>();
  } else if (rec["status"] == "not-supported") {
    rec["optional_because"] = r.test.optional_because;
  }
  for (const json &e : expected)
    if (fnmatch(e.value("test", "").c_str(), r.test.id.c_str(), 0) == 0) {
      rec["expected_failure"] = true;
      rec["expected_reason"] = e.value("reason", "");
      if (rec["status"] == "pass")
        rec["unexpected_pass"] = true;
    }
  return rec;
}

/// Reads the finished ids of a previous run's log after checking it is the same run.
std::set<std::string> resume_from(const std::string &log, const json &header) {
  std::set<std::string> done;
  std::ifstream in(log);
  std::string line;
  bool first = true;
  while (std::getline(in, line)) {
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception &) {
      continue; // a line cut short by a kill: that test runs again
    }
    if (first) {
      first = false;
      // The datasheet too: results judged on other peaks are another run.
      // A datasheet the kit measured differs in its figures from run to run: the same kind
      // of datasheet (measured, not a file) is the same run.
      auto same = [](const char *k, json a, json b) {
        if (std::string(k) == "datasheet" && a.value("measured", false) &&
            b.value("measured", false))
          for (const char *f : {"content", "anchors", "sha256"})
            a.erase(f), b.erase(f);
        return a == b;
      };
      for (const char *k : {"device", "profile", "seed", "suite_sha256", "datasheet"})
        if (!same(k, j.value(k, json()), header[k]))
          throw std::runtime_error("--resume: " + log + " is a run with another " + k + " (" +
                                   j.value(k, json()).dump() + " vs " + header[k].dump() + ")");
      continue;
    }
    if (j.value("type", "") == "result")
      done.insert(j["id"].get<std::string>());
  }
  return done;
}

/// A run's worker processes: started in order up to --jobs at a time (a timing test alone),
/// reaped into the log as they finish, killed past their timeout.
class Workers {
public:
  Workers(const RunConfig &cfg, const std::vector<TestDef> &pending)
      : cfg_(cfg), pending_(pending) {}

  bool busy() const { return next_ < pending_.size() || !running_.empty(); }

  /// Starts what may start.
  void start_ready() {
    while (next_ < pending_.size() && !exclusive_running_ &&
           static_cast<int>(running_.size()) < std::max(1, cfg_.jobs)) {
      const TestDef &t = pending_[next_];
      if (t.exclusive && !running_.empty())
        break;
      Running r{t, 0, Clock::now(), cfg_.out_dir + "/logs/" + safe_name(t.id) + ".result.json",
                cfg_.out_dir + "/logs/" + safe_name(t.id) + ".log"};
      fs::remove(r.result_path);
      fs::remove(r.log_path);
      r.pid =
          spawn(worker_argv(cfg_, "test", r.result_path, test_def_to_json(t).dump()), r.log_path);
      exclusive_running_ = t.exclusive;
      running_.emplace(r.pid, r);
      ++next_;
    }
  }

  /// Appends the record of a worker that exited, if one did; false when none did.
  bool reap(const std::string &log, const json &expected, Progress &progress) {
    int st = 0;
    pid_t pid = waitpid(-1, &st, WNOHANG);
    if (pid <= 0 || !running_.count(pid))
      return false;
    Running r = running_.at(pid);
    running_.erase(pid);
    kill_group(pid); // whatever the worker left behind (a hung CTS child)
    if (r.test.exclusive)
      exclusive_running_ = false;
    json rec = finish_record(r, st, expected);
    append_line(log, rec);
    progress.finished(rec);
    return true;
  }

  /// Kills the workers past their test's timeout (reaped later as timeouts).
  void kill_overdue() {
    for (auto &[p, r] : running_)
      if (!r.timed_out &&
          Clock::now() - r.start > std::chrono::duration<double>(r.test.timeout_s)) {
        r.timed_out = true;
        kill_group(p);
      }
  }

  void kill_all() {
    for (auto &[p, r] : running_) {
      kill_group(p);
      waitpid(p, nullptr, 0);
    }
  }

private:
  const RunConfig &cfg_;
  const std::vector<TestDef> &pending_;
  std::map<pid_t, Running> running_;
  size_t next_ = 0;
  bool exclusive_running_ = false;
};

/// Runs the pending tests, each result in the log as it finishes; false when interrupted (the
/// workers killed).
bool run_tests(const RunConfig &cfg, const std::vector<TestDef> &pending, const std::string &log,
               const json &expected, Progress &progress) {
  Workers workers(cfg, pending);
  while (workers.busy() && !g_interrupted) {
    workers.start_ready();
    if (workers.reap(log, expected, progress))
      continue;
    workers.kill_overdue();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!g_interrupted)
    return true;
  workers.kill_all();
  return false;
}

/// The compiler the tests use on this device: the target chosen for it and what decides that
/// target's code (its identity: the LLVM version and target machine for llvm-cpu, ...).
json compiler_used(const json &device, const Paths &paths) {
  std::string error, target = paths.target;
  if (target.empty())
    target =
        compile::target_for_device(device.value("target", ""), device.value("targets", ""), &error);
  json c = {{"tl_version", TL_CONFORM_VERSION}, {"target", target}};
  if (const compile::RegisteredTarget *t = target.empty() ? nullptr : compile::find_target(target))
    c["identity"] = t->identity({});
  else
    c["error"] = target.empty() ? error : compile::unknown_target(target);
  return c;
}

/// The log's first line: what ran, on what, with which suite (resume checks it).
json run_header(const RunConfig &cfg, const DeviceDescription &desc, const json &manifest,
                size_t selected, size_t profile_tests) {
  json header = {{"type", "run"},
                 {"tool", "tl-conform"},
                 {"tool_version", TL_CONFORM_VERSION},
                 {"suite_version", kSuiteVersion},
                 {"suite_sha256", sha256_hex(manifest.dump())},
                 {"device", cfg.device},
                 {"profile", cfg.profile},
                 {"seed", cfg.seed},
                 {"suites", cfg.suites},
                 {"filters", cfg.filters},
                 {"jobs", cfg.jobs},
                 {"selected", selected},
                 {"profile_tests", profile_tests},
                 {"device_ok", desc.ok},
                 {"device_error", desc.error},
                 {"capabilities", desc.device},
                 {"plugin", desc.plugin},
                 {"plugins", desc.plugins},
                 {"started", std::time(nullptr)}};
  if (desc.plugin.contains("path"))
    header["plugin"]["sha256"] = sha256_file(desc.plugin["path"]);
  header["provenance"] = run_provenance(cfg.paths);
  header["provenance"]["compiler"] = compiler_used(desc.device, cfg.paths);
  header["non_standard"] = header["provenance"]["non_standard"];
  // The figures the timing tests were judged against, with the file's bytes' SHA-256.
  // A device on the host without a datasheet file: the kit's anchors, measured now.
  header["datasheet"] = datasheet_record(
      cfg.paths, desc.plugin.value("name", cfg.device), desc.device.value("name", ""),
      desc.ok && host_target(header["provenance"]["compiler"].value("target", "")));
  return header;
}

/// The ids already in the log with --resume; else a fresh log (the old one kept as .prev)
/// opened with the header.
std::set<std::string> open_log(const RunConfig &cfg, const std::string &log, const json &header) {
  std::set<std::string> done;
  if (cfg.resume && fs::exists(log)) {
    done = resume_from(log, header);
    std::cout << "resuming: " << done.size() << " results already in " << log << "\n";
  } else {
    if (fs::exists(log))
      fs::rename(log, log + ".prev");
    append_line(log, header);
  }
  return done;
}

/// Without a device nothing can run: one failing record says why, and the run completes.
int finish_without_device(const RunConfig &cfg, const std::string &log,
                          const DeviceDescription &desc, const std::set<std::string> &done) {
  std::cout << "device unavailable: " << desc.error << "\n";
  if (!done.count("api.PluginLoads"))
    append_line(log, {{"type", "result"},
                      {"id", "api.PluginLoads"},
                      {"suite", "api"},
                      {"profile", "core"},
                      {"status", "fail"},
                      {"message", desc.error},
                      {"metrics", json::object()},
                      {"duration_s", 0}});
  return write_outputs(cfg.out_dir, true);
}

/// The profile's tests, whatever --suite / --filter select (the suite manifest lists them).
std::vector<TestDef> profile_tests_of(const RunConfig &cfg, const std::vector<TestDef> &all) {
  RunConfig profile_only = cfg;
  profile_only.suites.clear();
  profile_only.filters.clear();
  profile_only.timeout_override = 0;
  profile_only.timeout_scale = 1;
  return select_tests(profile_only, all);
}

} // namespace

bool matches_filters(const std::string &id, const std::vector<std::string> &filters) {
  bool any_include = false, included = false;
  for (const std::string &f : filters) {
    if (!f.empty() && f[0] == '-') {
      if (fnmatch(f.c_str() + 1, id.c_str(), 0) == 0)
        return false;
      continue;
    }
    any_include = true;
    included = included || fnmatch(f.c_str(), id.c_str(), 0) == 0;
  }
  return !any_include || included;
}

std::vector<TestDef> list_all(const Paths &paths, const DeviceDescription &desc) {
  ListContext lc{paths, desc.cts_tests, desc.cts_base};
  std::vector<TestDef> all;
  for (const Suite &s : suites())
    for (TestDef &t : s.list(lc))
      all.push_back(std::move(t));
  return all;
}

std::vector<TestDef> select_tests(const RunConfig &cfg, const std::vector<TestDef> &all) {
  const Profile profile = load_profile(cfg.paths.data_dir, cfg.profile);
  std::vector<TestDef> out;
  for (const TestDef &t : all) {
    if (!in_profile(profile, t))
      continue;
    if (!cfg.suites.empty() &&
        std::find(cfg.suites.begin(), cfg.suites.end(), t.suite) == cfg.suites.end())
      continue;
    if (!matches_filters(t.id, cfg.filters))
      continue;
    out.push_back(t);
    out.back().optional_because = optional_because(profile, t);
    if (cfg.timeout_override > 0)
      out.back().timeout_s = cfg.timeout_override;
    else
      out.back().timeout_s *= cfg.timeout_scale;
  }
  return out;
}

json suite_manifest(const std::vector<TestDef> &profile_tests, const Paths &paths,
                    const std::string &plugin, const std::string &profile) {
  json tests = json::array();
  for (const TestDef &t : profile_tests) {
    tests.push_back({{"id", t.id}, {"profile", t.profile}, {"params", t.params}});
    if (!t.optional_because.empty())
      tests.back()["optional_because"] = t.optional_because;
  }
  json data = json::object();
  for (const std::string &f :
       {std::string("tolerances.json"), std::string("profiles.json"),
        "expected-failures-" + plugin + ".json", "baseline-" + plugin + ".json"}) {
    const std::string p = paths.data_dir + "/" + f;
    data[f] = fs::exists(p) ? json(sha256_file(p)) : json(nullptr);
  }
  const Profile p = load_profile(paths.data_dir, profile);
  json optional = json::object();
  for (const auto &[item, why] : p.optional)
    optional[item] = why;
  return {{"suite_version", kSuiteVersion},
          {"profile", profile},
          {"profile_definition", {{"tests", p.tests}, {"about", p.about}, {"optional", optional}}},
          {"data", data},
          {"tests", tests}};
}

DeviceDescription describe_device(const RunConfig &cfg, const std::string &log_path) {
  DeviceDescription d;
  const std::string result = log_path + ".json";
  fs::remove(result);
  pid_t pid = spawn(worker_argv(cfg, "describe", result, ""), log_path);
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  int st = 0;
  while (waitpid(pid, &st, WNOHANG) != pid) {
    if (Clock::now() > deadline) {
      kill_group(pid);
      waitpid(pid, &st, 0);
      d.error = "describing the device timed out (a plugin hangs while loading or querying)";
      return d;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!fs::exists(result)) {
    d.error =
        "describing the device: the worker " + describe_exit(st) + "\n" + file_tail(log_path, 1500);
    return d;
  }
  json j = read_json(result);
  fs::remove(result);
  d.ok = j.value("ok", false);
  d.error = j.value("error", "");
  d.device = j.value("device", json::object());
  d.plugin = j.value("plugin", json::object());
  d.plugins = j.value("plugins", json::array());
  d.cts_tests = j.value("cts_tests", std::vector<std::string>{});
  d.cts_base = j.value("cts_base", "");
  if (j.contains("cts_error"))
    std::cerr << "tl-conform: warning: " << j["cts_error"].get<std::string>() << "\n";
  return d;
}

int run_command(const RunConfig &cfg) {
  fs::create_directories(cfg.out_dir + "/logs");
  const std::string log = cfg.out_dir + "/results.jsonl";
  std::cout << "tl-conform " << TL_CONFORM_VERSION << ": device " << cfg.device << ", profile "
            << cfg.profile << ", seed " << cfg.seed << ", jobs " << cfg.jobs << "\n";
  DeviceDescription desc = describe_device(cfg, cfg.out_dir + "/logs/describe.log");
  const std::string plugin = desc.plugin.value("name", cfg.device);
  std::vector<TestDef> all = list_all(cfg.paths, desc);
  const std::vector<TestDef> profile_tests = profile_tests_of(cfg, all);
  const json manifest = suite_manifest(profile_tests, cfg.paths, plugin, cfg.profile);
  { std::ofstream(cfg.out_dir + "/suite.json") << manifest.dump(2) << "\n"; }
  std::vector<TestDef> tests = select_tests(cfg, all);
  const json header = run_header(cfg, desc, manifest, tests.size(), profile_tests.size());
  const std::set<std::string> done = open_log(cfg, log, header);
  if (const json &ds = header["datasheet"]; ds.value("ok", false))
    std::cout << "datasheet: " << ds["path"].get<std::string>() << "\n";
  else
    std::cout << "datasheet: none that applies: " << ds["reason"].get<std::string>() << "\n";
  if (!desc.ok)
    return finish_without_device(cfg, log, desc, done);
  const json expected = load_expected(cfg.paths, plugin);
  std::vector<TestDef> pending;
  for (const TestDef &t : tests)
    if (!done.count(t.id))
      pending.push_back(t);

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  Progress progress(tests.size(), tests.size() - pending.size(), cfg.quiet);
  // The anchors the runner measured for the header bound the op suite's informative roofline
  // (timing tests measure their own, before their plugin loads).
  RunConfig run_cfg = cfg;
  if (const json &ds = header["datasheet"]; ds.value("measured", false) && ds.value("ok", false))
    run_cfg.host_anchors = ds["anchors"].dump();
  if (!run_tests(run_cfg, pending, log, expected, progress)) {
    progress.end();
    std::cout << "interrupted: finished results are in " << log << "; continue with --resume\n";
    return 130;
  }
  progress.end();
  return write_outputs(cfg.out_dir, true);
}

} // namespace tl::conform
