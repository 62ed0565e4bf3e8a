// Rewriting helpers shared by the passes: use replacement, op erasure and named-rewrite tracing.
// SPDX-License-Identifier: Apache-2.0
#include "tl/passes/rewrite.h"

#include <cassert>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace tl::passes {

void replace_all_uses(ir::Kernel &kernel, ir::Value *from, ir::Value *to) {
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    for (unsigned i = 0; i < op->num_operands(); ++i)
      if (op->operand(i) == from)
        op->set_operand(i, to);
  });
}

void erase_op(ir::Operation *op) {
  ir::Block *block = op->parent();
  assert(block && "erasing an op that is in no block");
  for (auto it = block->ops().begin(); it != block->ops().end(); ++it)
    if (it->get() == op) {
      block->ops().erase(it);
      return;
    }
  assert(false && "op not found in its parent block");
}

void Rewriter::replace(ir::Value *from, ir::Value *to) {
  assert(from != to && from->type() == to->type() && "replacement must keep the type");
  replaced_[from] = to;
}

ir::Value *Rewriter::lookup(ir::Value *v) const {
  for (auto it = replaced_.find(v); it != replaced_.end(); it = replaced_.find(v))
    v = it->second;
  return v;
}

void Rewriter::remap_operands(ir::Operation &op) const {
  if (replaced_.empty())
    return;
  for (unsigned i = 0; i < op.num_operands(); ++i)
    op.set_operand(i, lookup(op.operand(i)));
}

OpIterator Rewriter::replace_op(OpIterator it, const std::vector<ir::Value *> &values) {
  ir::Operation &op = **it;
  assert(values.size() == op.num_results() && "one replacement per result");
  for (unsigned i = 0; i < op.num_results(); ++i)
    replace(op.result(i), lookup(values[i]));
  return erase(it);
}

OpIterator Rewriter::erase(OpIterator it) {
  ir::Block *block = (*it)->parent();
  erased_.push_back(std::move(*it));
  return block->ops().erase(it);
}

void Rewriter::commit() {
  if (!replaced_.empty())
    ir::walk(kernel_.body(), [&](ir::Operation *op) { remap_operands(*op); });
  replaced_.clear();
  erased_.clear();
}

namespace {
std::ostream *initial_trace() {
  const char *env = std::getenv("TL_DEBUG_REWRITES");
  return env && std::strcmp(env, "1") == 0 ? &std::cerr : nullptr;
}
thread_local std::ostream *g_trace = initial_trace();
} // namespace

std::ostream *set_rewrite_trace(std::ostream *os) {
  std::ostream *prev = g_trace;
  g_trace = os;
  return prev;
}

std::ostream *rewrite_trace() { return g_trace; }

void trace_rewrite(std::string_view pattern, const ir::Location &loc) {
  if (g_trace)
    *g_trace << "rewrite " << pattern << " at " << loc.str() << "\n";
}

} // namespace tl::passes
