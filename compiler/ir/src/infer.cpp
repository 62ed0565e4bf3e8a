// Result-type inference: the result types of an op that follow from its operands and attributes.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/infer.h"

namespace tl::ir {
namespace {

using Attrs = std::vector<std::pair<std::string, Attr>>;

const Attr *find_attr(const Attrs &attrs, std::string_view name) {
  for (auto &[k, v] : attrs)
    if (k == name)
      return &v;
  return nullptr;
}

int64_t int_attr(const Attrs &attrs, std::string_view name) {
  const Attr *a = find_attr(attrs, name);
  if (!a || !std::holds_alternative<int64_t>(*a))
    throw BuildError("requires integer attribute '" + std::string(name) + "'");
  return std::get<int64_t>(*a);
}

/// The operand types, checked for presence as the rules ask for them.
class Operands {
public:
  explicit Operands(const std::vector<Value *> &ops) : ops_(ops) {}
  const Type &operator()(size_t i) const {
    if (i >= ops_.size())
      throw BuildError("expects at least " + std::to_string(i + 1) + " operands");
    return ops_[i]->type();
  }

private:
  const std::vector<Value *> &ops_;
};

Type infer_constexpr(const Attrs &attrs, const Kernel &kernel) {
  const Attr *a = find_attr(attrs, "name");
  const std::string *name = a ? std::get_if<std::string>(a) : nullptr;
  const ConstexprParam *p = name ? kernel.find_constexpr(*name) : nullptr;
  if (!p)
    throw BuildError("kernel has no constexpr parameter '" + (name ? *name : "") + "'");
  return Type::scalar(p->type);
}

// Each rule reads its operands and attributes lazily, in a fixed order: that order decides which
// error an op missing several of them reports (the C API's messages, unchanged).

Type infer_transpose(const Operands &operand, const Attrs &attrs) {
  const Attr *a = find_attr(attrs, "perm");
  const auto *perm = a ? std::get_if<std::vector<int64_t>>(a) : nullptr;
  if (!perm)
    throw BuildError("requires integer list attribute 'perm'");
  std::vector<int64_t> shape;
  for (int64_t p : *perm) {
    if (p < 0 || p >= operand(0).rank())
      throw BuildError("permutation entry out of range");
    shape.push_back(operand(0).shape()[p]);
  }
  return Type::tile(operand(0).elem(), shape);
}

Type infer_expand_dims(const Operands &operand, const Attrs &attrs) {
  std::vector<int64_t> shape = operand(0).shape();
  const int64_t axis = int_attr(attrs, "axis");
  if (axis < 0 || axis > static_cast<int64_t>(shape.size()))
    throw BuildError("axis out of range");
  shape.insert(shape.begin() + axis, 1);
  return Type::tile(operand(0).elem(), shape);
}

/// acc_type's element type, shape [M, N] of the [M, K] x [K, N] operands.
Type infer_dot(const Operands &operand, const Attrs &attrs) {
  const Attr *a = find_attr(attrs, "acc_type");
  const Type *acc = a ? std::get_if<Type>(a) : nullptr;
  if (!acc)
    throw BuildError("requires type attribute 'acc_type'");
  if (operand(0).rank() != 2 || operand(1).rank() != 2)
    throw BuildError("operands must be rank-2 tiles, got " + operand(0).str() + " and " +
                     operand(1).str());
  return Type::tile(acc->elem(), {operand(0).shape()[0], operand(1).shape()[1]});
}

/// The operand without dimension `axis`; argmax gives i32 indices.
Type infer_reduce(const Operands &operand, const Attrs &attrs) {
  const int64_t axis = int_attr(attrs, "axis");
  const Type &in = operand(0);
  std::vector<int64_t> shape = in.shape();
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    throw BuildError("axis " + std::to_string(axis) + " out of range for " + in.str());
  shape.erase(shape.begin() + axis);
  const Attr *kind = find_attr(attrs, "kind");
  const bool argmax =
      kind && std::get_if<std::string>(kind) && *std::get_if<std::string>(kind) == "argmax";
  return Type::value_of_shape(argmax ? ScalarKind::I32 : in.elem(), shape);
}

} // namespace

std::vector<Type> infer_result_types(Opcode opcode, const std::vector<Value *> &operands,
                                     const Attrs &attrs, const Kernel &kernel) {
  const Operands operand(operands);
  switch (opcode) {
  case Opcode::ProgramId:
  case Opcode::NumPrograms:
    return {Type::scalar(ScalarKind::I32)};
  case Opcode::TensorDim:
  case Opcode::TensorStride:
    return {Type::scalar(ScalarKind::I64)};
  case Opcode::Constexpr:
    return {infer_constexpr(attrs, kernel)};
  case Opcode::Transpose:
    return {infer_transpose(operand, attrs)};
  case Opcode::ExpandDims:
    return {infer_expand_dims(operand, attrs)};
  case Opcode::Gather: // one lane per index
    return {Type::value_of_shape(operand(0).elem(), operand(1).shape())};
  case Opcode::AtomicAdd: // the value operand, after the tensor and one index per dimension
    return {operand(static_cast<size_t>(operand(0).rank()) + 1)};
  case Opcode::Cmp:
  case Opcode::IsNan:
  case Opcode::IsInf:
  case Opcode::IsFinite:
    return {operand(0).with_elem(ScalarKind::I1)};
  case Opcode::Select:
    return {operand(1)};
  case Opcode::Dot:
    return {infer_dot(operand, attrs)};
  case Opcode::Reduce:
    return {infer_reduce(operand, attrs)};
  case Opcode::Scan:
    return {operand(0)};
  case Opcode::For: { // one result per carried value (the operands after lb, ub, step)
    std::vector<Type> types;
    for (size_t i = 3; i < operands.size(); ++i)
      types.push_back(operands[i]->type());
    return types;
  }
  case Opcode::Store:
  case Opcode::Scatter:
  case Opcode::Yield:
  case Opcode::Return:
  case Opcode::Print:
  case Opcode::Assert:
  case Opcode::If:
    return {};
  case Opcode::Cast:
  case Opcode::Bitcast:
    break;
  default:
    if (opcode_flags(opcode) & kElementwise)
      return {operand(0)};
    break;
  }
  throw BuildError("needs explicit result types");
}

} // namespace tl::ir
