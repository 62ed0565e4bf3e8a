// libFuzzer target: any bytes as a certification package (`tl-conform verify PACKAGE`). Every
// problem must come back as a VerifyResult problem (verify_package catches what it reads); an
// escaping exception, a crash or a sanitizer report is a finding.
// SPDX-License-Identifier: Apache-2.0
#include "package.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string path = "/tmp/tl-conform-fuzz-" + std::to_string(getpid()) + ".tar";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
  const tl::conform::VerifyResult v = tl::conform::verify_package(path);
  if (v.intact != v.problems.empty()) {
    std::fprintf(stderr, "intact %d with %zu problems\n", v.intact, v.problems.size());
    std::abort();
  }
  return 0;
}
