// The C API's types: tl_ir_type and tl_ir_attr to the IR's Type and Attr and back; dtype names.
// SPDX-License-Identifier: Apache-2.0
#include "handles.h"

#include <cstring>

using namespace tl;
using ir::ScalarKind;
using ir::Type;

namespace tl::capi {

std::string to_type(const tl_ir_type *t, Type *out) {
  if (!t)
    return "null type";
  if (t->dtype >= TL_DTYPE_COUNT)
    return "invalid dtype " + std::to_string(t->dtype);
  if (t->rank > TL_IR_MAX_RANK)
    return "rank " + std::to_string(t->rank) + " exceeds " + std::to_string(TL_IR_MAX_RANK);
  const auto elem = static_cast<ScalarKind>(t->dtype);
  switch (t->kind) {
  case TL_IR_SCALAR:
    *out = Type::scalar(elem);
    return {};
  case TL_IR_TENSOR:
    *out = Type::tensor(elem, static_cast<int>(t->rank));
    return {};
  case TL_IR_TILE: {
    if (t->rank == 0)
      return "a tile needs rank >= 1";
    std::vector<int64_t> shape(t->shape, t->shape + t->rank);
    for (int64_t d : shape)
      if (d < 1)
        return "tile dimensions must be >= 1, got " + std::to_string(d);
    *out = Type::tile(elem, std::move(shape));
    return {};
  }
  default:
    return "invalid type kind " + std::to_string(t->kind);
  }
}

void from_type(const Type &t, tl_ir_type *out) {
  std::memset(out, 0, sizeof *out);
  out->kind = t.is_scalar() ? TL_IR_SCALAR : t.is_tile() ? TL_IR_TILE : TL_IR_TENSOR;
  out->dtype = static_cast<uint32_t>(t.elem());
  out->rank = static_cast<uint32_t>(t.rank());
  for (int i = 0; i < t.rank() && i < TL_IR_MAX_RANK; ++i)
    out->shape[i] = t.shape()[i];
}

std::string to_attr(const tl_ir_attr &a, ir::Attr *out) {
  switch (a.kind) {
  case TL_IR_ATTR_BOOL:
    *out = a.i != 0;
    return {};
  case TL_IR_ATTR_INT:
    *out = a.i;
    return {};
  case TL_IR_ATTR_FLOAT:
    *out = a.f;
    return {};
  case TL_IR_ATTR_STRING:
    *out = std::string(a.s ? a.s : "");
    return {};
  case TL_IR_ATTR_INTS:
    *out = std::vector<int64_t>(a.ints, a.ints + a.ints_len);
    return {};
  case TL_IR_ATTR_TYPE: {
    Type t;
    std::string e = to_type(&a.type, &t);
    *out = t;
    return e;
  }
  default:
    return "invalid attribute kind " + std::to_string(a.kind);
  }
}

} // namespace tl::capi

extern "C" {

const char *tl_ir_dtype_name(uint32_t dtype) { return tl_dtype_spelling(dtype); }

} // extern "C"
