// The vector unit's typed elementwise arithmetic: f32/f16/bf16 rounded once to the element type,
// i8/i32 wrapping; correctly rounded division, square root and reciprocal square root.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/numerics.h"

#include "softfloat.h"

#include <cassert>
#include <cmath>
#include <cstring>

namespace tl::npu::num {
using namespace detail;
namespace {

uint32_t divide(const Value &a, const Value &b, Layout l) {
  if (a.cls == Cls::NaN || b.cls == Cls::NaN)
    return canonical_nan(l);
  const bool neg = a.neg != b.neg;
  if (a.cls == Cls::Inf)
    return b.cls == Cls::Inf ? canonical_nan(l) : inf_bits(l, neg);
  if (b.cls == Cls::Inf)
    return sign_bit(l, neg);
  if (b.cls == Cls::Zero)
    return a.cls == Cls::Zero ? canonical_nan(l) : inf_bits(l, neg);
  if (a.cls == Cls::Zero)
    return sign_bit(l, neg);
  // a.mag < 2^24: the quotient keeps at least 40 bits; the remainder becomes a sticky bit.
  const u128 n = a.mag << 64;
  const u128 q = n / b.mag, rem = n % b.mag;
  return round_pack(neg, a.exp - 64 - b.exp - 1, (q << 1) | (rem != 0 ? 1 : 0), l);
}

/// mag * 2^exp with an even exponent and mag < 2^26.
void even_exponent(const Value &a, u128 &mag, int &exp) {
  mag = a.mag;
  exp = a.exp;
  if ((exp & 1) != 0) {
    mag <<= 1;
    exp -= 1;
  }
}

uint32_t square_root(const Value &a, Layout l) {
  if (a.cls == Cls::NaN || (a.neg && a.cls != Cls::Zero))
    return canonical_nan(l);
  if (a.cls != Cls::Finite)
    return pack(a, l); // +-0, +inf
  u128 m;
  int e;
  even_exponent(a, m, e);
  m <<= 100; // the root keeps at least 50 bits
  e -= 100;
  const u128 r = isqrt(m);
  return round_pack(false, e / 2 - 1, (r << 1) | (r * r != m ? 1 : 0), l);
}

uint32_t reciprocal_sqrt(const Value &a, Layout l) {
  if (a.cls == Cls::NaN || (a.neg && a.cls != Cls::Zero))
    return canonical_nan(l);
  if (a.cls == Cls::Zero)
    return inf_bits(l, a.neg); // 1 / sqrt(-0) = 1 / -0
  if (a.cls == Cls::Inf)
    return 0;
  u128 m;
  int e;
  even_exponent(a, m, e);
  // 1/sqrt(m) = sqrt(2^126 / m) * 2^-63, and floor(sqrt(floor(y))) = floor(sqrt(y)).
  const u128 top = u128{1} << 126;
  const u128 n = top / m;
  const u128 r = isqrt(n);
  const bool inexact = top % m != 0 || r * r != n;
  return round_pack(false, -e / 2 - 63 - 1, (r << 1) | (inexact ? 1 : 0), l);
}

uint32_t to_f32(DType t, uint32_t bits) {
  switch (t) {
  case DType::BF16:
    return bf16_to_f32(static_cast<uint16_t>(bits));
  case DType::F16:
    return f16_to_f32(static_cast<uint16_t>(bits));
  default:
    return bits;
  }
}

/// Monotone in the value with -0 == +0; NaN excluded by the callers.
int64_t value_key(uint32_t f32) {
  const int64_t mag = f32 & 0x7fffffff;
  return (f32 >> 31) != 0 ? -mag : mag;
}

bool is_nan_bits(DType t, uint32_t bits) { return unpack_dtype(t, bits).cls == Cls::NaN; }

// --- integers ------------------------------------------------------------------------------------

int width(DType t) { return t == DType::I8 ? 8 : 32; }

int64_t extend(DType t, uint32_t bits, bool is_unsigned) {
  if (t == DType::I8)
    return is_unsigned ? static_cast<int64_t>(bits & 0xff) : static_cast<int8_t>(bits);
  return is_unsigned ? static_cast<int64_t>(bits) : static_cast<int32_t>(bits);
}

uint32_t wrap(DType t, uint64_t v) {
  return t == DType::I8 ? static_cast<uint32_t>(v & 0xff) : static_cast<uint32_t>(v);
}

uint32_t int_binary(BinOp op, DType t, uint32_t a, uint32_t b, bool u) {
  const int64_t x = extend(t, a, u), y = extend(t, b, u);
  const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  const unsigned shift = static_cast<unsigned>(b) % static_cast<unsigned>(width(t));
  switch (op) {
  case BinOp::Add:
    return wrap(t, ux + uy);
  case BinOp::Sub:
    return wrap(t, ux - uy);
  case BinOp::Mul:
    return wrap(t, ux * uy);
  case BinOp::Div: // 32-bit operands in 64-bit arithmetic: INT_MIN / -1 cannot trap
    return y == 0 ? wrap(t, ~uint64_t{0}) : wrap(t, static_cast<uint64_t>(x / y));
  case BinOp::Rem:
    return y == 0 ? wrap(t, ux) : wrap(t, static_cast<uint64_t>(x % y));
  case BinOp::Max:
    return wrap(t, static_cast<uint64_t>(x > y ? x : y));
  case BinOp::Min:
    return wrap(t, static_cast<uint64_t>(x < y ? x : y));
  case BinOp::And:
    return wrap(t, ux & uy);
  case BinOp::Or:
    return wrap(t, ux | uy);
  case BinOp::Xor:
    return wrap(t, ux ^ uy);
  case BinOp::Shl:
    return wrap(t, ux << shift);
  case BinOp::Shr: // x is sign- or zero-extended, so >> is arithmetic or logical accordingly
    return wrap(t, static_cast<uint64_t>(x >> shift));
  default: // the float operations
    break;
  }
  assert(false && "not an integer operation");
  return 0;
}

uint32_t float_binary(BinOp op, DType t, uint32_t a, uint32_t b) {
  const Layout l = layout_of(t);
  const Value va = unpack_dtype(t, a), vb = unpack_dtype(t, b);
  static const Value kOne = unpack(0x3f800000u, kF32), kNegZero = unpack(kF32NegZero, kF32);
  switch (op) {
  case BinOp::Add:
    return fused(va, kOne, vb, l);
  case BinOp::Sub: {
    Value nb = vb;
    nb.neg = !nb.neg;
    return fused(va, kOne, nb, l);
  }
  case BinOp::Mul:
    return fused(va, vb, kNegZero, l);
  case BinOp::Div:
    return divide(va, vb, l);
  case BinOp::Max:
  case BinOp::Min: {
    if (va.cls == Cls::NaN || vb.cls == Cls::NaN)
      return canonical_nan(l);
    const uint32_t fa = to_f32(t, a), fb = to_f32(t, b);
    const uint32_t r = op == BinOp::Max ? f32_max(fa, fb) : f32_min(fa, fb);
    return r == fa ? a : b;
  }
  case BinOp::Pow: // IEEE 754 / C pow: pow(x, 0) = 1 and pow(1, y) = 1 even for a NaN operand
    return from_double(std::pow(to_double(t, a), to_double(t, b)), l);
  default:
    break;
  }
  assert(false && "not a float operation");
  return 0;
}

} // namespace

double detail::to_double(DType t, uint32_t bits) {
  const uint32_t f = to_f32(t, bits);
  float x;
  std::memcpy(&x, &f, 4);
  return x; // exact
}

uint32_t detail::from_double(double v, Layout l) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  return pack(unpack_f64(bits), l);
}

bool is_float(DType t) { return t == DType::BF16 || t == DType::F16 || t == DType::F32; }

bool defined_on(BinOp op, DType t) {
  switch (op) {
  case BinOp::Rem:
  case BinOp::And:
  case BinOp::Or:
  case BinOp::Xor:
  case BinOp::Shl:
  case BinOp::Shr:
    return !is_float(t);
  case BinOp::Pow:
  case BinOp::MaxNum:
  case BinOp::MinNum:
  case BinOp::Atan2:
  case BinOp::Fmod:
  case BinOp::Copysign:
    return is_float(t);
  default:
    return true;
  }
}

bool defined_on(UnOp op, DType t) {
  switch (op) {
  case UnOp::Neg:
  case UnOp::Abs:
    return true;
  case UnOp::Not:
  case UnOp::Popcount:
  case UnOp::Clz:
    return !is_float(t);
  default:
    return is_float(t);
  }
}

uint32_t binary(BinOp op, DType t, uint32_t a, uint32_t b, bool is_unsigned) {
  assert(defined_on(op, t));
  if (op >= BinOp::MaxNum) // the later (float) operations are appended from MaxNum on
    return later_float_binary(op, t, a, b);
  return is_float(t) ? float_binary(op, t, a, b) : int_binary(op, t, a, b, is_unsigned);
}

uint32_t unary(UnOp op, DType t, uint32_t a, bool is_unsigned) {
  assert(defined_on(op, t));
  if (op == UnOp::Popcount || op == UnOp::Clz)
    return bit_count(op, t, a);
  if (op >= UnOp::Tan) // the later float functions are appended from Tan on
    return later_float_unary(op, t, a);
  if (!is_float(t)) {
    const int64_t x = extend(t, a, is_unsigned);
    switch (op) {
    case UnOp::Neg:
      return wrap(t, uint64_t{0} - static_cast<uint64_t>(x));
    case UnOp::Abs:
      return wrap(t, static_cast<uint64_t>(x < 0 ? -x : x));
    default: // Not
      return wrap(t, ~static_cast<uint64_t>(x));
    }
  }
  const Layout l = layout_of(t);
  const Value v = unpack_dtype(t, a);
  if (v.cls == Cls::NaN)
    return canonical_nan(l);
  const double x = to_double(t, a);
  switch (op) {
  case UnOp::Neg:
    return a ^ sign_bit(l, true);
  case UnOp::Abs:
    return a & ~sign_bit(l, true);
  case UnOp::Sqrt:
    return square_root(v, l);
  case UnOp::Rsqrt:
    return reciprocal_sqrt(v, l);
  case UnOp::Exp: {
    const uint32_t e = f32_exp(to_f32(t, a));
    return t == DType::F32 ? e : convert(DType::F32, t, e);
  }
  case UnOp::Exp2:
    return from_double(std::exp2(x), l);
  case UnOp::Log:
    return from_double(std::log(x), l);
  case UnOp::Log2:
    return from_double(std::log2(x), l);
  case UnOp::Tanh:
    return from_double(std::tanh(x), l);
  case UnOp::Erf:
    return from_double(std::erf(x), l);
  case UnOp::Sigmoid:
    return from_double(1.0 / (1.0 + std::exp(-x)), l);
  case UnOp::Sin:
    return from_double(std::sin(x), l);
  case UnOp::Cos:
    return from_double(std::cos(x), l);
  default:
    break;
  }
  assert(false && "not a float function");
  return 0;
}

uint32_t fma(DType t, uint32_t a, uint32_t b, uint32_t c) {
  if (!is_float(t))
    return wrap(t, static_cast<uint64_t>(extend(t, a, false)) *
                           static_cast<uint64_t>(extend(t, b, false)) +
                       static_cast<uint64_t>(extend(t, c, false)));
  return fused(unpack_dtype(t, a), unpack_dtype(t, b), unpack_dtype(t, c), layout_of(t));
}

bool compare(CmpOp op, DType t, uint32_t a, uint32_t b, bool is_unsigned) {
  int64_t x, y;
  if (is_float(t)) {
    if (is_nan_bits(t, a) || is_nan_bits(t, b))
      return op == CmpOp::Ne;
    x = value_key(to_f32(t, a));
    y = value_key(to_f32(t, b));
  } else {
    x = extend(t, a, is_unsigned);
    y = extend(t, b, is_unsigned);
  }
  switch (op) {
  case CmpOp::Eq:
    return x == y;
  case CmpOp::Ne:
    return x != y;
  case CmpOp::Lt:
    return x < y;
  case CmpOp::Le:
    return x <= y;
  case CmpOp::Gt:
    return x > y;
  case CmpOp::Ge:
    return x >= y;
  }
  return false;
}

uint32_t f32_div(uint32_t a, uint32_t b) { return divide(unpack(a, kF32), unpack(b, kF32), kF32); }
uint32_t f32_sqrt(uint32_t a) { return square_root(unpack(a, kF32), kF32); }
uint32_t f32_rsqrt(uint32_t a) { return reciprocal_sqrt(unpack(a, kF32), kF32); }

} // namespace tl::npu::num
