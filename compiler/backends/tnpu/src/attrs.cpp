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
