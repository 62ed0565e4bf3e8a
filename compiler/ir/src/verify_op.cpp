// Per-op typing rules of the Tile IR (one function per op family).
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/verifier.h"

#include <algorithm>
#include <set>

namespace tl::ir {
namespace {

using Error = std::optional<std::string>;

std::string count_str(size_t n, const char *what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

Error expect_counts(const Operation &op, size_t operands, size_t results) {
  if (op.num_operands() != operands)
    return "expects " + count_str(operands, "operand") + ", got " + std::to_string(op.num_operands());
  if (op.num_results() != results)
    return "expects " + count_str(results, "result") + ", got " + std::to_string(op.num_results());
  return {};
}

Error expect_value(const Operation &op, unsigned i) {
  if (!op.operand(i)->type().is_value())
    return "operand #" + std::to_string(i) + " must be a scalar or tile, got " +
           op.operand(i)->type().str();
  return {};
}

Error expect_int_attr(const Operation &op, const char *name, int64_t lo, int64_t hi) {
  const int64_t *v = op.attr_as<int64_t>(name);
  if (!v)
    return std::string("requires integer attribute '") + name + "'";
  if (*v < lo || *v > hi)
    return std::string("attribute '") + name + "' must be in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "], got " + std::to_string(*v);
  return {};
}

Error expect_string_attr(const Operation &op, const char *name,
                         std::initializer_list<std::string_view> allowed) {
  const std::string *v = op.attr_as<std::string>(name);
  if (!v)
    return std::string("requires string attribute '") + name + "'";
  if (std::find(allowed.begin(), allowed.end(), *v) == allowed.end()) {
    std::string list;
    for (auto a : allowed)
      list += (list.empty() ? "" : ", ") + std::string(a);
    return std::string("attribute '") + name + "' must be one of " + list + ", got \"" + *v + "\"";
  }
  return {};
}

} // namespace

bool fits(ScalarKind elem, int64_t v) {
  const int bits = bit_width(elem);
  if (bits == 64)
    return true;
  const int64_t lo = is_signed(elem) ? -(int64_t(1) << (bits - 1)) : 0;
  const int64_t hi = is_signed(elem) ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  return v >= lo && v <= hi;
}

namespace {

std::string range_str(ScalarKind elem) {
  const int bits = bit_width(elem);
  const int64_t lo = is_signed(elem) ? -(int64_t(1) << (bits - 1)) : 0;
  const int64_t hi = is_signed(elem) ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

/// The attribute `name` holds a value representable in `elem` (ints for ints, any number for floats).
Error expect_value_attr(const Operation &op, const char *name, ScalarKind elem, bool required) {
  const Attr *a = op.attr(name);
  if (!a)
    return required ? Error(std::string("requires attribute '") + name + "'") : Error();
  if (is_float(elem) && (std::holds_alternative<double>(*a) || std::holds_alternative<int64_t>(*a)))
    return {};
  if (is_integer(elem) && std::holds_alternative<int64_t>(*a)) {
    const int64_t v = std::get<int64_t>(*a);
    if (!fits(elem, v))
      return std::string("attribute '") + name + "' value " + std::to_string(v) +
             " is out of range for " + std::string(scalar_name(elem)) + " " + range_str(elem);
    return {};
  }
  if (elem == ScalarKind::I1 && std::holds_alternative<bool>(*a))
    return {};
  return std::string("attribute '") + name + "' must be " +
         (is_float(elem) ? "a number" : "an integer") + " for element type " +
         std::string(scalar_name(elem));
}

Error verify_elementwise(const Operation &op) {
  const Opcode code = op.opcode();
  const size_t arity = [&]() -> size_t {
    switch (code) {
    case Opcode::Fma:
    case Opcode::Select:
      return 3;
    case Opcode::Neg: case Opcode::Not: case Opcode::Abs: case Opcode::Exp: case Opcode::Exp2:
    case Opcode::Log: case Opcode::Log2: case Opcode::Sqrt: case Opcode::Rsqrt: case Opcode::Tanh:
    case Opcode::Erf: case Opcode::Sigmoid: case Opcode::Sin: case Opcode::Cos: case Opcode::Cast:
    case Opcode::Bitcast:
      return 1;
    default:
      return 2;
    }
  }();
  if (Error e = expect_counts(op, arity, 1))
    return e;
  for (unsigned i = 0; i < arity; ++i)
    if (Error e = expect_value(op, i))
      return e;
  const Type &in = op.operand(arity == 3 && code == Opcode::Select ? 1 : 0)->type();
  const Type &out = op.result()->type();
  // Shapes agree for every elementwise op.
  for (unsigned i = 0; i < arity; ++i)
    if (op.operand(i)->type().shape() != out.shape() ||
        op.operand(i)->type().kind() != out.kind())
      return "operand #" + std::to_string(i) + " shape " + op.operand(i)->type().str() +
             " does not match result " + out.str();
  const ScalarKind e = in.elem();
  if (code == Opcode::Cast) {
    const std::string *r = op.attr_as<std::string>("rounding");
    if (op.attr("rounding") && !r)
      return "attribute 'rounding' must be a string";
    if (r)
      return expect_string_attr(op, "rounding", {"rne", "rtz", "rd", "ru"});
    return {};
  }
  if (code == Opcode::Bitcast) {
    if (bit_width(e) != bit_width(out.elem()))
      return "between types of different bit width: " + in.str() + " to " + out.str();
    return {};
  }
  if (code == Opcode::Cmp) {
    if (out.elem() != ScalarKind::I1)
      return "result must have element type i1, got " + out.str();
    if (op.operand(0)->type() != op.operand(1)->type())
      return "operands must have the same type, got " + op.operand(0)->type().str() + " and " +
             op.operand(1)->type().str();
    return expect_string_attr(op, "pred", {"eq", "ne", "lt", "le", "gt", "ge"});
  }
  if (code == Opcode::Select) {
    if (op.operand(0)->type().elem() != ScalarKind::I1)
      return "condition must have element type i1, got " + op.operand(0)->type().str();
    if (op.operand(1)->type() != out || op.operand(2)->type() != out)
      return "selected values must have the result type " + out.str();
    return {};
  }
  for (unsigned i = 0; i < arity; ++i)
    if (op.operand(i)->type() != out)
      return "operand #" + std::to_string(i) + " type " + op.operand(i)->type().str() +
             " does not match result type " + out.str();
  switch (code) {
  case Opcode::And: case Opcode::Or: case Opcode::Xor: case Opcode::Not:
    if (!is_integer(e))
      return "requires integer or i1 operands, got " + out.str();
    return {};
  case Opcode::Shl: case Opcode::Shr: case Opcode::Rem:
    if (!is_integer(e) || e == ScalarKind::I1)
      return "requires integer operands, got " + out.str();
    return {};
  case Opcode::Add: case Opcode::Sub: case Opcode::Mul: case Opcode::Div: case Opcode::Min:
  case Opcode::Max: case Opcode::Neg: case Opcode::Abs:
    if (e == ScalarKind::I1)
      return "requires numeric operands, got " + out.str();
    return {};
  default: // pow, fma and transcendental math
    if (!is_float(e))
      return "requires floating-point operands, got " + out.str();
    return {};
  }
}

Error verify_shape_op(const Operation &op) {
  if (Error e = expect_counts(op, 1, 1))
    return e;
  if (Error e = expect_value(op, 0))
    return e;
  const Type &in = op.operand(0)->type();
  const Type &out = op.result()->type();
  if (!out.is_tile())
    return "result must be a tile, got " + out.str();
  if (in.elem() != out.elem())
    return "element type changes from " + in.str() + " to " + out.str();
  switch (op.opcode()) {
  case Opcode::Splat:
    if (!in.is_scalar())
      return "operand must be a scalar, got " + in.str();
    return {};
  case Opcode::Broadcast:
    if (in.rank() != out.rank())
      return "rank changes from " + in.str() + " to " + out.str() + " (use expand_dims)";
    for (int i = 0; i < in.rank(); ++i)
      if (in.shape()[i] != out.shape()[i] && in.shape()[i] != 1)
        return "dimension " + std::to_string(i) + " of " + in.str() + " cannot broadcast to " +
               out.str();
    return {};
  case Opcode::Reshape:
    if (in.num_elements() != out.num_elements())
      return "element count changes from " + in.str() + " to " + out.str();
    return {};
  case Opcode::Transpose: {
    const auto *perm = op.attr_as<std::vector<int64_t>>("perm");
    if (!perm)
      return "requires integer list attribute 'perm'";
    if (static_cast<int>(perm->size()) != in.rank() || !in.is_tile())
      return "'perm' must have one entry per dimension of " + in.str();
    std::vector<int64_t> sorted = *perm;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < in.rank(); ++i)
      if (sorted[i] != i)
        return "'perm' is not a permutation of 0.." + std::to_string(in.rank() - 1);
    std::vector<int64_t> shape;
    for (int64_t p : *perm)
      shape.push_back(in.shape()[p]);
    if (shape != out.shape())
      return "result must be " + Type::tile(in.elem(), shape).str() + ", got " + out.str();
    return {};
  }
  default: { // expand_dims
    if (Error e = expect_int_attr(op, "axis", 0, in.rank()))
      return e;
    std::vector<int64_t> shape = in.shape();
    shape.insert(shape.begin() + *op.attr_as<int64_t>("axis"), 1);
    if (shape != out.shape())
      return "result must be " + Type::tile(in.elem(), shape).str() + ", got " + out.str();
    return {};
  }
  }
}

Error expect_index(const Operation &op, unsigned i, const char *what) {
  const Type &t = op.operand(i)->type();
  if (!t.is_scalar() || !is_integer(t.elem()) || t.elem() == ScalarKind::I1)
    return std::string(what) + " operand #" + std::to_string(i) + " must be an integer scalar, got " +
           t.str();
  return {};
}

Error expect_tensor(const Operation &op) {
  if (op.num_operands() == 0 || !op.operand(0)->type().is_tensor())
    return "operand #0 must be a tensor";
  if (op.operand(0)->type().rank() < 1)
    return "tensor operand must have rank >= 1";
  return {};
}

Error verify_block_access(const Operation &op) {
  if (Error e = expect_tensor(op))
    return e;
  const Type &tensor = op.operand(0)->type();
  const bool is_store = op.opcode() == Opcode::Store;
  const size_t rank = tensor.rank();
  if (Error e = expect_counts(op, 1 + rank + (is_store ? 1 : 0), is_store ? 0 : 1))
    return e;
  for (unsigned i = 1; i <= rank; ++i)
    if (Error e = expect_index(op, i, "offset"))
      return e;
  const Type &tile = is_store ? op.operand(rank + 1)->type() : op.result()->type();
  if (!tile.is_tile() || tile.rank() != static_cast<int>(rank) || tile.elem() != tensor.elem())
    return std::string(is_store ? "stored value" : "result") + " must be a rank-" +
           std::to_string(rank) + " tile of " + std::string(scalar_name(tensor.elem())) +
           ", got " + tile.str();
  if (!is_store)
    return expect_value_attr(op, "padding", tensor.elem(), false);
  return {};
}

/// gather, scatter, atomic_add: tensor, one index per dimension, [value], [mask].
Error verify_indexed_access(const Operation &op) {
  if (Error e = expect_tensor(op))
    return e;
  const Type &tensor = op.operand(0)->type();
  const size_t rank = tensor.rank();
  const bool has_value = op.opcode() != Opcode::Gather;
  const size_t base = 1 + rank + (has_value ? 1 : 0);
  if (op.num_operands() != base && op.num_operands() != base + 1)
    return "expects " + std::to_string(base) + " operands (or one more for a mask), got " +
           std::to_string(op.num_operands());
  const size_t results = op.opcode() == Opcode::Scatter ? 0 : 1;
  if (op.num_results() != results)
    return "expects " + count_str(results, "result") + ", got " + std::to_string(op.num_results());
  const Type &idx0 = op.operand(1)->type();
  for (unsigned i = 1; i <= rank; ++i) {
    const Type &t = op.operand(i)->type();
    if (!t.is_value() || !is_integer(t.elem()) || t.elem() == ScalarKind::I1)
      return "index operand #" + std::to_string(i) + " must be an integer scalar or tile, got " +
             t.str();
    if (t.shape() != idx0.shape() || t.kind() != idx0.kind())
      return "index operand #" + std::to_string(i) + " shape " + t.str() +
             " differs from index operand #1 " + idx0.str();
  }
  const Type lanes = Type::value_of_shape(tensor.elem(), idx0.shape());
  if (has_value && op.operand(rank + 1)->type() != lanes)
    return "value must be " + lanes.str() + ", got " + op.operand(rank + 1)->type().str();
  if (op.num_operands() == base + 1 &&
      op.operand(base)->type() != lanes.with_elem(ScalarKind::I1))
    return "mask must be " + lanes.with_elem(ScalarKind::I1).str() + ", got " +
           op.operand(base)->type().str();
  if (results && op.result()->type() != lanes)
    return "result must be " + lanes.str() + ", got " + op.result()->type().str();
  if (op.opcode() == Opcode::Gather)
    return expect_value_attr(op, "other", tensor.elem(), false);
  if (op.opcode() == Opcode::AtomicAdd && tensor.elem() == ScalarKind::I1)
    return "requires a numeric tensor, got " + tensor.str();
  return {};
}

Error verify_dot(const Operation &op) {
  if (op.num_operands() != 2 && op.num_operands() != 3)
    return "expects 2 operands (or 3 with an accumulator), got " + std::to_string(op.num_operands());
  if (op.num_results() != 1)
    return "expects 1 result, got " + std::to_string(op.num_results());
  const Type &a = op.operand(0)->type(), &b = op.operand(1)->type();
  if (!a.is_tile() || !b.is_tile() || a.rank() != 2 || b.rank() != 2)
    return "operands must be rank-2 tiles, got " + a.str() + " and " + b.str();
  if (a.elem() != b.elem())
    return "operand element types differ: " + a.str() + " and " + b.str();
  if (a.shape()[1] != b.shape()[0])
    return "contraction dimensions differ: " + a.str() + " and " + b.str();
  const Type *acc = op.attr_as<Type>("acc_type");
  if (!acc || !acc->is_scalar())
    return "requires scalar type attribute 'acc_type'";
  if (is_float(acc->elem()) != is_float(a.elem()) || acc->elem() == ScalarKind::I1 ||
      a.elem() == ScalarKind::I1)
    return "accumulator type " + acc->str() + " does not suit inputs " + a.str();
  const Type out = Type::tile(acc->elem(), {a.shape()[0], b.shape()[1]});
  if (op.result()->type() != out)
    return "result must be " + out.str() + ", got " + op.result()->type().str();
  if (op.num_operands() == 3 && op.operand(2)->type() != out)
    return "accumulator must be " + out.str() + ", got " + op.operand(2)->type().str();
  if (bit_width(acc->elem()) < bit_width(a.elem()))
    return "accumulator type " + acc->str() + " is narrower than the inputs " + a.str();
  if (op.attr("input_precision")) {
    if (Error e = expect_string_attr(op, "input_precision", {"ieee", "tf32", "bf16"}))
      return e;
    if (*op.attr_as<std::string>("input_precision") != "ieee" && a.elem() != ScalarKind::F32)
      return "input_precision \"" + *op.attr_as<std::string>("input_precision") +
             "\" applies to f32 inputs only, got " + a.str();
  }
  return {};
}

Error verify_reduce_scan(const Operation &op) {
  if (Error e = expect_counts(op, 1, 1))
    return e;
  const Type &in = op.operand(0)->type();
  if (!in.is_tile())
    return "operand must be a tile, got " + in.str();
  if (Error e = expect_int_attr(op, "axis", 0, in.rank() - 1))
    return e;
  const bool scan = op.opcode() == Opcode::Scan;
  if (Error e = scan ? expect_string_attr(op, "kind", {"sum", "max", "min"})
                     : expect_string_attr(op, "kind", {"sum", "max", "min", "argmax"}))
    return e;
  if (in.elem() == ScalarKind::I1)
    return "requires numeric operands, got " + in.str();
  Type out = in;
  if (!scan) {
    std::vector<int64_t> shape = in.shape();
    shape.erase(shape.begin() + *op.attr_as<int64_t>("axis"));
    const bool argmax = *op.attr_as<std::string>("kind") == "argmax";
    out = Type::value_of_shape(argmax ? ScalarKind::I32 : in.elem(), shape);
  }
  if (op.result()->type() != out)
    return "result must be " + out.str() + ", got " + op.result()->type().str();
  return {};
}

Error verify_tile_source(const Operation &op, const Kernel &kernel) {
  switch (op.opcode()) {
  case Opcode::ProgramId:
  case Opcode::NumPrograms:
    if (Error e = expect_counts(op, 0, 1))
      return e;
    if (op.result()->type() != Type::scalar(ScalarKind::I32))
      return "result must be i32, got " + op.result()->type().str();
    return expect_int_attr(op, "axis", 0, 2);
  case Opcode::TensorDim:
  case Opcode::TensorStride:
    if (Error e = expect_counts(op, 1, 1))
      return e;
    if (Error e = expect_tensor(op))
      return e;
    if (op.result()->type() != Type::scalar(ScalarKind::I64))
      return "result must be i64, got " + op.result()->type().str();
    return expect_int_attr(op, "axis", 0, op.operand(0)->type().rank() - 1);
  case Opcode::Constant:
    if (Error e = expect_counts(op, 0, 1))
      return e;
    if (!op.result()->type().is_scalar())
      return "result must be a scalar (use full for tiles), got " + op.result()->type().str();
    return expect_value_attr(op, "value", op.result()->type().elem(), true);
  case Opcode::Constexpr: {
    if (Error e = expect_counts(op, 0, 1))
      return e;
    const std::string *name = op.attr_as<std::string>("name");
    if (!name)
      return "requires string attribute 'name'";
    const ConstexprParam *p = kernel.find_constexpr(*name);
    if (!p)
      return "kernel has no constexpr parameter '" + *name + "'";
    if (op.result()->type() != Type::scalar(p->type))
      return "result must be " + std::string(scalar_name(p->type)) + ", the type of '" + *name +
             "'";
    return {};
  }
  case Opcode::Full:
    if (Error e = expect_counts(op, 0, 1))
      return e;
    if (!op.result()->type().is_tile())
      return "result must be a tile, got " + op.result()->type().str();
    return expect_value_attr(op, "value", op.result()->type().elem(), true);
  default: { // arange
    if (Error e = expect_counts(op, 0, 1))
      return e;
    const int64_t *start = op.attr_as<int64_t>("start"), *end = op.attr_as<int64_t>("end");
    if (!start || !end)
      return "requires integer attributes 'start' and 'end'";
    const Type &t = op.result()->type();
    if (!t.is_tile() || t.rank() != 1 || !is_integer(t.elem()) || t.elem() == ScalarKind::I1)
      return "result must be a rank-1 integer tile, got " + t.str();
    int64_t length;
    if (__builtin_sub_overflow(*end, *start, &length) || length != t.shape()[0])
      return "result length " + std::to_string(t.shape()[0]) + " does not match end - start (" +
             std::to_string(*end) + " - " + std::to_string(*start) + ")";
    if (!fits(t.elem(), *start) || !fits(t.elem(), *end - 1))
      return "range [" + std::to_string(*start) + ", " + std::to_string(*end) +
             ") does not fit element type " + std::string(scalar_name(t.elem()));
    return {};
  }
  }
}

Error verify_control(const Operation &op) {
  switch (op.opcode()) {
  case Opcode::For: {
    if (op.num_operands() < 3)
      return "expects lower bound, upper bound and step operands";
    const Type &iv = op.operand(0)->type();
    if (!iv.is_scalar() || !is_integer(iv.elem()) || iv.elem() == ScalarKind::I1)
      return "bounds must be integer scalars, got " + iv.str();
    if (op.operand(1)->type() != iv || op.operand(2)->type() != iv)
      return "lower bound, upper bound and step must have one type";
    const size_t carried = op.num_operands() - 3;
    if (op.num_results() != carried)
      return "expects one result per carried value (" + std::to_string(carried) + "), got " +
             std::to_string(op.num_results());
    if (op.num_regions() != 1)
      return "expects one body region";
    Block *body = op.region(0);
    if (body->arguments().size() != carried + 1 || body->argument(0)->type() != iv)
      return "body must take the induction variable and one argument per carried value";
    for (size_t i = 0; i < carried; ++i)
      if (op.operand(3 + i)->type() != op.result(i)->type() ||
          body->argument(1 + i)->type() != op.result(i)->type())
        return "carried value #" + std::to_string(i) + " has inconsistent types";
    return {};
  }
  case Opcode::If:
    if (op.num_operands() != 1 || op.operand(0)->type() != Type::scalar(ScalarKind::I1))
      return "expects one i1 scalar condition";
    if (op.num_regions() < 1 || op.num_regions() > 2)
      return "expects a then region and an optional else region";
    if (op.num_results() > 0 && op.num_regions() != 2)
      return "an if with results needs an else region";
    for (unsigned r = 0; r < op.num_regions(); ++r)
      if (!op.region(r)->arguments().empty())
        return "if regions take no arguments";
    return {};
  case Opcode::Yield:
    if (op.num_results() != 0)
      return "takes no results";
    return {};
  case Opcode::Return:
    return expect_counts(op, 0, 0);
  case Opcode::Print:
    if (op.num_results() != 0)
      return "takes no results";
    for (unsigned i = 0; i < op.num_operands(); ++i)
      if (Error e = expect_value(op, i))
        return e;
    if (op.attr("prefix") && !op.attr_as<std::string>("prefix"))
      return "attribute 'prefix' must be a string";
    return {};
  default: // assert
    if (Error e = expect_counts(op, 1, 0))
      return e;
    if (!op.operand(0)->type().is_value() || op.operand(0)->type().elem() != ScalarKind::I1)
      return "condition must be i1, got " + op.operand(0)->type().str();
    if (!op.attr_as<std::string>("message"))
      return "requires string attribute 'message'";
    return {};
  }
}

/// The attributes each op may carry; anything else is a misspelling or a misunderstanding.
std::vector<std::string_view> allowed_attrs(Opcode code) {
  switch (code) {
  case Opcode::ProgramId: case Opcode::NumPrograms: case Opcode::TensorDim:
  case Opcode::TensorStride: case Opcode::ExpandDims:
    return {"axis"};
  case Opcode::Constant: case Opcode::Full: return {"value"};
  case Opcode::Constexpr: return {"name"};
  case Opcode::Arange: return {"start", "end"};
  case Opcode::Transpose: return {"perm"};
  case Opcode::Load: return {"padding"};
  case Opcode::Gather: return {"other"};
  case Opcode::Cmp: return {"pred"};
  case Opcode::Cast: return {"rounding"};
  case Opcode::Dot: return {"acc_type", "input_precision"};
  case Opcode::Reduce: case Opcode::Scan: return {"axis", "kind"};
  case Opcode::Print: return {"prefix"};
  case Opcode::Assert: return {"message"};
  default: return {};
  }
}

Error check_attr_names(const Operation &op) {
  const auto allowed = allowed_attrs(op.opcode());
  for (auto &[name, value] : op.attrs()) {
    if (std::find(allowed.begin(), allowed.end(), name) != allowed.end())
      continue;
    // `<target>.<name>`: a decision a backend's planning pass recorded (cpu.fuse, tnpu.*); the
    // backend that reads it checks it, any op may carry it.
    const size_t dot = name.find('.');
    if (dot != std::string::npos && dot > 0 && dot + 1 < name.size())
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
  case Opcode::Splat: case Opcode::Broadcast: case Opcode::Reshape: case Opcode::Transpose:
  case Opcode::ExpandDims:
    return verify_shape_op(op);
  case Opcode::Load: case Opcode::Store:
    return verify_block_access(op);
  case Opcode::Gather: case Opcode::Scatter: case Opcode::AtomicAdd:
    return verify_indexed_access(op);
  case Opcode::Dot:
    return verify_dot(op);
  case Opcode::Reduce: case Opcode::Scan:
    return verify_reduce_scan(op);
  case Opcode::For: case Opcode::If: case Opcode::Yield: case Opcode::Return: case Opcode::Print:
  case Opcode::Assert:
    return verify_control(op);
  default:
    return verify_tile_source(op, kernel);
  }
}

} // namespace tl::ir
