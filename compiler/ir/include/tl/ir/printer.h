// Prints Tile IR as `.tlir` text; parse(print(m)) prints back to the same text.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <string>
#include <vector>

namespace tl::ir {

/// With `op_locs`, also records where each op came from: (*op_locs)[i] is the location of the op
/// printed on line i (0-based; lines without an op hold an empty Location). A consumer that
/// parses the text (a compiler-target plugin) reports errors at printed lines; this maps them
/// back to the user's source.
std::string print(const Module &module, std::vector<Location> *op_locs = nullptr);
std::string print(const Kernel &kernel);

} // namespace tl::ir
