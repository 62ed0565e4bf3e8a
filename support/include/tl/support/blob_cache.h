// The compile cache: compiled blobs by content key, in memory and on disk. The one cache of TL:
// the C API's executables (Python's compiles go through it) and llvm-cpu's JIT objects.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace tl::support {

/// A cache key: the SHA-256 (64 hex digits) of `parts`, each followed by a NUL. Every input that
/// decides the blob must be a part (the module text, the target and its options, the compiler's
/// source hash, the host or chip it compiles for).
std::string cache_key(std::initializer_list<std::string_view> parts);

/// The disk directory of cache `kind`: $TL_CACHE_DIR/<kind>, default ~/.cache/tl/<kind>; empty
/// (no disk cache) when TL_CACHE_DIR is set to "".
std::filesystem::path cache_dir(const std::string &kind);

/// The blob stored under `key`: from memory, else from disk (then kept in memory); empty when
/// absent or unreadable.
std::vector<uint8_t> cache_get(const std::string &kind, const std::string &key);

/// Stores `blob` in memory and, best effort, on disk (a temporary file renamed into place, so a
/// reader never sees half a blob; an unwritable directory only means no disk cache). `replace`:
/// overwrite what memory holds under `key` (a blob the caller found damaged).
void cache_put(const std::string &kind, const std::string &key, const std::vector<uint8_t> &blob,
               bool replace = false);

} // namespace tl::support
