// A deep copy of a module: the same kernels, ops, attributes, value names and locations.
// SPDX-License-Identifier: Apache-2.0
//
// For a backend that annotates or rewrites a module it was given as const (its planning passes):
// the copy prints to the same text and reports errors at the same source locations.
#pragma once

#include "tl/ir/ir.h"

#include <memory>

namespace tl::ir {

std::unique_ptr<Module> clone(const Module &module);

} // namespace tl::ir
