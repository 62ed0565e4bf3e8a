// Tile IR types: scalars, tiles (static shape) and tensors (kernel arguments of run-time shape).
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/dtype.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tl::ir {

/// Element types: tl_dtype (tl/dtype.h, the one enumeration every layer shares) as a C++ enum.
/// Integers wrap around on overflow (two's complement); floats follow IEEE 754 with
/// round-to-nearest-even; f8e4m3 is the OCP "fn" variant (no infinities, max 448).
enum class ScalarKind : uint8_t {
  I1 = TL_DTYPE_I1,
  I8 = TL_DTYPE_I8,
  I16 = TL_DTYPE_I16,
  I32 = TL_DTYPE_I32,
  I64 = TL_DTYPE_I64,
  U8 = TL_DTYPE_U8,
  U16 = TL_DTYPE_U16,
  U32 = TL_DTYPE_U32,
  F16 = TL_DTYPE_F16,
  BF16 = TL_DTYPE_BF16,
  F32 = TL_DTYPE_F32,
  F64 = TL_DTYPE_F64,
  F8E4M3 = TL_DTYPE_F8E4M3,
  F8E5M2 = TL_DTYPE_F8E5M2,
};
static_assert(int(ScalarKind::F8E5M2) + 1 == TL_DTYPE_COUNT, "ScalarKind covers tl_dtype");

std::string_view scalar_name(ScalarKind k);
std::optional<ScalarKind> parse_scalar_name(std::string_view s);
bool is_float(ScalarKind k);
bool is_integer(ScalarKind k); // includes i1
bool is_signed(ScalarKind k);  // signed integers (i1 is treated as unsigned 0/1)
int bit_width(ScalarKind k);

class Type {
public:
  enum class Kind : uint8_t { Scalar, Tile, Tensor };

  Type() = default;
  static Type scalar(ScalarKind elem) { return Type(Kind::Scalar, elem, {}); }
  /// A tile of static shape; every dimension is >= 1.
  static Type tile(ScalarKind elem, std::vector<int64_t> shape) {
    return Type(Kind::Tile, elem, std::move(shape));
  }
  /// A tensor kernel argument: element type and rank; shape and strides are run-time values.
  static Type tensor(ScalarKind elem, int rank) {
    return Type(Kind::Tensor, elem, std::vector<int64_t>(rank, -1));
  }

  Kind kind() const { return kind_; }
  bool is_scalar() const { return kind_ == Kind::Scalar; }
  bool is_tile() const { return kind_ == Kind::Tile; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  /// A scalar or a tile: the values elementwise ops accept.
  bool is_value() const { return kind_ != Kind::Tensor; }
  ScalarKind elem() const { return elem_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t num_elements() const;

  /// Same shape (or scalar-ness), other element type.
  Type with_elem(ScalarKind elem) const { return Type(kind_, elem, shape_); }
  /// A tile of this shape, or a scalar when `shape` is empty.
  static Type value_of_shape(ScalarKind elem, std::vector<int64_t> shape) {
    return shape.empty() ? scalar(elem) : tile(elem, std::move(shape));
  }

  bool operator==(const Type &o) const = default;
  std::string str() const;

private:
  Type(Kind kind, ScalarKind elem, std::vector<int64_t> shape)
      : kind_(kind), elem_(elem), shape_(std::move(shape)) {}

  Kind kind_ = Kind::Scalar;
  ScalarKind elem_ = ScalarKind::I32;
  std::vector<int64_t> shape_;
};

} // namespace tl::ir
