// The api suite: the HAL conformance suite (hal/tests/hal_cts.cpp, a GoogleTest program) run
// once per test in its own process with a gtest filter, its JSON report folded into an outcome;
// plus PluginLoads, which checks the plugin behind the device.
// SPDX-License-Identifier: Apache-2.0
#include "conform.h"
#include "process.h"

#include "tl/vendor.h"

#include <cstdio>
#include <fstream>
#include <unistd.h>

namespace tl::conform {
namespace {

std::vector<TestDef> list_api(const ListContext &ctx) {
  std::vector<TestDef> out;
  out.push_back({"api.PluginLoads", "api", "core", 60, false, {{"native", true}}});
  for (const std::string &t : ctx.cts_tests) {
    // "Cts.Name/cpu_0_llvm_cpu" -> "api.Cts.Name.llvm_cpu": one test per device target.
    std::string id = "api." + t.substr(0, t.find('/'));
    if (size_t slash = t.find('/'); slash != std::string::npos) {
      const std::string instance = t.substr(slash + 1);
      if (instance.size() > ctx.cts_base.size() + 1)
        id += "." + instance.substr(ctx.cts_base.size() + 1);
    }
    out.push_back({id, "api", "core", 120, false, {{"cts", t}}});
  }
  if (ctx.cts_tests.empty())
    out.push_back({"api.CtsAvailable", "api", "core", 60, false, {{"cts", ctx.paths.cts}}});
  return out;
}

Outcome plugin_loads(WorkerContext &ctx) {
  json m;
  for (const tl_plugin_info &p : ctx.runtime->plugins()) {
    if (ctx.plugin_name != p.name)
      continue;
    m = {{"plugin", p.name},
         {"version", p.version},
         {"abi", std::to_string(p.abi_major) + "." + std::to_string(p.abi_minor)},
         {"devices", p.device_count}};
    if (!p.available)
      return Outcome::fail(std::string("plugin unavailable: ") + p.reason, m);
    if (p.abi_major != TL_VENDOR_ABI_MAJOR)
      return Outcome::fail("plugin speaks vendor ABI " + std::to_string(p.abi_major) +
                               ", this runtime " + std::to_string(TL_VENDOR_ABI_MAJOR),
                           m);
    if (std::string(p.version).empty())
      return Outcome::fail("the plugin reports no version", m);
    return Outcome::pass(m);
  }
  return Outcome::fail("no loaded plugin named '" + ctx.plugin_name + "' provides the device");
}

Outcome run_api(WorkerContext &ctx, const TestDef &t) {
  if (t.id == "api.PluginLoads")
    return plugin_loads(ctx);
  if (t.id == "api.CtsAvailable")
    return Outcome::fail("the HAL conformance program was not found or listed no tests: '" +
                         ctx.paths.cts + "' (pass --cts)");
  const std::string name = t.params.value("cts", "");
  const std::string filter = name.find('/') != std::string::npos ? "Devices/" + name : name;
  const std::string report =
      "/tmp/tl-conform-cts-" + std::to_string(getpid()) + "-" + std::to_string(ctx.seed) + ".json";
  int status = 0;
  // The CTS runs in a process of its own so that it sees the device exactly as frameworks do.
  std::string out = capture({ctx.paths.cts, "--gtest_filter=" + filter,
                             "--gtest_output=json:" + report, "--gtest_brief=0"},
                            t.timeout_s, &status);
  std::fwrite(out.data(), 1, out.size(), stdout);
  const std::string tail = out.size() > 1500 ? out.substr(out.size() - 1500) : out;
  if (!exited_ok(status) && !std::ifstream(report)) {
    Outcome o{Status::Crash, "the CTS process " + describe_exit(status) + "\n" + tail,
              json::object()};
    if (status == -1)
      o.status = Status::Timeout;
    return o;
  }
  json r;
  try {
    r = read_json(report);
  } catch (const std::exception &e) {
    return Outcome::fail(std::string("unreadable CTS report: ") + e.what());
  }
  std::remove(report.c_str());
  for (const json &s : r.value("testsuites", json::array()))
    for (const json &c : s.value("testsuite", json::array())) {
      json metrics = {{"cts_test", s.value("name", "") + "." + c.value("name", "")},
                      {"time", c.value("time", "")}};
      if (c.value("result", "") == "SKIPPED")
        return Outcome::not_supported("skipped by the CTS");
      std::string msg;
      for (const json &f : c.value("failures", json::array()))
        msg += f.value("failure", "") + "\n";
      if (!msg.empty())
        return Outcome::fail(msg, metrics);
      return Outcome::pass(metrics);
    }
  return Outcome::fail("the CTS ran no test for filter '" + filter + "'");
}

} // namespace

Suite api_suite() { return {"api", list_api, run_api}; }

/// The CTS's tests as --gtest_list_tests prints them: "CtsSetup.Name", and "Cts.Name/<instance>"
/// for the instances of the device `base` ("<plugin>_<index>", then "_<target>" when the CTS
/// instantiates per target); other devices' instances are left out.
std::vector<std::string> parse_cts_list(const std::string &listing, const std::string &base) {
  std::vector<std::string> out;
  std::string suite;
  size_t pos = 0;
  while (pos < listing.size()) {
    size_t end = listing.find('\n', pos);
    if (end == std::string::npos)
      end = listing.size();
    std::string line = listing.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty())
      continue;
    if (line[0] != ' ') {
      suite = line.substr(0, line.find('.'));
      if (size_t slash = suite.rfind('/'); slash != std::string::npos)
        suite = suite.substr(slash + 1); // "Devices/Cts" -> "Cts"
      continue;
    }
    std::string name = line.substr(line.find_first_not_of(' '));
    name = name.substr(0, name.find(' '));
    if (size_t slash = name.find('/'); slash != std::string::npos) {
      const std::string inst = name.substr(slash + 1);
      if (inst != base && inst.rfind(base + "_", 0) != 0)
        continue;
    }
    out.push_back(suite + "." + name);
  }
  return out;
}

} // namespace tl::conform
