// Tile IR types: names, classification and printing.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/types.h"

#include <array>

namespace tl::ir {
namespace {
/// What Tile IR adds to tl_dtype (tl/dtype.h, which owns the list and the spellings).
struct ScalarInfo {
  int bits;
  bool is_float;
  bool is_signed;
};
constexpr std::array<ScalarInfo, TL_DTYPE_COUNT> kScalars = {{
    {1, false, false},  // i1
    {8, false, true},   // i8
    {16, false, true},  // i16
    {32, false, true},  // i32
    {64, false, true},  // i64
    {8, false, false},  // u8
    {16, false, false}, // u16
    {32, false, false}, // u32
    {16, true, true},   // f16
    {16, true, true},   // bf16
    {32, true, true},   // f32
    {64, true, true},   // f64
    {8, true, true},    // f8e4m3
    {8, true, true},    // f8e5m2
}};
const ScalarInfo &info(ScalarKind k) { return kScalars[static_cast<size_t>(k)]; }
} // namespace

std::string_view scalar_name(ScalarKind k) { return tl_dtype_spelling(static_cast<unsigned>(k)); }

std::optional<ScalarKind> parse_scalar_name(std::string_view s) {
  for (unsigned i = 0; i < TL_DTYPE_COUNT; ++i)
    if (tl_dtype_spelling(i) == s)
      return static_cast<ScalarKind>(i);
  return std::nullopt;
}

bool is_float(ScalarKind k) { return info(k).is_float; }
bool is_integer(ScalarKind k) { return !info(k).is_float; }
bool is_signed(ScalarKind k) { return !info(k).is_float && info(k).is_signed; }
int bit_width(ScalarKind k) { return info(k).bits; }

int64_t Type::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape_)
    n *= d;
  return n;
}

std::string Type::str() const {
  if (kind_ == Kind::Scalar)
    return std::string(scalar_name(elem_));
  std::string s = kind_ == Kind::Tile ? "tile<" : "tensor<";
  for (int64_t d : shape_)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  s += scalar_name(elem_);
  return s + ">";
}

} // namespace tl::ir
