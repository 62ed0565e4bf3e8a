// libFuzzer target: any bytes as a chip config JSON (sim/config). A config is accepted whole or
// rejected with ConfigError; an accepted one must print and parse back to the same
// text. Any other exception, a crash or a sanitizer report is a finding.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/config.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  tl::npu::ChipConfig c;
  try {
    c = tl::npu::parse_config(text, "fuzz.json");
  } catch (const tl::npu::ConfigError &) {
    return 0;
  }
  const std::string once = tl::npu::config_to_json(c);
  std::string twice;
  try {
    twice = tl::npu::config_to_json(tl::npu::parse_config(once, "printed"));
  } catch (const tl::npu::ConfigError &e) {
    std::fprintf(stderr, "an accepted config prints as one that is rejected: %s\n%s\n", e.what(),
                 once.c_str());
    std::abort();
  }
  if (once != twice) {
    std::fprintf(stderr, "config does not round-trip:\n%s\n---\n%s\n", once.c_str(), twice.c_str());
    std::abort();
  }
  return 0;
}
