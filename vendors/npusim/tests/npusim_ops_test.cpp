// Every tile op family the tnpu target lowers, compiled for npusim and run against the reference
// interpreter on random ragged shapes: results bit-exact (NaNs equal whatever their payload;
// v.exp within its 2 ulp; float row sums, in v.rsum's order, within Tile IR's bound), and
// run-time errors (division by zero) reported as the interpreter reports them. Scalars, control
// flow, indexed ops and whole programs: npusim_ops_program_test.cpp.
// SPDX-License-Identifier: Apache-2.0
#include "ops_test_support.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>

namespace tl::npusim {
namespace {

using namespace ops_test;
using ir::ScalarKind;

TEST(NpusimOps, FloatBinaryAndUnaryOpsOnEveryFloatType) {
  std::mt19937 rng(1);
  for (ScalarKind k : kFloats) {
    const std::string t = "tile<16x32x" + dt(k) + ">";
    for (const char *op : {"add", "sub", "mul", "div", "pow", "min", "max"})
      for (auto [R, C] : kShapes) {
        SCOPED_TRACE(std::string(op) + " " + dt(k));
        expect_matches(
            tile_kernel(2, k, k, "  %r = " + std::string(op) + " %a0, %a1 : " + t + "\n"), "k",
            {tensor(k, {R, C}, rng, 0.25, 3), tensor(k, {R, C}, rng, -3, 3), poisoned(k, {R, C})},
            grid_of(R, C));
      }
    for (const char *op : {"neg", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh",
                           "erf", "sigmoid", "sin", "cos"})
      for (auto [R, C] : kShapes) {
        SCOPED_TRACE(std::string(op) + " " + dt(k));
        // v.exp is SPEC.md's algorithm (2 ulp); the other math functions round the host's once
        expect_matches(tile_kernel(1, k, k, "  %r = " + std::string(op) + " %a0 : " + t + "\n"),
                       "k", {tensor(k, {R, C}, rng, -5, 5), poisoned(k, {R, C})}, grid_of(R, C),
                       std::string(op) == "exp" ? 2 : 0);
      }
    auto [R, C] = kShapes[1];
    expect_matches(tile_kernel(3, k, k, "  %r = fma %a0, %a1, %a2 : " + t + "\n"), "k",
                   {tensor(k, {R, C}, rng), tensor(k, {R, C}, rng), tensor(k, {R, C}, rng),
                    poisoned(k, {R, C})},
                   grid_of(R, C));
  }
}

TEST(NpusimOps, IntegerOpsWrapAndShiftModuloTheWidth) {
  std::mt19937 rng(2);
  for (ScalarKind k : kInts) {
    const std::string t = "tile<16x32x" + dt(k) + ">";
    const double hi = k == ScalarKind::I8 ? 127 : 3e9 / 2;
    for (const char *op :
         {"add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "min", "max"})
      for (auto [R, C] : kShapes) {
        SCOPED_TRACE(std::string(op) + " " + dt(k));
        expect_matches(
            tile_kernel(2, k, k, "  %r = " + std::string(op) + " %a0, %a1 : " + t + "\n"), "k",
            {tensor(k, {R, C}, rng, -hi, hi), tensor(k, {R, C}, rng, -40, 40, true),
             poisoned(k, {R, C})},
            grid_of(R, C));
      }
    for (const char *op : {"neg", "abs", "not"}) {
      auto [R, C] = kShapes[2];
      expect_matches(tile_kernel(1, k, k, "  %r = " + std::string(op) + " %a0 : " + t + "\n"), "k",
                     {tensor(k, {R, C}, rng, -hi, hi), poisoned(k, {R, C})}, grid_of(R, C));
    }
  }
}

TEST(NpusimOps, IntegerDivisionByZeroIsARunTimeError) {
  std::mt19937 rng(3);
  Arg b = tensor(ScalarKind::I32, {5, 7}, rng, 1, 9);
  b.set(12, 0);
  expect_both_fail(
      tile_kernel(2, ScalarKind::I32, ScalarKind::I32, "  %r = div %a0, %a1 : tile<16x32xi32>\n"),
      "k", {tensor(ScalarKind::I32, {5, 7}, rng), b, poisoned(ScalarKind::I32, {5, 7})}, {1, 1, 1},
      "division by zero");
  const char *scalar_div = R"(
kernel @k(%y: tensor<?xi32>, %n: i32) {
  %z = constant {value = 0} : i32
  %seven = constant {value = 7} : i32
  %q = div %seven, %n : i32
  %t = splat %q : tile<4xi32>
  store %y, %z, %t
  return
}
)";
  expect_matches(scalar_div, "k", {poisoned(ScalarKind::I32, {4}), scalar(ScalarKind::I32, -2)},
                 {1, 1, 1});
  expect_both_fail(scalar_div, "k", {poisoned(ScalarKind::I32, {4}), scalar(ScalarKind::I32, 0)},
                   {1, 1, 1}, "division by zero");
}

TEST(NpusimOps, ComparesSelectAndMasks) {
  std::mt19937 rng(4);
  for (ScalarKind k : {ScalarKind::F32, ScalarKind::BF16, ScalarKind::I8, ScalarKind::I32})
    for (const char *pred : {"eq", "ne", "lt", "le", "gt", "ge"}) {
      const std::string t = "tile<16x32x" + dt(k) + ">";
      auto [R, C] = kShapes[1];
      SCOPED_TRACE(std::string(pred) + " " + dt(k));
      // few distinct values, so that equal operands occur
      expect_matches(
          tile_kernel(2, k, k,
                      "  %m = cmp %a0, %a1 {pred = \"" + std::string(pred) +
                          "\"} : tile<16x32xi1>\n  %n = not %m : tile<16x32xi1>\n"
                          "  %r = select %n, %a0, %a1 : " +
                          t + "\n"),
          "k", {tensor(k, {R, C}, rng, -2, 2), tensor(k, {R, C}, rng, -2, 2), poisoned(k, {R, C})},
          grid_of(R, C));
    }
}

TEST(NpusimOps, CastsWithEveryRoundingModeAndBitcasts) {
  std::mt19937 rng(5);
  const ScalarKind kinds[] = {ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16, ScalarKind::I8,
                              ScalarKind::I32};
  auto [R, C] = kShapes[1];
  for (ScalarKind from : kinds)
    for (ScalarKind to : kinds)
      for (const char *mode : {"rne", "rtz", "rd", "ru"}) {
        if (from == to)
          continue;
        SCOPED_TRACE(dt(from) + " -> " + dt(to) + " " + mode);
        expect_matches(tile_kernel(1, from, to,
                                   "  %r = cast %a0 {rounding = \"" + std::string(mode) +
                                       "\"} : tile<16x32x" + dt(to) + ">\n"),
                       "k", {tensor(from, {R, C}, rng, -300, 300), poisoned(to, {R, C})},
                       grid_of(R, C));
      }
  for (ScalarKind from : {ScalarKind::F32, ScalarKind::BF16, ScalarKind::I8}) { // x != 0, NaN false
    Arg x = tensor(from, {R, C}, rng, -2, 2);
    x.set(0, 0);
    if (ir::is_float(from)) {
      x.set(1, from == ScalarKind::F32 ? 0x7fc00000u : 0x7fc0u); // NaN
      x.set(2, from == ScalarKind::F32 ? 0x80000000u : 0x8000u); // -0
    }
    expect_matches(tile_kernel(1, from, ScalarKind::I32,
                               "  %m = cast %a0 : tile<16x32xi1>\n"
                               "  %r = cast %m : tile<16x32xi32>\n"),
                   "k", {x, poisoned(ScalarKind::I32, {R, C})}, grid_of(R, C));
  }
  expect_matches(tile_kernel(1, ScalarKind::F32, ScalarKind::I32,
                             "  %i = bitcast %a0 : tile<16x32xi32>\n"
                             "  %s = constant {value = 3} : i32\n"
                             "  %st = splat %s : tile<16x32xi32>\n"
                             "  %r = shr %i, %st : tile<16x32xi32>\n"),
                 "k", {tensor(ScalarKind::F32, {R, C}, rng), poisoned(ScalarKind::I32, {R, C})},
                 grid_of(R, C));
}

TEST(NpusimOps, ArangeBroadcastTransposeAndExpandDims) {
  const char *text = R"(
kernel @k(%x: tensor<?x?xf16>, %y: tensor<?x?xf16>, %z: tensor<?x?xi32>) {
  %p0 = program_id {axis = 0} : i32
  %p1 = program_id {axis = 1} : i32
  %b = constant {value = 16} : i32
  %r0 = mul %p0, %b : i32
  %c0 = mul %p1, %b : i32
  %t = load %x, %c0, %r0 {padding = 0.0} : tile<16x16xf16>
  %tt = transpose %t {perm = [1, 0]} : tile<16x16xf16>
  store %y, %r0, %c0, %tt
  %rows = arange {start = 3, end = 19} : tile<16xi32>
  %cols = arange {start = 0, end = 16} : tile<16xi32>
  %r2 = expand_dims %rows {axis = 1} : tile<16x1xi32>
  %c2 = expand_dims %cols {axis = 0} : tile<1x16xi32>
  %rb = broadcast %r2 : tile<16x16xi32>
  %cb = broadcast %c2 : tile<16x16xi32>
  %k = constant {value = 100} : i32
  %ks = splat %k : tile<16x16xi32>
  %m = mul %rb, %ks : tile<16x16xi32>
  %s = add %m, %cb : tile<16x16xi32>
  store %z, %r0, %c0, %s
  return
}
)";
  std::mt19937 rng(6);
  for (auto [R, C] : kShapes)
    expect_matches(text, "k",
                   {tensor(ScalarKind::F16, {C, R}, rng), poisoned(ScalarKind::F16, {R, C}),
                    poisoned(ScalarKind::I32, {R, C})},
                   {uint64_t((R + 15) / 16), uint64_t((C + 15) / 16), 1});
}

TEST(NpusimOps, ReductionsAndScansAlongEveryAxis) {
  std::mt19937 rng(7);
  for (ScalarKind k : {ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16, ScalarKind::I32})
    for (int axis : {0, 1}) {
      for (const char *kind : {"sum", "max", "min", "argmax"}) {
        SCOPED_TRACE(std::string(kind) + " axis " + std::to_string(axis) + " " + dt(k));
        const ScalarKind o = std::string(kind) == "argmax" ? ScalarKind::I32 : k;
        const std::string text =
            "kernel @k(%x: tensor<?x?x" + dt(k) + ">, %y: tensor<?x" + dt(o) +
            ">) {\n"
            "  %p = program_id {axis = 0} : i32\n  %b = constant {value = 16} : i32\n"
            "  %o = mul %p, %b : i32\n  %z = constant {value = 0} : i32\n"
            "  %t = load %x, " +
            (axis == 1 ? "%o, %z" : "%z, %o") + " {padding = " +
            (std::string(kind) == "sum"   ? "0"
             : std::string(kind) == "min" ? "100"
                                          : "-100") +
            "} : tile<" + (axis == 1 ? "16x64x" : "64x16x") + dt(k) +
            ">\n"
            "  %r = reduce %t {axis = " +
            std::to_string(axis) + ", kind = \"" + kind + "\"} : tile<16x" + dt(o) +
            ">\n  store %y, %o, %r\n  return\n}\n";
        for (auto [R, C] : {std::pair<int64_t, int64_t>{37, 45}, {1, 1}, {20, 64}}) {
          const int64_t n = axis == 1 ? R : C;
          Arg x = tensor(k, {R, C}, rng, -3, 3);
          // A float sum along a row associates in v.rsum's order (Tile IR allows any): integral
          // inputs make every order exact, so a wrong lane or row still shows bit for bit; the
          // order itself is checked against its bound in RowSumsWithinTheBound.
          if (ir::is_float(k) && axis == 1 && std::string(kind) == "sum")
            for (int64_t i = 0; i < x.elements(); ++i)
              x.set(i, num::encode(format_of(k), std::round(num::decode(format_of(k), x.bits(i)))));
          expect_matches(text, "k", {x, poisoned(o, {n})}, {uint64_t((n + 15) / 16), 1, 1});
        }
      }
      for (const char *kind : {"sum", "max", "min"}) {
        SCOPED_TRACE(std::string("scan ") + kind + " axis " + std::to_string(axis) + " " + dt(k));
        const std::string text =
            tile_kernel(1, k, k,
                        "  %r = scan %a0 {axis = " + std::to_string(axis) + ", kind = \"" + kind +
                            "\"} : tile<16x32x" + dt(k) + ">\n");
        auto [R, C] = kShapes[1];
        expect_matches(text, "k", {tensor(k, {R, C}, rng, -3, 3), poisoned(k, {R, C})},
                       grid_of(R, C));
      }
    }
}

// Float sums along the last axis are v.rsum's (lane-strided partials, then a tree; the 16 x 256
// tiles) or a transpose's column folds (16 x 64, 16 x 16), which Tile IR's reduce allows (ir.h:
// any order): each is within the classical bound of any order,
// (n - 1) u sum |x| of the exact sum (u the type's unit roundoff, the second-order term added), on
// rows wider and narrower than the 64 lanes, ragged (padding 0). A lost or doubled element (|x| >=
// 1/8 here) or a row summed into the wrong place fails the f32 bound by orders of magnitude.
TEST(NpusimOps, RowSumsWithinTheBound) {
  std::mt19937 rng(21);
  for (ScalarKind k : kFloats)
    for (auto [R, C, TC] : {std::array<int64_t, 3>{37, 200, 256}, {16, 45, 64}, {5, 7, 16}}) {
      SCOPED_TRACE(dt(k) + " " + std::to_string(R) + "x" + std::to_string(C));
      const std::string text =
          "kernel @k(%x: tensor<?x?x" + dt(k) + ">, %y: tensor<?x" + dt(k) +
          ">) {\n"
          "  %p = program_id {axis = 0} : i32\n  %b = constant {value = 16} : i32\n"
          "  %o = mul %p, %b : i32\n  %z = constant {value = 0} : i32\n"
          "  %t = load %x, %o, %z {padding = 0} : tile<16x" +
          std::to_string(TC) + "x" + dt(k) +
          ">\n"
          "  %r = reduce %t {axis = 1, kind = \"sum\"} : tile<16x" +
          dt(k) + ">\n  store %y, %o, %r\n  return\n}\n";
      Arg x = tensor(k, {R, C}, rng, -3, 3);
      for (int64_t i = 0; i < x.elements(); ++i) // |x| >= 1/8
        if (std::fabs(num::decode(format_of(k), x.bits(i))) < 0.125)
          x.set(i, num::encode(format_of(k), 0.125));
      std::vector<Arg> args = {x, poisoned(k, {R})};
      auto m = parse(text);
      ASSERT_EQ(on_npusim(*m, "k", args, {uint64_t((R + 15) / 16), 1, 1}), "");
      const double u = k == ScalarKind::F32 ? 0x1p-24 : k == ScalarKind::F16 ? 0x1p-11 : 0x1p-8;
      const double g = double(C - 1) * u / (1 - double(C - 1) * u);
      for (int64_t r = 0; r < R; ++r) {
        double exact = 0, mag = 0;
        for (int64_t c = 0; c < C; ++c) {
          const double v = num::decode(format_of(k), x.bits(r * C + c));
          exact += v, mag += std::fabs(v);
        }
        const double got = num::decode(format_of(k), args[1].bits(r));
        // the result's own rounding to the type: u |exact| more
        EXPECT_LE(std::fabs(got - exact), g * mag + u * std::fabs(exact))
            << "row " << r << ": npusim " << got << ", exact " << exact;
      }
    }
}

} // namespace
} // namespace tl::npusim
