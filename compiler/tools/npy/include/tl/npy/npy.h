// Reading and writing NumPy `.npy` files (format versions 1-3) as host tensors.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/interpreter/host_tensor.h"

#include <stdexcept>
#include <string>

namespace tl::npy {

/// A malformed, truncated or unsupported file; the message names the file and the problem.
class NpyError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Loads a C-order array of bool, int8-64, uint8-32, float16/32/64 (little-endian).
interp::HostTensor load(const std::string &path);
/// Parses `.npy` bytes (`what` names the source in errors).
interp::HostTensor parse(const std::string &bytes, const std::string &what);
/// Saves `t`; bf16 and fp8 tensors, which NumPy lacks, are written as float32 (exactly).
void save(const std::string &path, const interp::HostTensor &t);

} // namespace tl::npy
