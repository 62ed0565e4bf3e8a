// libFuzzer target: any bytes as a results log (results.jsonl, what `tl-conform report` and a
// resumed run read), then everything built from it: the results document against the seed
// manifest, the verdict, JUnit XML and the HTML report. Errors must be std::exceptions naming
// the problem; a crash or a sanitizer report is a finding.
// SPDX-License-Identifier: Apache-2.0
#include "report.h"

#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {
tl::conform::json manifest() {
  std::ifstream in(TL_CONFORM_FUZZ_SEEDS "/suite.json");
  std::stringstream s;
  s << in.rdbuf();
  return tl::conform::json::parse(s.str());
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const tl::conform::json suite = manifest();
  static const std::string path = "/tmp/tl-conform-fuzz-" + std::to_string(getpid()) + ".jsonl";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
  try {
    const tl::conform::json results =
        tl::conform::build_results(tl::conform::load_log(path), suite);
    (void)tl::conform::junit_xml(results);
    (void)tl::conform::html_report(results);
  } catch (const std::exception &) {
  }
  return 0;
}
