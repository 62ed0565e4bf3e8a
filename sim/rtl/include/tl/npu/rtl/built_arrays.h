// The matrix unit sizes a build verilated (sim/rtl/CMakeLists.txt generates the table).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/npu/rtl/matrix_rtl.h"

#include <memory>
#include <vector>

namespace tl::npu::rtl {

struct BuiltArray {
  int rows, cols, fp32_passes;
  std::unique_ptr<Model> (*make)();
};

/// In TL_NPU_RTL_ARRAYS order.
const std::vector<BuiltArray> &built_arrays();
/// "TL_NPU_RTL_ARRAYS=8x8;32x32": the CMake setting that chose them, for error messages.
const char *built_arrays_option();

} // namespace tl::npu::rtl
