// NumPy `.npy` files as host tensors: the format is support/npy's, this maps its dtypes.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/interpreter/host_tensor.h"
#include "tl/support/npy.h"

#include <string>

namespace tl::npy {

using support::npy::NpyError;

/// Loads a C-order array of bool, int8-64, uint8-32, float16/32/64 (little-endian).
interp::HostTensor load(const std::string &path);
/// Parses `.npy` bytes (`what` names the source in errors).
interp::HostTensor parse(const std::string &bytes, const std::string &what);
/// Saves `t`; bf16 and fp8 tensors, which NumPy lacks, are written as float32 (exactly).
void save(const std::string &path, const interp::HostTensor &t);

} // namespace tl::npy
