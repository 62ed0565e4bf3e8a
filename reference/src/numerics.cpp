// Generic soft-float rounding, encoding and decoding for every TL floating-point format.
// SPDX-License-Identifier: Apache-2.0
#include "tl/reference/numerics.h"

#include <bit>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <limits>

namespace tl::numerics {
namespace {

// max_finite / min_normal / min_subnormal are derived in the table below: each is a power of two or
// (2 - 2^-m) * 2^emax, written as a literal so it is exact.
constexpr FormatInfo kF16 = {5, 10, 15, true, 16, 65504.0, 0x1p-14, 0x1p-24};
constexpr FormatInfo kBF16 = {8, 7, 127, true, 16, 0x1.fep127, 0x1p-126, 0x1p-133};
constexpr FormatInfo kF32 = {8, 23, 127, true, 32, 0x1.fffffep127, 0x1p-126, 0x1p-149};
constexpr FormatInfo kF64 = {11, 52, 1023, true, 64, DBL_MAX, 0x1p-1022, 0x1p-1074};
constexpr FormatInfo kF8E4M3 = {4, 3, 7, false, 8, 448.0, 0x1p-6, 0x1p-9};
constexpr FormatInfo kF8E5M2 = {5, 2, 15, true, 8, 57344.0, 0x1p-14, 0x1p-16};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// |x| = mant * 2^exp with mant < 2^53, read from the bits of a finite double.
struct Decomposed {
  bool negative;
  uint64_t mant;
  int exp;
};

Decomposed decompose(double x) {
  uint64_t bits = std::bit_cast<uint64_t>(x);
  bool negative = (bits >> 63) != 0;
  int field = static_cast<int>((bits >> 52) & 0x7ff);
  uint64_t frac = bits & ((uint64_t{1} << 52) - 1);
  if (field == 0)
    return {negative, frac, -1074};
  return {negative, frac | (uint64_t{1} << 52), field - 1075};
}

/// Unbiased exponent floor(log2(mant * 2^exp)) of a nonzero decomposed value.
int floor_log2(const Decomposed &d) { return d.exp + static_cast<int>(std::bit_width(d.mant)) - 1; }

/// The double mant * 2^q (mant <= 2^53, q >= -1074), built from bits. Host int-to-float
/// conversion is avoided on purpose: some compilers lower uint64 -> double with a subtraction that
/// yields -0 under a downward host rounding mode, and no result here may depend on that mode.
double make_double(uint64_t mant, int q) {
  assert(mant <= (uint64_t{1} << 53) && q >= -1074);
  if (mant == 0)
    return 0.0;
  int width = static_cast<int>(std::bit_width(mant));
  int e = q + width - 1; // unbiased exponent of the result
  if (e > 1023)
    return kInf;
  if (e < -1022) // subnormal: the significand is mant scaled to units of 2^-1074
    return std::bit_cast<double>(mant << (q + 1074));
  uint64_t normalized = width <= 53 ? mant << (53 - width) : mant >> (width - 53);
  uint64_t field = static_cast<uint64_t>(e + 1023);
  return std::bit_cast<double>((field << 52) | (normalized & ((uint64_t{1} << 52) - 1)));
}

/// Whether the magnitude moves up one quantum, given the discarded part of the significand.
bool rounds_away(Rounding r, bool negative, bool kept_odd, bool above_half, bool exactly_half,
                 bool inexact) {
  switch (r) {
  case Rounding::NearestEven:
    return above_half || (exactly_half && kept_odd);
  case Rounding::TowardZero:
    return false;
  case Rounding::Up:
    return inexact && !negative;
  case Rounding::Down:
    return inexact && negative;
  }
  return false;
}

/// Result for a finite value whose correctly rounded magnitude exceeds max_finite.
double overflow(const FormatInfo &fi, bool negative, Rounding r) {
  bool toward_finite = r == Rounding::TowardZero || (r == Rounding::Down && !negative) ||
                       (r == Rounding::Up && negative);
  double magnitude = toward_finite ? fi.max_finite : (fi.has_infinity ? kInf : kNaN);
  return negative ? -magnitude : magnitude;
}

/// Rounds a finite nonzero double to the format, with an unbounded exponent range above.
double round_finite(const FormatInfo &fi, double x, Rounding r) {
  Decomposed d = decompose(x);
  int emin = 1 - fi.bias;
  int e = floor_log2(d);
  // Quantum (weight of the last stored bit) of the target binade: subnormals share emin's.
  int q = (e > emin ? e : emin) - fi.mantissa_bits;
  if (d.exp >= q) // already a multiple of the quantum
    return std::fabs(x) > fi.max_finite ? overflow(fi, d.negative, r) : x;
  int shift = q - d.exp;
  uint64_t kept = 0;
  bool above_half = false, exactly_half = false, inexact = true;
  if (shift < 64) {
    kept = d.mant >> shift;
    uint64_t rem = d.mant & ((uint64_t{1} << shift) - 1);
    uint64_t half = uint64_t{1} << (shift - 1);
    above_half = rem > half;
    exactly_half = rem == half;
    inexact = rem != 0;
  } // else: mant < 2^53 <= 2^(shift-1), so the discarded part is below half and nonzero.
  if (rounds_away(r, d.negative, (kept & 1) != 0, above_half, exactly_half, inexact))
    ++kept;
  double magnitude = make_double(kept, q); // exact: kept <= 2^(m+1)
  if (magnitude > fi.max_finite)
    return overflow(fi, d.negative, r);
  return d.negative ? -magnitude : magnitude;
}

uint64_t low_mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

uint64_t canonical_nan(const FormatInfo &fi) {
  uint64_t exp_ones = low_mask(fi.exponent_bits) << fi.mantissa_bits;
  if (!fi.has_infinity)
    return exp_ones | low_mask(fi.mantissa_bits);
  return exp_ones | (uint64_t{1} << (fi.mantissa_bits - 1));
}

/// Bit pattern of a value already representable in the format.
uint64_t encode_exact(const FormatInfo &fi, double v) {
  if (std::isnan(v))
    return canonical_nan(fi);
  uint64_t sign = std::signbit(v) ? uint64_t{1} << (fi.total_bits - 1) : 0;
  uint64_t exp_ones = low_mask(fi.exponent_bits);
  if (std::isinf(v)) {
    assert(fi.has_infinity && "infinity in a format without one");
    return sign | (exp_ones << fi.mantissa_bits);
  }
  if (v == 0)
    return sign;
  Decomposed d = decompose(v);
  int emin = 1 - fi.bias;
  int e = floor_log2(d);
  if (e >= emin) {
    uint64_t normalized = d.mant << (53 - std::bit_width(d.mant)); // leading one at bit 52
    uint64_t dropped = 52 - fi.mantissa_bits;
    assert((normalized & low_mask(static_cast<int>(dropped))) == 0 && "value not representable");
    uint64_t frac = (normalized & low_mask(52)) >> dropped;
    uint64_t biased = static_cast<uint64_t>(e + fi.bias);
    return sign | (biased << fi.mantissa_bits) | frac;
  }
  int shift = d.exp - (emin - fi.mantissa_bits); // subnormal: count of min_subnormal quanta
  assert((shift >= 0 || (d.mant & low_mask(-shift)) == 0) && "value not representable");
  uint64_t frac = shift >= 0 ? d.mant << shift : d.mant >> -shift;
  return sign | frac;
}

} // namespace

const FormatInfo &format_info(FloatFormat f) {
  switch (f) {
  case FloatFormat::F16:
    return kF16;
  case FloatFormat::BF16:
    return kBF16;
  case FloatFormat::F32:
    return kF32;
  case FloatFormat::F64:
    return kF64;
  case FloatFormat::F8E4M3:
    return kF8E4M3;
  case FloatFormat::F8E5M2:
    return kF8E5M2;
  }
  assert(false && "unknown float format");
  return kF64;
}

const char *format_name(FloatFormat f) {
  switch (f) {
  case FloatFormat::F16:
    return "f16";
  case FloatFormat::BF16:
    return "bf16";
  case FloatFormat::F32:
    return "f32";
  case FloatFormat::F64:
    return "f64";
  case FloatFormat::F8E4M3:
    return "f8e4m3";
  case FloatFormat::F8E5M2:
    return "f8e5m2";
  }
  assert(false && "unknown float format");
  return "?";
}

double round_to_integer(double x, Rounding r, double lo, double hi) {
  if (std::isnan(x))
    return 0;
  double t = x;
  if (std::isfinite(x)) {
    switch (r) {
    case Rounding::NearestEven:
      t = x - std::remainder(x, 1.0);
      break;
    case Rounding::TowardZero:
      t = std::trunc(x);
      break;
    case Rounding::Down:
      t = std::floor(x);
      break;
    case Rounding::Up:
      t = std::ceil(x);
      break;
    }
  }
  return t < lo ? lo : t > hi ? hi : t;
}

double round_to(FloatFormat f, double x, Rounding r) {
  const FormatInfo &fi = format_info(f);
  if (std::isnan(x))
    return kNaN;
  if (std::isinf(x))
    return fi.has_infinity ? x : kNaN;
  if (x == 0)
    return x;
  return round_finite(fi, x, r);
}

uint64_t encode(FloatFormat f, double x, Rounding r) {
  return encode_exact(format_info(f), round_to(f, x, r));
}

double decode(FloatFormat f, uint64_t bits) {
  const FormatInfo &fi = format_info(f);
  const int m = fi.mantissa_bits;
  bits &= low_mask(fi.total_bits);
  bool negative = ((bits >> (fi.total_bits - 1)) & 1) != 0;
  uint64_t field = (bits >> m) & low_mask(fi.exponent_bits);
  uint64_t frac = bits & low_mask(m);
  double magnitude;
  if (field == low_mask(fi.exponent_bits) && fi.has_infinity) {
    if (frac != 0)
      return kNaN;
    magnitude = kInf;
  } else if (field == low_mask(fi.exponent_bits) && frac == low_mask(m)) {
    return kNaN; // the "fn" formats: all ones is the only NaN
  } else if (field == 0) {
    magnitude = make_double(frac, 1 - fi.bias - m);
  } else {
    int e = static_cast<int>(field) - fi.bias - m;
    magnitude = make_double(frac | (uint64_t{1} << m), e);
  }
  return negative ? -magnitude : magnitude;
}

int64_t ulp_distance(FloatFormat f, double a, double b) {
  const FormatInfo &fi = format_info(f);
  double ra = round_to(f, a), rb = round_to(f, b);
  if (std::isnan(ra) || std::isnan(rb))
    return std::isnan(ra) && std::isnan(rb) ? 0 : std::numeric_limits<int64_t>::max();
  // Sign-magnitude bit patterns map monotonically onto a line of integers; +-0 both map to 0.
  uint64_t sign_bit = uint64_t{1} << (fi.total_bits - 1);
  auto key = [&](double v) -> __int128 {
    uint64_t bits = encode_exact(fi, v);
    __int128 mag = static_cast<__int128>(bits & ~sign_bit);
    return (bits & sign_bit) != 0 ? -mag : mag;
  };
  __int128 dist = key(ra) - key(rb);
  if (dist < 0)
    dist = -dist;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  return dist > kMax ? kMax : static_cast<int64_t>(dist);
}

} // namespace tl::numerics
