// Results document, verdict, JUnit XML and the console summary.
// SPDX-License-Identifier: Apache-2.0
#include "report.h"

#include "package.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

namespace tl::conform {
namespace {

namespace fs = std::filesystem;

std::string xml_escape(const std::string &s) {
  std::string o;
  for (char c : s) {
    switch (c) {
    case '&':
      o += "&amp;";
      break;
    case '<':
      o += "&lt;";
      break;
    case '>':
      o += "&gt;";
      break;
    case '"':
      o += "&quot;";
      break;
    default:
      // XML 1.0 forbids most control characters.
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
        o += ' ';
      else
        o += c;
    }
  }
  return o;
}

/// The line of a message worth one line in a summary: the first, or the first error line.
std::string headline(const std::string &msg) {
  std::string first = msg.substr(0, msg.find('\n'));
  if (first.empty() || first.back() != ':')
    return first;
  const size_t e = msg.find("error: ");
  return e == std::string::npos ? first : msg.substr(e, msg.find('\n', e) - e);
}

bool is_failure(const std::string &status) {
  return status == "fail" || status == "crash" || status == "timeout";
}

} // namespace

namespace {
/// Throws unless `doc` is an object whose `key` passes `is` (a type test, described by `type`).
template <class Is>
void require(const json &doc, const char *key, Is is, const char *type, const std::string &what) {
  if (!doc.is_object())
    throw std::runtime_error(what + ": not a JSON object");
  if (!doc.contains(key) || !is(doc[key]))
    throw std::runtime_error(what + ": '" + key + "' must be " + type);
}
bool is_string(const json &j) { return j.is_string(); }
bool is_object(const json &j) { return j.is_object(); }
bool is_array(const json &j) { return j.is_array(); }
} // namespace

void check_run_header(const json &header, const std::string &what) {
  require(header, "profile", is_string, "a string", what);
  require(
      header, "seed", [](const json &j) { return j.is_number_unsigned(); }, "an unsigned integer",
      what);
}

void check_result(const json &result, const std::string &what) {
  for (const char *key : {"id", "suite", "status"})
    require(result, key, is_string, "a string", what);
  require(result, "metrics", is_object, "an object", what);
  const json &m = result["metrics"];
  if (m.contains("ulp_histogram") && !m.contains("max_ulp"))
    throw std::runtime_error(what + ": metrics with an 'ulp_histogram' need its 'max_ulp'");
}

void check_results_document(const json &results, const json &manifest, const std::string &what) {
  require(results, "run", is_object, "an object", what);
  check_run_header(results["run"], what + ": run");
  require(results["run"], "suite_sha256", is_string, "a string", what + ": run");
  require(results, "results", is_array, "an array", what);
  for (size_t i = 0; i < results["results"].size(); ++i)
    check_result(results["results"][i], what + ": result " + std::to_string(i));
  for (const char *key : {"plugin", "verdict"})
    require(
        results, key, [](const json &) { return true; }, "present", what);
  require(manifest, "tests", is_array, "an array", what + ": manifest");
  for (const json &t : manifest["tests"])
    require(t, "id", is_string, "a string", what + ": manifest test");
}

json load_log(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  json header;
  std::vector<std::string> order;
  std::map<std::string, json> last;
  std::string line;
  for (int line_number = 1; std::getline(in, line); ++line_number) {
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception &) {
      continue;
    }
    const std::string where = path + ":" + std::to_string(line_number);
    if (!j.is_object())
      continue; // not a record (a torn last line is skipped the same way)
    if (j.value("type", "") == "run" && header.is_null()) {
      check_run_header(j, where);
      header = j;
    } else if (j.value("type", "") == "result") {
      check_result(j, where);
      // One result per test: a resumed run skips what is done, so a second line for a test is
      // an edit of the log, never a newer result.
      const std::string id = j["id"];
      if (last.count(id))
        throw std::runtime_error(path + ": a second result for test " + id);
      order.push_back(id);
      last[id] = j;
    }
  }
  if (header.is_null())
    throw std::runtime_error(path + " has no run header");
  json results = json::array();
  for (const std::string &id : order)
    results.push_back(last[id]);
  return {{"header", header}, {"results", results}};
}

json compute_verdict(const json &results, const json &manifest) {
  const std::string profile = results["run"]["profile"];
  std::map<std::string, json> by_id;
  for (const json &r : results["results"])
    by_id[r["id"]] = r;
  json verdict = {{"profile", profile}};
  json failing = json::array(), missing = json::array(), not_supported = json::array();
  bool core_ok = true, all_ok = true;
  std::map<std::string, bool> suite_ok; // per suite: every test of the profile ran and passed
  auto fails = [&](const std::string &suite, bool core) {
    all_ok = false;
    core_ok = core_ok && !core;
    suite_ok[suite] = false;
  };
  for (const json &t : manifest.value("tests", json::array())) {
    const std::string id = t["id"];
    const std::string suite = id.substr(0, id.find('.'));
    suite_ok.emplace(suite, true);
    const bool core = t.value("profile", "") == "core";
    auto it = by_id.find(id);
    if (it == by_id.end()) {
      missing.push_back(id);
      fails(suite, core);
      continue;
    }
    const std::string status = it->second["status"];
    if (is_failure(status)) {
      failing.push_back({{"id", id}, {"status", status}});
      fails(suite, core);
    } else if (status == "not-supported") {
      // Only what the profile makes optional may be missing; the rest fails, whatever the log.
      const std::string why = t.value("optional_because", "");
      if (why.empty()) {
        failing.push_back({{"id", id}, {"status", "not-supported, required by the profile"}});
        fails(suite, core);
      } else {
        not_supported.push_back(
            {{"id", id}, {"reason", it->second.value("message", "")}, {"exempt_because", why}});
      }
    }
  }
  for (const json &r : results["results"]) // failures outside the manifest (a lost device)
    if (is_failure(r["status"]) &&
        !std::count_if(manifest["tests"].begin(), manifest["tests"].end(),
                       [&](const json &t) { return t["id"] == r["id"]; })) {
      failing.push_back({{"id", r["id"]}, {"status", r["status"]}});
      core_ok = all_ok = false;
    }
  bool run_ok = results["run"].value("device_ok", true);
  const bool suite_modified =
      results["run"].value("suite_sha256", "") != sha256_hex(manifest.dump());
  // A run that changed what the verdict rests on, or a package `report` rebuilt from a log,
  // is never certified, whatever its results.
  json non_standard = results["run"].value("non_standard", json::array());
  if (results["run"].value("rebuilt_by_report", false))
    non_standard.push_back("rebuilt by `tl-conform report` from results.jsonl");
  run_ok = run_ok && !suite_modified && non_standard.empty();
  core_ok = core_ok && run_ok;
  all_ok = all_ok && run_ok;
  json certified = json::array();
  if (all_ok)
    certified.push_back(profile);
  else if (core_ok &&
           manifest.value("profile_definition", json::object()).value("tests", "") == "full")
    certified.push_back("core");
  json suites = json::array();
  for (const auto &[suite, ok] : suite_ok)
    if (ok && run_ok)
      suites.push_back(suite);
  verdict["certified_profiles"] = certified;
  verdict["certified"] = all_ok;
  verdict["certified_suites"] = suites;
  verdict["failing"] = failing;
  verdict["missing"] = missing;
  verdict["not_supported"] = not_supported;
  verdict["suite_matches_manifest"] = !suite_modified;
  verdict["non_standard"] = non_standard;
  return verdict;
}

/// "f64 (3 tests: exempted by npu-core: ...), u32 (2 tests: ...)": the not-supported tests,
/// grouped by the reason that exempts them.
std::string exemptions(const json &v) {
  std::map<std::string, int> count;
  for (const json &n : v.value("not_supported", json::array()))
    ++count[n.value("exempt_because", "")];
  std::string s;
  for (const auto &[why, n] : count)
    s += (s.empty() ? "" : "; ") + std::to_string(n) + " test(s) not supported, " + why;
  return s;
}

std::string verdict_line(const json &v) {
  std::ostringstream o;
  const std::string profile = v["profile"];
  const std::string exempt = exemptions(v);
  if (v.value("certified", false)) {
    o << "CERTIFIED for profile " << profile;
    if (!exempt.empty())
      o << " (" << exempt << ")";
    return o.str();
  }
  const json none = json::array();
  const json &non_standard = v.contains("non_standard") ? v["non_standard"] : none;
  if (!non_standard.empty()) {
    o << "NON-STANDARD run, never certified (";
    for (size_t i = 0; i < non_standard.size(); ++i)
      o << (i ? "; " : "") << non_standard[i].get<std::string>();
    o << "); ";
  }
  o << "NOT CERTIFIED for profile " << profile << ": " << v["failing"].size() << " failing test(s)";
  if (!v["missing"].empty())
    o << ", " << v["missing"].size() << " not run";
  if (!v.value("suite_matches_manifest", true))
    o << ", suite definition does not match its hash";
  for (const json &p : v["certified_profiles"])
    o << " (certified for profile " << p.get<std::string>() << ")";
  if (v.contains("certified_suites") && !v["certified_suites"].empty()) {
    o << " (suites passing in full:";
    for (const json &s : v["certified_suites"])
      o << " " << s.get<std::string>();
    o << ")";
  }
  if (!exempt.empty())
    o << " (" << exempt << ")";
  return o.str();
}

bool expected_failure(const json &result) {
  return result.value("expected_failure", false) && result["status"] != "pass";
}

json build_results(const json &log, const json &manifest) {
  const json &h = log["header"];
  json run = h;
  run.erase("type");
  run.erase("capabilities");
  run.erase("plugin");
  run.erase("plugins");
  json summary = {{"total", 0}};
  std::map<std::string, std::map<std::string, int>> per_suite;
  int unexpected_fail = 0, unexpected_pass = 0, expected = 0;
  for (const json &r : log["results"]) {
    const std::string st = r["status"];
    summary["total"] = summary["total"].get<int>() + 1;
    summary[st] = summary.value(st, 0) + 1;
    per_suite[r["suite"]][st]++;
    if (r.value("unexpected_pass", false))
      ++unexpected_pass;
    else if (is_failure(st) && r.value("expected_failure", false))
      ++expected;
    else if (is_failure(st))
      ++unexpected_fail;
  }
  summary["expected_failures"] = expected;
  summary["unexpected_failures"] = unexpected_fail;
  summary["unexpected_passes"] = unexpected_pass;
  summary["suites"] = per_suite;
  json doc = {{"format", "tl-conform results 1"},
              {"run", run},
              {"device", h.value("capabilities", json::object())},
              {"plugin", h.value("plugin", json::object())},
              {"plugins", h.value("plugins", json::array())},
              {"summary", summary},
              {"results", log["results"]}};
  doc["verdict"] = compute_verdict(doc, manifest);
  return doc;
}

std::string junit_xml(const json &results) {
  std::map<std::string, std::vector<const json *>> by_suite;
  for (const json &r : results["results"])
    by_suite[r["suite"]].push_back(&r);
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"tl-conform\">\n";
  for (auto &[suite, rs] : by_suite) {
    int failures = 0, errors = 0, skipped = 0;
    double time = 0;
    for (const json *r : rs) {
      const std::string st = (*r)["status"];
      const bool xf = expected_failure(*r);
      failures += (st == "fail" && !xf) || r->value("unexpected_pass", false);
      errors += (st == "crash" || st == "timeout") && !xf;
      skipped += st == "not-supported" || xf;
      time += r->value("duration_s", 0.0);
    }
    o << "  <testsuite name=\"" << xml_escape(suite) << "\" tests=\"" << rs.size()
      << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped
      << "\" time=\"" << time << "\">\n";
    // The verdict travels with every suite: a CI dashboard showing one suite still says whether
    // the run was certified or non-standard.
    o << "    <properties><property name=\"verdict\" value=\""
      << xml_escape(verdict_line(results["verdict"])) << "\"/></properties>\n";
    for (const json *r : rs) {
      const std::string st = (*r)["status"], msg = r->value("message", "");
      const std::string id = (*r)["id"];
      o << "    <testcase classname=\"tl-conform." << xml_escape(suite) << "\" name=\""
        << xml_escape(id.substr(id.find('.') + 1)) << "\" time=\"" << r->value("duration_s", 0.0)
        << "\">";
      if (r->value("unexpected_pass", false))
        o << "<failure message=\"unexpected pass (listed as an expected failure: "
          << xml_escape(r->value("expected_reason", "")) << ")\"/>";
      else if (expected_failure(*r))
        o << "<skipped message=\"expected " << st << ": "
          << xml_escape(r->value("expected_reason", "")) << "\"/>";
      else if (st == "fail")
        o << "<failure message=\"" << xml_escape(msg.substr(0, msg.find('\n'))) << "\">"
          << xml_escape(msg) << "</failure>";
      else if (st == "crash" || st == "timeout")
        o << "<error type=\"" << st << "\" message=\"" << xml_escape(msg.substr(0, msg.find('\n')))
          << "\">" << xml_escape(msg) << "</error>";
      else if (st == "not-supported")
        o << "<skipped message=\"not supported: " << xml_escape(msg) << "\"/>";
      o << "</testcase>\n";
    }
    o << "  </testsuite>\n";
  }
  o << "</testsuites>\n";
  return o.str();
}

int write_outputs(const std::string &out_dir, bool print, bool rebuilt) {
  json log = load_log(out_dir + "/results.jsonl");
  if (rebuilt)
    log["header"]["rebuilt_by_report"] = true;
  const json manifest = read_json(out_dir + "/suite.json");
  const json results = build_results(log, manifest);
  std::ofstream(out_dir + "/results.json") << results.dump(2) << "\n";
  std::ofstream(out_dir + "/junit.xml") << junit_xml(results);
  std::ofstream(out_dir + "/report.html") << html_report(results);
  const std::string pkg = create_package(out_dir, results, manifest);
  const json &s = results["summary"];
  if (print) {
    std::cout << "summary: " << s["total"] << " tests:";
    for (const char *k : {"pass", "fail", "not-supported", "crash", "timeout"})
      std::cout << " " << s.value(k, 0) << " " << k << ",";
    std::cout << " " << s["expected_failures"] << " expected failure(s), " << s["unexpected_passes"]
              << " unexpected pass(es)\n";
    for (const json &r : results["results"]) {
      const std::string st = r["status"];
      if (r.value("unexpected_pass", false))
        std::cout << "  UNEXPECTED PASS " << r["id"].get<std::string>() << "\n";
      else if (is_failure(st))
        std::cout << "  " << st << (r.value("expected_failure", false) ? " (expected)" : "") << " "
                  << r["id"].get<std::string>() << ": " << headline(r.value("message", "")) << "\n";
    }
    std::cout << "seed: " << results["run"]["seed"] << "\n";
    std::cout << "outputs: " << out_dir << "/{results.jsonl,results.json,junit.xml,report.html}\n";
    std::cout << "package: " << pkg << "\n";
    std::cout << "verdict: " << verdict_line(results["verdict"]) << "\n";
  }
  return s["unexpected_failures"].get<int>() + s["unexpected_passes"].get<int>() == 0 ? 0 : 1;
}

} // namespace tl::conform
