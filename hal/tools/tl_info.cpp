// tl-info: lists HAL plugins (loaded or unavailable, with reasons) and devices with capabilities.
// SPDX-License-Identifier: Apache-2.0
#include "tl/hal.hpp"
#include "tl/hal_json.hpp"

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace po = boost::program_options;
using nlohmann::json;

namespace {

json inventory(const tl::hal::Runtime &rt) {
  json out;
  uint32_t major, minor;
  tl_runtime_get_api_version(&major, &minor);
  out["api_version"] = std::to_string(major) + "." + std::to_string(minor);
  out["plugins"] = json::array();
  for (const tl_plugin_info &p : rt.plugins())
    out["plugins"].push_back(tl::hal::plugin_info_json(p));
  out["devices"] = json::array();
  for (const tl::hal::Device &d : rt.devices())
    out["devices"].push_back(tl::hal::device_info_json(d.info()));
  return out;
}

void print_text(const json &inv) {
  std::cout << "TL HAL API " << inv["api_version"].get<std::string>() << "\n\nplugins:\n";
  if (inv["plugins"].empty())
    std::cout << "  none found (set TL_PLUGIN_PATH)\n";
  for (auto &p : inv["plugins"]) {
    std::cout << "  " << p["name"].get<std::string>() << "  " << p["path"].get<std::string>();
    if (p["available"].get<bool>())
      std::cout << "  [available, " << p["device_count"] << " device(s), version "
                << p["version"].get<std::string>() << "]\n";
    else
      std::cout << "  [unavailable: " << p["reason"].get<std::string>() << "]\n";
  }
  std::cout << "\ndevices:\n";
  int n = 0;
  for (auto &d : inv["devices"]) {
    std::printf("  #%d %s (%s, plugin %s)\n", n++, d["name"].get<std::string>().c_str(),
                d["vendor"].get<std::string>().c_str(), d["plugin"].get<std::string>().c_str());
    std::printf("     target %s (accepts %s), %u compute units at %u MHz\n",
                d["target"].get<std::string>().c_str(), d["targets"].get<std::string>().c_str(),
                d["compute_units"].get<unsigned>(), d["clock_mhz"].get<unsigned>());
    std::printf("     memory %.1f GiB, on-chip %.0f KiB, peak bandwidth %.1f GB/s\n",
                d["memory_bytes"].get<double>() / (1 << 30),
                d["onchip_memory_bytes"].get<double>() / 1024,
                d["peak_bandwidth_bytes_per_s"].get<double>() / 1e9);
    const double link = d["link_bandwidth_bytes_per_s"].get<double>();
    const char *clock = d["simulated_time"].get<bool>() ? ", simulated time" : "";
    if (link > 0)
      std::printf("     host link %.1f GB/s%s\n", link / 1e9, clock);
    else
      std::printf("     host link not modelled%s\n", clock);
    for (auto &[dt, f] : d["peak_flops"].items())
      std::printf("     peak %-6s %.1f GFLOP/s\n", dt.c_str(), f.get<double>() / 1e9);
  }
  if (inv["devices"].empty())
    std::cout << "  none\n";
}

} // namespace

int main(int argc, char **argv) {
  bool as_json = false;
  std::string plugin_path;
  po::options_description desc("tl-info options");
  desc.add_options()("help,h", "show this help")("json", po::bool_switch(&as_json), "print JSON")(
      "plugin-path", po::value(&plugin_path), "extra plugin files or directories (':'-separated)");
  try {
    po::variables_map vm;
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
    if (vm.count("help")) {
      std::cout << "usage: tl-info [--json] [--plugin-path P]\n" << desc;
      return 0;
    }
    tl::hal::Runtime rt(plugin_path.empty() ? nullptr : plugin_path.c_str());
    json inv = inventory(rt);
    if (as_json)
      std::cout << inv.dump(2) << "\n";
    else
      print_text(inv);
  } catch (const std::exception &e) {
    std::cerr << "tl-info: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
