// The Tile IR verifier: structure (terminators, regions, SSA dominance) plus each op's rules.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/verifier.h"

#include <set>
#include <unordered_set>

namespace tl::ir {
namespace {

class KernelVerifier {
public:
  KernelVerifier(const Kernel &kernel, Diagnostics &diags) : kernel_(kernel), diags_(diags) {}

  bool run() {
    size_t before = diags_.list().size();
    std::set<std::string> names;
    for (auto &c : kernel_.constexprs()) {
      if (!names.insert(c.name).second)
        diags_.error(kernel_.loc(), "constexpr parameter '" + c.name + "' declared twice");
      if (auto *i = std::get_if<int64_t>(&c.value); i && is_integer(c.type) && !fits(c.type, *i))
        diags_.error(kernel_.loc(), "constexpr parameter '" + c.name + "' value " +
                                        std::to_string(*i) + " is out of range for " +
                                        std::string(scalar_name(c.type)));
    }
    for (auto &arg : kernel_.body()->arguments()) {
      const Type &t = arg->type();
      if (t.is_tile())
        diags_.error(kernel_.loc(), "kernel argument #" + std::to_string(arg->index()) +
                                        " must be a tensor or a scalar, got " + t.str());
      if (t.is_tensor() && t.rank() < 1)
        diags_.error(kernel_.loc(), "tensor arguments must have rank >= 1");
      visible_.insert(arg.get());
    }
    verify_block(*kernel_.body(), nullptr);
    return diags_.list().size() == before;
  }

private:
  void verify_block(const Block &block, const Operation *parent) {
    std::vector<const Value *> defined;
    for (auto &arg : block.arguments()) {
      visible_.insert(arg.get());
      defined.push_back(arg.get());
    }
    const Location &where = parent ? parent->loc() : kernel_.loc();
    if (!block.terminator())
      diags_.error(block.ops().empty() ? where : block.ops().back()->loc(),
                   parent ? "region of '" + std::string(parent->name()) + "' must end with yield"
                          : std::string("kernel body must end with return"));
    for (auto it = block.ops().begin(); it != block.ops().end(); ++it) {
      const Operation &op = **it;
      verify_placement(op, block, parent, std::next(it) == block.ops().end());
      for (unsigned i = 0; i < op.num_operands(); ++i)
        if (!op.operand(i) || !visible_.count(op.operand(i)))
          diags_.error(op.loc(), "operand #" + std::to_string(i) +
                                     " is not defined before its use in '" +
                                     std::string(op.name()) + "'");
      bool operands_ok = true;
      for (Value *v : op.operands())
        operands_ok &= v && visible_.count(v);
      if (operands_ok)
        if (auto err = verify_op(op, kernel_))
          diags_.error(op.loc(), "'" + std::string(op.name()) + "' " + *err);
      for (unsigned r = 0; r < op.num_regions(); ++r)
        verify_block(*op.region(r), &op);
      for (auto &res : op.results()) {
        visible_.insert(res.get());
        defined.push_back(res.get());
      }
    }
    for (const Value *v : defined)
      visible_.erase(v);
  }

  void verify_placement(const Operation &op, const Block &block, const Operation *parent,
                        bool last) {
    const bool term = op.flags() & kTerminator;
    if (term && !last) {
      diags_.error(op.loc(), "'" + std::string(op.name()) + "' must be the last op of its block");
      return;
    }
    if (op.opcode() == Opcode::Return && parent)
      diags_.error(op.loc(), "'return' is only allowed in the kernel body; use 'yield' in regions");
    if (op.opcode() == Opcode::Yield) {
      if (!parent) {
        diags_.error(op.loc(), "'yield' is only allowed inside for and if regions");
        return;
      }
      if (op.num_operands() != parent->num_results()) {
        diags_.error(op.loc(), "'yield' passes " + std::to_string(op.num_operands()) +
                                   " values but '" + std::string(parent->name()) + "' has " +
                                   std::to_string(parent->num_results()) + " results");
        return;
      }
      for (unsigned i = 0; i < op.num_operands(); ++i)
        if (op.operand(i) && op.operand(i)->type() != parent->result(i)->type())
          diags_.error(op.loc(), "'yield' value #" + std::to_string(i) + " has type " +
                                     op.operand(i)->type().str() + " but '" +
                                     std::string(parent->name()) + "' result is " +
                                     parent->result(i)->type().str());
    }
  }

  const Kernel &kernel_;
  Diagnostics &diags_;
  std::unordered_set<const Value *> visible_;
};

} // namespace

bool verify(const Kernel &kernel, Diagnostics &diags) {
  return KernelVerifier(kernel, diags).run();
}

bool verify(const Module &module, Diagnostics &diags) {
  bool ok = true;
  std::set<std::string> names;
  for (auto &k : module.kernels()) {
    if (!names.insert(k->name()).second) {
      diags.error(k->loc(), "kernel '@" + k->name() + "' is defined twice");
      ok = false;
    }
    ok &= verify(*k, diags);
  }
  return ok;
}

} // namespace tl::ir
