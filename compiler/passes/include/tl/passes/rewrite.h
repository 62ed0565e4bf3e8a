// Rewriting helpers shared by the passes: use replacement, op erasure and named-rewrite tracing.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/ir/ir.h"

#include <iosfwd>
#include <list>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tl::passes {

using OpIterator = std::list<std::unique_ptr<ir::Operation>>::iterator;

/// Replaces every use of `from` by `to` in `kernel`, nested regions included. Costs one walk of
/// the kernel: for many replacements in one sweep use a Rewriter instead.
void replace_all_uses(ir::Kernel &kernel, ir::Value *from, ir::Value *to);

/// Removes `op` from its block and destroys it (with its regions). Its results must be unused.
void erase_op(ir::Operation *op);

/// Batches the rewrites of one sweep over a kernel. Replacements are recorded in a map and
/// applied to every op by commit(); erased ops stay allocated until then, so no pointer held in
/// the map can be reused by a newly made value. commit() also runs on destruction.
class Rewriter {
public:
  explicit Rewriter(ir::Kernel &kernel) : kernel_(kernel) {}
  ~Rewriter() { commit(); }
  Rewriter(const Rewriter &) = delete;
  Rewriter &operator=(const Rewriter &) = delete;

  ir::Kernel &kernel() const { return kernel_; }

  /// Every later use of `from` reads `to` (same type).
  void replace(ir::Value *from, ir::Value *to);
  /// The value `v` stands for after the replacements recorded so far.
  ir::Value *lookup(ir::Value *v) const;
  /// Rewrites `op`'s operands through the recorded replacements (not those of nested ops).
  void remap_operands(ir::Operation &op) const;

  /// Replaces the results of the op at `it` by `values` (one per result) and erases it.
  /// Returns the iterator after it.
  OpIterator replace_op(OpIterator it, const std::vector<ir::Value *> &values);
  /// Unlinks the op at `it` from its block; returns the iterator after it.
  OpIterator erase(OpIterator it);

  /// Applies the replacements to every op of the kernel and frees the erased ops.
  void commit();

private:
  ir::Kernel &kernel_;
  std::unordered_map<ir::Value *, ir::Value *> replaced_;
  std::vector<std::unique_ptr<ir::Operation>> erased_;
};

/// Logs `rewrite <pattern> at file:line:col` when rewrite tracing is on (see set_rewrite_trace).
void trace_rewrite(std::string_view pattern, const ir::Location &loc);

/// Where trace_rewrite writes on this thread; null turns tracing off. The initial value is
/// std::cerr when the environment variable TL_DEBUG_REWRITES is 1, otherwise null. Returns the
/// previous stream.
std::ostream *set_rewrite_trace(std::ostream *os);
std::ostream *rewrite_trace();

} // namespace tl::passes
