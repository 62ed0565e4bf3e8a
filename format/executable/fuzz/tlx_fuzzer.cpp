// libFuzzer target: any bytes as a `.tlx` container (format/executable, what the HAL reads for
// every device), the content hash repaired when it is all that is wrong. An accepted executable
// must serialize and read back to the same bytes. A crash or a sanitizer report is a finding.
// SPDX-License-Identifier: Apache-2.0
#include "tlx_fuzz.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  const tl::exe::LoadResult r = tl::exe::fuzz::deserialize_fixing_hash(bytes);
  if (!r.ok)
    return 0;
  const std::vector<uint8_t> once = tl::exe::serialize(r.exe);
  const tl::exe::LoadResult back = tl::exe::deserialize(once.data(), once.size());
  if (!back.ok || tl::exe::serialize(back.exe) != once) {
    std::fprintf(stderr, "an accepted executable does not read back: %s\n", back.error.c_str());
    std::abort();
  }
  return 0;
}
