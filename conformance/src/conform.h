// Core types of tl-conform: test definitions, outcomes, suites and the context a test runs in.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/hal.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tl::conform {

using json = nlohmann::json;

/// The version of the suite definitions (tests, their parameters and pass rules). Bump it when a
/// test or a rule changes meaning; the tolerance table and corpus are hashed separately.
inline constexpr const char *kSuiteVersion = "1.11";

/// A test's final status. Expected failures keep their status and are flagged separately.
enum class Status { Pass, Fail, NotSupported, Crash, Timeout };
const char *status_name(Status s);
std::optional<Status> parse_status(const std::string &s);

/// One test as listed: its identity, profile and how the runner treats it. `params` describe
/// it completely (they go into the suite manifest, whose SHA-256 certifies what was run).
struct TestDef {
  std::string id;      // "<suite>.<name>", e.g. "precision.exp.f32.4099"
  std::string suite;   // api, precision, bandwidth, performance, compiler
  std::string profile; // "core" (needed for certification) or "full"
  double timeout_s = 60;
  bool exclusive = false; // timing tests run alone, nothing else on the machine
  json params = json::object();
  /// Set from the run's profile: why this test may be not-supported ("" : it must run).
  std::string optional_because = "";
};

/// What a test produced. `metrics` are the numbers the reports chart (errors, bandwidths, ...).
struct Outcome {
  Status status = Status::Pass;
  std::string message;
  json metrics = json::object();

  static Outcome pass(json metrics = json::object()) {
    return {Status::Pass, "", std::move(metrics)};
  }
  static Outcome fail(std::string msg, json metrics = json::object()) {
    return {Status::Fail, std::move(msg), std::move(metrics)};
  }
  static Outcome not_supported(std::string msg) {
    return {Status::NotSupported, std::move(msg), json::object()};
  }
};

/// Where the kit's files are and which device a worker drives.
struct Paths {
  std::string data_dir;   // tolerances.json, expected failures, baselines
  std::string corpus_dir; // compiler suite corpus
  std::string source_dir; // the TL source tree (library kernels), may be empty
  std::string cts;        // the HAL conformance test program (api suite)
  std::string target;     // force this compiler target ("" : the device's preferred one)
  std::string datasheet;  // --datasheet FILE ("": the kit's data/datasheets/<plugin>.json)
};

/// What a worker knows while running one test.
struct WorkerContext {
  Paths paths;
  uint64_t seed = 0; // the test's own seed, derived from the run seed and its id
  hal::Runtime *runtime = nullptr;
  tl_device device = nullptr;
  tl_device_info info{};
  uint32_t device_index = 0;
  std::string plugin_name;
  /// The kit's host anchors (host_anchor.h) for a timing test, measured by the worker before it
  /// loaded any plugin, raised by a measurement after the timed runs; null when not measured.
  json host_anchors;
};

/// What listing needs: the api suite's test names come from the CTS program (see describe).
struct ListContext {
  Paths paths;
  std::vector<std::string> cts_tests; // "Cts.Name/<instance>" / "CtsSetup.Name"
  std::string cts_base;               // the device's instance prefix, "<plugin>_<index>"
};

struct Suite {
  const char *name;
  std::function<std::vector<TestDef>(const ListContext &)> list;
  std::function<Outcome(WorkerContext &, const TestDef &)> run;
};

/// Every suite, in run order.
const std::vector<Suite> &suites();
const Suite *find_suite(const std::string &name);

/// The per-test seed: the run seed mixed with the test id (order and --jobs do not matter).
uint64_t test_seed(uint64_t run_seed, const std::string &id);

/// Reads a whole file; throws std::runtime_error naming it when it cannot.
std::string read_file(const std::string &path);
json read_json(const std::string &path);
/// SHA-256 of bytes / of a file's contents, as 64 lower-case hex digits (OpenSSL).
std::string sha256_hex(const std::string &bytes);
std::string sha256_file(const std::string &path);

} // namespace tl::conform
