// verify_op: the checks every op gets (result types, attribute names), then its family's rules.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/verifier.h"

#include "verify_op_rules.h"

#include <algorithm>

namespace tl::ir {
namespace {

using namespace op_rules;

/// The attributes each op may carry; anything else is a misspelling or a misunderstanding.
std::vector<std::string_view> allowed_attrs(Opcode code) {
  switch (code) {
  case Opcode::ProgramId:
  case Opcode::NumPrograms:
  case Opcode::TensorDim:
  case Opcode::TensorStride:
  case Opcode::ExpandDims:
    return {"axis"};
  case Opcode::Constant:
  case Opcode::Full:
    return {"value"};
  case Opcode::Constexpr:
    return {"name"};
  case Opcode::Arange:
    return {"start", "end"};
  case Opcode::Transpose:
    return {"perm"};
  case Opcode::Slice:
    return {"offsets"};
  case Opcode::Load:
    return {"padding"};
  case Opcode::Gather:
    return {"other"};
  case Opcode::Cmp:
    return {"pred"};
  case Opcode::Cast:
    return {"rounding"};
  case Opcode::Dot:
    return {"acc_type", "input_precision", "order"};
  case Opcode::Reduce:
    return {"axis", "kind"};
  case Opcode::Scan:
    return {"axis", "kind", "order"};
  case Opcode::Print:
    return {"prefix"};
  case Opcode::Assert:
    return {"message"};
  default:
    return {};
  }
}

/// `<target>.<name>`: a decision a target's passes record on the op (e.g. `tnpu.addr`); those
/// passes give it its meaning, so any op may carry it.
bool is_target_attr(std::string_view name) {
  const size_t dot = name.find('.');
  return dot != std::string_view::npos && dot > 0 && dot + 1 < name.size();
}

Error check_attr_names(const Operation &op) {
  const auto allowed = allowed_attrs(op.opcode());
  for (auto &[name, value] : op.attrs()) {
    if (std::find(allowed.begin(), allowed.end(), name) != allowed.end() || is_target_attr(name))
      continue;
    std::string list;
    for (auto a : allowed)
      list += (list.empty() ? "" : ", ") + std::string(a);
    return "has no attribute '" + name + "' (" +
           (list.empty() ? std::string("it takes none") : "allowed: " + list) + ")";
  }
  return {};
}

Error check_result_types(const Operation &op) {
  for (auto &r : op.results()) {
    const Type &t = r->type();
    if (t.is_tensor())
      return "results cannot be tensors";
    if (!t.is_tile())
      continue;
    if (t.rank() == 0)
      return "tiles need at least one dimension (use a scalar)";
    int64_t n = 1;
    for (int64_t d : t.shape()) {
      if (d < 1)
        return "tile dimensions must be positive";
      if (d > (int64_t(1) << 32) / n)
        return "tile " + t.str() + " has more than 2^32 elements";
      n *= d;
    }
  }
  return {};
}

} // namespace

std::optional<std::string> verify_op(const Operation &op, const Kernel &kernel) {
  if (Error e = check_result_types(op))
    return e;
  if (Error e = check_attr_names(op))
    return e;
  if (op.flags() & kElementwise)
    return verify_elementwise(op);
  switch (op.opcode()) {
  case Opcode::Splat:
  case Opcode::Broadcast:
  case Opcode::Reshape:
  case Opcode::Transpose:
  case Opcode::Slice:
  case Opcode::ExpandDims:
    return verify_shape_op(op);
  case Opcode::Load:
  case Opcode::Store:
    return verify_block_access(op);
  case Opcode::Gather:
  case Opcode::Scatter:
  case Opcode::AtomicAdd:
    return verify_indexed_access(op);
  case Opcode::Dot:
    return verify_dot(op);
  case Opcode::Reduce:
  case Opcode::Scan:
    return verify_reduce_scan(op);
  case Opcode::For:
  case Opcode::If:
  case Opcode::Yield:
  case Opcode::Return:
  case Opcode::Print:
  case Opcode::Assert:
    return verify_control(op);
  default:
    return verify_tile_source(op, kernel);
  }
}

} // namespace tl::ir
