// Reading and writing tensor elements of every storage type in host memory.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "lanes.h"
#include "tl/interpreter/host_tensor.h"

namespace tl::interp {

Lane read_element(const void *base, ir::ScalarKind dtype, int64_t index);
void write_element(void *base, ir::ScalarKind dtype, int64_t index, Lane v);

} // namespace tl::interp
