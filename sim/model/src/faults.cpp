// Parsing fault-injection specs (see simulator.h).
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/simulator.h"

#include <cstdlib>
#include <map>
#include <stdexcept>

namespace tl::npu {
namespace {

uint64_t number(const std::map<std::string, std::string> &kv, const std::string &key,
                const std::string &spec, bool required) {
  auto it = kv.find(key);
  if (it == kv.end()) {
    if (required)
      throw std::invalid_argument("fault '" + spec + "': missing " + key + "=");
    return 0;
  }
  char *end = nullptr;
  uint64_t v = std::strtoull(it->second.c_str(), &end, 0);
  if (it->second.empty() || *end != 0)
    throw std::invalid_argument("fault '" + spec + "': " + key + " is not a number: " + it->second);
  return v;
}

} // namespace

Fault parse_fault(const std::string &spec) {
  const size_t colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  std::map<std::string, std::string> kv;
  std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  size_t p = 0;
  while (p < rest.size()) {
    size_t comma = rest.find(',', p);
    std::string item = rest.substr(p, comma == std::string::npos ? std::string::npos : comma - p);
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      throw std::invalid_argument("fault '" + spec + "': expected key=value, got '" + item + "'");
    kv[item.substr(0, eq)] = item.substr(eq + 1);
    p = comma == std::string::npos ? rest.size() : comma + 1;
  }
  Fault f;
  static const std::map<std::string, Fault::Kind> kKinds = {{"sram-flip", Fault::Kind::SramFlip},
                                                            {"hbm-flip", Fault::Kind::HbmFlip},
                                                            {"dma-error", Fault::Kind::DmaError},
                                                            {"hang", Fault::Kind::Hang}};
  auto k = kKinds.find(kind);
  if (k == kKinds.end())
    throw std::invalid_argument("fault '" + spec + "': unknown kind '" + kind +
                                "' (sram-flip, hbm-flip, dma-error, hang)");
  f.kind = k->second;
  const bool flip = f.kind == Fault::Kind::SramFlip || f.kind == Fault::Kind::HbmFlip;
  f.core = static_cast<int>(number(kv, "core", spec, f.kind == Fault::Kind::SramFlip));
  if (flip) {
    f.address = number(kv, "addr", spec, true);
    f.bit = static_cast<int>(number(kv, "bit", spec, true));
    f.cycle = number(kv, "cycle", spec, false);
    if (f.bit > 7)
      throw std::invalid_argument("fault '" + spec + "': bit must be 0..7");
  } else {
    auto u = kv.find("unit");
    if (u == kv.end())
      throw std::invalid_argument("fault '" + spec + "': missing unit=");
    f.unit = u->second;
    f.command = number(kv, "command", spec, false);
    if (f.kind == Fault::Kind::DmaError && f.unit.compare(0, 3, "dma") != 0)
      throw std::invalid_argument("fault '" + spec + "': dma-error needs a DMA unit (dma0..)");
  }
  return f;
}

} // namespace tl::npu
