// The use lists of a kernel: for every value, the ops that read it, in program order.
// SPDX-License-Identifier: Apache-2.0
//
// Tile IR keeps no use lists in its values (ops are immutable once built and passes rebuild
// blocks), so every analysis that asks "who reads this value?" builds this one index instead
// of its own. It is a snapshot: rebuild it after a rewrite that changes operands.
#pragma once

#include "tl/ir/ir.h"

#include <unordered_map>
#include <vector>

namespace tl::ir {

class UseList {
public:
  /// Indexes every op nested in `block` (parents before their regions' ops).
  explicit UseList(const Block &block);

  /// The ops that read `v` (an op that reads it twice appears twice), in program order.
  const std::vector<const Operation *> &users(const Value *v) const;
  size_t count(const Value *v) const { return users(v).size(); }

private:
  std::unordered_map<const Value *, std::vector<const Operation *>> users_;
};

} // namespace tl::ir
