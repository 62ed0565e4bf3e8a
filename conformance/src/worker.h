// The hidden worker mode of tl-conform: the only code that loads vendor plugins. The runner
// starts one worker process per test (and one to describe the device), so that a plugin that
// crashes, hangs or corrupts memory takes down a worker, never the run.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include <string>

namespace tl::conform {

struct WorkerArgs {
  std::string mode; // "describe" or "test"
  std::string device;
  std::string test_def;     // the TestDef as JSON (mode "test")
  uint64_t seed = 0;        // the run seed
  std::string result;       // where the result JSON goes
  std::string host_anchors; // JSON: the run's host anchors, measured by the runner; may be empty
  Paths paths;
};

/// Runs the worker; returns the process exit code (0 whenever a result was written).
int worker_main(const WorkerArgs &args);

json test_def_to_json(const TestDef &t);
TestDef test_def_from_json(const json &j);

/// The CTS listing for one device (see suite_api.cpp).
std::vector<std::string> parse_cts_list(const std::string &listing, const std::string &param);

} // namespace tl::conform
