// The tnpu planning attributes' readers (see attrs.h).
// SPDX-License-Identifier: Apache-2.0
#include "attrs.h"

#include "tl/npu/isa.h"

#include <vector>

namespace tl::tnpu::attr {

void clear(ir::Kernel &kernel, std::initializer_list<const char *> names) {
  ir::walk(kernel.body(), [&](ir::Operation *op) {
    for (const char *n : names)
      op->remove_attr(n);
  });
}

bool prefetchable(const ir::Operation &op) {
  switch (op.opcode()) {
  case ir::Opcode::Load:
  case ir::Opcode::Full:
  case ir::Opcode::Splat:
  case ir::Opcode::Constant:
    return op.num_results() == 1 && op.result()->type().is_tile();
  default:
    return false;
  }
}

namespace {
/// v with reshapes and expand_dims looked through (the same elements in the same order).
const ir::Value *unshaped(const ir::Value *v) {
  while (v->def() && (v->def()->opcode() == ir::Opcode::Reshape ||
                      v->def()->opcode() == ir::Opcode::ExpandDims))
    v = v->def()->operand(0);
  return v;
}
const ir::Operation *def_of(const ir::Value *v, ir::Opcode code) {
  return v->def() && v->def()->opcode() == code ? v->def() : nullptr;
}
} // namespace

std::optional<RowGather> row_gather(const ir::Operation &op) {
  if (op.opcode() != ir::Opcode::Gather || op.operand(0)->type().rank() != 2 ||
      op.num_operands() != 3 || op.result()->type().rank() != 2)
    return std::nullopt;
  const int64_t r = op.result()->type().shape()[0], c = op.result()->type().shape()[1];
  const ir::Operation *rows = def_of(op.operand(1), ir::Opcode::Broadcast);
  const ir::Operation *cols = def_of(op.operand(2), ir::Opcode::Broadcast);
  if (!rows || !cols || op.operand(1)->type().elem() != ir::ScalarKind::I32 ||
      op.operand(2)->type().elem() != ir::ScalarKind::I32)
    return std::nullopt;
  const ir::Type &ids = rows->operand(0)->type(), &run = cols->operand(0)->type();
  if (ids.rank() != 2 || ids.shape()[0] != r || ids.shape()[1] != 1 || run.rank() != 2 ||
      run.shape()[0] != 1 || run.shape()[1] != c)
    return std::nullopt;
  // the run: arange(a, a + C), or that plus a splat of a scalar
  const ir::Value *v = unshaped(cols->operand(0)), *start = nullptr;
  if (const ir::Operation *add = def_of(v, ir::Opcode::Add)) {
    for (unsigned i = 0; i < 2 && !start; ++i)
      if (const ir::Operation *s = def_of(add->operand(i), ir::Opcode::Splat);
          s && def_of(add->operand(1 - i), ir::Opcode::Arange))
        start = s->operand(0), v = add->operand(1 - i);
    if (!start)
      return std::nullopt;
  }
  const ir::Operation *iota = def_of(v, ir::Opcode::Arange);
  if (!iota || v->type().num_elements() != c)
    return std::nullopt;
  return RowGather{rows, cols, rows->operand(0), start, *iota->attr_as<int64_t>("start")};
}

const ir::Operation *loop_op(const ir::Block &body) {
  return body.parent() ? body.parent() : body.terminator();
}

int64_t get_int(const ir::Operation &op, const char *name, int64_t otherwise) {
  const int64_t *v = op.attr_as<int64_t>(name);
  return v ? *v : otherwise;
}

std::optional<uint64_t> address(const ir::Value *v, const ir::Operation **overflow) {
  const ir::Operation *d = v->def();
  size_t i = v->index();
  if (!d) // a `for`'s carried tile: its result's slot
    d = v->owner()->parent(), i -= 1;
  *overflow = d;
  int64_t at = -1;
  if (const auto *list = d->attr_as<std::vector<int64_t>>(kAddr))
    at = i < list->size() ? (*list)[i] : -1;
  else
    at = get_int(*d, kAddr, -1);
  if (at < 0)
    return std::nullopt;
  const std::string *mem = d->attr_as<std::string>(kMem);
  size_t word = 0, from = 0;
  while (mem && word < i && from != std::string::npos) // the i-th comma-separated word
    from = mem->find(',', from), from = from == std::string::npos ? from : from + 1, ++word;
  const bool acc = mem && from != std::string::npos && mem->compare(from, 3, "acc") == 0;
  return uint64_t(at) + (acc ? npu::isa::kAccBase : 0);
}

} // namespace tl::tnpu::attr
