// Shared by the container fuzzers: deserialize() of fuzzer bytes, with the stored content hash
// replaced by the right one when it is the only thing wrong (a fuzzer cannot forge SHA-256, and
// everything the reader does after the hash check is what the fuzzers are for).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/format/executable.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace tl::exe::fuzz {

inline std::vector<uint8_t> from_hex(const std::string &hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

/// deserialize(bytes); on "content hash mismatch: stored S, computed C" writes C over S in
/// `bytes` and reads again.
inline LoadResult deserialize_fixing_hash(std::vector<uint8_t> &bytes) {
  LoadResult r = deserialize(bytes.data(), bytes.size());
  const std::string prefix = "content hash mismatch: stored ";
  if (r.ok || r.error.rfind(prefix, 0) != 0)
    return r;
  const std::vector<uint8_t> stored = from_hex(r.error.substr(prefix.size(), 64));
  const std::vector<uint8_t> computed = from_hex(r.error.substr(r.error.size() - 64));
  auto at = std::search(bytes.begin(), bytes.end(), stored.begin(), stored.end());
  if (at == bytes.end() || stored.size() != 32 || computed.size() != 32)
    return r;
  std::copy(computed.begin(), computed.end(), at);
  return deserialize(bytes.data(), bytes.size());
}

} // namespace tl::exe::fuzz
