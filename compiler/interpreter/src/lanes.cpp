// Scalar semantics of elementwise ops: integer wrap-around, IEEE rounding per type, casts.
// SPDX-License-Identifier: Apache-2.0
#include "lanes.h"

#include "tl/reference/numerics.h"
#include "tl/reference/ops.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace tl::interp {
using ir::Opcode;
using ir::ScalarKind;
namespace num = tl::numerics;

namespace {

num::FloatFormat format_of(ScalarKind k) {
  switch (k) {
  case ScalarKind::F16:
    return num::FloatFormat::F16;
  case ScalarKind::BF16:
    return num::FloatFormat::BF16;
  case ScalarKind::F32:
    return num::FloatFormat::F32;
  case ScalarKind::F8E4M3:
    return num::FloatFormat::F8E4M3;
  case ScalarKind::F8E5M2:
    return num::FloatFormat::F8E5M2;
  default:
    return num::FloatFormat::F64;
  }
}

num::Rounding rounding_of(std::string_view r) {
  if (r == "rtz")
    return num::Rounding::TowardZero;
  if (r == "rd")
    return num::Rounding::Down;
  if (r == "ru")
    return num::Rounding::Up;
  return num::Rounding::NearestEven;
}

/// `v` rounded to an integral value by mode "rne" (ties to even), "rtz", "rd" or "ru"; exact
/// (v - floor(v) is exact in double), so independent of the host's floating-point environment.
double round_integral(double v, std::string_view rounding) {
  if (rounding == "rtz")
    return std::trunc(v);
  if (rounding == "rd")
    return std::floor(v);
  if (rounding == "ru")
    return std::ceil(v);
  const double f = std::floor(v), frac = v - f;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(f, 2.0) != 0))
    return f + 1;
  return f;
}

/// Saturating float -> integer conversion, rounding by `rounding` first; NaN becomes 0.
int64_t float_to_int(ScalarKind to, double v, std::string_view rounding) {
  if (std::isnan(v))
    return 0;
  if (to == ScalarKind::I1)
    return v != 0;
  const int bits = ir::bit_width(to);
  double lo, hi;
  if (ir::is_signed(to)) {
    lo = -std::ldexp(1.0, bits - 1);
    hi = std::ldexp(1.0, bits - 1); // exclusive
  } else {
    lo = 0;
    hi = std::ldexp(1.0, bits);
  }
  const double t = std::isinf(v) ? v : round_integral(v, rounding);
  if (t <= lo)
    return ir::is_signed(to) ? std::numeric_limits<int64_t>::min() >> (64 - bits) : 0;
  if (t >= hi)
    return ir::is_signed(to) ? std::numeric_limits<int64_t>::max() >> (64 - bits)
                             : static_cast<int64_t>((uint64_t(1) << bits) - 1);
  return static_cast<int64_t>(t);
}

} // namespace

double float_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
double float_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::numeric_limits<double>::quiet_NaN();
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

namespace {
/// x y + c (doubles whose product is exact: widened narrow floats) rounded to odd in f64: the
/// sum to nearest and its exact error (two-sum); where the sum is inexact and even, its odd
/// neighbour on the error's side. Rounding this once more to a type of at most 25 bits is the
/// correctly rounded fma (53 >= 2 p + 2).
double fma_round_to_odd(double x, double y, double c) {
  const double p = x * y, s = p + c, bb = s - p;
  const double e = (p - (s - bb)) + (c - bb);
  uint64_t bits = std::bit_cast<uint64_t>(s);
  if (!(e != 0) || std::isnan(e) || (bits & 1))
    return s;
  bits += (e < 0) == (s < 0) ? 1 : uint64_t(-1);
  return std::bit_cast<double>(bits);
}

bool compare(std::string_view pred, auto a, auto b) {
  if (pred == "eq")
    return a == b;
  if (pred == "ne")
    return !(a == b); // unordered: true
  if (pred == "lt")
    return a < b;
  if (pred == "le")
    return a <= b;
  if (pred == "gt")
    return a > b;
  return a >= b;
}

} // namespace

int64_t wrap_int(ScalarKind k, int64_t v) {
  const int bits = ir::bit_width(k);
  if (bits == 64)
    return v;
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (ir::is_signed(k) && (u >> (bits - 1)))
    u |= ~mask;
  return static_cast<int64_t>(u);
}

double round_float(ScalarKind k, double v, std::string_view rounding) {
  if (k == ScalarKind::F64)
    return v;
  return num::round_to(format_of(k), v, rounding_of(rounding));
}

Lane convert(ScalarKind from, ScalarKind to, Lane v, std::string_view rounding,
             bool fp64_reference) {
  if (rounding.empty()) // the conversion's default, as ir::cast_rounding
    rounding = ir::is_float(from) && !ir::is_float(to) ? "rtz" : "rne";
  Lane r;
  if (ir::is_float(to)) {
    double x = ir::is_float(from) ? v.f : static_cast<double>(v.i);
    if (!ir::is_float(from) && ir::is_signed(from) == false && from != ScalarKind::I1)
      x = static_cast<double>(static_cast<uint64_t>(v.i));
    r.f = fp64_reference ? x : round_float(to, x, rounding);
  } else if (ir::is_float(from)) {
    r.i = float_to_int(to, v.f, rounding);
  } else {
    r.i = to == ScalarKind::I1 ? (v.i != 0) : wrap_int(to, v.i);
  }
  return r;
}

Lane bitcast(ScalarKind from, ScalarKind to, Lane v) {
  uint64_t bits;
  if (ir::is_float(from)) {
    bits =
        from == ScalarKind::F64 ? std::bit_cast<uint64_t>(v.f) : num::encode(format_of(from), v.f);
  } else {
    bits = static_cast<uint64_t>(v.i);
  }
  const int w = ir::bit_width(to);
  if (w < 64)
    bits &= (uint64_t(1) << w) - 1;
  Lane r;
  if (ir::is_float(to))
    r.f = to == ScalarKind::F64 ? std::bit_cast<double>(bits) : num::decode(format_of(to), bits);
  else
    r.i = wrap_int(to, static_cast<int64_t>(bits));
  return r;
}

LaneOp::LaneOp(const ir::Operation &op, bool fp64_reference)
    : code_(op.opcode()), fp64_reference_(fp64_reference) {
  in_ = op.operand(code_ == Opcode::Select ? 1 : 0)->type().elem();
  out_ = op.result()->type().elem();
  if (code_ == Opcode::Cast)
    mode_ = ir::cast_rounding(op);
  else if (const std::string *s =
               op.attr_as<std::string>(code_ == Opcode::Cmp ? "pred" : "rounding"))
    mode_ = *s;
  else
    mode_ = "rne";
}

Lane LaneOp::apply(const Lane *a) const {
  switch (code_) {
  case Opcode::Select:
    return a[0].i ? a[1] : a[2];
  case Opcode::Cast:
    return convert(in_, out_, a[0], mode_, fp64_reference_);
  case Opcode::Bitcast:
    if (fp64_reference_ && ir::is_float(in_)) {
      Lane rounded{0, round_float(in_, a[0].f)};
      return bitcast(in_, out_, rounded);
    }
    return bitcast(in_, out_, a[0]);
  case Opcode::Cmp: {
    Lane r;
    if (ir::is_float(in_))
      r.i = compare(mode_, a[0].f, a[1].f);
    else if (ir::is_signed(in_))
      r.i = compare(mode_, a[0].i, a[1].i);
    else
      r.i = compare(mode_, static_cast<uint64_t>(a[0].i), static_cast<uint64_t>(a[1].i));
    return r;
  }
  case Opcode::IsNan:
  case Opcode::IsInf:
  case Opcode::IsFinite: {
    // Of the operand as its type holds it, also in fp64 mode (as bitcast): a sum past f16's range
    // is inf there, and the test's answer is about that value.
    const double x = fp64_reference_ ? round_float(in_, a[0].f) : a[0].f;
    return Lane{code_ == Opcode::IsNan   ? std::isnan(x)
                : code_ == Opcode::IsInf ? std::isinf(x)
                                         : std::isfinite(x),
                0};
  }
  default:
    return ir::is_float(in_) ? apply_float(a) : apply_int(a);
  }
}

Lane LaneOp::apply_float(const Lane *a) const {
  const double x = a[0].f, y = a[1].f;
  double r;
  switch (code_) {
  case Opcode::Add:
    r = x + y;
    break;
  case Opcode::Sub:
    r = x - y;
    break;
  case Opcode::Mul:
    r = x * y;
    break;
  case Opcode::Div:
    r = x / y;
    break;
  case Opcode::Min:
    r = float_min(x, y);
    break;
  case Opcode::Max:
    r = float_max(x, y);
    break;
  case Opcode::Pow:
    r = std::pow(x, y);
    break;
  case Opcode::Neg:
    r = -x;
    break;
  case Opcode::Abs:
    r = std::fabs(x);
    break;
  case Opcode::Exp:
    r = std::exp(x);
    break;
  case Opcode::Exp2:
    r = std::exp2(x);
    break;
  case Opcode::Log:
    r = std::log(x);
    break;
  case Opcode::Log2:
    r = std::log2(x);
    break;
  case Opcode::Sqrt:
    r = std::sqrt(x);
    break;
  case Opcode::Rsqrt:
    r = 1.0 / std::sqrt(x);
    break;
  case Opcode::Tanh:
    r = std::tanh(x);
    break;
  case Opcode::Erf:
    r = std::erf(x);
    break;
  case Opcode::Sigmoid:
    r = 1.0 / (1.0 + std::exp(-x));
    break;
  case Opcode::Sin:
    r = std::sin(x);
    break;
  case Opcode::Cos:
    r = std::cos(x);
    break;
  case Opcode::Tan:
    r = std::tan(x);
    break;
  case Opcode::Asin:
    r = std::asin(x);
    break;
  case Opcode::Acos:
    r = std::acos(x);
    break;
  case Opcode::Atan:
    r = std::atan(x);
    break;
  case Opcode::Sinh:
    r = std::sinh(x);
    break;
  case Opcode::Cosh:
    r = std::cosh(x);
    break;
  case Opcode::Log1p:
    r = std::log1p(x);
    break;
  case Opcode::Expm1:
    r = std::expm1(x);
    break;
  case Opcode::Erfinv: // no libm function: the fp64 reference's
    r = tl::ref::unary(tl::ref::UnaryMath::Erfinv, x);
    break;
  case Opcode::Ndtr: // erfc(-x / sqrt 2) / 2 with the argument's rounding corrected
    r = tl::ref::unary(tl::ref::UnaryMath::Ndtr, x);
    break;
  case Opcode::Rint: // ties to even whatever the host's rounding mode
    r = tl::ref::unary(tl::ref::UnaryMath::Rint, x);
    break;
  case Opcode::Floor:
    r = std::floor(x);
    break;
  case Opcode::Ceil:
    r = std::ceil(x);
    break;
  case Opcode::Trunc:
    r = std::trunc(x);
    break;
  case Opcode::MinNum:
    r = tl::ref::binary(tl::ref::BinaryMath::MinNum, x, y);
    break;
  case Opcode::MaxNum:
    r = tl::ref::binary(tl::ref::BinaryMath::MaxNum, x, y);
    break;
  case Opcode::Atan2:
    r = std::atan2(x, y);
    break;
  case Opcode::Fmod: // exact in double, and so exact for every narrower type
    r = std::fmod(x, y);
    break;
  case Opcode::Copysign:
    r = std::copysign(x, y);
    break;
  case Opcode::Clamp:
    r = float_min(float_max(x, y), a[2].f);
    break;
  case Opcode::Fma:
    // One rounding of the exact a b + c to the type. f32: the host's f32 fma. The narrower
    // types: rounded to odd in f64 first (fma_round_to_odd), then to the type below; f64's
    // round to nearest would drop c where it lies far below a b and round twice.
    if (fp64_reference_ || in_ == ScalarKind::F64)
      r = std::fma(x, y, a[2].f);
    else if (in_ == ScalarKind::F32)
      r = static_cast<double>(std::fmaf(float(x), float(y), float(a[2].f)));
    else
      r = fma_round_to_odd(x, y, a[2].f);
    break;
  default:
    throw LaneFault("op '" + std::string(ir::opcode_name(code_)) + "' has no float semantics");
  }
  return Lane{0, fp64_reference_ ? r : round_float(out_, r)};
}

Lane LaneOp::apply_int(const Lane *a) const {
  const int64_t x = a[0].i, y = a[1].i;
  const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  const bool sign = ir::is_signed(in_);
  const int bits = ir::bit_width(in_);
  int64_t r;
  switch (code_) {
  case Opcode::Add:
    r = static_cast<int64_t>(ux + uy);
    break;
  case Opcode::Sub:
    r = static_cast<int64_t>(ux - uy);
    break;
  case Opcode::Mul:
    r = static_cast<int64_t>(ux * uy);
    break;
  case Opcode::Div:
  case Opcode::Rem:
    if (y == 0)
      throw LaneFault("integer division by zero");
    if (sign) {
      if (x == std::numeric_limits<int64_t>::min() && y == -1)
        r = code_ == Opcode::Div ? x : 0;
      else
        r = code_ == Opcode::Div ? x / y : x % y;
    } else {
      r = static_cast<int64_t>(code_ == Opcode::Div ? ux / uy : ux % uy);
    }
    break;
  case Opcode::And:
    r = x & y;
    break;
  case Opcode::Or:
    r = x | y;
    break;
  case Opcode::Xor:
    r = x ^ y;
    break;
  case Opcode::Not:
    r = in_ == ScalarKind::I1 ? !x : ~x;
    break;
  case Opcode::Shl:
    r = static_cast<int64_t>(ux << (uy % bits));
    break;
  case Opcode::Shr: {
    const unsigned s = static_cast<unsigned>(uy % bits);
    r = sign ? x >> s : static_cast<int64_t>(ux >> s);
    break;
  }
  case Opcode::Min:
    r = sign ? std::min(x, y) : static_cast<int64_t>(std::min(ux, uy));
    break;
  case Opcode::Max:
    r = sign ? std::max(x, y) : static_cast<int64_t>(std::max(ux, uy));
    break;
  case Opcode::Neg:
    r = static_cast<int64_t>(0 - ux);
    break;
  case Opcode::Abs:
    r = sign && x < 0 ? static_cast<int64_t>(0 - ux) : x;
    break;
  case Opcode::Clamp: {
    const int64_t lo = sign ? std::max(x, y) : static_cast<int64_t>(std::max(ux, uy));
    r = sign ? std::min(lo, a[2].i)
             : static_cast<int64_t>(
                   std::min(static_cast<uint64_t>(lo), static_cast<uint64_t>(a[2].i)));
    break;
  }
  case Opcode::Popcount:
  case Opcode::Clz: {
    // The operand's own bits (signed lanes are sign-extended in `i`).
    const uint64_t v = bits == 64 ? ux : ux & ((uint64_t(1) << bits) - 1);
    r = code_ == Opcode::Popcount ? std::popcount(v) : std::countl_zero(v) - (64 - bits);
    break;
  }
  default:
    throw LaneFault("op '" + std::string(ir::opcode_name(code_)) + "' has no integer semantics");
  }
  return Lane{wrap_int(out_, r), 0};
}

} // namespace tl::interp
