// A deep copy of a module (see clone.h).
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/clone.h"

#include <unordered_map>

namespace tl::ir {
namespace {

using ValueMap = std::unordered_map<const Value *, Value *>;

void clone_block(const Block &from, Block &to, ValueMap &map) {
  for (auto &a : from.arguments()) {
    Value *c = to.add_argument(a->type());
    c->set_name(a->name());
    map[a.get()] = c;
  }
  for (auto &op : from.ops()) {
    auto c = std::make_unique<Operation>(op->opcode(), op->loc());
    c->set_parent(&to); // before add_result: results record their block
    for (const Value *v : op->operands())
      c->add_operand(map.at(v)); // defined before use (SSA)
    for (auto &r : op->results()) {
      Value *cr = c->add_result(r->type());
      cr->set_name(r->name());
      map[r.get()] = cr;
    }
    for (auto &[name, value] : op->attrs())
      c->set_attr(name, value);
    for (unsigned r = 0; r < op->num_regions(); ++r)
      clone_block(*op->region(r), *c->add_region(), map);
    to.ops().push_back(std::move(c));
  }
}

} // namespace

std::unique_ptr<Module> clone(const Module &module) {
  auto out = std::make_unique<Module>();
  for (auto &k : module.kernels()) {
    Kernel *c = out->add_kernel(k->name(), k->loc());
    c->constexprs() = k->constexprs();
    ValueMap map;
    clone_block(*k->body(), *c->body(), map);
  }
  return out;
}

} // namespace tl::ir
