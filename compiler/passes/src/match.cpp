// Matchers over constant-defining ops, shared by canonicalize and constfold.
// SPDX-License-Identifier: Apache-2.0
#include "match.h"

#include <bit>

namespace tl::passes {

const ir::Attr *scalar_constant(const ir::Value *v) {
  const ir::Operation *def = v->def();
  if (!def || def->opcode() != ir::Opcode::Constant || !v->type().is_scalar())
    return nullptr;
  return def->attr("value");
}

const ir::Attr *uniform_constant(const ir::Value *v) {
  const ir::Operation *def = v->def();
  if (def && def->opcode() == ir::Opcode::Full)
    return def->attr("value");
  return scalar_constant(v);
}

std::optional<int64_t> attr_int(const ir::Attr &a) {
  if (auto *i = std::get_if<int64_t>(&a))
    return *i;
  if (auto *b = std::get_if<bool>(&a))
    return *b ? 1 : 0;
  return std::nullopt;
}

std::optional<double> attr_float(const ir::Attr &a) {
  if (auto *d = std::get_if<double>(&a))
    return *d;
  if (auto *i = std::get_if<int64_t>(&a))
    return static_cast<double>(*i);
  return std::nullopt;
}

bool is_int_constant(const ir::Value *v, int64_t n) {
  if (!ir::is_integer(v->type().elem()))
    return false;
  const ir::Attr *a = uniform_constant(v);
  std::optional<int64_t> i = a ? attr_int(*a) : std::nullopt;
  return i && *i == n;
}

bool is_float_constant(const ir::Value *v, double d) {
  if (!ir::is_float(v->type().elem()))
    return false;
  const ir::Attr *a = uniform_constant(v);
  std::optional<double> f = a ? attr_float(*a) : std::nullopt;
  return f && std::bit_cast<uint64_t>(*f) == std::bit_cast<uint64_t>(d);
}

std::optional<bool> bool_constant(const ir::Value *v) {
  if (v->type().elem() != ir::ScalarKind::I1)
    return std::nullopt;
  const ir::Attr *a = uniform_constant(v);
  std::optional<int64_t> i = a ? attr_int(*a) : std::nullopt;
  if (!i || (*i != 0 && *i != 1))
    return std::nullopt;
  return *i == 1;
}

bool is_canonical_value_attr(const ir::Attr &a, ir::ScalarKind elem) {
  if (elem == ir::ScalarKind::I1)
    return std::holds_alternative<bool>(a);
  if (ir::is_integer(elem))
    return std::holds_alternative<int64_t>(a);
  return std::holds_alternative<double>(a);
}

bool same_attr(const ir::Attr &a, const ir::Attr &b) {
  auto *da = std::get_if<double>(&a);
  auto *db = std::get_if<double>(&b);
  if (da && db)
    return std::bit_cast<uint64_t>(*da) == std::bit_cast<uint64_t>(*db);
  return a == b;
}

} // namespace tl::passes
