// Soft-float rounding, encoding and ULP distance for the floating-point formats TL computes in.
// SPDX-License-Identifier: Apache-2.0
//
// Semantics this header promises:
//  - Every format is a subset of binary64, so values travel as `double`; round_to() returns a
//    double that is exactly representable in the target format.
//  - Rounding is IEEE 754 correct rounding (one rounding step, subnormals kept, never flushed).
//  - One generic routine, parameterised by FormatInfo and working on the double's bits with integer
//    arithmetic, serves every format; no host float conversion is involved, and no result depends
//    on the host's floating-point rounding mode.
//  - Overflow: formats with infinity follow IEEE 754 (NearestEven -> +-inf; a directed mode that
//    rounds toward zero for that sign clamps to +-max_finite). F8E4M3 is the OCP "fn" variant (no
//    infinity, max 448, NaN = S.1111.111): anything that rounds beyond 448 and +-inf become NaN,
//    as in ml_dtypes, except that a finite value under a directed mode toward the finite side
//    gives +-448.
//  - The sign of a zero result is the sign of the input; NaN stays NaN (encoded canonical and
//    positive).
#pragma once

#include <cstdint>

namespace tl::numerics {

enum class FloatFormat { F16, BF16, F32, F64, F8E4M3, F8E5M2 };

/// Down = toward -inf, Up = toward +inf.
enum class Rounding { NearestEven, TowardZero, Down, Up };

struct FormatInfo {
  int exponent_bits;
  int mantissa_bits; ///< stored fraction bits, without the implicit leading one
  int bias;
  bool has_infinity; ///< false only for F8E4M3 (whose NaN is all-ones exponent and mantissa)
  int total_bits;
  double max_finite;
  double min_normal;
  double min_subnormal;
};

const FormatInfo &format_info(FloatFormat f);

/// Short lower-case name ("f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2").
const char *format_name(FloatFormat f);

/// Rounds `x` to the nearest value representable in `f` under `r` (see the header comment).
double round_to(FloatFormat f, double x, Rounding r = Rounding::NearestEven);

/// Float -> integer conversion: `x` rounded to an integral value under `r`, then clamped to
/// [lo, hi] (infinities included); NaN gives 0. rne is x - remainder(x, 1), exact (IEEE
/// remainder rounds its quotient to nearest even), so independent of the host's rounding mode.
double round_to_integer(double x, Rounding r, double lo, double hi);

/// Rounds, then returns the bit pattern (the low total_bits bits). NaN encodes as the canonical
/// positive quiet NaN: F64 0x7ff8000000000000, F32 0x7fc00000, F16 0x7e00, BF16 0x7fc0,
/// F8E5M2 0x7e, F8E4M3 0x7f.
uint64_t encode(FloatFormat f, double x, Rounding r = Rounding::NearestEven);

/// Exact value of a bit pattern (bits above total_bits are ignored).
double decode(FloatFormat f, uint64_t bits);

/// Number of representable steps in `f` between a and b after both are rounded to f (NearestEven).
/// 0 if equal (+0 and -0 included) or both NaN; INT64_MAX if exactly one is NaN. The largest
/// finite value and infinity are one step apart. Saturates at INT64_MAX.
int64_t ulp_distance(FloatFormat f, double a, double b);

} // namespace tl::numerics
