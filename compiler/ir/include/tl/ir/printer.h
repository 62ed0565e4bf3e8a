// Prints Tile IR as `.tlir` text; parse(print(m)) prints back to the same text.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <string>

namespace tl::ir {

std::string print(const Module &module);
std::string print(const Kernel &kernel);

} // namespace tl::ir
