// The Tile IR builder: typed helpers that infer result types and check every op as it is made.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/builder.h"

#include "tl/ir/verifier.h"

namespace tl::ir {

Builder::Builder(Kernel &kernel, Location loc)
    : kernel_(kernel), loc_(std::move(loc)), block_(kernel.body()),
      before_(kernel.body()->ops().end()) {
  if (!loc_.file)
    loc_.file = std::make_shared<const std::string>("<builder>");
}

void Builder::set_insertion_point(Block *block,
                                  std::list<std::unique_ptr<Operation>>::iterator before) {
  block_ = block;
  before_ = before;
}

void Builder::set_insertion_point_to_end(Block *block) {
  set_insertion_point(block, block->ops().end());
}

Value *Builder::add_argument(Type type, std::string name) {
  if (type.is_tile())
    throw BuildError("kernel arguments must be tensors or scalars, got " + type.str());
  Value *v = kernel_.body()->add_argument(std::move(type));
  v->set_name(std::move(name));
  return v;
}

Operation *Builder::insert(std::unique_ptr<Operation> op) {
  op->set_parent(block_);
  return block_->ops().insert(before_, std::move(op))->get();
}

Operation *Builder::create(Opcode opcode, std::vector<Value *> operands,
                           std::vector<Type> result_types,
                           std::vector<std::pair<std::string, Attr>> attrs) {
  for (Value *v : operands)
    if (!v)
      throw BuildError("'" + std::string(opcode_name(opcode)) + "' given a null operand");
  auto op = std::make_unique<Operation>(opcode, loc_);
  op->set_parent(block_);
  for (Value *v : operands)
    op->add_operand(v);
  for (auto &t : result_types)
    op->add_result(std::move(t));
  for (auto &[k, v] : attrs)
    op->set_attr(std::move(k), std::move(v));
  if (opcode == Opcode::For) {
    Block *body = op->add_region();
    body->add_argument(operands.at(0)->type());
    for (size_t i = 3; i < operands.size(); ++i)
      body->add_argument(operands[i]->type());
  }
  if (!(op->flags() & kTerminator) && opcode != Opcode::If)
    if (auto err = verify_op(*op, kernel_))
      throw BuildError("'" + std::string(opcode_name(opcode)) + "' " + *err);
  return insert(std::move(op));
}

Value *Builder::program_id(int axis) {
  return create(Opcode::ProgramId, {}, {Type::scalar(ScalarKind::I32)}, {{"axis", int64_t(axis)}})
      ->result();
}
Value *Builder::num_programs(int axis) {
  return create(Opcode::NumPrograms, {}, {Type::scalar(ScalarKind::I32)},
                {{"axis", int64_t(axis)}})
      ->result();
}
Value *Builder::constant(ScalarKind type, int64_t value) {
  Attr a = type == ScalarKind::I1 ? Attr(value != 0) : Attr(value);
  if (is_float(type))
    a = static_cast<double>(value);
  return create(Opcode::Constant, {}, {Type::scalar(type)}, {{"value", a}})->result();
}
Value *Builder::constant(ScalarKind type, double value) {
  return create(Opcode::Constant, {}, {Type::scalar(type)}, {{"value", value}})->result();
}
Value *Builder::constexpr_param(std::string_view name) {
  const ConstexprParam *p = kernel_.find_constexpr(name);
  if (!p)
    throw BuildError("kernel has no constexpr parameter '" + std::string(name) + "'");
  return create(Opcode::Constexpr, {}, {Type::scalar(p->type)}, {{"name", std::string(name)}})
      ->result();
}
Value *Builder::dim(Value *tensor, int axis) {
  return create(Opcode::TensorDim, {tensor}, {Type::scalar(ScalarKind::I64)},
                {{"axis", int64_t(axis)}})
      ->result();
}
Value *Builder::stride(Value *tensor, int axis) {
  return create(Opcode::TensorStride, {tensor}, {Type::scalar(ScalarKind::I64)},
                {{"axis", int64_t(axis)}})
      ->result();
}

Value *Builder::arange(int64_t start, int64_t end, ScalarKind type) {
  if (end <= start)
    throw BuildError("'arange' needs end > start");
  return create(Opcode::Arange, {}, {Type::tile(type, {end - start})},
                {{"end", end}, {"start", start}})
      ->result();
}
Value *Builder::full(const Type &tile, Attr value) {
  return create(Opcode::Full, {}, {tile}, {{"value", std::move(value)}})->result();
}
Value *Builder::splat(Value *scalar, std::vector<int64_t> shape) {
  return create(Opcode::Splat, {scalar}, {Type::tile(scalar->type().elem(), std::move(shape))})
      ->result();
}
Value *Builder::broadcast(Value *tile, std::vector<int64_t> shape) {
  return create(Opcode::Broadcast, {tile}, {Type::tile(tile->type().elem(), std::move(shape))})
      ->result();
}
Value *Builder::reshape(Value *tile, std::vector<int64_t> shape) {
  return create(Opcode::Reshape, {tile}, {Type::tile(tile->type().elem(), std::move(shape))})
      ->result();
}
Value *Builder::transpose(Value *tile, std::vector<int64_t> perm) {
  std::vector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= tile->type().rank())
      throw BuildError("'transpose' permutation entry out of range");
    shape.push_back(tile->type().shape()[p]);
  }
  return create(Opcode::Transpose, {tile}, {Type::tile(tile->type().elem(), shape)},
                {{"perm", std::move(perm)}})
      ->result();
}
Value *Builder::expand_dims(Value *value, int axis) {
  std::vector<int64_t> shape = value->type().shape();
  if (axis < 0 || axis > static_cast<int>(shape.size()))
    throw BuildError("'expand_dims' axis out of range");
  shape.insert(shape.begin() + axis, 1);
  return create(Opcode::ExpandDims, {value}, {Type::tile(value->type().elem(), shape)},
                {{"axis", int64_t(axis)}})
      ->result();
}

Value *Builder::load(Value *tensor, std::vector<Value *> offsets, std::vector<int64_t> shape,
                     std::optional<Attr> padding) {
  offsets.insert(offsets.begin(), tensor);
  std::vector<std::pair<std::string, Attr>> attrs;
  if (padding)
    attrs.push_back({"padding", *padding});
  return create(Opcode::Load, offsets, {Type::tile(tensor->type().elem(), std::move(shape))},
                std::move(attrs))
      ->result();
}
void Builder::store(Value *tensor, std::vector<Value *> offsets, Value *tile) {
  offsets.insert(offsets.begin(), tensor);
  offsets.push_back(tile);
  create(Opcode::Store, offsets, {});
}
Value *Builder::gather(Value *tensor, std::vector<Value *> indices, Value *mask,
                       std::optional<Attr> other) {
  if (indices.empty() || !indices[0])
    throw BuildError("'gather' needs one index per tensor dimension");
  Type lanes = Type::value_of_shape(tensor->type().elem(), indices[0]->type().shape());
  indices.insert(indices.begin(), tensor);
  if (mask)
    indices.push_back(mask);
  std::vector<std::pair<std::string, Attr>> attrs;
  if (other)
    attrs.push_back({"other", *other});
  return create(Opcode::Gather, indices, {lanes}, std::move(attrs))->result();
}
void Builder::scatter(Value *tensor, std::vector<Value *> indices, Value *value, Value *mask) {
  indices.insert(indices.begin(), tensor);
  indices.push_back(value);
  if (mask)
    indices.push_back(mask);
  create(Opcode::Scatter, indices, {});
}
Value *Builder::atomic_add(Value *tensor, std::vector<Value *> indices, Value *value, Value *mask) {
  indices.insert(indices.begin(), tensor);
  indices.push_back(value);
  if (mask)
    indices.push_back(mask);
  if (!value)
    throw BuildError("'atomic_add' given a null value");
  return create(Opcode::AtomicAdd, indices, {value->type()})->result();
}

Value *Builder::elementwise(Opcode opcode, std::vector<Value *> operands) {
  if (operands.empty() || !operands[0])
    throw BuildError("'" + std::string(opcode_name(opcode)) + "' needs operands");
  Type t = operands[0]->type();
  return create(opcode, std::move(operands), {t})->result();
}
Value *Builder::cmp(std::string_view pred, Value *a, Value *b) {
  if (!a)
    throw BuildError("'cmp' given a null operand");
  return create(Opcode::Cmp, {a, b}, {a->type().with_elem(ScalarKind::I1)},
                {{"pred", std::string(pred)}})
      ->result();
}
Value *Builder::select(Value *cond, Value *a, Value *b) {
  if (!a)
    throw BuildError("'select' given a null operand");
  return create(Opcode::Select, {cond, a, b}, {a->type()})->result();
}
Value *Builder::cast(Value *value, ScalarKind to, std::string_view rounding) {
  if (!value)
    throw BuildError("'cast' given a null operand");
  std::vector<std::pair<std::string, Attr>> attrs;
  if (rounding != "rne")
    attrs.push_back({"rounding", std::string(rounding)});
  return create(Opcode::Cast, {value}, {value->type().with_elem(to)}, std::move(attrs))->result();
}
Value *Builder::bitcast(Value *value, ScalarKind to) {
  if (!value)
    throw BuildError("'bitcast' given a null operand");
  return create(Opcode::Bitcast, {value}, {value->type().with_elem(to)})->result();
}

Value *Builder::dot(Value *a, Value *b, Value *acc, ScalarKind acc_type,
                    std::string_view input_precision) {
  if (!a || !b || a->type().rank() != 2 || b->type().rank() != 2)
    throw BuildError("'dot' operands must be rank-2 tiles");
  std::vector<Value *> operands = {a, b};
  if (acc)
    operands.push_back(acc);
  std::vector<std::pair<std::string, Attr>> attrs = {{"acc_type", Type::scalar(acc_type)}};
  if (input_precision != "ieee")
    attrs.push_back({"input_precision", std::string(input_precision)});
  Type out = Type::tile(acc_type, {a->type().shape()[0], b->type().shape()[1]});
  return create(Opcode::Dot, operands, {out}, std::move(attrs))->result();
}
Value *Builder::reduce(std::string_view kind, Value *tile, int axis) {
  if (!tile || axis < 0 || axis >= tile->type().rank())
    throw BuildError("'reduce' axis out of range");
  std::vector<int64_t> shape = tile->type().shape();
  shape.erase(shape.begin() + axis);
  ScalarKind elem = kind == "argmax" ? ScalarKind::I32 : tile->type().elem();
  return create(Opcode::Reduce, {tile}, {Type::value_of_shape(elem, shape)},
                {{"axis", int64_t(axis)}, {"kind", std::string(kind)}})
      ->result();
}
Value *Builder::scan(std::string_view kind, Value *tile, int axis) {
  if (!tile)
    throw BuildError("'scan' given a null operand");
  return create(Opcode::Scan, {tile}, {tile->type()},
                {{"axis", int64_t(axis)}, {"kind", std::string(kind)}})
      ->result();
}

Operation *Builder::create_for(Value *lb, Value *ub, Value *step, std::vector<Value *> inits) {
  std::vector<Value *> operands = {lb, ub, step};
  std::vector<Type> types;
  for (Value *v : inits) {
    if (!v)
      throw BuildError("'for' given a null carried value");
    operands.push_back(v);
    types.push_back(v->type());
  }
  return create(Opcode::For, operands, types);
}
Operation *Builder::create_if(Value *cond, std::vector<Type> result_types, bool with_else) {
  Operation *op = create(Opcode::If, {cond}, std::move(result_types));
  op->add_region();
  if (with_else)
    op->add_region();
  if (auto err = verify_op(*op, kernel_))
    throw BuildError("'if' " + *err);
  return op;
}
void Builder::yield(std::vector<Value *> values) { create(Opcode::Yield, std::move(values), {}); }
void Builder::ret() { create(Opcode::Return, {}, {}); }
void Builder::print(std::vector<Value *> values, std::string prefix) {
  create(Opcode::Print, std::move(values), {}, {{"prefix", std::move(prefix)}});
}
void Builder::assert_true(Value *cond, std::string message) {
  create(Opcode::Assert, {cond}, {}, {{"message", std::move(message)}});
}

} // namespace tl::ir
