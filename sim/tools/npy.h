// Minimal NumPy .npy reading and writing as raw little-endian bytes (C order), for tl-sim memory
// images. Kept here so the simulator depends on nothing of the compiler.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tl::npu::npy {

struct Array {
  std::string descr;          ///< e.g. "<f4", "|i1", "<u2"
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;  ///< raw element bytes
};

/// Element size of a supported descr (b1, i1, u1, i2, u2, f2, i4, u4, f4, i8, u8, f8 in
/// little-endian or '|'); 0 if unsupported.
int descr_size(const std::string &descr);
/// Throws std::runtime_error naming the file and the problem.
Array load(const std::string &path);
void save(const std::string &path, const Array &a);

} // namespace tl::npu::npy
