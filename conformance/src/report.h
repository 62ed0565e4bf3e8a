// Reports: the results document (results.json) built from the JSONL log, with its summary and
// certification verdict; JUnit XML; the HTML report; and the console summary.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include <string>

namespace tl::conform {

/// Whether a result is listed as an expected failure and did not pass (shown as "xfail",
/// "(expected)", or a skipped JUnit case).
bool expected_failure(const json &result);

/// What the reports read from a run header: an object with a string `profile` and an unsigned
/// `seed`. Throws std::runtime_error naming `what` and the field otherwise.
void check_run_header(const json &header, const std::string &what);
/// What the reports read from a result: an object with string `id`, `suite` and `status` and an
/// object `metrics` (an `ulp_histogram` in it needs its `max_ulp`). Throws std::runtime_error
/// naming `what` and the field otherwise.
void check_result(const json &result, const std::string &what);
/// A results document (results.json) and its manifest (suite.json) as compute_verdict reads
/// them: check_run_header of `run` (with a `suite_sha256`), check_result of every result, a
/// `plugin` and a `verdict`; the manifest's `tests` objects with string ids.
void check_results_document(const json &results, const json &manifest, const std::string &what);

/// Reads a results log: the run header and the last result of each test, in log order. Every
/// record is checked (check_run_header, check_result); a malformed one is an error naming its
/// line.
json load_log(const std::string &jsonl_path);

/// The results document: run header, summary, verdict and results. `manifest` is the suite
/// manifest (suite.json) the verdict checks completeness against.
json build_results(const json &log, const json &manifest);

/// The verdict of a results document against its manifest: certified for which profile, or
/// not, with the failing (or missing) tests.
json compute_verdict(const json &results, const json &manifest);

std::string junit_xml(const json &results);
std::string html_report(const json &results);

/// Writes results.json, junit.xml, report.html and the certification package into `out_dir`
/// from its results.jsonl and suite.json; prints the summary. Returns the run's exit code:
/// 0 when every result is as expected (pass, not-supported, or a listed expected failure).
/// `rebuilt`: `tl-conform report` regenerating the outputs of an earlier run; its package says so
/// and is never certified.
int write_outputs(const std::string &out_dir, bool print, bool rebuilt = false);

/// The verdict in one line ("CERTIFIED for profile core" / "NOT CERTIFIED ...").
std::string verdict_line(const json &verdict);

} // namespace tl::conform
