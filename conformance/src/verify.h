// Auditing a certification package beyond its bytes: against the kit that verifies it (same
// suite definitions, data and corpus) and, with --rerun, against the device itself (a sample of
// its tests executed again must give the package's results), as MLPerf and Khronos submissions
// are audited.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"
#include "runner.h"

#include <string>
#include <vector>

namespace tl::conform {

/// Where the package's suite is not this kit's canonical suite for its profile: other suite
/// definitions, data or corpus, or other tests or parameters (every suite but the device's api
/// tests, which come from the CTS on the device). Empty when they agree.
std::vector<std::string> kit_differences(const json &results, const json &manifest,
                                         const Paths &kit_paths);

struct RerunOptions {
  std::string device;  // the device to run on (as `run --device`)
  size_t sample = 16;  // how many tests; 0: every test of the package
  std::string out_dir; // where the re-run's outputs go
  int jobs = 1;
};

/// The tests a re-run samples: `n` ids of the package's results, drawn by a generator seeded
/// from the package's SHA-256 (the same package always samples the same tests; its maker
/// cannot know which ones before the package exists).
std::vector<std::string> rerun_sample(const json &results, const std::string &package_sha256,
                                      size_t n);

/// Re-executes `ids` on the device with the package's profile and seed through the kit's own
/// runner, and compares: a status that differs, or a timing figure the device does not come
/// within 25 % of, is a mismatch. Returns the mismatches ("" entries never); `report` gets one
/// record per test.
std::vector<std::string> rerun_and_compare(const json &results, const json &manifest,
                                           const std::vector<std::string> &ids,
                                           const RerunOptions &opts, const Paths &kit_paths,
                                           json &report);

} // namespace tl::conform
