// JSON descriptions of HAL plugins and devices (nlohmann-json), shared by tl-info and
// tl-conform so that both report capabilities with the same fields.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/hal.h"

#include <nlohmann/json.hpp>

#include <string>

namespace tl::hal {

inline nlohmann::json device_info_json(const tl_device_info &i) {
  nlohmann::json peaks = nlohmann::json::object();
  for (int d = 0; d < TL_DTYPE_COUNT; ++d)
    if (i.peak_flops[d] > 0)
      peaks[tl_dtype_name(static_cast<tl_dtype>(d))] = i.peak_flops[d];
  nlohmann::json dtypes = nlohmann::json::array();
  for (int d = 0; d < TL_DTYPE_COUNT; ++d)
    if (i.supported_dtypes & (uint64_t(1) << d))
      dtypes.push_back(tl_dtype_name(static_cast<tl_dtype>(d)));
  return {{"name", i.name},
          {"vendor", i.vendor},
          {"driver_version", i.driver_version},
          {"plugin", i.plugin},
          {"target", i.target},
          {"targets", i.targets},
          {"memory_bytes", i.memory_bytes},
          {"onchip_memory_bytes", i.onchip_memory_bytes},
          {"compute_units", i.compute_units},
          {"clock_mhz", i.clock_mhz},
          {"max_grid", {i.max_grid[0], i.max_grid[1], i.max_grid[2]}},
          {"peak_bandwidth_bytes_per_s", i.peak_bandwidth_bytes_per_s},
          {"peak_flops", peaks},
          {"supported_dtypes", dtypes},
          {"link_bandwidth_bytes_per_s", i.link_bandwidth_bytes_per_s},
          {"simulated_time", (i.flags & TL_DEVICE_SIMULATED_TIME) != 0}};
}

inline nlohmann::json plugin_info_json(const tl_plugin_info &p) {
  return {{"name", p.name},
          {"path", p.path},
          {"version", p.version},
          {"available", p.available != 0},
          {"reason", p.reason},
          {"abi", std::to_string(p.abi_major) + "." + std::to_string(p.abi_minor)},
          {"device_count", p.device_count}};
}

} // namespace tl::hal
