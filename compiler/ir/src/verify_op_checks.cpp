// Checks shared by the per-op typing rules: counts, operand kinds, attributes, index operands.
// SPDX-License-Identifier: Apache-2.0
#include "verify_op_rules.h"

#include <algorithm>

namespace tl::ir {

bool fits(ScalarKind elem, int64_t v) {
  const int bits = bit_width(elem);
  if (bits == 64)
    return true;
  const int64_t lo = is_signed(elem) ? -(int64_t(1) << (bits - 1)) : 0;
  const int64_t hi = is_signed(elem) ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  return v >= lo && v <= hi;
}

namespace op_rules {
namespace {

/// "[lo, hi]" of an integer type.
std::string range_str(ScalarKind elem) {
  const int bits = bit_width(elem);
  const int64_t lo = is_signed(elem) ? -(int64_t(1) << (bits - 1)) : 0;
  const int64_t hi = is_signed(elem) ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

} // namespace

std::string count_str(size_t n, const char *what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

Error expect_counts(const Operation &op, size_t operands, size_t results) {
  if (op.num_operands() != operands)
    return "expects " + count_str(operands, "operand") + ", got " +
           std::to_string(op.num_operands());
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

Error expect_index(const Operation &op, unsigned i, const char *what) {
  const Type &t = op.operand(i)->type();
  if (!t.is_scalar() || !is_integer(t.elem()) || t.elem() == ScalarKind::I1)
    return std::string(what) + " operand #" + std::to_string(i) +
           " must be an integer scalar, got " + t.str();
  return {};
}

Error expect_tensor(const Operation &op) {
  if (op.num_operands() == 0 || !op.operand(0)->type().is_tensor())
    return "operand #0 must be a tensor";
  if (op.operand(0)->type().rank() < 1)
    return "tensor operand must have rank >= 1";
  return {};
}

} // namespace op_rules
} // namespace tl::ir
