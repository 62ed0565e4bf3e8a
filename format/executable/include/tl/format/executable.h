// The TL executable: one compiled program for one target, as a versioned, hashed container.
// SPDX-License-Identifier: Apache-2.0
//
// Every target's compiler output travels in this one format (`.tlx`, schema executable.fbs): a
// format version, the target id, the kernel table (parameters, grid rank, on-chip memory) and
// the target's code blob, with a SHA-256 of everything but the version. deserialize() accepts
// any bytes: it never reads out of bounds, and it reports what is wrong as a LoadResult error.
#pragma once

#include "tl/dtype.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tl::exe {

enum class ParamKind : uint8_t { Tensor, Scalar };

struct ParamInfo {
  std::string name; // the argument's name hint; may be empty
  ParamKind kind;
  tl_dtype dtype;
  int rank; // 0 for scalars
};

struct KernelInfo {
  std::string name;
  std::vector<ParamInfo> params;
  /// 1..3: the program_id/num_programs axes the kernel uses (max axis + 1, at least 1).
  int grid_rank;
  uint64_t onchip_memory_bytes;
};

struct Executable {
  std::string target;   // "tlir", and later "llvm-cpu", "nvptx", "tnpu"
  std::string producer; // e.g. "tlc 0.1.0"
  std::vector<KernelInfo> kernels;
  std::vector<uint8_t> code;
};

/// The format this library writes. Readers accept format_major == kFormatMajor, any minor.
constexpr uint16_t kFormatMajor = 1, kFormatMinor = 0;
/// The largest tensor rank a parameter may have.
constexpr int kMaxRank = 8;

/// Serializes `exe` (computing its hash). Its fields should satisfy what deserialize() checks;
/// deserialize() of the result is the way to validate an Executable built from user input.
std::vector<uint8_t> serialize(const Executable &exe);

struct LoadResult {
  bool ok = false;
  std::string error; // lower case, names what is wrong; empty when ok
  Executable exe;
  std::string sha256_hex; // the stored (and verified) content hash
  /// The file's format version; set once the header verifies (so also on a version error).
  uint16_t format_major = 0, format_minor = 0;
};

/// Reads an executable from any bytes: checks the identifier, the FlatBuffers structure, the
/// version, the content hash, required fields, enum ranges, ranks and unique kernel names.
LoadResult deserialize(const void *data, size_t size);
/// deserialize() of a file's bytes; a file that cannot be read is a LoadResult error too.
LoadResult load_file(const std::string &path);
/// Writes serialize(exe) to `path`; on failure returns false and sets *error (when non-null).
bool save_file(const std::string &path, const Executable &exe, std::string *error);

/// SHA-256 of `size` bytes, as 64 lower-case hex digits.
std::string sha256_hex(const void *data, size_t size);

} // namespace tl::exe
