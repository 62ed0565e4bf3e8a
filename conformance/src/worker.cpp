// The worker: describes a device or runs one test, writing a JSON result file.
// SPDX-License-Identifier: Apache-2.0
#include "worker.h"

#include "device_run.h"
#include "host_anchor.h"
#include "process.h"
#include "tl/hal_json.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

namespace tl::conform {
namespace {

json device_json(const tl_device_info &i) { return hal::device_info_json(i); }
json plugin_json(const tl_plugin_info &p) { return hal::plugin_info_json(p); }

void write_result(const std::string &path, const json &j) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << j.dump(2) << "\n";
  }
  std::rename(tmp.c_str(), path.c_str());
}

/// Opens the runtime and finds the device; fills ctx. Returns an error message, "" on success.
std::string open_device(const std::string &name, hal::Runtime &rt, WorkerContext &ctx) {
  tl_device d = nullptr;
  tl_status st = tl_runtime_device_find(rt.get(), name.c_str(), &d);
  if (st) {
    std::string msg = "device '" + name + "' not found: " + tl_status_get_message(st);
    tl_status_free(st);
    for (const tl_plugin_info &p : rt.plugins())
      if (!p.available)
        msg += "\n  plugin " + std::string(p.name) + " (" + p.path + ") unavailable: " + p.reason;
    return msg;
  }
  ctx.runtime = &rt;
  ctx.device = d;
  ctx.info = hal::Device(d).info();
  ctx.plugin_name = ctx.info.plugin;
  const auto devices = rt.devices();
  for (uint32_t i = 0; i < devices.size(); ++i)
    if (devices[i].get() == d)
      ctx.device_index = i;
  return "";
}

int describe(const WorkerArgs &args) {
  json out;
  hal::Runtime rt(nullptr, 1);
  WorkerContext ctx;
  out["plugins"] = json::array();
  for (const tl_plugin_info &p : rt.plugins())
    out["plugins"].push_back(plugin_json(p));
  const std::string err = open_device(args.device, rt, ctx);
  if (!err.empty()) {
    out["ok"] = false;
    out["error"] = err;
    write_result(args.result, out);
    return 0;
  }
  out["ok"] = true;
  out["device"] = device_json(ctx.info);
  out["device_index"] = ctx.device_index;
  for (const tl_plugin_info &p : rt.plugins())
    if (ctx.plugin_name == p.name)
      out["plugin"] = plugin_json(p);
  // The api suite's tests, as the CTS lists them for this device.
  int status = 0;
  std::string listing = capture({args.paths.cts, "--gtest_list_tests"}, 60, &status);
  std::string param = ctx.plugin_name + ":" + std::to_string(ctx.device_index);
  for (char &c : param)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  out["cts_base"] = param;
  out["cts_tests"] =
      exited_ok(status) ? parse_cts_list(listing, param) : std::vector<std::string>{};
  if (!exited_ok(status))
    out["cts_error"] = "listing the CTS (" + args.paths.cts + ") " + describe_exit(status);
  write_result(args.result, out);
  return 0;
}

int run_test(const WorkerArgs &args) {
  const TestDef t = test_def_from_json(json::parse(args.test_def));
  const auto start = std::chrono::steady_clock::now();
  Outcome o;
  try {
    WorkerContext ctx;
    // A timing test's host anchors, measured before the runtime loads any plugin: no plugin
    // code runs in this process yet, and the runner runs timing tests alone. Used only where no
    // datasheet file applies and the device runs on the host (datasheet_for).
    // Timed passes of each anchor kernel at each piece size: the test's `anchor_reps` where it
    // sets them (the bandwidth suite: as many as the device gets, README "Host anchors"), else
    // kAnchorReps.
    if (t.suite == "bandwidth" || t.suite == "performance")
      ctx.host_anchors = measure_host_anchors(t.params.value("size_mib", uint64_t(64)) << 20,
                                              t.params.value("anchor_reps", kAnchorReps))
                             .to_json();
    else if (!args.host_anchors.empty())
      ctx.host_anchors = json::parse(args.host_anchors); // the run's, for informative bounds
    hal::Runtime rt(nullptr, 1);
    ctx.paths = args.paths;
    ctx.seed = test_seed(args.seed, t.id);
    if (std::string err = open_device(args.device, rt, ctx); !err.empty()) {
      o = Outcome::fail(err);
    } else if (const Suite *s = find_suite(t.suite)) {
      o = s->run(ctx, t);
      if (t.suite != "api")
        o.metrics["target"] = compile_target(ctx.info, ctx.paths);
    } else {
      o = Outcome::fail("no suite '" + t.suite + "'");
    }
  } catch (const hal::Error &e) {
    o = Outcome::fail(std::string("HAL error ") + tl_status_code_name(e.code()) + ": " + e.what());
  } catch (const std::exception &e) {
    o = Outcome::fail(e.what());
  }
  if (!o.metrics.is_object())
    o.metrics = json::object();
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - start;
  write_result(args.result, {{"id", t.id},
                             {"status", status_name(o.status)},
                             {"message", o.message},
                             {"metrics", o.metrics},
                             {"duration_s", dt.count()}});
  return 0;
}

} // namespace

json test_def_to_json(const TestDef &t) {
  return {{"id", t.id},
          {"suite", t.suite},
          {"profile", t.profile},
          {"timeout_s", t.timeout_s},
          {"exclusive", t.exclusive},
          {"params", t.params}};
}

TestDef test_def_from_json(const json &j) {
  return {j.at("id"),        j.at("suite"),     j.at("profile"),
          j.at("timeout_s"), j.at("exclusive"), j.value("params", json::object())};
}

int worker_main(const WorkerArgs &args) {
  try {
    return args.mode == "describe" ? describe(args) : run_test(args);
  } catch (const std::exception &e) {
    std::cerr << "tl-conform worker: " << e.what() << "\n";
    return 3;
  }
}

} // namespace tl::conform
