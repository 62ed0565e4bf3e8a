// Helpers every target's table uses.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/target.h"

#include <algorithm>

namespace tl::backends {

std::string check_option_names(const char *target, const TargetOptions &options,
                               const std::vector<std::string> &known) {
  for (const auto &[key, value] : options) {
    if (std::find(known.begin(), known.end(), key) != known.end())
      continue;
    std::string list;
    for (const std::string &k : known)
      list += (list.empty() ? "" : ", ") + k;
    return std::string(target) + ": unknown target option '" + key + "' (" +
           (list.empty() ? "it takes none" : "known: " + list) + ")";
  }
  return {};
}

} // namespace tl::backends
