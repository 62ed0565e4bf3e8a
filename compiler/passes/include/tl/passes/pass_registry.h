// The table of passes: one entry (name, summary, function) per pass, the only list of them.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <functional>
#include <span>
#include <string>
#include <string_view>

namespace tl::passes {

/// A pass rewrites one kernel in place and returns whether it changed anything. A target's
/// passes carry their options (a lambda holding them, e.g. tnpu::planning_passes).
using PassFn = std::function<bool(ir::Kernel &kernel)>;

struct PassInfo {
  std::string_view name;    // as written in a pipeline string
  std::string_view summary; // one line, for --help style listings
  PassFn run;
};

/// Every registered pass, in a stable order.
std::span<const PassInfo> all_passes();

/// The pass called `name`, or null.
const PassInfo *find_pass(std::string_view name);

/// The registered names joined by ", " (for error messages and help text).
std::string known_pass_names();

} // namespace tl::passes
