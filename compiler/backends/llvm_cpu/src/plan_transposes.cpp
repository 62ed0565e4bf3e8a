// llvm-cpu planning pass cpu-direct-transposes: transposes from tensor to tensor (see
// plan_transposes.h).
// SPDX-License-Identifier: Apache-2.0
#include "plan_transposes.h"

#include "plan_attrs.h"
#include "tl/ir/uses.h"

#include <algorithm>
#include <vector>

namespace tl::llvm_cpu {
namespace {

using ir::Opcode;

bool is_reshape(const ir::Operation *op) {
  return op && (op->opcode() == Opcode::Reshape || op->opcode() == Opcode::ExpandDims);
}

/// The dimensions of `shape` wider than 1.
std::vector<int64_t> wide(const std::vector<int64_t> &shape) {
  std::vector<int64_t> w;
  for (int64_t e : shape)
    if (e != 1)
      w.push_back(e);
  return w;
}

/// `shape`'s wide dimensions are exactly (rows, cols), the columns its last dimension.
bool rows_by_cols(const std::vector<int64_t> &shape, int64_t rows, int64_t cols) {
  return wide(shape) == std::vector<int64_t>{rows, cols} && shape.back() == cols;
}

/// The ops of `block` from `first` to `last` (inclusive) write no memory, but `last` itself.
bool no_writes_between(const ir::Block &block, const ir::Operation *first,
                       const ir::Operation *last) {
  bool inside = false;
  for (auto &op : block.ops()) {
    if (op.get() == last)
      return inside;
    inside |= op.get() == first;
    if (inside && (op->flags() & (ir::kWritesMemory | ir::kHasRegions)))
      return false;
  }
  return false;
}

} // namespace

bool plan_transposes(ir::Kernel &kernel) {
  bool changed = plan::clear(kernel, plan::kStridedView);
  changed |= plan::clear(kernel, plan::kTransposeAt);
  changed |= plan::clear(kernel, plan::kTransposeStore);
  const ir::UseList uses(*kernel.body());
  int64_t group = 0;
  // Single-use reshapes of `block` above `v`, up to the op they reshape.
  auto above_reshapes = [&](const ir::Value *v, const ir::Block *block) {
    ir::Operation *def = v->def();
    while (is_reshape(def) && def->parent() == block && uses.count(def->result()) == 1)
      def = def->operand(0)->def();
    return def;
  };
  ir::walk(kernel.body(), [&](ir::Operation *store) {
    if (store->opcode() != Opcode::Store)
      return;
    const ir::Block *block = store->parent();
    const ir::Value *stored = store->operand(store->num_operands() - 1);
    ir::Operation *t = uses.count(stored) == 1 ? above_reshapes(stored, block) : nullptr;
    if (!t || t->opcode() != Opcode::Transpose || t->parent() != block ||
        uses.count(t->result()) != 1)
      return;
    const ir::Type &in = t->operand(0)->type();
    const int r = in.rank();
    const auto &perm = *t->attr_as<std::vector<int64_t>>("perm");
    if (r < 2 || perm[r - 2] != r - 1 || perm[r - 1] != r - 2)
      return;
    const int64_t M = in.shape()[r - 2], N = in.shape()[r - 1];
    if (M % 8 || N % 8 || in.num_elements() != M * N || !rows_by_cols(stored->type().shape(), N, M))
      return; // one M x N matrix (every other dimension 1) in 8 x 8 blocks, stored by rows
    ir::Operation *load = above_reshapes(t->operand(0), block);
    if (!load || load->opcode() != Opcode::Load || load->parent() != block ||
        uses.count(load->result()) != 1 || !rows_by_cols(load->result()->type().shape(), M, N) ||
        !no_writes_between(*block, load, store))
      return; // blocks whose rows are not the matrix's rows stay copies
    load->set_attr(std::string(plan::kStridedView), group);
    t->set_attr(std::string(plan::kTransposeAt), group);
    store->set_attr(std::string(plan::kTransposeStore), group++);
    changed = true;
  });
  return changed;
}

} // namespace tl::llvm_cpu
