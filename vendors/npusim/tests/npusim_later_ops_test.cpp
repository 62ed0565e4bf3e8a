// Issue 19's elementwise ops compiled by the tnpu target and run on npusim, checked against
// fp64 (long double) <cmath> on the host, not against the interpreter: transcendental ops within
// tl-conform's ULP bounds (f32: tan 5, asin 4, acos 4, atan 5, atan2 6, sinh 4, cosh 4, log1p 2,
// expm1 3, erfinv 8, ndtr 8; f16 / bf16: 2) on every f16 / bf16 input and 64 Ki f32 samples with
// the special values, which must be exact (C99 Annex F); rint floor ceil trunc, class tests, minnum
// maxnum copysign fmod clamp popcount clz bit-exact; f32 and integer scalars; f64 rejected.
// SPDX-License-Identifier: Apache-2.0
#include "ops_test_support.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace tl::npusim {
namespace {

using namespace ops_test;
using ir::ScalarKind;

constexpr int64_t kTile = 1024; // elements per program

long double value(ScalarKind k, uint64_t bits) { return num::decode(format_of(k), bits); }

/// Error of a result of type k in units of the last place of the exact value `want` (long
/// double); a zero, an infinity or a NaN must be exact (0 or a huge error).
long double ulp_error(ScalarKind k, uint64_t got, long double want) {
  const num::FloatFormat f = format_of(k);
  const int mbits = k == ScalarKind::F32 ? 23 : k == ScalarKind::F16 ? 10 : 7;
  const int emin = k == ScalarKind::F16 ? -14 : -126;
  const long double g = value(k, got);
  if (std::isnan(want) || std::isnan(g))
    return std::isnan(want) && std::isnan(g) ? 0 : 1e9L;
  const long double rounded = num::decode(f, num::encode(f, double(want)));
  if (std::isinf(rounded) || std::isinf(g) || want == 0 || g == 0)
    return g == rounded && std::signbit(g) == std::signbit(rounded) ? 0 : 1e9L;
  int e;
  std::frexp(want, &e);
  return std::fabs(g - want) / std::ldexp(1.0L, std::max(e - 1, emin) - mbits);
}

/// erf^-1 by bisection on erf (erfc near +-1, where 1 - |y| is exact): independent of the
/// vector unit's Newton iteration.
long double erfinv_ref(long double y) {
  const long double a = std::fabs(y);
  if (a > 1 || std::isnan(y))
    return NAN;
  if (a == 1)
    return std::copysign(INFINITY, y);
  long double lo = 0, hi = 6;
  for (int i = 0; i < 200; ++i) {
    const long double mid = (lo + hi) / 2;
    const bool below = a > 0.5L ? std::erfc(mid) > 1 - a : std::erf(mid) < a;
    (below ? lo : hi) = mid;
  }
  return std::copysign((lo + hi) / 2, y);
}

/// The inputs of a float type: every pattern of f16 / bf16; for f32, the special values and
/// 64 Ki random patterns (half over all bits, half in [-lo, hi]).
std::vector<uint64_t> inputs(ScalarKind k, std::mt19937 &rng, double lo, double hi) {
  std::vector<uint64_t> v;
  if (k != ScalarKind::F32) {
    for (uint64_t i = 0; i < 65536; ++i)
      v.push_back(i);
    return v;
  }
  for (uint32_t mag : {0u, 1u, 0x7fffffu, 0x800000u, 0x3f000000u, 0x3f800000u, 0x3f7fffffu,
                       0x3f800001u, 0x40000000u, 0x7f7fffffu, 0x7f800000u, 0x7fc00000u, 0x42b17218u,
                       0x4b000000u, 0x4b000001u, 0x3fc90fdbu, 0x3fc00000u})
    for (uint32_t sign : {0u, 0x80000000u})
      v.push_back(mag | sign);
  std::uniform_real_distribution<float> dist{float(lo), float(hi)};
  while (v.size() < 65536) {
    float f = dist(rng);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    v.push_back(v.size() % 2 ? uint32_t(rng()) : b);
  }
  return v;
}

Arg tensor_of(ScalarKind k, const std::vector<uint64_t> &bits) {
  Arg a = poisoned(k, {int64_t(bits.size())});
  for (size_t i = 0; i < bits.size(); ++i)
    a.set(int64_t(i), bits[i]);
  return a;
}

/// `inputs` rank-1 tensors of `in` in tiles of kTile, `body` computing %r of type `out`.
std::string kernel(int inputs, ScalarKind in, ScalarKind out, const std::string &body) {
  std::string k = "kernel @k(";
  for (int i = 0; i < inputs; ++i)
    k += "%x" + std::to_string(i) + ": tensor<?x" + dt(in) + ">, ";
  k += "%y: tensor<?x" + dt(out) + ">) {\n  %p = program_id {axis = 0} : i32\n" +
       "  %b = constant {value = " + std::to_string(kTile) + "} : i32\n  %o = mul %p, %b : i32\n";
  for (int i = 0; i < inputs; ++i)
    k += "  %a" + std::to_string(i) + " = load %x" + std::to_string(i) +
         ", %o {padding = 0} : " + "tile<" + std::to_string(kTile) + "x" + dt(in) + ">\n";
  return k + body + "  store %y, %o, %r\n  return\n}\n";
}
std::string tile(ScalarKind k) { return "tile<" + std::to_string(kTile) + "x" + dt(k) + ">"; }

/// Runs `text` on npusim over `args` (the last is the output); returns the output.
Arg run(const std::string &text, std::vector<Arg> args) {
  auto m = parse(text);
  const int64_t n = args.back().elements();
  const std::string err = on_npusim(*m, "k", args, {uint64_t((n + kTile - 1) / kTile), 1, 1});
  EXPECT_EQ(err, "") << text;
  return args.back();
}

using Exact1 = std::function<long double(long double)>;
struct Unary {
  const char *op;
  Exact1 exact;
  double lo, hi, f32_bound;
};

TEST(NpusimLaterOps, TranscendentalWithinTheirUlpBounds) {
  const Unary ops[] = {
      {"tan", [](long double x) { return std::tan(x); }, -10, 10, 5},
      {"asin", [](long double x) { return std::asin(x); }, -1, 1, 4},
      {"acos", [](long double x) { return std::acos(x); }, -1, 1, 4},
      {"atan", [](long double x) { return std::atan(x); }, -20, 20, 5},
      {"sinh", [](long double x) { return std::sinh(x); }, -90, 90, 4},
      {"cosh", [](long double x) { return std::cosh(x); }, -90, 90, 4},
      {"log1p", [](long double x) { return std::log1p(x); }, -1, 10, 2},
      {"expm1", [](long double x) { return std::expm1(x); }, -20, 89, 3},
      {"erfinv", erfinv_ref, -1, 1, 8},
      {"ndtr", [](long double x) { return erfcl(-x / sqrtl(2.0L)) / 2; }, -15, 9, 8}};
  std::mt19937 rng(19);
  for (ScalarKind k : kFloats)
    for (const Unary &u : ops) {
      SCOPED_TRACE(std::string(u.op) + " " + dt(k));
      const std::vector<uint64_t> x = inputs(k, rng, u.lo, u.hi);
      const Arg y = run(kernel(1, k, k, "  %r = " + std::string(u.op) + " %a0 : " + tile(k) + "\n"),
                        {tensor_of(k, x), poisoned(k, {int64_t(x.size())})});
      const double bound = k == ScalarKind::F32 ? u.f32_bound : 2;
      long double worst = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const long double e = ulp_error(k, y.bits(int64_t(i)), u.exact(value(k, x[i])));
        ASSERT_LE(e, bound) << "input 0x" << std::hex << x[i] << " gave 0x" << y.bits(int64_t(i));
        worst = std::max(worst, e);
      }
      std::printf("npusim %-4s %-6s max %.4Lf ulp (bound %g)\n", dt(k).c_str(), u.op, worst, bound);
    }
}

/// atan2(y, x) on pairs of the specials (signed zeros, infinities) and random pairs.
TEST(NpusimLaterOps, Atan2WithinItsBoundAndExactAtSpecials) {
  std::mt19937 rng(20);
  for (ScalarKind k : kFloats) {
    SCOPED_TRACE(dt(k));
    const num::FloatFormat f = format_of(k);
    std::vector<uint64_t> ys, xs;
    const double sp[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 1e-30, -3.5};
    for (double a : sp)
      for (double b : sp)
        ys.push_back(num::encode(f, a)), xs.push_back(num::encode(f, b));
    std::uniform_real_distribution<double> d(-100, 100);
    while (ys.size() < 8192)
      ys.push_back(num::encode(f, d(rng))), xs.push_back(num::encode(f, d(rng)));
    const Arg r = run(kernel(2, k, k, "  %r = atan2 %a0, %a1 : " + tile(k) + "\n"),
                      {tensor_of(k, ys), tensor_of(k, xs), poisoned(k, {int64_t(ys.size())})});
    const double bound = k == ScalarKind::F32 ? 6 : 2;
    for (size_t i = 0; i < ys.size(); ++i)
      ASSERT_LE(ulp_error(k, r.bits(int64_t(i)), std::atan2(value(k, ys[i]), value(k, xs[i]))),
                bound)
          << std::hex << "atan2(0x" << ys[i] << ", 0x" << xs[i] << ")";
  }
}

/// Bit-exact results (any NaN for a NaN) of a float op against `want` of the inputs' values.
void expect_exact(ScalarKind k, ScalarKind out, const std::string &body,
                  const std::vector<std::vector<uint64_t>> &in,
                  const std::function<long double(const std::vector<long double> &)> &want) {
  std::vector<Arg> args;
  for (const auto &v : in)
    args.push_back(tensor_of(k, v));
  args.push_back(poisoned(out, {int64_t(in[0].size())}));
  const Arg r = run(kernel(int(in.size()), k, out, body), args);
  for (size_t i = 0; i < in[0].size(); ++i) {
    std::vector<long double> v;
    for (const auto &x : in)
      v.push_back(value(k, x[i]));
    const long double w = want(v);
    const uint64_t got = r.bits(int64_t(i));
    if (ir::is_float(out) && std::isnan(w)) {
      ASSERT_TRUE(is_nan(out, got)) << body << " element " << i;
      continue;
    }
    const uint64_t expect =
        ir::is_float(out) ? num::encode(format_of(out), double(w)) : uint64_t(w);
    ASSERT_EQ(got, expect) << body << std::hex << " inputs 0x" << in[0][i] << " 0x"
                           << (in.size() > 1 ? in[1][i] : 0);
  }
}

/// max / min with -0 < +0 (no NaN operands).
long double ordered(long double a, long double b, bool max) {
  if (a == b)
    return std::signbit(a) == max ? b : a;
  return max ? std::max(a, b) : std::min(a, b);
}

TEST(NpusimLaterOps, RoundingClassTestsAndExactBinaryOps) {
  std::mt19937 rng(21);
  for (ScalarKind k : kFloats) {
    SCOPED_TRACE(dt(k));
    const std::string t = tile(k), m = tile(ScalarKind::I1), b8 = tile(ScalarKind::I8);
    const std::vector<uint64_t> x = inputs(k, rng, -40, 40);
    using V = const std::vector<long double> &;
    expect_exact(k, k, "  %r = rint %a0 : " + t + "\n", {x},
                 [](V v) { return std::nearbyint(v[0]); });
    expect_exact(k, k, "  %r = floor %a0 : " + t + "\n", {x}, [](V v) { return std::floor(v[0]); });
    expect_exact(k, k, "  %r = ceil %a0 : " + t + "\n", {x}, [](V v) { return std::ceil(v[0]); });
    expect_exact(k, k, "  %r = trunc %a0 : " + t + "\n", {x}, [](V v) { return std::trunc(v[0]); });
    for (const char *c : {"isnan", "isinf", "isfinite"})
      expect_exact(k, ScalarKind::I8,
                   "  %c = " + std::string(c) + " %a0 : " + m + "\n  %r = cast %c : " + b8 + "\n",
                   {x}, [c](V v) -> long double {
                     return std::string(c) == "isnan"   ? std::isnan(v[0])
                            : std::string(c) == "isinf" ? std::isinf(v[0])
                                                        : std::isfinite(v[0]);
                   });
    // Partners: a shuffle of the same inputs (NaN, infinities and zeros meet every class).
    std::vector<uint64_t> y = x, z = x;
    std::shuffle(y.begin(), y.end(), rng);
    std::shuffle(z.begin(), z.end(), rng);
    const int sign = ir::bit_width(k) - 1;
    auto nums = [](bool max) {
      return [max](V v) -> long double {
        if (std::isnan(v[0]) || std::isnan(v[1]))
          return std::isnan(v[0]) ? v[1] : v[0]; // NaN only if both are
        return ordered(v[0], v[1], max);
      };
    };
    expect_exact(k, k, "  %r = maxnum %a0, %a1 : " + t + "\n", {x, y}, nums(true));
    expect_exact(k, k, "  %r = minnum %a0, %a1 : " + t + "\n", {x, y}, nums(false));
    expect_exact(k, k, "  %r = fmod %a0, %a1 : " + t + "\n", {x, y},
                 [](V v) { return std::fmod(v[0], v[1]); });
    // copysign takes y's sign bit, a NaN's too (value() loses it: the bits decide).
    std::vector<uint64_t> ysign(y.size());
    for (size_t i = 0; i < y.size(); ++i)
      ysign[i] =
          (y[i] >> sign) & 1 ? num::encode(format_of(k), -1.0) : num::encode(format_of(k), 1.0);
    Arg r = run(kernel(2, k, k, "  %r = copysign %a0, %a1 : " + t + "\n"),
                {tensor_of(k, x), tensor_of(k, y), poisoned(k, {int64_t(x.size())})});
    for (size_t i = 0; i < x.size(); ++i) {
      const long double w = std::copysign(value(k, x[i]), value(k, ysign[i]));
      if (std::isnan(w))
        ASSERT_TRUE(is_nan(k, r.bits(int64_t(i))));
      else
        ASSERT_EQ(r.bits(int64_t(i)), num::encode(format_of(k), double(w))) << std::hex << x[i];
    }
    // clamp = min(max(x, lo), hi), NaN-propagating.
    expect_exact(k, k, "  %r = clamp %a0, %a1, %a2 : " + t + "\n", {x, y, z}, [](V v) {
      if (std::isnan(v[0]) || std::isnan(v[1]) || std::isnan(v[2]))
        return (long double)NAN;
      return ordered(ordered(v[0], v[1], true), v[2], false);
    });
  }
}

TEST(NpusimLaterOps, PopcountClzAndIntegerClamp) {
  std::mt19937 rng(22);
  for (ScalarKind k : {ScalarKind::I8, ScalarKind::U8, ScalarKind::I32, ScalarKind::U32}) {
    SCOPED_TRACE(dt(k));
    const int w = ir::bit_width(k);
    const uint64_t mask = w == 64 ? ~0ull : (1ull << w) - 1;
    std::vector<uint64_t> x, lo, hi;
    for (int i = 0; i < 4096; ++i) {
      x.push_back(i < 256 ? uint64_t(i) & mask : (rng() >> (rng() % w)) & mask);
      lo.push_back(rng() & mask);
      hi.push_back(rng() & mask);
    }
    x[1] = 0, x[2] = mask; // clz(0) = the width; all ones
    auto as_int = [&](uint64_t b) -> long double {
      return ir::is_signed(k) ? (long double)int64_t(b << (64 - w)) / std::ldexp(1.0L, 64 - w) : b;
    };
    auto run_int = [&](const std::string &body, int n, const std::function<uint64_t(size_t)> &f) {
      std::vector<Arg> args = {tensor_of(k, x)};
      if (n == 3)
        args.push_back(tensor_of(k, lo)), args.push_back(tensor_of(k, hi));
      args.push_back(poisoned(k, {int64_t(x.size())}));
      const Arg r = run(kernel(n, k, k, body), args);
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(r.bits(int64_t(i)), f(i) & mask) << body << std::hex << " of 0x" << x[i];
    };
    const std::string t = tile(k);
    run_int("  %r = popcount %a0 : " + t + "\n", 1,
            [&](size_t i) { return uint64_t(__builtin_popcountll(x[i])); });
    run_int("  %r = clz %a0 : " + t + "\n", 1, [&](size_t i) {
      return x[i] == 0 ? uint64_t(w) : uint64_t(__builtin_clzll(x[i]) - (64 - w));
    });
    run_int("  %r = clamp %a0, %a1, %a2 : " + t + "\n", 3, [&](size_t i) {
      const uint64_t m = as_int(x[i]) > as_int(lo[i]) ? x[i] : lo[i];
      return as_int(m) < as_int(hi[i]) ? m : hi[i];
    });
  }
}

/// f32 scalars (1-element vector commands) and integer scalars (the command processor).
TEST(NpusimLaterOps, ScalarOps) {
  const char *text = R"(
kernel @k(%y: tensor<?xf32>, %m: tensor<?xi32>, %s: f32, %t: f32, %a: i32, %lo: i32, %hi: i32) {
  %c0 = constant {value = 0} : i32
  %c1 = constant {value = 1} : i32
  %c2 = constant {value = 2} : i32
  %c3 = constant {value = 3} : i32
  %r0 = erfinv %s : f32
  %r1 = atan2 %s, %t : f32
  %r2 = maxnum %s, %t : f32
  %r3 = clamp %s, %t, %r2 : f32
  %r4 = floor %s : f32
  %v0 = splat %r0 : tile<1xf32>
  store %y, %c0, %v0
  %v1 = splat %r1 : tile<1xf32>
  store %y, %c1, %v1
  %v3 = splat %r3 : tile<1xf32>
  store %y, %c2, %v3
  %v4 = splat %r4 : tile<1xf32>
  store %y, %c3, %v4
  %i0 = isinf %s : i1
  %i1 = cast %i0 : i32
  %p = popcount %a : i32
  %z = clz %a : i32
  %q = clamp %a, %lo, %hi : i32
  %w0 = splat %i1 : tile<1xi32>
  store %m, %c0, %w0
  %w1 = splat %p : tile<1xi32>
  store %m, %c1, %w1
  %w2 = splat %z : tile<1xi32>
  store %m, %c2, %w2
  %w3 = splat %q : tile<1xi32>
  store %m, %c3, %w3
  return
}
)";
  auto m = parse(text);
  for (auto [s, t, a] : std::vector<std::tuple<float, float, int32_t>>{
           {0.5f, -2.0f, 0}, {-1.0f, 0.0f, -1}, {INFINITY, NAN, 0x00f0f0f0}, {0.75f, 3.0f, 1}}) {
    SCOPED_TRACE(std::to_string(s) + " " + std::to_string(t));
    std::vector<Arg> args = {poisoned(ScalarKind::F32, {4}), poisoned(ScalarKind::I32, {4}),
                             scalar(ScalarKind::F32, s),     scalar(ScalarKind::F32, t),
                             scalar(ScalarKind::I32, a),     scalar(ScalarKind::I32, -3),
                             scalar(ScalarKind::I32, 100)};
    ASSERT_EQ(on_npusim(*m, "k", args, {1, 1, 1}), "");
    const Arg &y = args[0], &mi = args[1];
    EXPECT_LE(ulp_error(ScalarKind::F32, y.bits(0), erfinv_ref(s)), 8);
    EXPECT_LE(ulp_error(ScalarKind::F32, y.bits(1), std::atan2((long double)s, t)), 6);
    const float mx = std::isnan(t) ? s : std::max(s, t);
    const float cl = std::isnan(t) ? NAN : std::min(std::max(s, t), mx);
    EXPECT_EQ(ulp_error(ScalarKind::F32, y.bits(2), cl), 0);
    EXPECT_EQ(ulp_error(ScalarKind::F32, y.bits(3), std::floor(s)), 0);
    EXPECT_EQ(mi.bits(0), uint64_t(std::isinf(s)));
    EXPECT_EQ(mi.bits(1), uint64_t(__builtin_popcount(uint32_t(a))));
    EXPECT_EQ(mi.bits(2), uint64_t(a == 0 ? 32 : __builtin_clz(uint32_t(a))));
    EXPECT_EQ(int32_t(mi.bits(3)), std::min(std::max(a, -3), 100));
  }
}

/// The vector unit has no f64 (the npu-core profile exempts it): a compile error naming the op.
TEST(NpusimLaterOps, F64IsAClearError) {
  for (const char *op : {"tan", "floor", "isnan", "fmod"}) {
    const std::string o = op;
    const std::string r = o == "isnan" ? "tile<16xi1>" : "tile<16xf64>";
    const std::string text = "kernel @k(%x: tensor<?xf64>) {\n"
                             "  %z = constant {value = 0} : i32\n"
                             "  %t = load %x, %z : tile<16xf64>\n"
                             "  %r = " +
                             o + (o == "fmod" ? " %t, %t : " : " %t : ") + r + "\n" +
                             (o == "isnan" ? "  %s = select %r, %t, %t : tile<16xf64>\n"
                                           : "  %s = add %r, %t : tile<16xf64>\n") +
                             "  store %x, %z, %s\n  return\n}\n";
    auto m = parse(text);
    std::vector<Arg> args = {poisoned(ScalarKind::F64, {16})};
    const std::string err = on_npusim(*m, "k", args, {1, 1, 1});
    EXPECT_NE(err.find("ops.tlir:4:3: error: tnpu: tiles of f64 are not supported by the vector "
                       "unit (bf16, f16, f32, i8, i32)"),
              std::string::npos)
        << err;
  }
}

} // namespace
} // namespace tl::npusim
