// The activity trace: one complete event per unit command, written as Chrome trace JSON
// (chrome://tracing and ui.perfetto.dev read it). Cheap when disabled.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tl::npu::model {

class Trace {
public:
  explicit Trace(bool enabled) : enabled_(enabled) {}
  bool enabled() const { return enabled_; }
  /// Names track `tid` of process `pid` (pid = core, tid = unit).
  void name_track(int pid, int tid, const std::string &name);
  /// An activity of `name` on (pid, tid) from `start_ps` lasting `dur_ps`; `detail` goes to args.
  void complete(int pid, int tid, const char *name, uint64_t start_ps, uint64_t dur_ps,
                const std::string &detail) {
    if (enabled_)
      events_.push_back({pid, tid, name, start_ps, dur_ps, detail});
  }
  std::string to_json() const;

private:
  struct Event {
    int pid, tid;
    const char *name;
    uint64_t start_ps, dur_ps;
    std::string detail;
  };
  struct Track {
    int pid, tid;
    std::string name;
  };
  bool enabled_;
  std::vector<Event> events_;
  std::vector<Track> tracks_;
};

} // namespace tl::npu::model
