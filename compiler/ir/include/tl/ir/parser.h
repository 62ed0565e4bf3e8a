// Parses `.tlir` text into a Module; every syntax error names file:line:col.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/diagnostics.h"

#include <memory>
#include <string_view>

namespace tl::ir {

/// Parses `text` (named `filename` in diagnostics). Returns null and fills `diags` on a syntax
/// error. The result is not verified: call verify() before trusting it.
std::unique_ptr<Module> parse(std::string_view text, std::string_view filename, Diagnostics &diags);

/// Parses a type such as `f32`, `tile<64x32xbf16>` or `tensor<?x?xf16>`.
std::optional<Type> parse_type(std::string_view text);

} // namespace tl::ir
