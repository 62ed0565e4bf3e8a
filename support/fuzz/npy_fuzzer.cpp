// libFuzzer target: any bytes as a `.npy` file (support/npy, the one reader tlc and tl-sim share).
// An accepted array must hold exactly the bytes its shape and dtype need, and write and read back
// to the same array; a rejected one must be an NpyError (a bad_alloc or any other exception, a
// crash or a sanitizer report is a finding).
// SPDX-License-Identifier: Apache-2.0
#include "tl/support/npy.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace npy = tl::support::npy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  npy::Array a;
  try {
    a = npy::parse(std::string(reinterpret_cast<const char *>(data), size), "fuzz.npy");
  } catch (const npy::NpyError &) {
    return 0;
  }
  if (a.data.size() != npy::data_bytes(a.descr, a.shape, "fuzz.npy")) {
    std::fprintf(stderr, "accepted %zu data bytes for a shape that needs others\n", a.data.size());
    std::abort();
  }
  // Write and read back (a per-process temporary file).
  static const std::string path = "/tmp/tl-npy-fuzz-" + std::to_string(getpid()) + ".npy";
  npy::save(path, a);
  const npy::Array b = npy::load(path);
  if (b.descr != npy::canonical_descr(a.descr) || b.shape != a.shape || b.data != a.data) {
    std::fprintf(stderr, "save and load changed the array\n");
    std::abort();
  }
  return 0;
}
