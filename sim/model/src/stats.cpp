// Registered statistics (see stats.h).
// SPDX-License-Identifier: Apache-2.0
#include "stats.h"

#include <nlohmann/json.hpp>

namespace tl::npu::model {

Stat &StatRegistry::add(const std::string &name, const std::string &unit, const std::string &desc) {
  stats_.push_back({name, unit, desc, 0});
  return stats_.back();
}

double StatRegistry::sum(const std::string &suffix) const {
  double total = 0;
  for (const Stat &s : stats_)
    if (s.name.size() >= suffix.size() &&
        s.name.compare(s.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      total += s.value;
  return total;
}

const Stat *StatRegistry::find(const std::string &name) const {
  for (const Stat &s : stats_)
    if (s.name == name)
      return &s;
  return nullptr;
}

std::string StatRegistry::to_json_items() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const Stat &s : stats_)
    j[s.name] = {{"value", s.value}, {"unit", s.unit}, {"desc", s.desc}};
  return j.dump(1);
}

} // namespace tl::npu::model
