// Registered statistics: components declare named counters with units once; the registry dumps
// them all (gem5 style), so no figure is copied by hand into a report.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace tl::npu::model {

struct Stat {
  std::string name; ///< dotted path: "core0.mx.busy_cycles"
  std::string unit; ///< "cycles", "bytes", "commands", "flop"
  std::string desc;
  double value = 0;
  Stat &operator+=(double v) {
    value += v;
    return *this;
  }
};

class StatRegistry {
public:
  /// Registers a counter; the reference stays valid for the registry's lifetime.
  Stat &add(const std::string &name, const std::string &unit, const std::string &desc);
  /// Sum of every stat whose name ends with `suffix` (e.g. ".hbm_read_bytes").
  double sum(const std::string &suffix) const;
  const Stat *find(const std::string &name) const;
  /// {"name": {"value": v, "unit": u, "desc": d}, ...} in registration order.
  std::string to_json_items() const;
  const std::deque<Stat> &all() const { return stats_; }

private:
  std::deque<Stat> stats_; // deque: references stay valid as stats are added
};

} // namespace tl::npu::model
