// Deep copies of kernels and modules (see clone.h).
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/clone.h"

#include <unordered_map>

namespace tl::ir {
namespace {

class Cloner {
public:
  void block(const Block &from, Block &to) {
    for (const auto &a : from.arguments())
      copy_value(*a, *to.add_argument(a->type()));
    for (const auto &op : from.ops()) {
      auto copy = std::make_unique<Operation>(op->opcode(), op->loc());
      copy->set_parent(&to); // before add_result: a result's owner is its op's block
      for (const Value *v : op->operands())
        copy->add_operand(map_.at(v)); // SSA: defined before its use, so already copied
      for (const auto &[name, value] : op->attrs())
        copy->set_attr(name, value);
      for (unsigned r = 0; r < op->num_regions(); ++r)
        block(*op->region(r), *copy->add_region());
      for (const auto &r : op->results())
        copy_value(*r, *copy->add_result(r->type()));
      to.ops().push_back(std::move(copy));
    }
  }

private:
  void copy_value(const Value &from, Value &to) {
    to.set_name(from.name());
    map_[&from] = &to;
  }

  std::unordered_map<const Value *, Value *> map_;
};

} // namespace

std::unique_ptr<Module> clone(const Module &module) {
  auto copy = std::make_unique<Module>();
  for (const auto &k : module.kernels()) {
    Kernel *to = copy->add_kernel(k->name(), k->loc());
    to->constexprs() = k->constexprs();
    Cloner().block(*k->body(), *to->body());
  }
  return copy;
}

} // namespace tl::ir
