// libFuzzer target: the tnpu code blob as the npusim device reads it, from a whole `.tlx`
// container (hash repaired, as tlx_fuzzer does) or, when the bytes are no container, from the raw
// blob. An accepted blob must serialize and parse back to the same kernels, and every binding it
// holds is checked against the container's kernel table. A crash or a sanitizer report is a
// finding.
// SPDX-License-Identifier: Apache-2.0
#include "tl/format/tnpu_code.h"
#include "tlx_fuzz.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  const tl::exe::LoadResult r = tl::exe::fuzz::deserialize_fixing_hash(bytes);
  const std::vector<uint8_t> &blob = r.ok ? r.exe.code : bytes;
  std::vector<tl::tnpu::Kernel> kernels;
  std::string error;
  if (!tl::tnpu::parse_code(blob.data(), blob.size(), kernels, error))
    return 0;
  if (r.ok && kernels.size() == r.exe.kernels.size())
    for (size_t k = 0; k < kernels.size(); ++k)
      for (const tl::tnpu::Binding &b : kernels[k].bindings)
        (void)tl::tnpu::check_binding(b, r.exe.kernels[k]);
  const std::vector<uint8_t> once = tl::tnpu::serialize_code(kernels);
  std::vector<tl::tnpu::Kernel> back;
  if (!tl::tnpu::parse_code(once.data(), once.size(), back, error) ||
      tl::tnpu::serialize_code(back) != once) {
    std::fprintf(stderr, "an accepted blob does not read back: %s\n", error.c_str());
    std::abort();
  }
  return 0;
}
