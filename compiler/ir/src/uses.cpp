// The use lists of a kernel (see uses.h).
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/uses.h"

namespace tl::ir {

UseList::UseList(const Block &block) {
  walk(const_cast<Block *>(&block), [&](Operation *op) {
    for (const Value *v : op->operands())
      users_[v].push_back(op);
  });
}

const std::vector<const Operation *> &UseList::users(const Value *v) const {
  static const std::vector<const Operation *> kNone;
  auto it = users_.find(v);
  return it == users_.end() ? kNone : it->second;
}

} // namespace tl::ir
