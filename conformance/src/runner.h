// The runner: selects tests, runs each in a worker process with a timeout (crash and hang
// become statuses, the run goes on), appends every result to a JSONL log as it finishes, and
// resumes from that log.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include <string>
#include <vector>

namespace tl::conform {

struct RunConfig {
  std::string device = "cpu";
  std::string profile = "core";
  std::vector<std::string> suites;  // empty: all
  std::vector<std::string> filters; // globs; a leading '-' excludes
  int jobs = 1;
  uint64_t seed = 0;
  bool resume = false;
  std::string out_dir = "conform-out";
  double timeout_override = 0; // seconds; 0 keeps each test's own
  double timeout_scale = 1;    // multiplies each test's own limit (sanitizer builds are slower)
  bool quiet = false;
  Paths paths;
  std::string host_anchors; // JSON: the run's host anchors (header), for non-timing workers
};

/// What describing the device found (from a worker): capabilities, plugin, api test names.
struct DeviceDescription {
  bool ok = false;
  std::string error;
  json device, plugin, plugins;
  std::vector<std::string> cts_tests;
  std::string cts_base;
};

DeviceDescription describe_device(const RunConfig &cfg, const std::string &log_path);

/// The tests of `cfg` (suite, profile and filters applied), in run order.
std::vector<TestDef> select_tests(const RunConfig &cfg, const std::vector<TestDef> &all);
std::vector<TestDef> list_all(const Paths &paths, const DeviceDescription &desc);

/// The suite manifest: every test of the profile with its parameters, and the data files'
/// hashes. Its SHA-256 certifies what "the suite" was.
json suite_manifest(const std::vector<TestDef> &profile_tests, const Paths &paths,
                    const std::string &plugin, const std::string &profile);

/// Runs the tests; returns the process exit code (0: every result as expected).
int run_command(const RunConfig &cfg);

/// True when `id` matches the glob filters (none: everything).
bool matches_filters(const std::string &id, const std::vector<std::string> &filters);

} // namespace tl::conform
