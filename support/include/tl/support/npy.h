// The NumPy `.npy` format (versions 1-3) as raw little-endian arrays: one strict reader and one
// writer, shared by tlc (as host tensors, compiler/tools/npy) and tl-sim (as memory images).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace tl::support::npy {

/// A malformed, truncated, unsupported or unwritable file; the message names it and the problem.
class NpyError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A C-order array: its dtype as a NumPy descr ("<f4", "|i1", ...), shape and raw bytes.
struct Array {
  std::string descr;
  std::vector<int64_t> shape;
  std::string data;
};

/// The bytes of one element of `descr` (b1, i1, u1, i2, u2, f2, i4, u4, f4, i8, u8, f8; '<', '|'
/// or '='); 0 if unsupported.
int descr_size(const std::string &descr);
/// `descr` with '=' spelled as NumPy writes it on this (little-endian) host: '|' or '<'.
std::string canonical_descr(const std::string &descr);
/// The data bytes of `shape` x descr_size(descr); throws NpyError (naming `what`) on an
/// unsupported dtype, a negative dimension, or a size over 2^40 bytes.
uint64_t data_bytes(const std::string &descr, const std::vector<int64_t> &shape,
                    const std::string &what);

/// Parses `.npy` bytes (`what` names the source in errors): magic, version, header dict, a
/// supported dtype, C order, the shape, and a data size equal to what the shape needs.
Array parse(std::string bytes, const std::string &what);
/// parse() of a file's bytes.
Array load(const std::string &path);
/// Writes `array` as a version-1 file (data 64-byte aligned, as NumPy writes it).
void save(const std::string &path, const Array &array);

} // namespace tl::support::npy
