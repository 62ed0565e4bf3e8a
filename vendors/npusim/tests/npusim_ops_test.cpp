// Every op family the tnpu target lowers, compiled for npusim and run against the reference
// interpreter on random ragged shapes: results bit-exact (NaNs equal whatever their payload;
// v.exp within its 2 ulp), and run-time errors (division by zero, indices out of bounds)
// reported as the interpreter reports them.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/tnpu.h"
#include "tl/hal.hpp"
#include "tl/interpreter/interpreter.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"
#include "tl/reference/numerics.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace tl::npusim {
namespace {

using ir::ScalarKind;
namespace num = tl::numerics;

hal::Runtime &runtime() {
  static auto *rt = new hal::Runtime(nullptr, /*validation=*/1);
  return *rt;
}

std::unique_ptr<ir::Module> parse(const std::string &text) {
  ir::Diagnostics d;
  auto m = ir::parse(text, "ops.tlir", d);
  if (!m || !ir::verify(*m, d))
    throw std::runtime_error(d.str() + "\n" + text);
  return m;
}

int bytes_of(ScalarKind k) { return k == ScalarKind::I1 ? 1 : ir::bit_width(k) / 8; }

num::FloatFormat format_of(ScalarKind k) {
  return k == ScalarKind::F16    ? num::FloatFormat::F16
         : k == ScalarKind::BF16 ? num::FloatFormat::BF16
                                 : num::FloatFormat::F32;
}

/// A launch argument: a row-major tensor (its bytes) or a scalar.
struct Arg {
  ScalarKind kind = ScalarKind::F32;
  std::vector<int64_t> shape; ///< empty: a scalar
  std::vector<uint8_t> data;
  double value = 0;

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  uint64_t bits(int64_t i) const {
    uint64_t b = 0;
    std::memcpy(&b, data.data() + i * bytes_of(kind), size_t(bytes_of(kind)));
    return b;
  }
  void set(int64_t i, uint64_t b) {
    std::memcpy(data.data() + i * bytes_of(kind), &b, size_t(bytes_of(kind)));
  }
};

/// A tensor of random values: floats in [lo, hi] (rounded to the type), integers in [lo, hi];
/// `nonzero` leaves out 0 (divisors).
Arg tensor(ScalarKind k, std::vector<int64_t> shape, std::mt19937 &rng, double lo = -4,
           double hi = 4, bool nonzero = false) {
  Arg a;
  a.kind = k;
  a.shape = std::move(shape);
  a.data.assign(size_t(a.elements() * bytes_of(k)), 0);
  for (int64_t i = 0; i < a.elements(); ++i) {
    if (ir::is_float(k)) {
      a.set(i, num::encode(format_of(k), std::uniform_real_distribution<double>(lo, hi)(rng)));
    } else {
      int64_t v = 0;
      do
        v = std::uniform_int_distribution<int64_t>(int64_t(lo), int64_t(hi))(rng);
      while (nonzero && v == 0);
      a.set(i, uint64_t(v));
    }
  }
  return a;
}
/// An output: every byte 0x5a, so lanes never written show (and are compared).
Arg poisoned(ScalarKind k, std::vector<int64_t> shape) {
  Arg a;
  a.kind = k;
  a.shape = std::move(shape);
  a.data.assign(size_t(a.elements() * bytes_of(k)), 0x5a);
  return a;
}
Arg scalar(ScalarKind k, double v) {
  Arg a;
  a.kind = k;
  a.value = v;
  return a;
}

/// Runs kernel `name` on npusim (tensors updated in place); "" or the error.
std::string on_npusim(const ir::Module &m, const std::string &name, std::vector<Arg> &args,
                      std::array<uint64_t, 3> grid) {
  exe::Executable e;
  e.target = tnpu::kTarget;
  e.producer = "npusim ops tests";
  for (auto &k : m.kernels())
    e.kernels.push_back(exe::kernel_info(*k));
  if (std::string err = tnpu::compile(m, {}, e.code); !err.empty())
    return "compile: " + err;
  const std::vector<uint8_t> blob = exe::serialize(e);
  hal::Device d = runtime().device("npusim");
  hal::Executable x = d.load(blob.data(), blob.size());
  hal::Stream s = d.stream();
  std::vector<hal::Buffer> buffers;
  std::vector<tl_arg> launch;
  for (Arg &a : args) {
    const auto dt = static_cast<tl_dtype>(a.kind);
    if (a.shape.empty()) {
      launch.push_back(ir::is_float(a.kind) ? hal::float_arg(dt, a.value)
                                            : hal::int_arg(dt, int64_t(a.value)));
      continue;
    }
    buffers.push_back(d.buffer(std::max<size_t>(a.data.size(), 1)));
    s.copy_to_device(a.data.data(), buffers.back(), a.data.size());
    launch.push_back(hal::tensor_arg(buffers.back(), dt, a.shape));
  }
  try {
    s.launch(x, x.find_kernel(name), grid, launch);
    size_t b = 0;
    for (Arg &a : args)
      if (!a.shape.empty())
        s.copy_to_host(buffers[b++], a.data.data(), a.data.size());
    s.synchronize();
  } catch (const hal::Error &err) {
    return err.what();
  }
  return "";
}

std::string on_interpreter(const ir::Module &m, const std::string &name, std::vector<Arg> &args,
                           std::array<uint64_t, 3> grid) {
  std::vector<interp::ArgValue> values;
  for (Arg &a : args) {
    if (a.shape.empty() && ir::is_float(a.kind)) {
      values.emplace_back(std::in_place_type<double>, a.value);
    } else if (a.shape.empty()) {
      values.emplace_back(std::in_place_type<int64_t>, int64_t(a.value));
    } else {
      values.emplace_back(std::in_place_type<interp::TensorArg>);
      auto &t = std::get<interp::TensorArg>(values.back());
      t.data = a.data.data(), t.dtype = a.kind, t.shape = a.shape;
      t.strides = interp::contiguous_strides(a.shape);
    }
  }
  interp::RunOptions o;
  o.grid = {int64_t(grid[0]), int64_t(grid[1]), int64_t(grid[2])};
  interp::RunResult r = interp::run(*m.find_kernel(name), values, o);
  return r.ok ? "" : r.error;
}

bool is_nan(ScalarKind k, uint64_t b) {
  switch (k) {
  case ScalarKind::F32:
    return (b & 0x7fffffffu) > 0x7f800000u;
  case ScalarKind::F16:
    return (b & 0x7fffu) > 0x7c00u;
  case ScalarKind::BF16:
    return (b & 0x7fffu) > 0x7f80u;
  default:
    return false;
  }
}

/// Runs on both and compares every tensor: bit-exact, or within `ulp` units in the last place
/// for floats (same sign); NaN matches NaN.
void expect_matches(const std::string &text, const std::string &name, std::vector<Arg> args,
                    std::array<uint64_t, 3> grid, int ulp = 0) {
  auto m = parse(text);
  const std::vector<Arg> before = args;
  std::vector<Arg> want = args;
  const std::string dev = on_npusim(*m, name, args, grid);
  ASSERT_EQ(dev, "") << text;
  const std::string ref = on_interpreter(*m, name, want, grid);
  ASSERT_EQ(ref, "") << text;
  bool written = false; // the kernel stored something (a test that compares nothing fails)
  for (size_t t = 0; t < args.size(); ++t)
    written = written || args[t].data != before[t].data;
  ASSERT_TRUE(written) << text;
  for (size_t t = 0; t < args.size(); ++t) {
    const Arg &a = args[t], &w = want[t];
    for (int64_t i = 0; i < a.elements() && !a.shape.empty(); ++i) {
      const uint64_t x = a.bits(i), y = w.bits(i);
      if (x == y || (is_nan(a.kind, x) && is_nan(a.kind, y)))
        continue;
      const bool close = ir::is_float(a.kind) && ulp > 0 &&
                         std::llabs(int64_t(x) - int64_t(y)) <= ulp &&
                         ((x ^ y) >> (ir::bit_width(a.kind) - 1)) == 0;
      ASSERT_TRUE(close) << "argument " << t << " element " << i << ": npusim 0x" << std::hex << x
                         << ", interpreter 0x" << y << std::dec << "\n"
                         << text;
    }
  }
}

/// Both fail, with messages that contain `what`.
void expect_both_fail(const std::string &text, const std::string &name, std::vector<Arg> args,
                      std::array<uint64_t, 3> grid, const std::string &what) {
  auto m = parse(text);
  std::vector<Arg> want = args;
  const std::string dev = on_npusim(*m, name, args, grid);
  const std::string ref = on_interpreter(*m, name, want, grid);
  EXPECT_NE(dev.find(what), std::string::npos) << dev;
  EXPECT_NE(ref.find(what), std::string::npos) << ref;
}

std::string dt(ScalarKind k) { return std::string(ir::scalar_name(k)); }

/// A kernel over rank-2 tensors in 16 x 32 tiles: loads of `inputs` tensors of type `in`
/// (padding 1), `body` computing %r of type `out`, stored to the last argument.
std::string tile_kernel(int inputs, ScalarKind in, ScalarKind out, const std::string &body) {
  std::string k = "kernel @k(";
  for (int i = 0; i < inputs; ++i)
    k += "%x" + std::to_string(i) + ": tensor<?x?x" + dt(in) + ">, ";
  k += "%y: tensor<?x?x" + dt(out) +
       ">) {\n"
       "  %p0 = program_id {axis = 0} : i32\n  %p1 = program_id {axis = 1} : i32\n"
       "  %b0 = constant {value = 16} : i32\n  %b1 = constant {value = 32} : i32\n"
       "  %o0 = mul %p0, %b0 : i32\n  %o1 = mul %p1, %b1 : i32\n";
  for (int i = 0; i < inputs; ++i)
    k += "  %a" + std::to_string(i) + " = load %x" + std::to_string(i) +
         ", %o0, %o1 {padding = 1} : tile<16x32x" + dt(in) + ">\n";
  return k + body + "  store %y, %o0, %o1, %r\n  return\n}\n";
}

const std::vector<std::pair<int64_t, int64_t>> kShapes = {{1, 1}, {17, 45}, {40, 64}};
std::array<uint64_t, 3> grid_of(int64_t r, int64_t c) {
  return {uint64_t((r + 15) / 16), uint64_t((c + 31) / 32), 1};
}
const ScalarKind kFloats[] = {ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16};
const ScalarKind kInts[] = {ScalarKind::I8, ScalarKind::I32};

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

TEST(NpusimOps, ScalarIntegersWrapLikeTheInterpreter) {
  const char *text = R"(
kernel @k(%y: tensor<?xi32>, %a: i32, %b: i32) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %m = mul %a, %b : i32
  %s = add %m, %a : i32
  %d = sub %s, %b : i32
  %n = neg %d : i32
  %sh = shl %a, %b : i32
  %q = div %n, %b : i32
  %r = rem %m, %b : i32
  %lt = cmp %m, %z {pred = "lt"} : i1
  %w = select %lt, %q, %r : i32
  %t0 = splat %w : tile<1xi32>
  store %y, %z, %t0
  %t1 = splat %sh : tile<1xi32>
  store %y, %one, %t1
  return
}
)";
  for (auto [a, b] : std::vector<std::pair<double, double>>{
           {100000, 99999}, {-2147483647, 3}, {2147483647, 2147483647}, {7, -1}, {-5, 33}})
    expect_matches(
        text, "k",
        {poisoned(ScalarKind::I32, {2}), scalar(ScalarKind::I32, a), scalar(ScalarKind::I32, b)},
        {1, 1, 1});
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
          expect_matches(text, "k", {tensor(k, {R, C}, rng, -3, 3), poisoned(o, {n})},
                         {uint64_t((n + 15) / 16), 1, 1});
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

TEST(NpusimOps, ScalarsFromTilesDriveFloatArithmeticAndIf) {
  // A row's sum and maximum become scalars: f32 scalar arithmetic, a compare, an `if` with tile
  // results, an assert on a mask, and a splat of the scalar back into a tile.
  const char *text = R"(
kernel @k(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>, %limit: f32) {
  %row = program_id {axis = 0} : i32
  %z = constant {value = 0} : i32
  %t2 = load %x, %row, %z {padding = 0.0} : tile<1x64xf32>
  %t = reshape %t2 : tile<64xf32>
  %s = reduce %t {axis = 0, kind = "sum"} : f32
  %m = reduce %t {axis = 0, kind = "max"} : f32
  %i = reduce %t {axis = 0, kind = "argmax"} : i32
  %q = div %m, %s : f32
  %e = sqrt %q : f32
  %c = cmp %e, %limit {pred = "gt"} : i1
  %v = select %c, %e, %q : f32
  %half = constant {value = 25} : i32
  %big = cmp %i, %half {pred = "gt"} : i1
  %r = if %big : tile<64xf32> {
    %es = splat %v : tile<64xf32>
    %a = sub %t, %es : tile<64xf32>
    yield %a
  } else {
    %fi = cast %i : f32
    %is = splat %fi : tile<64xf32>
    %b = mul %t, %is : tile<64xf32>
    yield %b
  }
  %fin = cmp %r, %r {pred = "eq"} : tile<64xi1>
  assert %fin {message = "a lane is NaN"}
  %r2 = reshape %r : tile<1x64xf32>
  store %y, %row, %z, %r2
  return
}
)";
  std::mt19937 rng(8);
  for (int64_t R : {1, 7, 12})
    expect_matches(text, "k",
                   {tensor(ScalarKind::F32, {R, 50}, rng, 0.1, 2),
                    poisoned(ScalarKind::F32, {R, 50}), scalar(ScalarKind::F32, 0.195)},
                   {uint64_t(R), 1, 1});
}

TEST(NpusimOps, AssertsOnTileDerivedValuesFailWithTheirMessages) {
  const char *text = R"(
kernel @k(%x: tensor<?xf32>, %y: tensor<?xf32>, %limit: f32) {
  %z = constant {value = 0} : i32
  %t = load %x, %z {padding = 0.0} : tile<32xf32>
  %m = reduce %t {axis = 0, kind = "max"} : f32
  %ok = cmp %m, %limit {pred = "lt"} : i1
  assert %ok {message = "the maximum reaches the limit"}
  %ls = splat %limit : tile<32xf32>
  %below = cmp %t, %ls {pred = "lt"} : tile<32xi1>
  assert %below {message = "a lane reaches the limit"}
  store %y, %z, %t
  return
}
)";
  std::mt19937 rng(11);
  Arg x = tensor(ScalarKind::F32, {20}, rng, -1, 1);
  expect_matches(text, "k", {x, poisoned(ScalarKind::F32, {20}), scalar(ScalarKind::F32, 2.0)},
                 {1, 1, 1});
  expect_both_fail(text, "k", {x, poisoned(ScalarKind::F32, {20}), scalar(ScalarKind::F32, 0.5)},
                   {1, 1, 1}, "the maximum reaches the limit");
}

/// A random chain of elementwise, compare / select, transpose, reduce-and-broadcast, scan and
/// cast round-trip ops on 16 x 16 tiles of type k.
std::string random_chain(ScalarKind k, std::mt19937 &rng) {
  const bool fl = ir::is_float(k);
  const std::string t = "tile<16x16x" + dt(k) + ">";
  std::vector<std::string> vals = {"%a0", "%a1"};
  std::string body;
  int n = 0;
  auto pick = [&] { return vals[std::uniform_int_distribution<size_t>(0, vals.size() - 1)(rng)]; };
  auto fresh = [&] { return "%v" + std::to_string(n++); };
  auto choose = [&](std::vector<const char *> v) {
    return std::string(v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]);
  };
  for (int step = 0; step < 10; ++step) {
    const std::string r = fresh(), a = pick(), b = pick();
    switch (std::uniform_int_distribution<int>(0, 6)(rng)) {
    case 0:
      body += "  " + r + " = " +
              (fl ? choose({"add", "sub", "mul", "div", "min", "max"})
                  : choose({"add", "sub", "mul", "min", "max", "and", "or", "xor"})) +
              " " + a + ", " + b + " : " + t + "\n";
      break;
    case 1:
      body += "  " + r + " = " +
              (fl ? choose({"neg", "abs", "sin", "tanh", "erf", "sigmoid"})
                  : choose({"neg", "abs", "not"})) +
              " " + a + " : " + t + "\n";
      break;
    case 2: {
      const std::string m = fresh();
      body += "  " + m + " = cmp " + a + ", " + b + " {pred = \"" +
              choose({"eq", "ne", "lt", "le", "gt", "ge"}) + "\"} : tile<16x16xi1>\n";
      body += "  " + r + " = select " + m + ", " + a + ", " + b + " : " + t + "\n";
      break;
    }
    case 3:
      body += "  " + r + " = transpose " + a + " {perm = [1, 0]} : " + t + "\n";
      break;
    case 4: {
      const std::string s1 = fresh(), s2 = fresh();
      const std::string axis = choose({"0", "1"});
      body += "  " + s1 + " = reduce " + a + " {axis = " + axis + ", kind = \"" +
              choose({"sum", "max", "min"}) + "\"} : tile<16x" + dt(k) + ">\n";
      body += "  " + s2 + " = expand_dims " + s1 + " {axis = " + axis + "} : tile<" +
              (axis == "0" ? "1x16x" : "16x1x") + dt(k) + ">\n";
      body += "  " + r + " = broadcast " + s2 + " : " + t + "\n";
      break;
    }
    case 5:
      body += "  " + r + " = scan " + a + " {axis = " + choose({"0", "1"}) + ", kind = \"" +
              choose({"sum", "max", "min"}) + "\"} : " + t + "\n";
      break;
    default: {
      const std::string c = fresh();
      const std::string u =
          fl ? choose({"f32", "f16", "bf16", "i32", "i8"}) : choose({"f32", "i8"});
      body += "  " + c + " = cast " + a + " {rounding = \"" + choose({"rne", "rtz", "rd", "ru"}) +
              "\"} : tile<16x16x" + u + ">\n";
      body += "  " + r + " = cast " + c + " : " + t + "\n";
    }
    }
    vals.push_back(r);
  }
  std::string k2 = "kernel @k(%x0: tensor<?x?x" + dt(k) + ">, %x1: tensor<?x?x" + dt(k) +
                   ">, %y: tensor<?x?x" + dt(k) +
                   ">) {\n"
                   "  %p0 = program_id {axis = 0} : i32\n  %p1 = program_id {axis = 1} : i32\n"
                   "  %b = constant {value = 16} : i32\n"
                   "  %o0 = mul %p0, %b : i32\n  %o1 = mul %p1, %b : i32\n"
                   "  %a0 = load %x0, %o0, %o1 {padding = 1} : " +
                   t +
                   "\n"
                   "  %a1 = load %x1, %o0, %o1 {padding = 2} : " +
                   t + "\n";
  return k2 + body + "  store %y, %o0, %o1, " + vals.back() + "\n  return\n}\n";
}

TEST(NpusimOps, RandomOpChainsMatchTheInterpreter) {
  std::mt19937 rng(12); // (900 chains of seeds 1-3 passed too)
  for (int i = 0; i < 40; ++i) {
    const ScalarKind k = std::vector<ScalarKind>{ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16,
                                                 ScalarKind::I32, ScalarKind::I8}[size_t(i % 5)];
    const std::string text = random_chain(k, rng);
    const int64_t R = std::uniform_int_distribution<int64_t>(1, 40)(rng);
    const int64_t C = std::uniform_int_distribution<int64_t>(1, 40)(rng);
    SCOPED_TRACE("chain " + std::to_string(i));
    expect_matches(
        text, "k",
        {tensor(k, {R, C}, rng, -3, 3), tensor(k, {R, C}, rng, -3, 3), poisoned(k, {R, C})},
        {uint64_t((R + 15) / 16), uint64_t((C + 15) / 16), 1});
  }
}

const char *kIndexed = R"(
kernel @k(%src: tensor<?x?xf32>, %idx: tensor<?xi32>, %dst: tensor<?x?xf32>, %hist: tensor<?xi32>, %old: tensor<?xi32>) {
  %pid = program_id {axis = 0} : i32
  %sixteen = constant {value = 16} : i32
  %base = mul %pid, %sixteen : i32
  %rows = load %idx, %base {padding = -1} : tile<16xi32>
  %r2 = expand_dims %rows {axis = 1} : tile<16x1xi32>
  %rb = broadcast %r2 : tile<16x8xi32>
  %cols = arange {start = 0, end = 8} : tile<8xi32>
  %c2 = expand_dims %cols {axis = 0} : tile<1x8xi32>
  %cb = broadcast %c2 : tile<16x8xi32>
  %zero = full {value = 0} : tile<16x8xi32>
  %valid = cmp %rb, %zero {pred = "ge"} : tile<16x8xi1>
  %g = gather %src, %rb, %cb, %valid {other = 7.5} : tile<16x8xf32>
  %lane = arange {start = 0, end = 16} : tile<16xi32>
  %bs = splat %base : tile<16xi32>
  %out = add %lane, %bs : tile<16xi32>
  %o2 = expand_dims %out {axis = 1} : tile<16x1xi32>
  %ob = broadcast %o2 : tile<16x8xi32>
  %n64 = dim %dst {axis = 0} : i64
  %n = cast %n64 : i32
  %nb = splat %n : tile<16x8xi32>
  %inside = cmp %ob, %nb {pred = "lt"} : tile<16x8xi1>
  scatter %dst, %ob, %cb, %g, %inside
  %z1 = full {value = 0} : tile<16xi32>
  %ok = cmp %rows, %z1 {pred = "ge"} : tile<16xi1>
  %one = full {value = 1} : tile<16xi32>
  %prev = atomic_add %hist, %rows, %one, %ok : tile<16xi32>
  store %old, %base, %prev
  return
}
)";

TEST(NpusimOps, GatherScatterAndAtomicAddWithMasks) {
  std::mt19937 rng(9);
  // one program: atomic_add's old values depend on the order in which programs run
  for (int64_t n : {5, 16})
    expect_matches(kIndexed, "k",
                   {tensor(ScalarKind::F32, {30, 8}, rng),
                    tensor(ScalarKind::I32, {n}, rng, -1, 29), poisoned(ScalarKind::F32, {n, 8}),
                    poisoned(ScalarKind::I32, {30}), poisoned(ScalarKind::I32, {n})},
                   {1, 1, 1});
  Arg idx = tensor(ScalarKind::I32, {16}, rng, 0, 29);
  idx.set(3, 30); // past the 30 rows of src
  // the device names the index and its lane (3 rows of 8 lanes before it)
  expect_both_fail(kIndexed, "k",
                   {tensor(ScalarKind::F32, {30, 8}, rng), idx, poisoned(ScalarKind::F32, {16, 8}),
                    poisoned(ScalarKind::I32, {30}), poisoned(ScalarKind::I32, {16})},
                   {1, 1, 1}, "out of bounds");
  auto m = parse(kIndexed);
  std::vector<Arg> args = {tensor(ScalarKind::F32, {30, 8}, rng), idx,
                           poisoned(ScalarKind::F32, {16, 8}), poisoned(ScalarKind::I32, {30}),
                           poisoned(ScalarKind::I32, {16})};
  const std::string e = on_npusim(*m, "k", args, {1, 1, 1});
  EXPECT_NE(e.find("index 30 (entry 24 of the index tile) is out of bounds [0, 30)"),
            std::string::npos)
      << e;
  const char *unmasked = R"(
kernel @k(%x: tensor<?xf32>, %i: tensor<?xi32>, %y: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %idx = load %i, %z : tile<16xi32>
  %g = gather %x, %idx : tile<16xf32>
  store %y, %z, %g
  return
}
)";
  Arg neg = tensor(ScalarKind::I32, {16}, rng, 0, 9);
  neg.set(5, uint64_t(int64_t(-2)));
  expect_both_fail(unmasked, "k",
                   {tensor(ScalarKind::F32, {10}, rng), neg, poisoned(ScalarKind::F32, {16})},
                   {1, 1, 1}, "out of bounds");
  expect_matches(unmasked, "k",
                 {tensor(ScalarKind::F32, {10}, rng), tensor(ScalarKind::I32, {16}, rng, 0, 9),
                  poisoned(ScalarKind::F32, {16})},
                 {1, 1, 1});
}

TEST(NpusimOps, LibrarySoftmaxMatchesTheInterpreter) {
  // kernels/tlir/softmax.tlir: row maxima and sums reduced to f32 scalars, carried through a
  // loop, rescaled by scalar exp, then splat back. v.exp is within 2 ulp of the host's exp, so
  // the results agree within a few ulp.
  std::ifstream f(TL_LIBRARY_TLIR "/softmax.tlir");
  std::stringstream text;
  text << f.rdbuf();
  std::mt19937 rng(10);
  for (auto [R, C] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {7, 300}, {3, 128}, {2, 1000}})
    expect_matches(text.str(), "softmax",
                   {tensor(ScalarKind::F32, {R, C}, rng, -8, 8), poisoned(ScalarKind::F32, {R, C})},
                   {uint64_t(R), 1, 1}, 16);
}

} // namespace
} // namespace tl::npusim
