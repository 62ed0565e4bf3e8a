// The Tile IR builder: typed helpers that infer result types and check every op as it is made.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/builder.h"

#include "tl/ir/infer.h"
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

Operation *Builder::create_inferred(Opcode opcode, std::vector<Value *> operands,
                                    std::vector<std::pair<std::string, Attr>> attrs) {
  const std::string name(opcode_name(opcode));
  for (Value *v : operands)
    if (!v)
      throw BuildError("'" + name + "' given a null operand");
  std::vector<Type> types;
  try {
    types = infer_result_types(opcode, operands, attrs, kernel_);
  } catch (const BuildError &e) {
    throw BuildError("'" + name + "' " + e.what());
  }
  return create(opcode, std::move(operands), std::move(types), std::move(attrs));
}

Value *Builder::program_id(int axis) {
  return create_inferred(Opcode::ProgramId, {}, {{"axis", int64_t(axis)}})->result();
}
Value *Builder::num_programs(int axis) {
  return create_inferred(Opcode::NumPrograms, {}, {{"axis", int64_t(axis)}})->result();
}
Value *Builder::constant(ScalarKind type, int64_t value) {
  // Built once, not reassigned: GCC 12 warns (wrongly) about a reassigned variant here.
  const Attr a = is_float(type)           ? Attr(static_cast<double>(value))
                 : type == ScalarKind::I1 ? Attr(value != 0)
                                          : Attr(value);
  return create(Opcode::Constant, {}, {Type::scalar(type)}, {{"value", a}})->result();
}
Value *Builder::constant(ScalarKind type, double value) {
  return create(Opcode::Constant, {}, {Type::scalar(type)}, {{"value", value}})->result();
}
Value *Builder::constexpr_param(std::string_view name) {
  if (!kernel_.find_constexpr(name)) // a mistake about the kernel, not the op: no op name
    throw BuildError("kernel has no constexpr parameter '" + std::string(name) + "'");
  return create_inferred(Opcode::Constexpr, {}, {{"name", std::string(name)}})->result();
}
Value *Builder::dim(Value *tensor, int axis) {
  return create_inferred(Opcode::TensorDim, {tensor}, {{"axis", int64_t(axis)}})->result();
}
Value *Builder::stride(Value *tensor, int axis) {
  return create_inferred(Opcode::TensorStride, {tensor}, {{"axis", int64_t(axis)}})->result();
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
  return create_inferred(Opcode::Transpose, {tile}, {{"perm", std::move(perm)}})->result();
}
Value *Builder::slice(Value *tile, std::vector<int64_t> offsets, std::vector<int64_t> shape) {
  return create(Opcode::Slice, {tile}, {Type::tile(tile->type().elem(), std::move(shape))},
                {{"offsets", std::move(offsets)}})
      ->result();
}
Value *Builder::expand_dims(Value *value, int axis) {
  return create_inferred(Opcode::ExpandDims, {value}, {{"axis", int64_t(axis)}})->result();
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
  indices.insert(indices.begin(), tensor);
  if (mask)
    indices.push_back(mask);
  std::vector<std::pair<std::string, Attr>> attrs;
  if (other)
    attrs.push_back({"other", *other});
  return create_inferred(Opcode::Gather, std::move(indices), std::move(attrs))->result();
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
  return create_inferred(Opcode::AtomicAdd, std::move(indices))->result();
}

Value *Builder::elementwise(Opcode opcode, std::vector<Value *> operands) {
  if (operands.empty() || !operands[0])
    throw BuildError("'" + std::string(opcode_name(opcode)) + "' needs operands");
  return create_inferred(opcode, std::move(operands))->result();
}
Value *Builder::cmp(std::string_view pred, Value *a, Value *b) {
  return create_inferred(Opcode::Cmp, {a, b}, {{"pred", std::string(pred)}})->result();
}
Value *Builder::select(Value *cond, Value *a, Value *b) {
  return create_inferred(Opcode::Select, {cond, a, b})->result();
}
Value *Builder::cast(Value *value, ScalarKind to, std::string_view rounding) {
  if (!value)
    throw BuildError("'cast' given a null operand");
  std::vector<std::pair<std::string, Attr>> attrs;
  const bool float_to_int = is_float(value->type().elem()) && !is_float(to);
  if (!rounding.empty() && rounding != (float_to_int ? "rtz" : "rne"))
    attrs.push_back({"rounding", std::string(rounding)});
  return create(Opcode::Cast, {value}, {value->type().with_elem(to)}, std::move(attrs))->result();
}
Value *Builder::bitcast(Value *value, ScalarKind to) {
  if (!value)
    throw BuildError("'bitcast' given a null operand");
  return create(Opcode::Bitcast, {value}, {value->type().with_elem(to)})->result();
}

Value *Builder::dot(Value *a, Value *b, Value *acc, ScalarKind acc_type,
                    std::string_view input_precision, bool exact_order) {
  std::vector<Value *> operands = {a, b};
  if (acc)
    operands.push_back(acc);
  std::vector<std::pair<std::string, Attr>> attrs = {{"acc_type", Type::scalar(acc_type)}};
  if (input_precision != "ieee")
    attrs.push_back({"input_precision", std::string(input_precision)});
  if (exact_order)
    attrs.push_back({"order", std::string("exact")});
  return create_inferred(Opcode::Dot, std::move(operands), std::move(attrs))->result();
}
Value *Builder::reduce(std::string_view kind, Value *tile, int axis) {
  return create_inferred(Opcode::Reduce, {tile},
                         {{"axis", int64_t(axis)}, {"kind", std::string(kind)}})
      ->result();
}
Value *Builder::scan(std::string_view kind, Value *tile, int axis, bool exact_order) {
  std::vector<std::pair<std::string, Attr>> attrs = {{"axis", int64_t(axis)},
                                                     {"kind", std::string(kind)}};
  if (exact_order)
    attrs.push_back({"order", std::string("exact")});
  return create_inferred(Opcode::Scan, {tile}, std::move(attrs))->result();
}

Operation *Builder::create_for(Value *lb, Value *ub, Value *step, std::vector<Value *> inits) {
  std::vector<Value *> operands = {lb, ub, step};
  for (Value *v : inits) {
    if (!v)
      throw BuildError("'for' given a null carried value");
    operands.push_back(v);
  }
  return create_inferred(Opcode::For, std::move(operands));
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
