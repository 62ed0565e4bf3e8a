// Datasheets: the declared spec (memory and link bandwidth, peak FLOP/s) the timing suites judge
// a device against, from a file the plugin cannot move: the kit's pinned
// data/datasheets/<plugin>.json or one the user passes with --datasheet (recorded in the run).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "conform.h"

#include <string>

namespace tl::conform {

/// A measured rate above this fraction of its datasheet peak is implausible, not fast.
inline constexpr double kImplausibleFraction = 1.05;

/// A device's datasheet, or why there is none that applies (`reason`, when !ok).
struct Datasheet {
  bool ok = false;
  std::string reason;
  std::string path, sha256, device, source;
  std::string text;                 // the file's bytes as read (what sha256 is of)
  double memory_bandwidth = 0;      // bytes/s; 0 = not declared
  double link_bandwidth = 0;        // bytes/s, host<->device per direction; 0 = not declared
  json peak_flops = json::object(); // dtype name -> FLOP/s
  // The vector unit's ceilings for f32 elementwise work (0 = not declared: no such ceiling):
  // simple operations (add, max, multiply, ...), exponentials and special functions (erf, tanh,
  // sigmoid; where not declared, the exponentials' rate) per second, all units together.
  double vector_ops = 0, exp_ops = 0, special_ops = 0;
  // Its events count simulated time (a simulator): the host's wall clock bounds nothing then.
  // Declared here, not by the plugin, which could claim it to escape the wall-clock check.
  bool simulated_time = false;
  // Measured by the kit in this run (host_anchor.h) instead of read from a file: `anchors` holds
  // the measurement (each bandwidth kind is judged on its own anchor).
  bool measured = false;
  json anchors;

  double flops(const std::string &dtype) const { return peak_flops.value(dtype, 0.0); }
  /// What a test's metrics record about it: path, SHA-256, device, source.
  json summary() const;
};

/// The datasheet file a run uses: --datasheet's, else the kit's data/datasheets/<plugin>.json or
/// <plugin>-<model>.json that declares device `device_name` (a plugin driving several models),
/// else <plugin>.json ("" when there is none).
std::string datasheet_path(const Paths &paths, const std::string &plugin,
                           const std::string &device_name);

/// Reads and checks a datasheet file; its figures or why it is unusable (the file and field).
/// `device_name` is the device's tl_device_info.name: a datasheet for another device is !ok.
Datasheet load_datasheet(const Paths &paths, const std::string &plugin,
                         const std::string &device_name);

/// The datasheet for the worker's device (what both timing suites read): the file, else, for a
/// device that runs on the host (its tests compile for llvm-cpu), the kit's host anchors that the
/// worker measured (ctx.host_anchors), else none (!ok, with the reason).
Datasheet datasheet_for(const WorkerContext &ctx);

/// A datasheet of the kit's host anchors for `device_name` (measured, ok).
Datasheet measured_datasheet(const json &anchors, const std::string &device_name);

/// The run header's record: the file, its SHA-256 and content, or why there is none. With no
/// file and `host_device` (the device's tests compile for llvm-cpu), the kit measures the host's
/// anchors now (the runner loads no plugin) and records them as the run's datasheet.
json datasheet_record(const Paths &paths, const std::string &plugin, const std::string &device,
                      bool host_device = false);

/// "" or why `achieved` cannot be real: above kImplausibleFraction of `peak` (`what` names it).
std::string implausible_fraction(double achieved, double peak, const std::string &what);

} // namespace tl::conform
