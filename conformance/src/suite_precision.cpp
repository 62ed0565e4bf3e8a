// The precision suite: each case's kernel runs on the device through the HAL and is compared
// with the fp64 references of reference/ under the tolerance table.
// SPDX-License-Identifier: Apache-2.0
#include "compare.h"
#include "device_run.h"
#include "precision_cases.h"

#include "tl/interpreter/host_tensor.h"
#include "tl/reference/numerics.h"
#include "tl/reference/ops.h"

#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <random>

namespace tl::conform {
namespace {

using interp::HostTensor;
using ir::ScalarKind;
namespace num = tl::numerics;
constexpr double kInf = std::numeric_limits<double>::infinity();

num::FloatFormat fmt(ScalarKind k) {
  switch (k) {
  case ScalarKind::F16:
    return num::FloatFormat::F16;
  case ScalarKind::BF16:
    return num::FloatFormat::BF16;
  case ScalarKind::F64:
    return num::FloatFormat::F64;
  case ScalarKind::F8E4M3:
    return num::FloatFormat::F8E4M3;
  case ScalarKind::F8E5M2:
    return num::FloatFormat::F8E5M2;
  default:
    return num::FloatFormat::F32;
  }
}

/// Samples inputs for one operand of a case.
class Sampler {
public:
  explicit Sampler(uint64_t seed) : rng_(seed) {}
  double uniform(double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng_); }
  /// +-2^U(lo, hi): every binade in the range equally often.
  double binades(double lo, double hi, bool sign = true) {
    double v = std::exp2(uniform(lo, hi));
    return sign && coin() ? -v : v;
  }
  bool coin() { return std::bernoulli_distribution(0.5)(rng_); }
  int64_t integer(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  uint64_t bits() { return rng_(); }

private:
  std::mt19937_64 rng_;
};

bool narrow(ScalarKind k) { return k == ScalarKind::F16; }

/// Inputs of the issue 19 math ops in their domains (NaN: not one of them): values near the
/// ends of [-1, 1] for the inverse functions, exact halves for the rounding ops, the far tail
/// and tiny arguments where log1p and expm1 differ from log and exp.
double issue19_input(const std::string &op, ScalarKind k, int i, Sampler &s) {
  const bool f16 = narrow(k);
  const num::FormatInfo &f = num::format_info(fmt(k));
  const double emin = std::log2(f.min_subnormal), emax = std::log2(f.max_finite);
  const int mant = f.mantissa_bits;
  if (op == "asin" || op == "acos" || op == "erfinv") {
    if (s.coin()) // 1 - 2^-j, j up to the format's precision
      return (s.coin() ? -1 : 1) * (1 - std::exp2(-s.uniform(1, mant + 1)));
    return s.uniform(-1, 1);
  }
  if (op == "ndtr") // both tails: down to where Phi underflows (f64: -38.5, f32: -14.1)
    return f16 ? s.uniform(-9, 6) : k == ScalarKind::F64 ? s.uniform(-39, 9) : s.uniform(-15, 7);
  if (op == "tan")
    return f16 ? s.uniform(-100, 100) : (s.coin() ? s.uniform(-25, 25) : s.binades(0, 20));
  if (op == "atan" || op == "atan2")
    return s.binades(f16 ? -12 : -30, f16 ? 15 : 30);
  if (op == "sinh" || op == "cosh")
    return f16 ? s.uniform(-11, 11) : s.uniform(-88, 88);
  if (op == "log1p")
    return s.coin() ? s.uniform(-1, 1) : s.binades(emin, emax, s.coin());
  if (op == "expm1")
    return s.coin() ? (f16 ? s.uniform(-17, 11) : s.uniform(-87, 88)) : s.binades(emin, 0);
  if (op == "rint" || op == "floor" || op == "ceil" || op == "trunc") {
    if (s.coin()) // exact halves and near-integers below 2^mant, then every binade
      return double(
                 s.integer(-(int64_t(1) << std::min(mant, 20)), int64_t(1) << std::min(mant, 20))) +
             (s.coin() ? 0.5 : 0.25);
    return s.binades(-4, std::min(emax, mant + 3.0));
  }
  if (op == "fmod")
    return i == 0 ? s.binades(-10, f16 ? 15 : 40) : s.binades(-10, f16 ? 8 : 20);
  return std::nan("");
}

/// A float operand value for `op` at dtype `k` (operand `i`), in the op's meaningful domain.
double float_input(const std::string &op, ScalarKind k, int i, Sampler &s) {
  const bool f16 = narrow(k);
  const num::FormatInfo &f = num::format_info(fmt(k));
  const double emin = std::log2(f.min_subnormal), emax = std::log2(f.max_finite);
  if (op == "exp")
    return f16 ? s.uniform(-17, 11) : s.uniform(-87, 88);
  if (op == "exp2")
    return f16 ? s.uniform(-24, 15.9) : s.uniform(-126, 127.9);
  if (op == "log" || op == "log2" || op == "sqrt" || op == "rsqrt")
    return s.binades(emin, emax, false);
  if (op == "tanh")
    return s.uniform(-10, 10);
  if (op == "erf")
    return s.uniform(-5, 5);
  if (op == "sigmoid")
    return s.uniform(-30, 30);
  if (op == "sin" || op == "cos")
    return f16 ? s.uniform(-100, 100) : (s.coin() ? s.uniform(-25, 25) : s.binades(0, 20));
  if (op == "abs" || op == "neg" || op == "copysign" || op == "minnum" || op == "maxnum" ||
      op == "clamp")
    return s.binades(emin, emax);
  if (const double v = issue19_input(op, k, i, s); !std::isnan(v))
    return v;
  if (op == "pow")
    return i == 0 ? s.binades(f16 ? -2 : -4, f16 ? 2 : 4, false)
                  : s.uniform(f16 ? -3.5 : -10, f16 ? 3.5 : 10);
  if (op == "mul" || op == "div")
    return s.binades(f16 ? -7 : -20, f16 ? 7 : 20);
  if (op == "fma")
    return s.binades(f16 ? -5 : -10, f16 ? 5 : 10);
  return s.binades(f16 ? -10 : -20, f16 ? 14 : 20); // add, sub, min, max
}

/// IEEE special values placed in the first lanes of unary and binary float cases.
std::vector<double> specials(ScalarKind k) {
  const num::FormatInfo &f = num::format_info(fmt(k));
  return {0.0,          -0.0,         kInf, -kInf, std::nan(""), 1.0, -1.0, f.min_subnormal,
          f.max_finite, -f.max_finite};
}

int64_t wrap(ScalarKind k, int64_t v) {
  const int w = ir::bit_width(k);
  if (w >= 64)
    return v;
  const uint64_t mask = (uint64_t(1) << w) - 1, u = static_cast<uint64_t>(v) & mask;
  if (ir::is_signed(k) && (u >> (w - 1)))
    return static_cast<int64_t>(u | ~mask);
  return static_cast<int64_t>(u);
}

int64_t int_op(const std::string &op, ScalarKind k, int64_t x, int64_t y) {
  const bool sign = ir::is_signed(k);
  const int w = ir::bit_width(k);
  const uint64_t ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  const uint64_t mask = w >= 64 ? ~uint64_t(0) : (uint64_t(1) << w) - 1;
  int64_t r = 0;
  if (op == "add")
    r = static_cast<int64_t>(ux + uy);
  else if (op == "sub")
    r = static_cast<int64_t>(ux - uy);
  else if (op == "mul")
    r = static_cast<int64_t>(ux * uy);
  else if (op == "div")
    r = sign ? x / y : static_cast<int64_t>((ux & mask) / (uy & mask));
  else if (op == "rem")
    r = sign ? x % y : static_cast<int64_t>((ux & mask) % (uy & mask));
  else if (op == "and")
    r = x & y;
  else if (op == "or")
    r = x | y;
  else if (op == "xor")
    r = x ^ y;
  else if (op == "shl")
    r = static_cast<int64_t>(ux << (uy % w));
  else if (op == "shr")
    r = sign ? x >> (uy % w) : static_cast<int64_t>((ux & mask) >> (uy % w));
  else if (op == "min")
    r = sign ? std::min(x, y) : int64_t(std::min(ux & mask, uy & mask));
  else if (op == "max")
    r = sign ? std::max(x, y) : int64_t(std::max(ux & mask, uy & mask));
  else if (op == "neg")
    r = static_cast<int64_t>(0 - ux);
  else if (op == "abs")
    r = x < 0 ? static_cast<int64_t>(0 - ux) : x;
  else if (op == "not")
    r = ~x;
  else if (op == "popcount")
    r = std::popcount(ux & mask);
  else if (op == "clz")
    r = std::countl_zero(ux & mask) - (64 - w);
  return wrap(k, r);
}

/// min(max(x, lo), hi) in `k`'s order (unsigned lanes hold values below 2^w).
int64_t int_clamp(ScalarKind k, int64_t x, int64_t lo, int64_t hi) {
  if (ir::is_signed(k))
    return std::min(std::max(x, lo), hi);
  const uint64_t ux = static_cast<uint64_t>(x), ul = static_cast<uint64_t>(lo),
                 uh = static_cast<uint64_t>(hi);
  return static_cast<int64_t>(std::min(std::max(ux, ul), uh));
}

int64_t int_input(const std::string &op, ScalarKind k, int i, Sampler &s) {
  const int w = ir::bit_width(k);
  // 64-bit lanes take the whole int64_t range (their bounds do not fit the shifts below).
  int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  if (w < 64) {
    lo = ir::is_signed(k) ? -(int64_t(1) << (w - 1)) : 0;
    hi = ir::is_signed(k) ? (int64_t(1) << (w - 1)) - 1 : (int64_t(1) << w) - 1;
  }
  if ((op == "shl" || op == "shr") && i == 1)
    return s.integer(0, 2 * w); // amounts past the width wrap modulo w
  int64_t v = s.integer(lo, hi);
  if ((op == "div" || op == "rem") && i == 1) {
    if (s.coin())
      v = s.integer(1, 1000) * (ir::is_signed(k) && s.coin() ? -1 : 1);
    if (v == 0 || (ir::is_signed(k) && v == -1))
      v = 7;
  }
  return v;
}

double cast_input(const PrecisionCase &c, Sampler &s) {
  if (c.in == ScalarKind::I32)
    return double(s.integer(INT32_MIN, INT32_MAX));
  if (c.in == ScalarKind::F16 || c.in == ScalarKind::BF16)
    return num::decode(fmt(c.in), s.bits()); // every bit pattern, NaN and inf included
  if (ir::is_integer(c.out)) {
    // Specials, exact ties k + 0.5 (|k| < 2^22, so f32 holds them) on both sides of the range
    // and near the integers, values a few ulp from an integer, and every binade past the range.
    const int bits = ir::bit_width(c.out);
    const int64_t k =
        s.integer(-(int64_t(1) << std::min(bits, 22)), int64_t(1) << std::min(bits, 22));
    const double r = s.uniform(0, 1);
    if (r < 0.1)
      return specials(ScalarKind::F32)[s.integer(0, 9)];
    if (r < 0.4)
      return double(k) + 0.5;
    if (r < 0.55)
      return double(k) + (s.coin() ? 1 : -1) * 0x1p-10;
    return s.binades(-4, bits + 1);
  }
  const num::FormatInfo &t = num::format_info(fmt(c.out));
  const double r = s.uniform(0, 1);
  if (r < 0.05)
    return specials(c.in)[s.integer(0, 9)];
  if (r < 0.2 && c.in == ScalarKind::F32)
    return num::decode(num::FloatFormat::F32, s.bits());
  // Mostly the target's range, from below its subnormals to past its overflow; a random full
  // mantissa puts values between the target's representable neighbours.
  double v = s.binades(std::log2(t.min_subnormal) - 2, std::log2(t.max_finite) + 1);
  return c.in == ScalarKind::F64 ? v * (1 + s.uniform(0, 1) * 0x1p-30) : v;
}

num::Rounding rounding_of(const std::string &m) {
  if (m == "rtz")
    return num::Rounding::TowardZero;
  if (m == "rd")
    return num::Rounding::Down;
  if (m == "ru")
    return num::Rounding::Up;
  return num::Rounding::NearestEven;
}

double cast_ref(const PrecisionCase &c, double x) {
  if (ir::is_integer(c.out)) { // rtz unless the case names a mode, as ir::cast_rounding
    const int bits = ir::bit_width(c.out);
    const double lo = ir::is_signed(c.out) ? -std::ldexp(1.0, bits - 1) : 0.0;
    const double hi = std::ldexp(1.0, ir::is_signed(c.out) ? bits - 1 : bits) - 1;
    return num::round_to_integer(
        x, c.rounding.empty() ? num::Rounding::TowardZero : rounding_of(c.rounding), lo, hi);
  }
  return num::round_to(fmt(c.out), x, rounding_of(c.rounding));
}

const std::map<std::string, tl::ref::UnaryMath> kUnary = {
    {"exp", tl::ref::UnaryMath::Exp},         {"exp2", tl::ref::UnaryMath::Exp2},
    {"log", tl::ref::UnaryMath::Log},         {"log2", tl::ref::UnaryMath::Log2},
    {"sqrt", tl::ref::UnaryMath::Sqrt},       {"rsqrt", tl::ref::UnaryMath::Rsqrt},
    {"tanh", tl::ref::UnaryMath::Tanh},       {"erf", tl::ref::UnaryMath::Erf},
    {"sigmoid", tl::ref::UnaryMath::Sigmoid}, {"sin", tl::ref::UnaryMath::Sin},
    {"cos", tl::ref::UnaryMath::Cos},         {"abs", tl::ref::UnaryMath::Abs},
    {"neg", tl::ref::UnaryMath::Neg},         {"tan", tl::ref::UnaryMath::Tan},
    {"asin", tl::ref::UnaryMath::Asin},       {"acos", tl::ref::UnaryMath::Acos},
    {"atan", tl::ref::UnaryMath::Atan},       {"sinh", tl::ref::UnaryMath::Sinh},
    {"cosh", tl::ref::UnaryMath::Cosh},       {"log1p", tl::ref::UnaryMath::Log1p},
    {"expm1", tl::ref::UnaryMath::Expm1},     {"erfinv", tl::ref::UnaryMath::Erfinv},
    {"rint", tl::ref::UnaryMath::Rint},       {"floor", tl::ref::UnaryMath::Floor},
    {"ceil", tl::ref::UnaryMath::Ceil},       {"trunc", tl::ref::UnaryMath::Trunc},
    {"ndtr", tl::ref::UnaryMath::Ndtr}};
const std::map<std::string, tl::ref::BinaryMath> kBinary = {
    {"add", tl::ref::BinaryMath::Add},       {"sub", tl::ref::BinaryMath::Sub},
    {"mul", tl::ref::BinaryMath::Mul},       {"div", tl::ref::BinaryMath::Div},
    {"pow", tl::ref::BinaryMath::Pow},       {"min", tl::ref::BinaryMath::Min},
    {"max", tl::ref::BinaryMath::Max},       {"minnum", tl::ref::BinaryMath::MinNum},
    {"maxnum", tl::ref::BinaryMath::MaxNum}, {"atan2", tl::ref::BinaryMath::Atan2},
    {"fmod", tl::ref::BinaryMath::Fmod},     {"copysign", tl::ref::BinaryMath::Copysign}};

std::vector<double> values(const HostTensor &t) {
  std::vector<double> v(t.num_elements());
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.get(i);
  return v;
}

bool is_issue19_binary(const PrecisionCase &c) {
  return c.kind == PrecisionKind::Binary &&
         (c.op == "minnum" || c.op == "maxnum" || c.op == "atan2" || c.op == "fmod" ||
          c.op == "copysign");
}

/// Inputs, output and the fp64 reference (plus the reference on absolute values for sums).
struct Prepared {
  std::vector<HostTensor> inputs;
  HostTensor output;
  std::vector<double> ref, ref_abs;
  int64_t terms = 1;
};

Prepared prepare_elementwise(const PrecisionCase &c, Sampler &s) {
  Prepared p;
  int64_t n = 1;
  for (int64_t d : c.shape)
    n *= d;
  for (int i = 0; i < c.arity(); ++i) {
    HostTensor t(c.in, c.shape);
    for (int64_t e = 0; e < n; ++e) {
      if (c.kind == PrecisionKind::Cast)
        t.set(e, cast_input(c, s));
      else if (ir::is_integer(c.in))
        t.set(e, double(int_input(c.op, c.in, i, s)));
      else
        t.set(e, float_input(c.op, c.in, i, s));
    }
    if (c.op == "clamp" && i > 0 && ir::is_float(c.in)) // lo <= 0 <= hi mostly, either sign
      for (int64_t e = 0; e < n; ++e)
        t.set(e, (i == 1 ? -1 : 1) * std::fabs(t.get(e)) * (s.integer(0, 15) ? 1 : -1));
    if (is_issue19_binary(c) && n >= 128) {
      // Every pair of specials (atan2's signed zeros and infinities, fmod by 0 and of inf, NaN
      // on either side of minnum/maxnum) in the first lanes.
      const auto sp = specials(c.in);
      for (size_t j = 0; j < sp.size() * sp.size(); ++j)
        t.set(int64_t(j), i == 0 ? sp[j / sp.size()] : sp[j % sp.size()]);
    } else if (c.kind == PrecisionKind::Unary || c.kind == PrecisionKind::Binary ||
               c.kind == PrecisionKind::ClassTest ||
               (c.kind == PrecisionKind::Clamp && ir::is_float(c.in))) {
      const auto sp = specials(c.in);
      // Binary cases pair each special with a random partner; operand 1 keeps its samples
      // except in the lanes after the specials of operand 0.
      const int64_t first = i == 0 ? 0 : int64_t(sp.size());
      for (size_t j = 0; j < sp.size() && first + int64_t(j) < n && n >= 64; ++j)
        t.set(first + j, sp[j]);
    }
    p.inputs.push_back(std::move(t));
  }
  p.output = HostTensor(c.out, c.shape);
  std::vector<std::vector<double>> x;
  for (auto &t : p.inputs)
    x.push_back(values(t));
  p.ref.resize(n);
  for (int64_t e = 0; e < n; ++e) {
    switch (c.kind) {
    case PrecisionKind::Unary:
      p.ref[e] = tl::ref::unary(kUnary.at(c.op), x[0][e]);
      break;
    case PrecisionKind::Binary:
      p.ref[e] = tl::ref::binary(kBinary.at(c.op), x[0][e], x[1][e]);
      break;
    case PrecisionKind::Fma:
      p.ref[e] = std::fma(x[0][e], x[1][e], x[2][e]);
      break;
    case PrecisionKind::Clamp:
      p.ref[e] =
          ir::is_float(c.in)
              ? tl::ref::clamp(x[0][e], x[1][e], x[2][e])
              : double(int_clamp(c.in, int64_t(x[0][e]), int64_t(x[1][e]), int64_t(x[2][e])));
      break;
    case PrecisionKind::ClassTest: // of the input as its type holds it (x[0] is that already)
      p.ref[e] = c.op == "isnan"   ? std::isnan(x[0][e])
                 : c.op == "isinf" ? std::isinf(x[0][e])
                                   : std::isfinite(x[0][e]);
      break;
    case PrecisionKind::Cast:
      p.ref[e] = cast_ref(c, x[0][e]);
      break;
    case PrecisionKind::IntUnary:
      p.ref[e] = double(int_op(c.op, c.in, int64_t(x[0][e]), 0));
      break;
    default:
      p.ref[e] = double(int_op(c.op, c.in, int64_t(x[0][e]), int64_t(x[1][e])));
      break;
    }
  }
  return p;
}

Prepared prepare_reduce(const PrecisionCase &c, Sampler &s) {
  Prepared p;
  const int64_t R = c.shape[0], C = c.shape[1];
  HostTensor x(c.in, c.shape);
  for (int64_t e = 0; e < R * C; ++e)
    x.set(e, s.uniform(-1, 1));
  const std::vector<double> xv = values(x);
  std::vector<double> xa(xv.size());
  for (size_t e = 0; e < xv.size(); ++e)
    xa[e] = std::fabs(xv[e]);
  p.terms = c.axis == 1 ? C : R;
  if (c.kind == PrecisionKind::Reduce) {
    const std::map<std::string, tl::ref::ReduceKind> kinds = {
        {"sum", tl::ref::ReduceKind::Sum},
        {"max", tl::ref::ReduceKind::Max},
        {"min", tl::ref::ReduceKind::Min},
        {"argmax", tl::ref::ReduceKind::ArgMax}};
    const int64_t outs = c.axis == 1 ? R : C;
    p.ref.resize(outs);
    p.ref_abs.resize(outs);
    tl::ref::reduce(kinds.at(c.op), R, C, xv.data(), c.axis, p.ref.data());
    if (c.op == "sum")
      tl::ref::reduce(tl::ref::ReduceKind::Sum, R, C, xa.data(), c.axis, p.ref_abs.data());
    p.output = HostTensor(c.out, {outs});
  } else {
    // Inclusive scans along the axis, as prefix reductions in fp64 (compensated by ref::reduce).
    p.ref.assign(R * C, 0);
    p.ref_abs.assign(R * C, 0);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t col = 0; col < C; ++col) {
        const int64_t len = c.axis == 1 ? col + 1 : r + 1;
        std::vector<double> line(len), line_abs(len);
        for (int64_t j = 0; j < len; ++j) {
          const int64_t e = c.axis == 1 ? r * C + j : j * C + col;
          line[j] = xv[e];
          line_abs[j] = xa[e];
        }
        const auto kind = c.op == "sum" ? tl::ref::ReduceKind::Sum : tl::ref::ReduceKind::Max;
        tl::ref::reduce(kind, 1, len, line.data(), 1, &p.ref[r * C + col]);
        tl::ref::reduce(kind, 1, len, line_abs.data(), 1, &p.ref_abs[r * C + col]);
      }
    p.output = HostTensor(c.out, c.shape);
  }
  p.inputs.push_back(std::move(x));
  return p;
}

Prepared prepare_dot(const PrecisionCase &c, Sampler &s) {
  Prepared p;
  const int64_t M = c.shape[0], N = c.shape[1], K = c.shape[2];
  HostTensor a(c.in, {M, K}), b(c.in, {K, N});
  for (HostTensor *t : {&a, &b})
    for (int64_t e = 0; e < t->num_elements(); ++e)
      t->set(e, ir::is_integer(c.in) ? double(s.integer(-128, 127)) : s.uniform(-1, 1));
  const auto av = values(a), bv = values(b);
  std::vector<double> aa(av.size()), ba(bv.size());
  for (size_t e = 0; e < av.size(); ++e)
    aa[e] = std::fabs(av[e]);
  for (size_t e = 0; e < bv.size(); ++e)
    ba[e] = std::fabs(bv[e]);
  p.ref.assign(M * N, 0);
  p.ref_abs.assign(M * N, 0);
  tl::ref::gemm(false, false, M, N, K, 1, av.data(), K, bv.data(), N, 0, p.ref.data(), N);
  tl::ref::gemm(false, false, M, N, K, 1, aa.data(), K, ba.data(), N, 0, p.ref_abs.data(), N);
  p.terms = K;
  p.inputs.push_back(std::move(a));
  p.inputs.push_back(std::move(b));
  p.output = HostTensor(c.out, {M, N});
  return p;
}

std::vector<TestDef> list_precision(const ListContext &ctx) {
  std::vector<TestDef> out;
  for (const PrecisionCase &c : precision_cases())
    out.push_back({c.id, "precision", c.core ? "core" : "full", 60, false, c.params()});
  for (TestDef &t : list_contract(ctx))
    out.push_back(std::move(t));
  return out;
}

Outcome run_precision(WorkerContext &ctx, const TestDef &t) {
  if (t.id.rfind("precision.contract.", 0) == 0)
    return run_contract(ctx, t);
  const PrecisionCase *c = nullptr;
  for (const PrecisionCase &pc : precision_cases())
    if (pc.id == t.id)
      c = &pc;
  if (!c)
    return Outcome::fail("no precision case '" + t.id + "'");
  for (ScalarKind k : {c->in, c->out})
    if (!(ctx.info.supported_dtypes & (uint64_t(1) << static_cast<int>(k))))
      return Outcome::not_supported("the device does not support " +
                                    std::string(ir::scalar_name(k)));
  if (compile_target(ctx.info, ctx.paths).empty())
    return Outcome::not_supported("no compiler backend in this build for the device's targets '" +
                                  std::string(ctx.info.targets) + "'");
  const auto table = ToleranceTable::load(ctx.paths.data_dir + "/tolerances.json");
  const Tolerance tol = table.lookup(c->tol_key, std::string(ir::scalar_name(c->out)));

  Sampler s(ctx.seed);
  Prepared p = c->kind == PrecisionKind::Dot ? prepare_dot(*c, s)
               : c->kind == PrecisionKind::Reduce || c->kind == PrecisionKind::Scan
                   ? prepare_reduce(*c, s)
                   : prepare_elementwise(*c, s);
  // Poison the output so that lanes the device never writes are caught.
  for (int64_t e = 0; e < p.output.num_elements(); ++e) // i1 (class tests): the wrong answer
    p.output.set(e, ir::is_float(c->out)       ? std::nan("")
                    : c->out == ScalarKind::I1 ? double(p.ref[e] == 0)
                                               : -77.0);
  std::vector<KernelArg> args;
  for (auto &in : p.inputs)
    args.push_back(&in);
  args.push_back(&p.output);
  run_on_device(ctx, precision_kernel(*c), "k", precision_grid(*c), args);

  const std::vector<double> actual = values(p.output);
  CompareInput in{c->out, &actual, &p.ref, p.ref_abs.empty() ? nullptr : &p.ref_abs, p.terms};
  CompareResult r = compare(in, tol);
  r.metrics["op"] = c->tol_key;
  r.metrics["dtype"] = std::string(ir::scalar_name(c->out));
  if (!r.ok)
    return Outcome::fail(r.message, r.metrics);
  return Outcome::pass(r.metrics);
}

} // namespace

Suite precision_suite() { return {"precision", list_precision, run_precision}; }

} // namespace tl::conform
