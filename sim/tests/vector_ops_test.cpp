// The vector unit's elementwise instructions run through the model on small tiles, checked against
// values computed here on the host: f32 arithmetic and math as the reference interpreter computes
// it (IEEE f32, or the double result rounded once), integers with explicit wrap-around, f16 via
// tl::numerics, compares and selects, iota, strided copies, conversions, and the faults. One
// scenario per process.
// SPDX-License-Identifier: Apache-2.0
#include "ops_harness.h"

#include "tl/npu/numerics.h"
#include "tl/reference/numerics.h"

#include <algorithm>
#include <functional>
#include <limits>

namespace tl::npu::test {
namespace {

namespace ref = tl::numerics;

constexpr uint64_t kA = 0x1000, kB = 0x3000, kC = 0x5000, kOut = 0x10000;
constexpr int kN = 50, kRows = 2, kStride = 256; // bytes between rows: padding checks strides

using F3 = std::function<uint32_t(float, float, float)>;

/// Runs each instruction in `ops` over a, b, c (kRows x kN f32, row stride kStride) into its own
/// output area and checks every element against `want`.
void check_f32_ops(const std::vector<std::pair<std::string, F3>> &ops, const std::string &setup,
                   uint32_t seed, float lo, float hi) {
  std::mt19937 gen(seed);
  const size_t words = kRows * kStride / 4;
  auto a = random_f32(gen, words, lo, hi), b = random_f32(gen, words, -4, 4),
       c = random_f32(gen, words, -100, 100);
  Simulator &sim = make_sim();
  put_local(sim, kA, a);
  put_local(sim, kB, b);
  put_local(sim, kC, c);
  std::string prog = "  v.cfgi n, 50\n  v.cfgi rows, 2\n  v.cfgi sa, 256\n  v.cfgi sb, 256\n"
                     "  v.cfgi sc, 256\n  v.cfgi sd, 256\n  li r1, 0x1000\n  li r2, 0x3000\n"
                     "  li r3, 0x5000\n" +
                     setup;
  for (size_t k = 0; k < ops.size(); ++k)
    prog += "  li r10, " + std::to_string(kOut + k * 0x1000) + "\n  " + ops[k].first + "\n";
  run_ok(sim, prog + "  halt\n");
  for (size_t k = 0; k < ops.size(); ++k) {
    auto got = get_local<uint32_t>(sim, kOut + k * 0x1000, words);
    std::vector<uint32_t> g, w;
    for (int r = 0; r < kRows; ++r)
      for (int i = 0; i < kN; ++i) {
        const size_t at = r * kStride / 4 + i;
        g.push_back(got[at]);
        w.push_back(ops[k].second(f32(a[at]), f32(b[at]), f32(c[at])));
      }
    expect_equal(g, w, ops[k].first);
  }
}

uint32_t neg_or_nan(float x, bool abs) {
  if (std::isnan(x))
    return 0x7fc00000u;
  return abs ? bits(x) & 0x7fffffffu : bits(x) ^ 0x80000000u;
}

void elementwise_f32() {
  auto d = [](double (*f)(double)) { return [f](float x, float, float) { return canon_d(f(x)); }; };
  check_f32_ops(
      {{"v.div r10, r1, r2", [](float x, float y, float) { return canon(x / y); }},
       {"v.sqrt r10, r1", [](float x, float, float) { return canon(std::sqrt(x)); }},
       {"v.rsqrt r10, r1",
        [](float x, float, float) {
          if (x == 0)
            return bits(std::copysign(INFINITY, x));
          return canon(static_cast<float>(1.0L / std::sqrt(static_cast<long double>(x))));
        }},
       {"v.fma r10, r1, r2, r3",
        [](float x, float y, float z) { return canon(std::fma(x, y, z)); }},
       {"v.neg r10, r1", [](float x, float, float) { return neg_or_nan(x, false); }},
       {"v.abs r10, r1", [](float x, float, float) { return neg_or_nan(x, true); }},
       {"v.pow r10, r1, r2",
        [](float x, float y, float) { return canon_d(std::pow(double{x}, double{y})); }},
       {"v.log r10, r1", d(std::log)},
       {"v.log2 r10, r1", d(std::log2)},
       {"v.exp2 r10, r1", d(std::exp2)},
       {"v.tanh r10, r1", d(std::tanh)},
       {"v.erf r10, r1", d(std::erf)},
       {"v.sin r10, r1", d(std::sin)},
       {"v.cos r10, r1", d(std::cos)},
       {"v.sigmoid r10, r1",
        [](float x, float, float) { return canon_d(1.0 / (1.0 + std::exp(-double{x}))); }},
       {"v.sub r10, r1, r2", [](float x, float y, float) { return canon(x - y); }}},
      "", 1, -50, 50);
}

/// t = f16: every result is the exact value rounded once to f16 (tl::numerics as the reference).
void elementwise_f16() {
  std::mt19937 gen(2);
  std::vector<uint16_t> a(kN), b(kN);
  for (int i = 0; i < kN; ++i) {
    a[i] = static_cast<uint16_t>(gen());
    b[i] = static_cast<uint16_t>(gen());
  }
  Simulator &sim = make_sim();
  put_local(sim, kA, a);
  put_local(sim, kB, b);
  run_ok(sim, R"(
    v.cfgi t, f16
    v.cfgi n, 50
    li r1, 0x1000
    li r2, 0x3000
    li r10, 0x10000
    v.add r10, r1, r2
    li r10, 0x11000
    v.div r10, r1, r2
    li r10, 0x12000
    v.sqrt r10, r1
    li r10, 0x13000
    v.tanh r10, r1
    halt
  )");
  const ref::FloatFormat h = ref::FloatFormat::F16;
  std::vector<uint16_t> add, div, sqrt, tanh;
  for (int i = 0; i < kN; ++i) {
    const double x = ref::decode(h, a[i]), y = ref::decode(h, b[i]);
    add.push_back(static_cast<uint16_t>(ref::encode(h, x + y)));
    div.push_back(static_cast<uint16_t>(ref::encode(h, x / y)));
    sqrt.push_back(static_cast<uint16_t>(ref::encode(h, std::sqrt(x))));
    tanh.push_back(static_cast<uint16_t>(ref::encode(h, std::tanh(x))));
  }
  expect_equal(get_local<uint16_t>(sim, kOut, kN), add, "f16 v.add");
  expect_equal(get_local<uint16_t>(sim, kOut + 0x1000, kN), div, "f16 v.div");
  expect_equal(get_local<uint16_t>(sim, kOut + 0x2000, kN), sqrt, "f16 v.sqrt");
  expect_equal(get_local<uint16_t>(sim, kOut + 0x3000, kN), tanh, "f16 v.tanh");
}

/// i32 signed and unsigned, and i8, against 64-bit arithmetic wrapped by hand.
void elementwise_int() {
  std::mt19937 gen(3);
  std::vector<int32_t> a(kN), b(kN);
  for (int i = 0; i < kN; ++i) {
    a[i] = static_cast<int32_t>(gen());
    b[i] = static_cast<int32_t>(gen()) >> (gen() % 31);
    if (b[i] == 0)
      b[i] = 3;
  }
  a[0] = INT32_MIN;
  b[0] = -1;
  a[1] = -7;
  b[1] = 2;
  Simulator &sim = make_sim();
  put_local(sim, kA, a);
  put_local(sim, kB, b);
  struct Op {
    const char *mnemonic;
    bool is_unsigned;
    std::function<int64_t(int64_t, int64_t)> f; // on sign- or zero-extended operands
  };
  const std::vector<Op> ops = {
      {"v.add", false, [](int64_t x, int64_t y) { return x + y; }},
      {"v.sub", false, [](int64_t x, int64_t y) { return x - y; }},
      {"v.mul", false, [](int64_t x, int64_t y) { return x * y; }},
      {"v.div", false, [](int64_t x, int64_t y) { return x / y; }},
      {"v.rem", false, [](int64_t x, int64_t y) { return x % y; }},
      {"v.and", false, [](int64_t x, int64_t y) { return x & y; }},
      {"v.or", false, [](int64_t x, int64_t y) { return x | y; }},
      {"v.xor", false, [](int64_t x, int64_t y) { return x ^ y; }},
      {"v.shl", false, [](int64_t x, int64_t y) { return x << (y & 31); }},
      {"v.shr", false, [](int64_t x, int64_t y) { return x >> (y & 31); }},
      {"v.max", false, [](int64_t x, int64_t y) { return std::max(x, y); }},
      {"v.min", false, [](int64_t x, int64_t y) { return std::min(x, y); }},
      {"v.div", true, [](int64_t x, int64_t y) { return x / y; }},
      {"v.rem", true, [](int64_t x, int64_t y) { return x % y; }},
      {"v.shr", true, [](int64_t x, int64_t y) { return x >> (y & 31); }},
      {"v.max", true, [](int64_t x, int64_t y) { return std::max(x, y); }},
  };
  std::string prog = "  v.cfgi t, i32\n  v.cfgi n, 50\n  li r1, 0x1000\n  li r2, 0x3000\n";
  for (size_t k = 0; k < ops.size(); ++k)
    prog += std::string("  v.cfgi u, ") + (ops[k].is_unsigned ? "1" : "0") + "\n  li r10, " +
            std::to_string(kOut + k * 0x400) + "\n  " + ops[k].mnemonic + " r10, r1, r2\n";
  prog += "  v.cfgi u, 0\n  li r10, 0x20000\n  v.neg r10, r1\n  li r10, 0x20400\n  v.abs r10, r1\n"
          "  li r10, 0x20800\n  v.not r10, r1\n"
          // i8: the low bytes of a and b as 4 * kN i8 elements, wrapping
          "  v.cfgi t, i8\n  v.cfgi n, 200\n  li r10, 0x21000\n  v.mul r10, r1, r2\n"
          "  li r10, 0x21400\n  v.shr r10, r1, r2\n  halt\n";
  run_ok(sim, prog);
  for (size_t k = 0; k < ops.size(); ++k) {
    std::vector<int32_t> want;
    for (int i = 0; i < kN; ++i) {
      const int64_t x = ops[k].is_unsigned ? int64_t{static_cast<uint32_t>(a[i])} : a[i];
      const int64_t y = ops[k].is_unsigned ? int64_t{static_cast<uint32_t>(b[i])} : b[i];
      want.push_back(static_cast<int32_t>(static_cast<uint32_t>(ops[k].f(x, y))));
    }
    expect_equal(get_local<int32_t>(sim, kOut + k * 0x400, kN), want,
                 std::string(ops[k].mnemonic) + (ops[k].is_unsigned ? " (u)" : ""));
  }
  std::vector<int32_t> neg, abs, inv;
  for (int i = 0; i < kN; ++i) {
    neg.push_back(static_cast<int32_t>(0u - static_cast<uint32_t>(a[i])));
    abs.push_back(a[i] < 0 ? static_cast<int32_t>(0u - static_cast<uint32_t>(a[i])) : a[i]);
    inv.push_back(~a[i]);
  }
  expect_equal(get_local<int32_t>(sim, 0x20000, kN), neg, "v.neg i32");
  expect_equal(get_local<int32_t>(sim, 0x20400, kN), abs, "v.abs i32");
  expect_equal(get_local<int32_t>(sim, 0x20800, kN), inv, "v.not i32");
  auto a8 = get_local<int8_t>(sim, kA, 200), b8 = get_local<int8_t>(sim, kB, 200);
  std::vector<int8_t> mul8, shr8;
  for (int i = 0; i < 200; ++i) {
    mul8.push_back(static_cast<int8_t>(static_cast<uint8_t>(a8[i] * b8[i])));
    shr8.push_back(static_cast<int8_t>(a8[i] >> (static_cast<uint8_t>(b8[i]) % 8)));
  }
  expect_equal(get_local<int8_t>(sim, 0x21000, 200), mul8, "v.mul i8");
  expect_equal(get_local<int8_t>(sim, 0x21400, 200), shr8, "v.shr i8");
}

/// Byte masks from compares (NaN: only ne is true; -0 == +0), then v.sel on them; unsigned
/// integer compares.
void compare_select() {
  std::mt19937 gen(4);
  auto a = random_f32(gen, 64, -3, 3), b = random_f32(gen, 64, -3, 3);
  for (int i = 0; i < 64; i += 5)
    b[i] = a[i]; // equal pairs
  b[7] = 0x80000000u;
  a[7] = 0;
  Simulator &sim = make_sim();
  put_local(sim, kA, a);
  put_local(sim, kB, b);
  put_local(sim, kC, std::vector<int32_t>{-1, 1, 5, -5});
  run_ok(sim, R"(
    v.cfgi n, 32
    v.cfgi rows, 2
    v.cfgi sa, 128
    v.cfgi sb, 128
    v.cfgi sd, 40              # mask rows 40 bytes apart
    li r1, 0x1000
    li r2, 0x3000
    li r10, 0x10000
    v.ceq r10, r1, r2
    li r10, 0x10100
    v.cne r10, r1, r2
    li r10, 0x10200
    v.clt r10, r1, r2
    li r10, 0x10300
    v.cle r10, r1, r2
    li r10, 0x10400
    v.cgt r10, r1, r2
    li r10, 0x10500
    v.cge r10, r1, r2
    li r11, 0x10200            # select by the lt mask: min-like
    v.cfgi sa, 40
    v.cfgi sb, 128
    v.cfgi sc, 128
    v.cfgi sd, 128
    li r10, 0x11000
    v.sel r10, r11, r1, r2
    v.cfgi t, i32              # -1 < 1 signed, not unsigned
    v.cfgi rows, 1
    v.cfgi n, 2
    li r3, 0x5000
    li r4, 0x5008
    li r10, 0x12000
    v.clt r10, r3, r4
    v.cfgi u, 1
    li r10, 0x12010
    v.clt r10, r3, r4
    halt
  )");
  const std::vector<std::function<bool(float, float)>> preds = {
      [](float x, float y) { return x == y; }, [](float x, float y) { return x != y; },
      [](float x, float y) { return x < y; },  [](float x, float y) { return x <= y; },
      [](float x, float y) { return x > y; },  [](float x, float y) { return x >= y; }};
  const char *names[] = {"v.ceq", "v.cne", "v.clt", "v.cle", "v.cgt", "v.cge"};
  for (int p = 0; p < 6; ++p) {
    std::vector<uint8_t> got, want;
    for (int r = 0; r < 2; ++r) {
      auto row = get_local<uint8_t>(sim, kOut + p * 0x100 + r * 40, 32);
      got.insert(got.end(), row.begin(), row.end());
      for (int i = 0; i < 32; ++i)
        want.push_back(preds[p](f32(a[r * 32 + i]), f32(b[r * 32 + i])) ? 1 : 0);
    }
    expect_equal(got, want, names[p]);
  }
  std::vector<uint32_t> sel;
  for (int i = 0; i < 64; ++i)
    sel.push_back(f32(a[i]) < f32(b[i]) ? a[i] : b[i]);
  expect_equal(get_local<uint32_t>(sim, 0x11000, 64), sel, "v.sel");
  expect_equal(get_local<uint8_t>(sim, 0x12000, 2), std::vector<uint8_t>{1, 0}, "signed v.clt");
  expect_equal(get_local<uint8_t>(sim, 0x12010, 2), std::vector<uint8_t>{0, 1}, "unsigned v.clt");
}

/// v.iota, and v.scopy as transpose, column broadcast and row broadcast.
void iota_copy() {
  std::vector<uint32_t> a(35);
  for (int i = 0; i < 35; ++i)
    a[i] = bits(static_cast<float>(i) + 0.5f);
  Simulator &sim = make_sim();
  put_local(sim, kA, a);
  run_ok(sim, R"(
    v.cfgi t, i32
    v.cfgi n, 20
    v.cfgi rows, 2
    v.cfgi sd, 128
    li r1, 5
    li r2, -3
    li r10, 0x10000
    v.iota r10, r1, r2
    v.cfgi t, f32
    v.cfgi rows, 1
    li r1, 0.5f
    li r2, 0.25f
    li r10, 0x11000
    v.iota r10, r1, r2
    li r1, 0x1000               # a: 5 x 7 f32
    v.cfgi rows, 5              # transpose: d[j][r] = a[r][j]
    v.cfgi n, 7
    v.cfgi sa, 28
    v.cfgi ea, 4
    v.cfgi sd, 4
    v.cfgi ed, 20
    li r10, 0x12000
    v.scopy r10, r1
    v.cfgi sa, 4                # column broadcast: d[r][i] = a[r]
    v.cfgi ea, 0
    v.cfgi sd, 28
    v.cfgi ed, 4
    li r10, 0x13000
    v.scopy r10, r1
    v.cfgi sa, 0                # row broadcast: d[r][i] = a[i]
    v.cfgi ea, 4
    li r10, 0x14000
    v.scopy r10, r1
    halt
  )");
  std::vector<int32_t> iota;
  for (int i = 0; i < 20; ++i)
    iota.push_back(5 - 3 * i);
  expect_equal(get_local<int32_t>(sim, 0x10000, 20), iota, "v.iota i32 row 0");
  expect_equal(get_local<int32_t>(sim, 0x10080, 20), iota, "v.iota i32 row 1");
  std::vector<uint32_t> fiota, tr(35), colb(35), rowb(35);
  for (int i = 0; i < 20; ++i)
    fiota.push_back(bits(0.5f + 0.25f * static_cast<float>(i)));
  expect_equal(get_local<uint32_t>(sim, 0x11000, 20), fiota, "v.iota f32");
  for (int r = 0; r < 5; ++r)
    for (int j = 0; j < 7; ++j) {
      tr[j * 5 + r] = a[r * 7 + j];
      colb[r * 7 + j] = a[r];
      rowb[r * 7 + j] = a[j];
    }
  expect_equal(get_local<uint32_t>(sim, 0x12000, 35), tr, "transpose");
  expect_equal(get_local<uint32_t>(sim, 0x13000, 35), colb, "column broadcast");
  expect_equal(get_local<uint32_t>(sim, 0x14000, 35), rowb, "row broadcast");
}

/// v.cvt with rounding directions and unsigned integers; v.icvt wrapping.
void conversions() {
  std::mt19937 gen(7);
  std::vector<uint32_t> a = random_f32(gen, 64, -3e9f, 3e9f);
  for (int i = 0; i < 64; i += 3)
    a[i] = bits(static_cast<float>(static_cast<int>(gen() % 2001) - 1000) / 8);
  std::vector<int32_t> b(64);
  for (auto &x : b)
    x = static_cast<int32_t>(gen()) >> (gen() % 24);
  Simulator &sim = make_sim();
  put_local(sim, kA, a);
  put_local(sim, kB, b);
  run_ok(sim, R"(
    v.cfgi n, 64
    li r1, 0x1000
    li r2, 0x3000
    v.cfgi src, f32
    v.cfgi dst, i32
    v.cfgi rm, rtz
    li r10, 0x10000
    v.cvt r10, r1
    v.cfgi dst, f16
    v.cfgi rm, rup
    li r10, 0x11000
    v.cvt r10, r1
    v.cfgi rm, rne
    v.cfgi src, i32
    v.cfgi dst, i8
    li r10, 0x12000
    v.icvt r10, r2
    v.cfgi src, i8
    v.cfgi dst, i32
    li r11, 0x12000
    li r10, 0x13000
    v.icvt r10, r11
    v.cfgi u, 1
    v.cfgi src, i32
    v.cfgi dst, f32
    li r10, 0x14000
    v.cvt r10, r2
    halt
  )");
  std::vector<int32_t> trunc, sext;
  std::vector<uint16_t> up;
  std::vector<int8_t> wrap;
  std::vector<uint32_t> ucvt;
  for (int i = 0; i < 64; ++i) {
    const float x = f32(a[i]);
    // The reference interpreter's float -> int: truncate, saturate, NaN -> 0.
    const double t =
        std::isnan(x) ? 0 : std::max(-2147483648.0, std::min(2147483647.0, std::trunc(double{x})));
    trunc.push_back(static_cast<int32_t>(t));
    up.push_back(static_cast<uint16_t>(ref::encode(ref::FloatFormat::F16, x, ref::Rounding::Up)));
    wrap.push_back(static_cast<int8_t>(static_cast<uint8_t>(b[i])));
    sext.push_back(static_cast<int8_t>(static_cast<uint8_t>(b[i])));
    ucvt.push_back(bits(static_cast<float>(static_cast<uint32_t>(b[i]))));
  }
  expect_equal(get_local<int32_t>(sim, 0x10000, 64), trunc, "v.cvt f32 -> i32 rtz");
  expect_equal(get_local<uint16_t>(sim, 0x11000, 64), up, "v.cvt f32 -> f16 rup");
  expect_equal(get_local<int8_t>(sim, 0x12000, 64), wrap, "v.icvt i32 -> i8");
  expect_equal(get_local<int32_t>(sim, 0x13000, 64), sext, "v.icvt i8 -> i32");
  expect_equal(get_local<uint32_t>(sim, 0x14000, 64), ucvt, "v.cvt u32 -> f32");
}

void expect_error(const std::string &program, const std::string &message) {
  Simulator &sim = make_sim();
  SimReport r = run_program(sim, program);
  TNPU_CHECK(r.status == SimStatus::ProgramError, "status " + std::string(status_name(r.status)));
  TNPU_CHECK(r.message.find(message) != std::string::npos, r.message);
}

void bad_dtype() {
  expect_error("  v.cfgi t, 9\n  v.cfgi n, 4\n  v.add r0, r0, r0\n  halt\n",
               "core0 vec: command #0 (v.add at pc 2): vector t dtype 9 is not a dtype");
}

void undefined_op() {
  expect_error("  v.cfgi n, 4\n  v.rem r0, r0, r0\n  halt\n", "v.rem is not defined on f32");
}

void div_by_zero() {
  expect_error("  v.cfgi t, i32\n  v.cfgi n, 4\n  li r1, 64\n  v.div r0, r0, r1\n  halt\n",
               "v.div: integer division by zero (row 0, element 0)");
}

/// The later f32 instructions (issue 19) against the host's double functions rounded once, and
/// the exact ones against <cmath>; erfinv against sim/numerics (its accuracy is tested there).
std::vector<std::pair<std::string, F3>> later_f32_ops() {
  auto d = [](double (*f)(double)) { return [f](float x, float, float) { return canon_d(f(x)); }; };
  auto d2 = [](double (*f)(double, double)) {
    return [f](float x, float y, float) { return canon_d(f(x, y)); };
  };
  auto num1 = [](num::UnOp op) {
    return [op](float x, float, float) { return num::unary(op, num::DType::F32, bits(x)); };
  };
  auto nums = [](float x, float y, bool max) { // NaN only when both are; -0 < +0
    if (std::isnan(x) && std::isnan(y))
      return 0x7fc00000u;
    if (std::isnan(x) || std::isnan(y))
      return bits(std::isnan(x) ? y : x);
    if (x == y)
      return bits(max == std::signbit(x) ? y : x);
    return bits(max ? std::max(x, y) : std::min(x, y));
  };
  const std::vector<std::pair<std::string, F3>> ops = {
      {"v.tan r10, r1", d(std::tan)},
      {"v.asin r10, r1", d(std::asin)},
      {"v.acos r10, r1", d(std::acos)},
      {"v.atan r10, r1", d(std::atan)},
      {"v.sinh r10, r1", d(std::sinh)},
      {"v.cosh r10, r1", d(std::cosh)},
      {"v.log1p r10, r1", d(std::log1p)},
      {"v.expm1 r10, r1", d(std::expm1)},
      {"v.erfinv r10, r1", num1(num::UnOp::Erfinv)},
      {"v.ndtr r10, r1",
       [](float x, float, float) { return canon_d(std::erfc(-double(x) * M_SQRT1_2) / 2); }},
      {"v.rint r10, r1", [](float x, float, float) { return canon(std::nearbyint(x)); }},
      {"v.floor r10, r1", [](float x, float, float) { return canon(std::floor(x)); }},
      {"v.ceil r10, r1", [](float x, float, float) { return canon(std::ceil(x)); }},
      {"v.trunc r10, r1", [](float x, float, float) { return canon(std::trunc(x)); }},
      {"v.atan2 r10, r1, r2", d2(std::atan2)},
      {"v.fmod r10, r1, r2", [](float x, float y, float) { return canon(std::fmod(x, y)); }},
      {"v.copysign r10, r1, r2",
       [](float x, float y, float) {
         return std::isnan(x) ? 0x7fc00000u : bits(std::copysign(x, y));
       }},
      {"v.maxnum r10, r1, r2", [=](float x, float y, float) { return nums(x, y, true); }},
      {"v.minnum r10, r1, r2", [=](float x, float y, float) { return nums(x, y, false); }}};
  return ops;
}
void later_f32() { check_f32_ops(later_f32_ops(), "", 11, -50, 50); }
/// The domains of asin, acos, erfinv and log1p.
void later_f32_unit() { check_f32_ops(later_f32_ops(), "", 12, -1.25f, 1.25f); }

/// Class tests write byte masks; popcount / clz count i8 and i32 bits; t = f16 and bf16 round
/// the later math once to the type.
void later_masks_ints() {
  const std::vector<uint32_t> x = {0,           0x80000000u, 0x7f800000u, 0xff800000u,
                                   0x7fc00000u, 0xffc00001u, 0x00000001u, 0x7f7fffffu,
                                   0x3fc00000u, 0xc0200000u, 0x00ff0000u, 0x0000ffffu};
  const uint64_t n = x.size();
  std::vector<uint16_t> h(n);
  for (uint64_t i = 0; i < n; ++i)
    h[i] = static_cast<uint16_t>(x[i] >> 16); // bf16 patterns, and f16 patterns too
  Simulator &sim = make_sim();
  put_local(sim, kA, x);
  put_local(sim, kB, h);
  run_ok(sim, R"(
    v.cfgi n, 12
    li r1, 0x1000
    li r2, 0x3000
    li r10, 0x10000
    v.isnan r10, r1
    li r10, 0x10100
    v.isinf r10, r1
    li r10, 0x10200
    v.isfinite r10, r1
    v.cfgi t, i32
    li r10, 0x11000
    v.popcnt r10, r1
    li r10, 0x11100
    v.clz r10, r1
    v.cfgi t, i8
    li r10, 0x11200
    v.popcnt r10, r1
    li r10, 0x11300
    v.clz r10, r1
    v.cfgi t, bf16
    li r10, 0x12000
    v.tan r10, r2
    li r10, 0x12100
    v.floor r10, r2
    li r10, 0x12200
    v.isnan r10, r2
    v.cfgi t, f16
    li r10, 0x12300
    v.expm1 r10, r2
    li r10, 0x12400
    v.isinf r10, r2
    halt
  )");
  std::vector<int8_t> isnan, isinf, isfin;
  std::vector<uint32_t> pop, clz;
  std::vector<uint8_t> pop8, clz8;
  for (uint32_t v : x) {
    const float f = f32(v);
    isnan.push_back(std::isnan(f));
    isinf.push_back(std::isinf(f));
    isfin.push_back(std::isfinite(f));
    pop.push_back(__builtin_popcount(v)); // C++17 here: no <bit> counts
    clz.push_back(v == 0 ? 32 : __builtin_clz(v));
  }
  const auto bytes = get_local<uint8_t>(sim, kA, 4 * n); // i8 view of the same memory
  for (uint64_t i = 0; i < n; ++i) {
    pop8.push_back(__builtin_popcount(bytes[i]));
    clz8.push_back(bytes[i] == 0 ? 8 : __builtin_clz(bytes[i]) - 24);
  }
  expect_equal(get_local<int8_t>(sim, 0x10000, n), isnan, "v.isnan f32");
  expect_equal(get_local<int8_t>(sim, 0x10100, n), isinf, "v.isinf f32");
  expect_equal(get_local<int8_t>(sim, 0x10200, n), isfin, "v.isfinite f32");
  expect_equal(get_local<uint32_t>(sim, 0x11000, n), pop, "v.popcnt i32");
  expect_equal(get_local<uint32_t>(sim, 0x11100, n), clz, "v.clz i32");
  expect_equal(get_local<uint8_t>(sim, 0x11200, n), pop8, "v.popcnt i8");
  expect_equal(get_local<uint8_t>(sim, 0x11300, n), clz8, "v.clz i8");
  const ref::FloatFormat bf = ref::FloatFormat::BF16, hf = ref::FloatFormat::F16;
  std::vector<uint16_t> tan, floor, expm1;
  std::vector<int8_t> bnan, hinf;
  for (uint16_t v : h) {
    const double b = ref::decode(bf, v), e = ref::decode(hf, v);
    tan.push_back(std::isnan(b) ? 0x7fc0 : static_cast<uint16_t>(ref::encode(bf, std::tan(b))));
    floor.push_back(std::isnan(b) ? 0x7fc0 : static_cast<uint16_t>(ref::encode(bf, std::floor(b))));
    bnan.push_back(std::isnan(b));
    expm1.push_back(std::isnan(e) ? 0x7e00 : static_cast<uint16_t>(ref::encode(hf, std::expm1(e))));
    hinf.push_back(std::isinf(e));
  }
  expect_equal(get_local<uint16_t>(sim, 0x12000, n), tan, "v.tan bf16");
  expect_equal(get_local<uint16_t>(sim, 0x12100, n), floor, "v.floor bf16");
  expect_equal(get_local<int8_t>(sim, 0x12200, n), bnan, "v.isnan bf16");
  expect_equal(get_local<uint16_t>(sim, 0x12300, n), expm1, "v.expm1 f16");
  expect_equal(get_local<int8_t>(sim, 0x12400, n), hinf, "v.isinf f16");
}

/// The later instructions on dtypes they are not defined on are program errors naming both
/// (sim/numerics' defined_on covers the rest).
void later_undefined_int() {
  expect_error("  v.cfgi n, 4\n  v.popcnt r0, r0\n  halt\n", "v.popcnt is not defined on f32");
}
void later_undefined_class() {
  expect_error("  v.cfgi t, i32\n  v.cfgi n, 4\n  v.isnan r0, r0\n  halt\n",
               "v.isnan is not defined on i32");
}

} // namespace
} // namespace tl::npu::test

int sc_main(int argc, char **argv) {
  using namespace tl::npu::test;
  return main_with({{"elementwise-f32", elementwise_f32},
                    {"elementwise-f16", elementwise_f16},
                    {"elementwise-int", elementwise_int},
                    {"compare-select", compare_select},
                    {"iota-copy", iota_copy},
                    {"conversions", conversions},
                    {"bad-dtype", bad_dtype},
                    {"undefined-op", undefined_op},
                    {"div-by-zero", div_by_zero},
                    {"later-f32", later_f32},
                    {"later-f32-unit", later_f32_unit},
                    {"later-masks-ints", later_masks_ints},
                    {"later-undefined-int", later_undefined_int},
                    {"later-undefined-class", later_undefined_class}},
                   argc, argv);
}
