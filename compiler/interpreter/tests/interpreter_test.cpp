// Tests of the reference interpreter: dtype semantics, memory ops, control flow, run-time errors.
// SPDX-License-Identifier: Apache-2.0
#include "tl/interpreter/fold.h"
#include "tl/interpreter/host_tensor.h"
#include "tl/interpreter/interpreter.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

namespace tl::interp {
namespace {

std::unique_ptr<ir::Module> parse_ok(const std::string &text) {
  ir::Diagnostics d;
  auto m = ir::parse(text, "test.tlir", d);
  EXPECT_TRUE(m) << d.str();
  if (m)
    EXPECT_TRUE(ir::verify(*m, d)) << d.str();
  return m;
}

template <class T>
TensorArg tensor_of(std::vector<T> &v, ir::ScalarKind k, std::vector<int64_t> shape) {
  return TensorArg{v.data(), k, shape, contiguous_strides(shape)};
}

RunResult run_text(const std::string &text, std::vector<ArgValue> args,
                   std::array<int64_t, 3> grid = {1, 1, 1}, bool fp64 = false) {
  auto m = parse_ok(text);
  if (!m)
    return {false, "parse"};
  RunOptions o;
  o.grid = grid;
  o.fp64_reference = fp64;
  return run(*m->kernels()[0], args, o);
}

TEST(Interpreter, IntegerWrapAroundAndShifts) {
  std::vector<int32_t> out(4);
  auto r = run_text(R"(kernel @k(%o: tensor<?xi32>) {
  %a = constant {value = 127} : i8
  %b = constant {value = 1} : i8
  %s = add %a, %b : i8
  %w = cast %s : i32
  %u = constant {value = 250} : u8
  %v = constant {value = 10} : u8
  %su = add %u, %v : u8
  %wu = cast %su : i32
  %m = constant {value = -8} : i32
  %sh = constant {value = 33} : i32
  %r1 = shr %m, %sh : i32
  %z = constant {value = 0} : i32
  %t = splat %w : tile<1xi32>
  store %o, %z, %t
  %one = constant {value = 1} : i32
  %t2 = splat %wu : tile<1xi32>
  store %o, %one, %t2
  %two = constant {value = 2} : i32
  %t3 = splat %r1 : tile<1xi32>
  store %o, %two, %t3
  return
}
)",
                    {tensor_of(out, ir::ScalarKind::I32, {4})});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(out[0], -128); // i8 wraps
  EXPECT_EQ(out[1], 4);    // u8 wraps
  EXPECT_EQ(out[2], -4);   // arithmetic shift by 33 mod 32 = 1
}

TEST(Interpreter, DivisionByZeroIsReportedWithLocation) {
  auto r = run_text(R"(kernel @k() {
  %a = constant {value = 1} : i32
  %b = constant {value = 0} : i32
  %c = div %a, %b : i32
  return
}
)",
                    {});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("test.tlir:4:3: error: integer division by zero"), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("program (0, 0, 0)"), std::string::npos) << r.error;
}

TEST(Interpreter, LoadPadsAndStoreMasksOutOfBounds) {
  std::vector<float> x = {1, 2, 3, 4, 5}, y(5, -1);
  auto r = run_text(
      R"(kernel @k(%x: tensor<?xf32>, %y: tensor<?xf32>) {
  %p = program_id {axis = 0} : i32
  %c4 = constant {value = 4} : i32
  %o = mul %p, %c4 : i32
  %t = load %x, %o {padding = 100.0} : tile<4xf32>
  %s = reduce %t {axis = 0, kind = "sum"} : f32
  %st = splat %s : tile<4xf32>
  %r = add %t, %st : tile<4xf32>
  store %y, %o, %r
  return
}
)",
      {tensor_of(x, ir::ScalarKind::F32, {5}), tensor_of(y, ir::ScalarKind::F32, {5})}, {2, 1, 1});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(y, (std::vector<float>{11, 12, 13, 14, 305 + 5}));
}

TEST(Interpreter, GatherOutOfBoundsNamesProgramAndIndex) {
  std::vector<float> x(4);
  auto r = run_text(R"(kernel @k(%x: tensor<?xf32>) {
  %i = arange {end = 6, start = 2} : tile<4xi32>
  %g = gather %x, %i : tile<4xf32>
  return
}
)",
                    {tensor_of(x, ir::ScalarKind::F32, {4})}, {3, 1, 1});
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.error.find("index [4] is out of bounds of tensor shape [4] in lane 2"),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("program (0, 0, 0)"), std::string::npos) << r.error;
}

TEST(Interpreter, MaskedGatherAndScatter) {
  std::vector<int32_t> x = {10, 20, 30}, y(3, 0);
  auto r =
      run_text(R"(kernel @k(%x: tensor<?xi32>, %y: tensor<?xi32>) {
  %i = arange {end = 4, start = 0} : tile<4xi32>
  %n = constant {value = 3} : i32
  %nt = splat %n : tile<4xi32>
  %m = cmp %i, %nt {pred = "lt"} : tile<4xi1>
  %g = gather %x, %i, %m {other = 7} : tile<4xi32>
  %r = reduce %g {axis = 0, kind = "sum"} : i32
  %rt = splat %r : tile<4xi32>
  scatter %y, %i, %rt, %m
  return
}
)",
               {tensor_of(x, ir::ScalarKind::I32, {3}), tensor_of(y, ir::ScalarKind::I32, {3})});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(y, (std::vector<int32_t>{67, 67, 67}));
}

TEST(Interpreter, CastRoundsToBf16NearestEvenAndOtherModes) {
  std::vector<float> out(4);
  // 1 + 2^-8 is a tie between bf16 neighbours 1 and 1 + 2^-7: nearest-even gives 1.
  auto r = run_text(R"(kernel @k(%o: tensor<?xf32>) {
  %x = full {value = 1.00390625} : tile<4xf32>
  %a = cast %x : tile<4xbf16>
  %b = cast %x {rounding = "ru"} : tile<4xbf16>
  %c = cast %a : tile<4xf32>
  %d = cast %b : tile<4xf32>
  %z = constant {value = 0} : i32
  %two = constant {value = 2} : i32
  store %o, %z, %c
  store %o, %two, %d
  return
}
)",
                    {tensor_of(out, ir::ScalarKind::F32, {4})});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[2], 1.0078125f);
}

// fma of a narrow type rounds the exact a b + c once. bf16: (1 + 2^-4)^2 = 1 + 2^-3 + 2^-8 is a
// tie between 1.125 and 1.1328125; c = +-2^-80 decides it. f64's fma rounds c away (it lies 80
// binary orders below a b, past f64's 53 bits), so f64 then bf16 gave 1.125 both times (ties to
// even): the tnpu's exact fma showed it (npusim's random programs). Only bf16 reaches such gaps
// (f16's and fp8's ranges keep a b + c within f64's bits).
TEST(Interpreter, Bf16FmaRoundsOnceWhereTheAddendIsFarBelowTheProduct) {
  std::vector<float> out(4);
  auto r = run_text(R"(kernel @k(%o: tensor<?xf32>) {
  %a = full {value = 1.0625} : tile<2xbf16>
  %c = full {value = 8.271806125530277e-25} : tile<2xbf16>
  %nc = neg %c : tile<2xbf16>
  %up = fma %a, %a, %c : tile<2xbf16>
  %down = fma %a, %a, %nc : tile<2xbf16>
  %z = constant {value = 0} : i32
  %two = constant {value = 2} : i32
  %u = cast %up : tile<2xf32>
  %d = cast %down : tile<2xf32>
  store %o, %z, %u
  store %o, %two, %d
  return
}
)",
                    {tensor_of(out, ir::ScalarKind::F32, {4})});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(out[0], 1.1328125f); // 2^-80 above the tie: up
  EXPECT_EQ(out[2], 1.125f);     // below it: down
}

TEST(Interpreter, FloatToIntCastHonoursRoundingThenSaturates) {
  // Each mode on x in turn; no mode is rtz. Ties go to even under rne; 300 saturates to 127.
  const std::vector<float> x = {33.66f, 2.5f, -2.5f, 3.5f, -0.5f, 300.0f, -1e10f, NAN};
  const std::vector<std::pair<std::string, std::vector<int8_t>>> want = {
      {"", {33, 2, -2, 3, 0, 127, -128, 0}},
      {" {rounding = \"rtz\"}", {33, 2, -2, 3, 0, 127, -128, 0}},
      {" {rounding = \"rne\"}", {34, 2, -2, 4, 0, 127, -128, 0}},
      {" {rounding = \"rd\"}", {33, 2, -3, 3, -1, 127, -128, 0}},
      {" {rounding = \"ru\"}", {34, 3, -2, 4, 0, 127, -128, 0}},
  };
  for (const auto &[attr, expected] : want) {
    std::vector<float> in = x;
    std::vector<int8_t> out(x.size(), 99);
    auto r = run_text(R"(kernel @k(%x: tensor<?xf32>, %o: tensor<?xi8>) {
  %z = constant {value = 0} : i32
  %v = load %x, %z : tile<8xf32>
  %q = cast %v)" + attr + R"( : tile<8xi8>
  store %o, %z, %q
  return
}
)",
                      {tensor_of(in, ir::ScalarKind::F32, {8}),
                       tensor_of(out, ir::ScalarKind::I8, {8})});
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(out, expected) << "cast" << attr;
  }
}

TEST(Interpreter, Fp32ArithmeticRoundsEachOpButReferenceModeDoesNot) {
  const char *text = R"(kernel @k(%o: tensor<?xf32>) {
  %a = constant {value = 1.0} : f32
  %b = constant {value = 1e-08} : f32
  %s = add %a, %b : f32
  %d = sub %s, %a : f32
  %t = splat %d : tile<1xf32>
  %z = constant {value = 0} : i32
  store %o, %z, %t
  return
}
)";
  std::vector<float> out(1, -1);
  ASSERT_TRUE(run_text(text, {tensor_of(out, ir::ScalarKind::F32, {1})}).ok);
  EXPECT_EQ(out[0], 0.0f);
  std::vector<double> ref(1, -1);
  ASSERT_TRUE(run_text(text, {tensor_of(ref, ir::ScalarKind::F64, {1})}, {1, 1, 1}, true).ok);
  EXPECT_NEAR(ref[0], 1e-8, 1e-15);
}

TEST(Interpreter, DotForLoopAndIf) {
  std::vector<float> a(4 * 6), b(6 * 3), c(4 * 3);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(i % 5) - 2;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(i % 7) - 3;
  auto r = run_text(R"(kernel @k(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>, %c: tensor<?x?xf32>) {
  %c0 = constant {value = 0} : i32
  %c2 = constant {value = 2} : i32
  %K64 = dim %a {axis = 1} : i64
  %K = cast %K64 : i32
  %z = full {value = 0.0} : tile<4x4xf32>
  %acc = for %k = %c0 to %K step %c2 iter_args(%x = %z) : tile<4x4xf32> {
    %at = load %a, %c0, %k : tile<4x2xf32>
    %bt = load %b, %k, %c0 : tile<2x4xf32>
    %n = dot %at, %bt, %x {acc_type = f32} : tile<4x4xf32>
    yield %n
  }
  %big = cmp %K, %c2 {pred = "gt"} : i1
  %res = if %big : tile<4x4xf32> {
    yield %acc
  } else {
    yield %z
  }
  store %c, %c0, %c0, %res
  return
}
)",
                    {tensor_of(a, ir::ScalarKind::F32, {4, 6}),
                     tensor_of(b, ir::ScalarKind::F32, {6, 3}),
                     tensor_of(c, ir::ScalarKind::F32, {4, 3})});
  ASSERT_TRUE(r.ok) << r.error;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) {
      float s = 0;
      for (int k = 0; k < 6; ++k)
        s += a[i * 6 + k] * b[k * 3 + j];
      EXPECT_EQ(c[i * 3 + j], s);
    }
}

TEST(Interpreter, ArgmaxScanAndAssert) {
  std::vector<int32_t> out(5);
  auto r = run_text(R"(kernel @k(%o: tensor<?xi32>) {
  %i = arange {end = 4, start = 0} : tile<4xi32>
  %c = scan %i {axis = 0, kind = "sum"} : tile<4xi32>
  %two = constant {value = 2} : i32
  %t = splat %two : tile<4xi32>
  %w = rem %i, %t : tile<4xi32>
  %am = reduce %w {axis = 0, kind = "argmax"} : i32
  %z = constant {value = 0} : i32
  store %o, %z, %c
  %four = constant {value = 4} : i32
  %amt = splat %am : tile<1xi32>
  store %o, %four, %amt
  return
}
)",
                    {tensor_of(out, ir::ScalarKind::I32, {5})});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(out, (std::vector<int32_t>{0, 1, 3, 6, 1}));
  auto bad = run_text(R"(kernel @k() {
  %f = constant {value = false} : i1
  assert %f {message = "x must be positive"}
  return
}
)",
                      {});
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.error.find("assertion failed: x must be positive"), std::string::npos);
}

TEST(Interpreter, ArgumentMismatchesAreErrors) {
  const char *text = "kernel @k(%x: tensor<?xf32>, %n: i32) {\n  return\n}\n";
  std::vector<double> d(2);
  std::vector<float> f(2);
  EXPECT_FALSE(run_text(text, {}).ok);
  auto r = run_text(text, {tensor_of(d, ir::ScalarKind::F64, {2}), int64_t(3)});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("tensor has element type f64, kernel expects f32"), std::string::npos);
  EXPECT_FALSE(run_text(text, {tensor_of(f, ir::ScalarKind::F32, {2}), 1.5}).ok);
  EXPECT_TRUE(run_text(text, {tensor_of(f, ir::ScalarKind::F32, {2}), int64_t(3)}).ok);
}

TEST(Interpreter, RunawayLoopStopsWithError) {
  auto m = parse_ok(R"(kernel @k() {
  %a = constant {value = 0} : i64
  %b = constant {value = 9000000000000000000} : i64
  %s = constant {value = 1} : i64
  for %i = %a to %b step %s {
    yield
  }
  return
}
)");
  RunOptions o;
  o.max_ops = 100000;
  auto r = run(*m->kernels()[0], {}, o);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("execution limit"), std::string::npos) << r.error;
}

/// Runs `%r = <op> %x0[, %x1, %x2] : tile<n x out>` on the inputs (all of type `in`) and returns
/// the result lanes as doubles.
std::vector<double> run_op(const std::string &op, ir::ScalarKind in, ir::ScalarKind out,
                           const std::vector<std::vector<double>> &xs, bool fp64 = false) {
  const std::string n = std::to_string(xs[0].size()), ti = std::string(ir::scalar_name(in)),
                    to = std::string(ir::scalar_name(out));
  std::string text = "kernel @k(";
  for (size_t i = 0; i < xs.size(); ++i)
    text += "%x" + std::to_string(i) + ": tensor<?x" + ti + ">, ";
  text += "%y: tensor<?x" + to + ">) {\n  %z = constant {value = 0} : i32\n";
  for (size_t i = 0; i < xs.size(); ++i)
    text += "  %a" + std::to_string(i) + " = load %x" + std::to_string(i) + ", %z : tile<" + n +
            "x" + ti + ">\n";
  text += "  %r = " + op + " %a0";
  for (size_t i = 1; i < xs.size(); ++i)
    text += ", %a" + std::to_string(i);
  text += " : tile<" + n + "x" + to + ">\n  store %y, %z, %r\n  return\n}\n";
  std::vector<HostTensor> ts;
  std::vector<ArgValue> args;
  for (const auto &x : xs) { // values of `in`; the fp64 mode takes them in f64 tensors
    HostTensor t(in, {int64_t(x.size())});
    for (size_t e = 0; e < x.size(); ++e)
      t.set(int64_t(e), x[e]);
    ts.push_back(fp64 && ir::is_float(in) ? t.converted(ir::ScalarKind::F64) : t);
  }
  ts.emplace_back(fp64 && ir::is_float(out) ? ir::ScalarKind::F64 : out,
                  std::vector<int64_t>{int64_t(xs[0].size())});
  for (auto &t : ts)
    args.push_back(t.arg());
  const RunResult r = run_text(text, args, {1, 1, 1}, fp64);
  EXPECT_TRUE(r.ok) << op << ": " << r.error;
  std::vector<double> y(xs[0].size());
  for (size_t e = 0; e < y.size(); ++e)
    y[e] = ts.back().get(int64_t(e));
  return y;
}

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::nan("");
using ir::ScalarKind;

/// Bitwise equality of doubles, so that -0 differs from +0 and NaN equals NaN.
::testing::AssertionResult same(const std::vector<double> &got, const std::vector<double> &want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::isnan(got[i]) && std::isnan(want[i])) &&
        std::memcmp(&got[i], &want[i], sizeof(double)) != 0)
      return ::testing::AssertionFailure()
             << "lane " << i << ": got " << got[i] << ", want " << want[i];
  return ::testing::AssertionSuccess();
}

TEST(Interpreter, NewMathSpecialValuesAreExact) {
  for (ScalarKind f : {ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16}) {
    SCOPED_TRACE(ir::scalar_name(f));
    EXPECT_TRUE(same(run_op("log1p", f, f, {{-1, -2, 0, -0.0, kInf, kNaN}}),
                     {-kInf, kNaN, 0, -0.0, kInf, kNaN}));
    EXPECT_TRUE(same(run_op("expm1", f, f, {{-kInf, kInf, -0.0}}), {-1, kInf, -0.0}));
    EXPECT_TRUE(same(run_op("erfinv", f, f, {{1, -1, 1.5, -0.0, 0, -kInf}}),
                     {kInf, -kInf, kNaN, -0.0, 0, kNaN}));
    EXPECT_TRUE(same(run_op("ndtr", f, f, {{-kInf, kInf, 0, -0.0, kNaN}}), {0, 1, 0.5, 0.5, kNaN}));
    // Values are rounded to the type: asin(1) = pi/2 rounded.
    const double half_pi = run_op("add", f, f, {{M_PI_2}, {0}})[0];
    EXPECT_TRUE(same(run_op("asin", f, f, {{2, -2, -0.0, 1}}), {kNaN, kNaN, -0.0, half_pi}));
    EXPECT_TRUE(same(run_op("acos", f, f, {{1, 1.25}}), {0, kNaN}));
    EXPECT_TRUE(same(run_op("tan", f, f, {{-0.0, kInf}}), {-0.0, kNaN}));
    EXPECT_TRUE(same(run_op("sinh", f, f, {{-kInf, -0.0}}), {-kInf, -0.0}));
    EXPECT_TRUE(same(run_op("cosh", f, f, {{-kInf, -0.0}}), {kInf, 1}));
    EXPECT_TRUE(same(run_op("atan", f, f, {{kInf, -0.0}}), {half_pi, -0.0}));
    EXPECT_TRUE(same(
        run_op("atan2", f, f, {{0, -0.0, 0, -0.0, 1, kInf, kNaN}, {-0.0, -0.0, 0, 1, 0, kInf, 1}}),
        {run_op("add", f, f, {{M_PI}, {0}})[0], -run_op("add", f, f, {{M_PI}, {0}})[0], 0, -0.0,
         half_pi, run_op("add", f, f, {{M_PI_4}, {0}})[0], kNaN}));
    EXPECT_TRUE(same(run_op("fmod", f, f, {{7, -7, 1, kInf, 5, -0.0}, {2, 2, 0, 1, kInf, 3}}),
                     {1, -1, kNaN, kNaN, 5, -0.0}));
    EXPECT_TRUE(same(run_op("copysign", f, f, {{3, 3, kNaN}, {-0.0, 1, -1}}), {-3, 3, -kNaN}));
  }
}

TEST(Interpreter, RoundingToIntegralValuesAndClassTests) {
  for (ScalarKind f : {ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16, ScalarKind::F64}) {
    SCOPED_TRACE(ir::scalar_name(f));
    const std::vector<double> x = {2.5, 3.5, -2.5, -0.25, 1.75, -1.75, kInf, kNaN};
    EXPECT_TRUE(same(run_op("rint", f, f, {x}), {2, 4, -2, -0.0, 2, -2, kInf, kNaN}));
    EXPECT_TRUE(same(run_op("floor", f, f, {x}), {2, 3, -3, -1, 1, -2, kInf, kNaN}));
    EXPECT_TRUE(same(run_op("ceil", f, f, {x}), {3, 4, -2, -0.0, 2, -1, kInf, kNaN}));
    EXPECT_TRUE(same(run_op("trunc", f, f, {x}), {2, 3, -2, -0.0, 1, -1, kInf, kNaN}));
    const std::vector<double> c = {0, -kInf, kInf, kNaN, 1e-30, -3};
    EXPECT_TRUE(same(run_op("isnan", f, ScalarKind::I1, {c}), {0, 0, 0, 1, 0, 0}));
    EXPECT_TRUE(same(run_op("isinf", f, ScalarKind::I1, {c}), {0, 1, 1, 0, 0, 0}));
    EXPECT_TRUE(same(run_op("isfinite", f, ScalarKind::I1, {c}), {1, 0, 0, 0, 1, 1}));
  }
}

TEST(Interpreter, MinNumMaxNumIgnoreNaNAndClampPropagatesIt) {
  for (ScalarKind f : {ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16, ScalarKind::F64}) {
    SCOPED_TRACE(ir::scalar_name(f));
    const std::vector<double> a = {kNaN, 1, kNaN, -0.0, 0, 2}, b = {1, kNaN, kNaN, 0, -0.0, -3};
    EXPECT_TRUE(same(run_op("minnum", f, f, {a, b}), {1, 1, kNaN, -0.0, -0.0, -3}));
    EXPECT_TRUE(same(run_op("maxnum", f, f, {a, b}), {1, 1, kNaN, 0, 0, 2}));
    EXPECT_TRUE(
        same(run_op("clamp", f, f,
                    {{5, -5, 0.5, kNaN, 0.5, -0.0}, {0, 0, 0, 0, kNaN, 0}, {1, 1, 1, 1, 1, 0}}),
             {1, 0, 0.5, kNaN, kNaN, 0}));
  }
  EXPECT_TRUE(
      same(run_op("clamp", ScalarKind::I32, ScalarKind::I32, {{5, -5, 3}, {0, 0, 0}, {4, 4, 4}}),
           {4, 0, 3}));
  // Unsigned: 0xFFFFFFFF is the largest u32, not -1.
  EXPECT_TRUE(
      same(run_op("clamp", ScalarKind::U32, ScalarKind::U32, {{4294967295.0, 1}, {2, 2}, {7, 7}}),
           {7, 2}));
}

TEST(Interpreter, PopcountAndClzCountTheTypesOwnBits) {
  EXPECT_TRUE(
      same(run_op("popcount", ScalarKind::I8, ScalarKind::I8, {{0, -1, 5, -128}}), {0, 8, 2, 1}));
  EXPECT_TRUE(same(run_op("clz", ScalarKind::I8, ScalarKind::I8, {{0, -1, 1, 64}}), {8, 0, 7, 1}));
  EXPECT_TRUE(
      same(run_op("clz", ScalarKind::U32, ScalarKind::U32, {{0, 1, 4294967295.0}}), {32, 31, 0}));
  EXPECT_TRUE(same(run_op("popcount", ScalarKind::I64, ScalarKind::I64, {{-1, 0x7fff}}), {64, 15}));
  EXPECT_TRUE(same(run_op("clz", ScalarKind::I64, ScalarKind::I64, {{0, 1, -1}}), {64, 63, 0}));
  EXPECT_TRUE(same(run_op("clz", ScalarKind::I16, ScalarKind::I16, {{0, 255}}), {16, 8}));
}

TEST(Interpreter, NewMathRoundsOnceAndReferenceModeDoesNot) {
  // tan(1.5) = 14.10141994717172: f16 holds 14.1 (ulp 2^-6), fp64 mode keeps every digit.
  const double t = std::tan(1.5);
  const double t16 = run_op("tan", ScalarKind::F16, ScalarKind::F16, {{1.5}})[0];
  EXPECT_EQ(t16, 14.1015625);
  EXPECT_EQ(run_op("tan", ScalarKind::F16, ScalarKind::F16, {{1.5}}, true)[0], t);
  EXPECT_EQ(run_op("erfinv", ScalarKind::F32, ScalarKind::F32, {{0.5}})[0],
            double(float(0.4769362762044699)));
  EXPECT_NEAR(run_op("erfinv", ScalarKind::F32, ScalarKind::F32, {{0.5}}, true)[0],
              0.4769362762044699, 1e-16);
  // ndtr(-5.5) = 1.8989562465887719e-8 (mpmath): rounded once to f32 (1/2 + erf / 2 in f32 is
  // 6x off here), every digit in fp64 mode.
  EXPECT_EQ(run_op("ndtr", ScalarKind::F32, ScalarKind::F32, {{-5.5}})[0],
            double(float(1.8989562465887719e-8)));
  EXPECT_NEAR(run_op("ndtr", ScalarKind::F32, ScalarKind::F32, {{-5.5}}, true)[0] /
                  1.8989562465887719e-8,
              1.0, 1e-15);
}

TEST(Fold, UsesInterpreterSemantics) {
  auto m = parse_ok(R"(kernel @k() {
  %a = constant {value = 100} : i8
  %b = constant {value = 100} : i8
  %s = add %a, %b : i8
  %x = constant {value = 0.1} : f32
  %y = constant {value = 0.2} : f32
  %z = add %x, %y : f32
  %q = div %a, %b : i8
  return
}
)");
  auto it = m->kernels()[0]->body()->ops().begin();
  std::advance(it, 2);
  auto s = fold_scalar(**it, {int64_t(100), int64_t(100)});
  ASSERT_TRUE(s);
  EXPECT_EQ(std::get<int64_t>(*s), -56);
  std::advance(it, 3);
  auto z = fold_scalar(**it, {0.1, 0.2});
  ASSERT_TRUE(z);
  EXPECT_EQ(std::get<double>(*z), double(0.1f + 0.2f));
  ++it;
  EXPECT_FALSE(fold_scalar(**it, {int64_t(1), int64_t(0)}));
}

TEST(Fold, FoldsTheNewOps) {
  auto m = parse_ok(R"(kernel @k(%f: f32, %i: i8) {
  %a = rint %f : f32
  %b = isnan %f : i1
  %c = clz %i : i8
  %d = maxnum %f, %f : f32
  %e = erfinv %f : f32
  return
}
)");
  auto it = m->kernels()[0]->body()->ops().begin();
  EXPECT_EQ(std::get<double>(*fold_scalar(**it, {2.5})), 2.0);
  ++it;
  EXPECT_EQ(std::get<bool>(*fold_scalar(**it, {std::nan("")})), true);
  ++it;
  EXPECT_EQ(std::get<int64_t>(*fold_scalar(**it, {int64_t(1)})), 7);
  ++it;
  EXPECT_EQ(std::get<double>(*fold_scalar(**it, {std::nan(""), 3.0})), 3.0);
  ++it;
  EXPECT_EQ(std::get<double>(*fold_scalar(**it, {1.0})), std::numeric_limits<double>::infinity());
}

} // namespace
} // namespace tl::interp
