// Datasheets (see datasheet.h).
// SPDX-License-Identifier: Apache-2.0
#include "datasheet.h"

#include "device_run.h"
#include "host_anchor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <vector>

namespace tl::conform {
namespace {

const std::set<std::string> kKeys = {"device",
                                     "source",
                                     "notes",
                                     "memory_bandwidth_bytes_per_s",
                                     "link_bandwidth_bytes_per_s",
                                     "peak_flops",
                                     "vector_ops_per_s",
                                     "exp_ops_per_s",
                                     "special_ops_per_s",
                                     "simulated_time"};

double positive(const json &v, const std::string &field) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
    throw std::runtime_error("field '" + field + "' must be a positive number, got " + v.dump());
  return v.get<double>();
}

std::string text(const json &j, const std::string &field) {
  if (!j.contains(field) || !j[field].is_string() || j[field].get<std::string>().empty())
    throw std::runtime_error("field '" + field + "' must be a non-empty string");
  return j[field];
}

/// The figures of a parsed datasheet; throws naming the field that is wrong.
void read_figures(const json &j, Datasheet &d) {
  if (!j.is_object())
    throw std::runtime_error("a datasheet must be a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!kKeys.count(it.key())) // a misspelt figure would silently be "not declared"
      throw std::runtime_error("unknown field '" + it.key() + "'");
  d.device = text(j, "device");
  d.source = text(j, "source");
  if (j.contains("memory_bandwidth_bytes_per_s"))
    d.memory_bandwidth =
        positive(j["memory_bandwidth_bytes_per_s"], "memory_bandwidth_bytes_per_s");
  if (j.contains("link_bandwidth_bytes_per_s"))
    d.link_bandwidth = positive(j["link_bandwidth_bytes_per_s"], "link_bandwidth_bytes_per_s");
  if (j.contains("simulated_time")) {
    if (!j["simulated_time"].is_boolean())
      throw std::runtime_error("field 'simulated_time' must be true or false");
    d.simulated_time = j["simulated_time"];
  }
  if (j.contains("vector_ops_per_s"))
    d.vector_ops = positive(j["vector_ops_per_s"], "vector_ops_per_s");
  if (j.contains("exp_ops_per_s"))
    d.exp_ops = positive(j["exp_ops_per_s"], "exp_ops_per_s");
  d.special_ops = j.contains("special_ops_per_s") // else priced as exponentials
                      ? positive(j["special_ops_per_s"], "special_ops_per_s")
                      : d.exp_ops;
  if (j.contains("peak_flops")) {
    if (!j["peak_flops"].is_object())
      throw std::runtime_error("field 'peak_flops' must be an object of dtype: FLOP/s");
    for (auto it = j["peak_flops"].begin(); it != j["peak_flops"].end(); ++it)
      d.peak_flops[it.key()] = positive(it.value(), "peak_flops." + it.key());
  }
}

} // namespace

json Datasheet::summary() const {
  return {{"path", path},
          {"sha256", sha256},
          {"device", device},
          {"source", source},
          {"measured", measured}};
}

namespace {

/// `device_name` without a plugin's instance suffix: a plugin with several devices of one model
/// names them "<model> (<plugin>:<n>)", and one datasheet of the model covers each.
std::string model_of(const std::string &device_name, const std::string &plugin) {
  std::string model = device_name;
  const std::string instance = " (" + plugin + ":";
  if (const size_t at = model.rfind(instance);
      at != std::string::npos && model.back() == ')' && at + instance.size() < model.size() - 1 &&
      model.find_first_not_of("0123456789", at + instance.size()) == model.size() - 1)
    model.resize(at);
  return model;
}

/// The "device" a datasheet file declares ("" if it has none or does not parse: load_datasheet
/// then says what is wrong with it).
std::string declared_device(const std::string &path) {
  try {
    const json j = json::parse(read_file(path));
    return j.is_object() && j.contains("device") && j["device"].is_string() ? j["device"] : "";
  } catch (const std::exception &) {
    return "";
  }
}

} // namespace

std::string datasheet_path(const Paths &paths, const std::string &plugin,
                           const std::string &device_name) {
  if (!paths.datasheet.empty())
    return paths.datasheet;
  // The kit's: <plugin>.json, or <plugin>-<model>.json where a plugin drives several models
  // (cuda: an H200, an H100); the one declaring this device, else <plugin>.json (whose device
  // load_datasheet then names).
  const std::string dir = paths.data_dir + "/datasheets/", main = dir + plugin + ".json";
  std::error_code ec;
  if (!device_name.empty() && std::filesystem::is_directory(dir, ec)) {
    std::vector<std::string> files;
    for (const auto &e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file(ec) && name.size() > plugin.size() + 6 &&
          name.rfind(plugin + "-", 0) == 0 && e.path().extension() == ".json")
        files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end()); // the same choice on every file system
    files.insert(files.begin(), main);
    const std::string model = model_of(device_name, plugin);
    for (const std::string &f : files)
      if (std::filesystem::is_regular_file(f, ec)) {
        const std::string declared = declared_device(f);
        if (!declared.empty() && (declared == device_name || declared == model))
          return f;
      }
  }
  return std::filesystem::is_regular_file(main, ec) ? main : "";
}

Datasheet load_datasheet(const Paths &paths, const std::string &plugin,
                         const std::string &device_name) {
  Datasheet d;
  d.path = datasheet_path(paths, plugin, device_name);
  if (d.path.empty()) {
    d.reason = "no datasheet for " + plugin + ": pass --datasheet FILE (a device cannot pass on " +
               "speed without a declared spec)";
    return d;
  }
  try {
    d.text = read_file(d.path);
    d.sha256 = sha256_hex(d.text);
    read_figures(json::parse(d.text), d);
  } catch (const std::exception &e) {
    d.reason = "datasheet " + d.path + ": " + e.what();
    return d;
  }
  if (d.device != device_name && d.device != model_of(device_name, plugin)) {
    d.reason = "datasheet " + d.path + " is for " + d.device + ", the device is " + device_name +
               (paths.datasheet.empty() ? " (no " + plugin + "-*.json in the kit's datasheets " +
                                              "declares it: add one, or pass --datasheet FILE)"
                                        : "");
    return d;
  }
  d.ok = true;
  return d;
}

Datasheet measured_datasheet(const json &anchors, const std::string &device_name) {
  Datasheet d;
  d.path = "measured by the kit in this run";
  const HostAnchors a = HostAnchors::from_json(anchors);
  d.text = anchors_datasheet(a, device_name).dump();
  d.sha256 = sha256_hex(d.text);
  read_figures(json::parse(d.text), d);
  d.measured = true;
  d.anchors = anchors;
  d.ok = a.ok;
  if (!d.ok)
    d.reason = "the kit's host anchors could not be measured";
  return d;
}

Datasheet datasheet_for(const WorkerContext &ctx) {
  // A file wins (the kit's pinned one, or --datasheet): figures the plugin cannot move.
  if (!datasheet_path(ctx.paths, ctx.plugin_name, ctx.info.name).empty())
    return load_datasheet(ctx.paths, ctx.plugin_name, ctx.info.name);
  // A device that runs on the host: the kit's own measurement of the host, never the plugin's.
  if (host_target(compile_target(ctx.info, ctx.paths)) && ctx.host_anchors.is_object())
    return measured_datasheet(ctx.host_anchors, ctx.info.name);
  return load_datasheet(ctx.paths, ctx.plugin_name, ctx.info.name);
}

json datasheet_record(const Paths &paths, const std::string &plugin, const std::string &device,
                      bool host_device) {
  if (host_device && datasheet_path(paths, plugin, device).empty()) {
    // The runner never loads a plugin, and no worker runs yet: the plugin is idle.
    const HostAnchors a = measure_host_anchors(uint64_t(64) << 20, kAnchorReps);
    const Datasheet d = measured_datasheet(a.to_json(), device);
    return {{"path", d.path},
            {"given", false},
            {"measured", true},
            {"ok", d.ok},
            {"reason", d.reason},
            {"sha256", d.sha256},
            {"content", json::parse(d.text)},
            {"anchors", d.anchors}};
  }
  const Datasheet d = load_datasheet(paths, plugin, device);
  json r = {{"path", d.path},
            {"given", !paths.datasheet.empty()},
            {"ok", d.ok},
            {"reason", d.reason},
            {"sha256", d.sha256}};
  if (!d.sha256.empty()) {
    try {
      r["content"] = json::parse(d.text);
    } catch (const std::exception &) {
      r["content"] = d.text; // not JSON: kept as text, what was read is what is recorded
    }
  }
  return r;
}

std::string implausible_fraction(double achieved, double peak, const std::string &what) {
  if (!(peak > 0) || achieved <= kImplausibleFraction * peak)
    return {};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3gx", achieved / peak);
  return "implausible: " + std::string(buf) + " of " + what +
         " (above 1.05x of a datasheet peak is no real measurement)";
}

} // namespace tl::conform
