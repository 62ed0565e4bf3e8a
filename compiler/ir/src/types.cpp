// Tile IR types: names, classification and printing.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/types.h"

#include <array>

namespace tl::ir {
namespace {
struct ScalarInfo {
  std::string_view name;
  int bits;
  bool is_float;
  bool is_signed;
};
constexpr std::array<ScalarInfo, 14> kScalars = {{
    {"i1", 1, false, false},
    {"i8", 8, false, true},
    {"i16", 16, false, true},
    {"i32", 32, false, true},
    {"i64", 64, false, true},
    {"u8", 8, false, false},
    {"u16", 16, false, false},
    {"u32", 32, false, false},
    {"f16", 16, true, true},
    {"bf16", 16, true, true},
    {"f32", 32, true, true},
    {"f64", 64, true, true},
    {"f8e4m3", 8, true, true},
    {"f8e5m2", 8, true, true},
}};
const ScalarInfo &info(ScalarKind k) { return kScalars[static_cast<size_t>(k)]; }
} // namespace

std::string_view scalar_name(ScalarKind k) { return info(k).name; }

std::optional<ScalarKind> parse_scalar_name(std::string_view s) {
  for (size_t i = 0; i < kScalars.size(); ++i)
    if (kScalars[i].name == s)
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
