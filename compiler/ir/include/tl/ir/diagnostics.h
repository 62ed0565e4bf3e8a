// Located diagnostics for the user's mistakes: `file:line:col: error: message`.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <string>
#include <vector>

namespace tl::ir {

struct Diagnostic {
  Location loc;
  std::string message; // lower case, no trailing period (LLVM style)
  std::string str() const { return loc.str() + ": error: " + message; }
};

class Diagnostics {
public:
  void error(const Location &loc, std::string message) {
    list_.push_back({loc, std::move(message)});
  }
  bool has_errors() const { return !list_.empty(); }
  const std::vector<Diagnostic> &list() const { return list_; }
  std::string str() const {
    std::string s;
    for (auto &d : list_)
      s += d.str() + "\n";
    return s;
  }

private:
  std::vector<Diagnostic> list_;
};

} // namespace tl::ir
