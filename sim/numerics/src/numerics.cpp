// Integer soft-float for the TNPU units: unpack, exact product and sum, one rounding to the target.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/numerics.h"

#include "softfloat.h"

#include <cassert>
#include <cstring>
#include <utility>

namespace tl::npu::num {
using namespace detail;
namespace {

/// Rounds a float value to an integer in direction `r` and clamps it to [lo, hi]; NaN gives 0.
int64_t round_to_int(const Value &v, int64_t lo, int64_t hi, Round r = Round::NearestEven) {
  if (v.cls == Cls::NaN || v.cls == Cls::Zero)
    return 0;
  if (v.cls == Cls::Inf)
    return v.neg ? lo : hi;
  u128 mag;
  if (v.exp >= 0) {
    if (v.exp > 40)
      return v.neg ? lo : hi;
    mag = v.mag << v.exp;
  } else {
    const int s = -v.exp;
    u128 rem;
    if (s >= 100) {
      mag = 0;
      rem = v.mag; // nonzero, below half
    } else {
      mag = v.mag >> s;
      rem = v.mag & ((u128{1} << s) - 1);
    }
    const u128 half = s >= 100 ? ~u128{0} : u128{1} << (s - 1);
    bool up = false;
    switch (r) {
    case Round::NearestEven:
      up = rem > half || (rem == half && (mag & 1) != 0);
      break;
    case Round::TowardZero:
      break;
    case Round::Down:
      up = v.neg && rem != 0;
      break;
    case Round::Up:
      up = !v.neg && rem != 0;
      break;
    }
    if (up)
      ++mag;
  }
  if (mag > static_cast<u128>(hi) + 1)
    return v.neg ? lo : hi;
  int64_t x = v.neg ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
  return x < lo ? lo : (x > hi ? hi : x);
}

uint32_t narrow(uint32_t x, Layout l) { return pack(unpack(x, kF32), l); }

uint32_t widen(uint32_t x, Layout l) {
  Value v = unpack(x, l);
  switch (v.cls) {
  case Cls::NaN:
    return kF32CanonicalNaN;
  case Cls::Inf:
    return inf_bits(kF32, v.neg);
  case Cls::Zero:
    return sign_bit(kF32, v.neg);
  case Cls::Finite:
    break;
  }
  return round_pack(v.neg, v.exp, v.mag, kF32);
}

/// Order key: monotone in the value, -0 just below +0.
int64_t order_key(uint32_t x) {
  int64_t mag = x & 0x7fffffff;
  return (x >> 31) != 0 ? -mag - 1 : mag;
}

bool is_nan(uint32_t x) { return (x & 0x7fffffff) > 0x7f800000; }

} // namespace

int dtype_size(DType t) {
  switch (t) {
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::I8:
    return 1;
  }
  assert(false && "unknown dtype");
  return 1;
}

const char *dtype_name(DType t) {
  static const char *const kNames[] = {"bf16", "f16", "f32", "i8", "i32"};
  return kNames[static_cast<int>(t)];
}

uint32_t bf16_to_f32(uint16_t x) { return widen(x, kBF16); }
uint32_t f16_to_f32(uint16_t x) { return widen(x, kF16); }
uint16_t f32_to_bf16(uint32_t x) { return static_cast<uint16_t>(narrow(x, kBF16)); }
uint16_t f32_to_f16(uint32_t x) { return static_cast<uint16_t>(narrow(x, kF16)); }
int8_t f32_to_i8(uint32_t x) {
  return static_cast<int8_t>(round_to_int(unpack(x, kF32), -128, 127));
}
int32_t f32_to_i32(uint32_t x) {
  return static_cast<int32_t>(round_to_int(unpack(x, kF32), INT32_MIN, INT32_MAX));
}
uint32_t i32_to_f32(int32_t x) {
  if (x == 0)
    return 0;
  bool neg = x < 0;
  uint64_t mag =
      neg ? uint64_t{0} - static_cast<uint64_t>(static_cast<int64_t>(x)) : static_cast<uint64_t>(x);
  return round_pack(neg, 0, mag, kF32);
}

uint32_t convert(DType from, DType to, uint32_t bits, Round r, bool is_unsigned) {
  const bool int_from = from == DType::I8 || from == DType::I32;
  const bool int_to = to == DType::I8 || to == DType::I32;
  const int64_t lo = is_unsigned ? 0 : (to == DType::I8 ? -128 : INT32_MIN);
  const int64_t hi =
      to == DType::I8 ? (is_unsigned ? 255 : 127) : (is_unsigned ? int64_t{UINT32_MAX} : INT32_MAX);
  if (from == to && !int_from)
    return bits;
  int64_t x = 0;
  if (int_from) {
    x = from == DType::I8
            ? (is_unsigned ? int64_t{bits & 0xff} : int64_t{static_cast<int8_t>(bits)})
            : (is_unsigned ? int64_t{bits} : int64_t{static_cast<int32_t>(bits)});
    if (int_to) // integer to integer: saturate, no float step
      return static_cast<uint32_t>(x < lo ? lo : (x > hi ? hi : x)) &
             (to == DType::I8 ? 0xffu : ~0u);
  }
  Value v;
  if (int_from) {
    const uint64_t mag = x < 0 ? uint64_t{0} - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
    v = x == 0 ? Value{Cls::Zero, false, 0, 0} : Value{Cls::Finite, x < 0, 0, mag};
  } else {
    v = unpack_dtype(from, bits);
  }
  if (int_to)
    return static_cast<uint32_t>(round_to_int(v, lo, hi, r)) & (to == DType::I8 ? 0xffu : ~0u);
  return pack(v, layout_of(to), r);
}

uint32_t int_resize(DType from, DType to, uint32_t bits, bool is_unsigned) {
  uint32_t x = bits;
  if (from == DType::I8)
    x = is_unsigned ? (bits & 0xff)
                    : static_cast<uint32_t>(static_cast<int32_t>(static_cast<int8_t>(bits)));
  return to == DType::I8 ? (x & 0xff) : x;
}

uint32_t f32_fma(uint32_t a, uint32_t b, uint32_t c) {
  return fused(unpack(a, kF32), unpack(b, kF32), unpack(c, kF32));
}
uint32_t f32_add(uint32_t a, uint32_t b) { return f32_fma(a, 0x3f800000u, b); }
uint32_t f32_sub(uint32_t a, uint32_t b) { return f32_add(a, b ^ 0x80000000u); }
uint32_t f32_mul(uint32_t a, uint32_t b) { return f32_fma(a, b, kF32NegZero); }

uint32_t f32_max(uint32_t a, uint32_t b) {
  if (is_nan(a) || is_nan(b))
    return kF32CanonicalNaN;
  return order_key(a) >= order_key(b) ? a : b;
}
uint32_t f32_min(uint32_t a, uint32_t b) {
  if (is_nan(a) || is_nan(b))
    return kF32CanonicalNaN;
  return order_key(a) <= order_key(b) ? a : b;
}

uint32_t f32_exp(uint32_t x) {
  if (is_nan(x))
    return kF32CanonicalNaN;
  // Beyond these bounds the result is inf or 0 anyway; clamping keeps n within [-151, 129].
  constexpr uint32_t kHi = 0x42b20000u /* 89 */, kLo = 0xc2d00000u /* -104 */;
  if ((x >> 31) == 0 && x > kHi)
    x = kHi;
  if ((x >> 31) != 0 && x > kLo)
    x = kLo;
  constexpr uint32_t kLog2e = 0x3fb8aa3bu, kMagic = 0x4b400000u /* 1.5 * 2^23 */;
  constexpr uint32_t kLn2Hi = 0x3f317200u, kLn2Lo = 0x35bfbe8eu;
  const uint32_t t = f32_fma(x, kLog2e, kMagic); // 1.5 * 2^23 + round(x / ln 2)
  const int n = static_cast<int>(t) - static_cast<int>(kMagic);
  const uint32_t neg_n = f32_sub(t, kMagic) ^ 0x80000000u; // -n, exactly
  uint32_t r = f32_fma(neg_n, kLn2Hi, x);
  r = f32_fma(neg_n, kLn2Lo, r); // r = x - n ln 2, |r| <= ln2 / 2 (+ a rounding)
  // Taylor coefficients 1/7! ... 1/0!, Horner with fused steps.
  static const uint32_t kCoef[] = {0x39500d01u, 0x3ab60b61u, 0x3c088889u, 0x3d2aaaabu,
                                   0x3e2aaaabu, 0x3f000000u, 0x3f800000u, 0x3f800000u};
  uint32_t p = kCoef[0];
  for (size_t i = 1; i < sizeof(kCoef) / sizeof(kCoef[0]); ++i)
    p = f32_fma(p, r, kCoef[i]);
  // p * 2^n in two exact-then-rounded steps, so a subnormal result is rounded once.
  const int n1 = n / 2, n2 = n - n1;
  auto pow2 = [](int k) { return static_cast<uint32_t>(k + 127) << 23; };
  return f32_mul(f32_mul(p, pow2(n1)), pow2(n2));
}

uint32_t mac_f32(DType in, uint32_t a, uint32_t b, uint32_t acc) {
  return fused(unpack_dtype(in, a), unpack_dtype(in, b), unpack(acc, kF32));
}

int32_t mac_i8(int8_t a, int8_t b, int32_t acc) {
  uint32_t prod = static_cast<uint32_t>(static_cast<int32_t>(a) * static_cast<int32_t>(b));
  return static_cast<int32_t>(static_cast<uint32_t>(acc) + prod);
}

uint32_t load_bits(DType t, const uint8_t *base, size_t i) {
  switch (dtype_size(t)) {
  case 1:
    return base[i];
  case 2: {
    uint16_t v;
    std::memcpy(&v, base + 2 * i, 2);
    return v;
  }
  default: {
    uint32_t v;
    std::memcpy(&v, base + 4 * i, 4);
    return v;
  }
  }
}

void store_bits(DType t, uint8_t *base, size_t i, uint32_t bits) {
  switch (dtype_size(t)) {
  case 1:
    base[i] = static_cast<uint8_t>(bits);
    break;
  case 2: {
    uint16_t v = static_cast<uint16_t>(bits);
    std::memcpy(base + 2 * i, &v, 2);
    break;
  }
  default:
    std::memcpy(base + 4 * i, &bits, 4);
  }
}

void gemm_reference(DType in, int M, int N, int K, const uint8_t *A, size_t lda, const uint8_t *B,
                    size_t ldb, uint32_t *C, size_t ldc, bool accumulate) {
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      uint32_t &c = C[i * ldc + j];
      if (in == DType::I8) {
        int32_t acc = accumulate ? static_cast<int32_t>(c) : 0;
        for (int k = 0; k < K; ++k)
          acc =
              mac_i8(static_cast<int8_t>(A[i * lda + k]), static_cast<int8_t>(B[k * ldb + j]), acc);
        c = static_cast<uint32_t>(acc);
        continue;
      }
      uint32_t acc = accumulate ? c : kF32NegZero;
      for (int k = 0; k < K; ++k)
        acc = mac_f32(in, load_bits(in, A, i * lda + k), load_bits(in, B, k * ldb + j), acc);
      c = acc;
    }
  }
}

} // namespace tl::npu::num
