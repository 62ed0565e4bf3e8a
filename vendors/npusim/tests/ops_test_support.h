// Helpers of the NpusimOps tests: random tensor arguments, a kernel run on npusim and on the
// reference interpreter, and the comparison of every tensor afterwards.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/backends/tnpu.h"
#include "tl/compiler/pipeline.h"
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

namespace tl::npusim::ops_test {

using ir::ScalarKind;
namespace num = tl::numerics;

inline hal::Runtime &runtime() {
  static auto *rt = new hal::Runtime(nullptr, /*validation=*/1);
  return *rt;
}

inline std::unique_ptr<ir::Module> parse(const std::string &text) {
  ir::Diagnostics d;
  auto m = ir::parse(text, "ops.tlir", d);
  if (!m || !ir::verify(*m, d))
    throw std::runtime_error(d.str() + "\n" + text);
  return m;
}

inline int bytes_of(ScalarKind k) { return k == ScalarKind::I1 ? 1 : ir::bit_width(k) / 8; }

inline num::FloatFormat format_of(ScalarKind k) {
  return k == ScalarKind::F16    ? num::FloatFormat::F16
         : k == ScalarKind::BF16 ? num::FloatFormat::BF16
                                 : num::FloatFormat::F32;
}

/// A launch argument: a row-major tensor (its bytes) or a scalar.
struct Arg {
  ScalarKind kind = ScalarKind::F32;
  std::vector<int64_t> shape;   ///< empty: a scalar
  std::vector<int64_t> strides; ///< in elements over `data`; empty: C order
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
inline Arg tensor(ScalarKind k, std::vector<int64_t> shape, std::mt19937 &rng, double lo = -4,
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
inline Arg poisoned(ScalarKind k, std::vector<int64_t> shape) {
  Arg a;
  a.kind = k;
  a.shape = std::move(shape);
  a.data.assign(size_t(a.elements() * bytes_of(k)), 0x5a);
  return a;
}
inline Arg scalar(ScalarKind k, double v) {
  Arg a;
  a.kind = k;
  a.value = v;
  return a;
}

/// Runs kernel `name` on npusim (tensors updated in place); "" or the error.
inline std::string on_npusim(const ir::Module &m, const std::string &name, std::vector<Arg> &args,
                             std::array<uint64_t, 3> grid) {
  exe::Executable e;
  e.target = tnpu::kTarget;
  e.producer = "npusim ops tests";
  for (auto &k : m.kernels())
    e.kernels.push_back(compile::kernel_info(*k));
  if (std::string err = tnpu::compile(m, {}, e.code); !err.empty())
    return "compile: " + err;
  const std::vector<uint8_t> blob = exe::serialize(e);
  hal::Device d = runtime().device("npusim");
  hal::Executable x = d.load(blob.data(), blob.size());
  std::vector<hal::HostArg> host_args;
  for (Arg &a : args) {
    if (a.shape.empty())
      host_args.push_back(ir::is_float(a.kind) ? hal::HostArg::real(a.value)
                                               : hal::HostArg::integer(int64_t(a.value)));
    else {
      host_args.push_back(hal::HostArg::tensor(a.data.data(), a.data.size(),
                                               static_cast<tl_dtype>(a.kind), a.shape));
      host_args.back().strides = a.strides;
    }
  }
  try {
    hal::run_with_host_args(d, x, x.find_kernel(name), grid, host_args);
  } catch (const hal::Error &err) {
    return err.what();
  }
  return "";
}

inline std::string on_interpreter(const ir::Module &m, const std::string &name,
                                  std::vector<Arg> &args, std::array<uint64_t, 3> grid) {
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
      t.strides = a.strides.empty() ? interp::contiguous_strides(a.shape) : a.strides;
    }
  }
  interp::RunOptions o;
  o.grid = {int64_t(grid[0]), int64_t(grid[1]), int64_t(grid[2])};
  interp::RunResult r = interp::run(*m.find_kernel(name), values, o);
  return r.ok ? "" : r.error;
}

inline bool is_nan(ScalarKind k, uint64_t b) {
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

/// Runs the interpreter on `before` (the arguments npusim started from) and compares every tensor
/// with `on_device` (npusim's results): bit-exact, or within `ulp` units in the last place for
/// floats (same sign); NaN matches NaN.
inline void expect_interpreter_agrees(const ir::Module &m, const std::string &text,
                                      const std::string &name, const std::vector<Arg> &before,
                                      const std::vector<Arg> &on_device,
                                      std::array<uint64_t, 3> grid, int ulp = 0) {
  std::vector<Arg> want = before;
  const std::string ref = on_interpreter(m, name, want, grid);
  ASSERT_EQ(ref, "") << text;
  bool written = false; // the kernel stored something (a test that compares nothing fails)
  for (size_t t = 0; t < on_device.size(); ++t)
    written = written || on_device[t].data != before[t].data;
  ASSERT_TRUE(written) << text;
  for (size_t t = 0; t < on_device.size(); ++t) {
    const Arg &a = on_device[t], &w = want[t];
    // every element of the buffer (a strided view's data may hold more than its shape)
    for (int64_t i = 0; i < int64_t(a.data.size()) / bytes_of(a.kind) && !a.shape.empty(); ++i) {
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

/// Runs on both and compares every tensor (expect_interpreter_agrees).
inline void expect_matches(const std::string &text, const std::string &name, std::vector<Arg> args,
                           std::array<uint64_t, 3> grid, int ulp = 0) {
  auto m = parse(text);
  const std::vector<Arg> before = args;
  const std::string dev = on_npusim(*m, name, args, grid);
  ASSERT_EQ(dev, "") << text;
  expect_interpreter_agrees(*m, text, name, before, args, grid, ulp);
}

/// Both fail, with messages that contain `what`.
inline void expect_both_fail(const std::string &text, const std::string &name,
                             std::vector<Arg> args, std::array<uint64_t, 3> grid,
                             const std::string &what) {
  auto m = parse(text);
  std::vector<Arg> want = args;
  const std::string dev = on_npusim(*m, name, args, grid);
  const std::string ref = on_interpreter(*m, name, want, grid);
  EXPECT_NE(dev.find(what), std::string::npos) << dev;
  EXPECT_NE(ref.find(what), std::string::npos) << ref;
}

inline std::string dt(ScalarKind k) { return std::string(ir::scalar_name(k)); }

/// A kernel over rank-2 tensors in 16 x 32 tiles: loads of `inputs` tensors of type `in`
/// (padding 1), `body` computing %r of type `out`, stored to the last argument.
inline std::string tile_kernel(int inputs, ScalarKind in, ScalarKind out, const std::string &body) {
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

inline const std::vector<std::pair<int64_t, int64_t>> kShapes = {{1, 1}, {17, 45}, {40, 64}};
inline std::array<uint64_t, 3> grid_of(int64_t r, int64_t c) {
  return {uint64_t((r + 15) / 16), uint64_t((c + 31) / 32), 1};
}
inline const ScalarKind kFloats[] = {ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16};
inline const ScalarKind kInts[] = {ScalarKind::I8, ScalarKind::I32};

} // namespace tl::npusim::ops_test
