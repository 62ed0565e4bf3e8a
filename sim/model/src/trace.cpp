// Chrome trace JSON writer (see trace.h).
// SPDX-License-Identifier: Apache-2.0
#include "trace.h"

#include <nlohmann/json.hpp>

namespace tl::npu::model {

void Trace::name_track(int pid, int tid, const std::string &name) {
  tracks_.push_back({pid, tid, name});
}

std::string Trace::to_json() const {
  nlohmann::json events = nlohmann::json::array();
  for (const Track &t : tracks_) {
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", t.pid},
                      {"tid", t.tid},
                      {"args", {{"name", t.name}}}});
    events.push_back({{"ph", "M"},
                      {"name", "process_name"},
                      {"pid", t.pid},
                      {"tid", t.tid},
                      {"args", {{"name", "core" + std::to_string(t.pid)}}}});
  }
  for (const Event &e : events_) // timestamps in microseconds
    events.push_back({{"ph", "X"},
                      {"name", e.name},
                      {"pid", e.pid},
                      {"tid", e.tid},
                      {"ts", static_cast<double>(e.start_ps) * 1e-6},
                      {"dur", static_cast<double>(e.dur_ps) * 1e-6},
                      {"args", {{"detail", e.detail}}}});
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump();
}

} // namespace tl::npu::model
