// The tnpu emitter's entry: one planned kernel to a TNPU program.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/backends/tnpu.h"

#include <string>

namespace tl::tnpu::detail {

/// Lowers a kernel the planning passes ran on (planning_passes: it reads their attributes and
/// decides nothing they record) to `out`. Returns "" or the error
/// `file:line:col: error: tnpu: ...` naming the op that cannot be lowered.
std::string lower_kernel(const ir::Kernel &kernel, const CompileOptions &options, Kernel &out);

} // namespace tl::tnpu::detail
