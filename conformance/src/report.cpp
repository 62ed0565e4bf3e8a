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

json load_log(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  json header;
  std::vector<std::string> order;
  std::map<std::string, json> last;
  std::string line;
  while (std::getline(in, line)) {
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception &) {
      continue;
    }
    if (j.value("type", "") == "run" && header.is_null())
      header = j;
    else if (j.value("type", "") == "result") {
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
  std::map<std::string, std::string> status;
  for (const json &r : results["results"])
    status[r["id"]] = r["status"];
  json verdict = {{"profile", profile}};
  json failing = json::array(), missing = json::array();
  bool core_ok = true, all_ok = true;
  for (const json &t : manifest.value("tests", json::array())) {
    const std::string id = t["id"];
    const bool core = t.value("profile", "") == "core";
    auto it = status.find(id);
    if (it == status.end()) {
      missing.push_back(id);
      all_ok = false;
      core_ok = core_ok && !core;
    } else if (is_failure(it->second)) {
      failing.push_back({{"id", id}, {"status", it->second}});
      all_ok = false;
      core_ok = core_ok && !core;
    }
  }
  for (const json &r : results["results"]) // failures outside the manifest (a lost device)
    if (is_failure(r["status"]) &&
        !std::count_if(manifest["tests"].begin(), manifest["tests"].end(),
                       [&](const json &t) { return t["id"] == r["id"]; })) {
      failing.push_back({{"id", r["id"]}, {"status", r["status"]}});
      core_ok = all_ok = false;
    }
  if (!results["run"].value("device_ok", true))
    core_ok = all_ok = false;
  const bool suite_modified =
      results["run"].value("suite_sha256", "") != sha256_hex(manifest.dump());
  if (suite_modified)
    core_ok = all_ok = false;
  // A run that changed what the verdict rests on, or a package `report` rebuilt from a log,
  // is never certified, whatever its results.
  json non_standard = results["run"].value("non_standard", json::array());
  if (results["run"].value("rebuilt_by_report", false))
    non_standard.push_back("rebuilt by `tl-conform report` from results.jsonl");
  if (!non_standard.empty())
    core_ok = all_ok = false;
  json certified = json::array();
  if (core_ok)
    certified.push_back("core");
  if (all_ok && profile == "full")
    certified.push_back("full");
  verdict["certified_profiles"] = certified;
  verdict["certified"] = profile == "core" ? core_ok : all_ok;
  verdict["failing"] = failing;
  verdict["missing"] = missing;
  verdict["suite_matches_manifest"] = !suite_modified;
  verdict["non_standard"] = non_standard;
  return verdict;
}

std::string verdict_line(const json &v) {
  std::ostringstream o;
  const std::string profile = v["profile"];
  if (v.value("certified", false)) {
    o << "CERTIFIED for profile " << profile;
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
