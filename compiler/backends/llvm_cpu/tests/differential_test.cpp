// Differential tests of llvm-cpu against the reference interpreter: the library kernels and every
// op family on random shapes with ragged edges; bit-exact except transcendental math (ulps).
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/llvm_cpu.h"
#include "tl/interpreter/host_tensor.h"
#include "tl/interpreter/random_programs.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>

namespace tl::llvm_cpu {
namespace {

using interp::HostTensor;
using ir::ScalarKind;

std::unique_ptr<ir::Module> parse_ok(const std::string &text) {
  ir::Diagnostics d;
  auto m = ir::parse(text, "test.tlir", d);
  if (!m || !ir::verify(*m, d))
    throw std::runtime_error(d.str());
  return m;
}

std::string read_kernel(const char *file) {
  std::ifstream in(std::string(TL_KERNELS_DIR) + "/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

HostTensor random_tensor(ScalarKind k, std::vector<int64_t> shape, std::mt19937_64 &rng) {
  HostTensor t(k, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (ir::is_float(k))
      t.set(i, std::uniform_real_distribution<double>(-2, 2)(rng));
    else if (k == ScalarKind::I1)
      t.set(i, double(rng() & 1));
    else if (ir::is_signed(k))
      t.set(i, double(std::uniform_int_distribution<int>(-100, 100)(rng)));
    else
      t.set(i, double(std::uniform_int_distribution<int>(0, 200)(rng)));
  }
  return t;
}

/// Rows of 1024 f32 with a maximum's and minimum's edge cases: a NaN in row `nan`, +inf and -inf
/// in row `inf`, and row `zeros` all zeros of both signs (max +0, min -0).
void set_special_rows(HostTensor &f, int64_t nan, int64_t inf, int64_t zeros) {
  f.set(nan * 1024 + 700, NAN);
  f.set(inf * 1024 + 5, INFINITY);
  f.set(inf * 1024 + 999, -INFINITY);
  for (int64_t i = 0; i < 1024; ++i)
    f.set(zeros * 1024 + i, i % 3 ? 0.0 : -0.0);
}

struct Outcome {
  std::vector<HostTensor> tensors;
  std::string error;
};

/// Runs kernel `name` on copies of `inputs` (tensors and scalars in argument order).
Outcome run_interpreter(const ir::Kernel &k, std::vector<HostTensor> tensors,
                        const std::vector<interp::ArgValue> &scalars, std::array<int64_t, 3> grid,
                        bool fp64 = false) {
  if (fp64) // the reference mode takes its float tensors in f64
    for (HostTensor &t : tensors)
      if (ir::is_float(t.dtype())) {
        HostTensor wide(ScalarKind::F64, t.shape());
        for (int64_t i = 0; i < t.num_elements(); ++i)
          wide.set(i, t.get(i));
        t = std::move(wide);
      }
  std::vector<interp::ArgValue> args;
  size_t t = 0, s = 0;
  for (auto &p : k.body()->arguments())
    args.push_back(p->type().is_tensor() ? interp::ArgValue(tensors[t++].arg()) : scalars[s++]);
  interp::RunOptions o;
  o.grid = grid;
  o.fp64_reference = fp64;
  o.print_stream = nullptr;
  std::ostringstream sink;
  o.print_stream = &sink;
  interp::RunResult r = interp::run(k, args, o);
  return {std::move(tensors), r.ok ? "" : r.error};
}

Outcome run_llvm(const ir::Module &m, const ir::Kernel &k, std::vector<HostTensor> tensors,
                 const std::vector<interp::ArgValue> &scalars, std::array<int64_t, 3> grid) {
  std::string error;
  auto prog = compile_and_load(m, CompileOptions{}, &error);
  if (!prog)
    throw std::runtime_error(error);
  tl_cpu_kernel_fn fn = prog->find(k.name());
  if (!fn)
    throw std::runtime_error("kernel not found");
  // Each tensor runs between guard bytes, at its own address's offset within a cache line (the
  // aligned and misaligned paths stay as they were): a store past either end (a bounds check
  // that missed a dimension) fails the comparison instead of corrupting the heap unseen.
  constexpr size_t kGuard = 256;
  constexpr uint8_t kPattern = 0xA5;
  struct Guarded {
    std::vector<uint8_t> buf;
    uint8_t *start;
    size_t bytes;
  };
  std::vector<Guarded> guarded;
  std::vector<tl_cpu_arg> args;
  size_t t = 0, s = 0;
  for (auto &p : k.body()->arguments()) {
    tl_cpu_arg a{};
    if (p->type().is_tensor()) {
      HostTensor &h = tensors[t++];
      Guarded g{std::vector<uint8_t>(
                    h.num_elements() * interp::element_size(h.dtype()) + 2 * kGuard + 64, kPattern),
                nullptr, size_t(h.num_elements()) * interp::element_size(h.dtype())};
      uintptr_t at = reinterpret_cast<uintptr_t>(g.buf.data()) + kGuard;
      at += (reinterpret_cast<uintptr_t>(h.data()) - at) % 64;
      g.start = reinterpret_cast<uint8_t *>(at);
      std::memcpy(g.start, h.data(), g.bytes);
      guarded.push_back(std::move(g));
      a.data = guarded.back().start;
      auto strides = interp::contiguous_strides(h.shape());
      for (size_t d = 0; d < h.shape().size(); ++d) {
        a.shape[d] = h.shape()[d];
        a.strides[d] = strides[d];
      }
    } else {
      const interp::ArgValue &v = scalars[s++];
      if (auto *i = std::get_if<int64_t>(&v))
        a.i = *i;
      else
        a.f = std::get<double>(v);
    }
    args.push_back(a);
  }
  std::string printed;
  LaunchHost host(&printed);
  tl_cpu_launch launch{args.data(), {grid[0], grid[1], grid[2]}, &host};
  for (int64_t z = 0; z < grid[2] && !host.failed(); ++z)
    for (int64_t y = 0; y < grid[1] && !host.failed(); ++y)
      for (int64_t x = 0; x < grid[0] && !host.failed(); ++x)
        fn(&launch, x, y, z);
  std::string fault = host.first_error();
  for (size_t i = 0; i < guarded.size(); ++i) {
    const Guarded &g = guarded[i];
    const uint8_t *end = g.start + g.bytes, *last = g.buf.data() + g.buf.size();
    auto spoilt = [](const uint8_t *b, const uint8_t *e) {
      return std::find_if(b, e, [](uint8_t v) { return v != kPattern; });
    };
    if (const uint8_t *b = spoilt(g.buf.data(), g.start); b != g.start)
      fault += "llvm-cpu wrote outside tensor " + std::to_string(i) + " (" +
               std::to_string(g.start - b) + " bytes before it)";
    else if (const uint8_t *b = spoilt(end, last); b != last)
      fault += "llvm-cpu wrote outside tensor " + std::to_string(i) + " (" +
               std::to_string(b - end) + " bytes past its end)";
    std::memcpy(tensors[i].data(), g.start, g.bytes);
  }
  return {std::move(tensors), fault};
}

/// The first 64-byte aligned float of `storage` (16 floats of slack), `misalign` floats past it.
float *aligned_output(std::vector<float> &storage, int64_t misalign) {
  float *out = storage.data();
  while (reinterpret_cast<uintptr_t>(out) % 64)
    ++out;
  return out + misalign;
}

/// `text` with each tile element type "T" (as in "tile<4x96xT>") replaced by scalar type `t`.
std::string with_element_type(std::string text, const char *t) {
  for (size_t at; (at = text.find("xT>")) != std::string::npos;)
    text.replace(at + 1, 1, t);
  return text;
}

/// Runs programs 0 .. programs - 1 (along axis 0) of kernel `name` of `prog` on `args`, straight
/// through the calling convention. Returns "" or the first fault.
std::string launch_programs(const tl::llvm_cpu::LoadedProgram &prog, const char *name,
                            std::vector<tl_cpu_arg> &args, int64_t programs) {
  LaunchHost host;
  tl_cpu_launch launch{args.data(), {programs, 1, 1}, &host};
  for (int64_t p = 0; p < programs; ++p)
    if (prog.find(name)(&launch, p, 0, 0) != 0)
      return host.first_error();
  return "";
}

/// Runs kernel `name` of `prog` over contiguous rank-1 tensors of `n` elements at `data`, one
/// program per `block` elements, straight through the calling convention (no interpreter run:
/// for inputs too large for it). Returns "" or the first fault.
std::string launch_rank1(const tl::llvm_cpu::LoadedProgram &prog, const char *name,
                         std::vector<void *> data, int64_t n, int64_t block) {
  std::vector<tl_cpu_arg> args(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    args[i].data = data[i];
    args[i].shape[0] = n;
    args[i].strides[0] = 1;
  }
  return launch_programs(prog, name, args, (n + block - 1) / block);
}

/// Compares both backends; `max_ulps` 0 means bit-exact; a negative value -e means normwise
/// relative error <= e against the interpreter's fp64 reference mode (for kernels with float sum
/// reductions, whose order is free: the interpreter's sequential f32 sum is one valid order, not
/// the exact answer, and two valid orders of 4096 terms may differ by more than e).
void expect_same(const std::string &text, const std::string &kernel,
                 std::vector<HostTensor> tensors, std::vector<interp::ArgValue> scalars,
                 std::array<int64_t, 3> grid, double max_ulps = 0) {
  auto m = parse_ok(text);
  const ir::Kernel *k = m->find_kernel(kernel);
  ASSERT_TRUE(k);
  Outcome a = run_interpreter(*k, tensors, scalars, grid, /*fp64=*/max_ulps < 0);
  Outcome b = run_llvm(*m, *k, tensors, scalars, grid);
  ASSERT_EQ(a.error.empty(), b.error.empty())
      << "interpreter: " << a.error << "\nllvm-cpu: " << b.error;
  for (size_t t = 0; t < tensors.size(); ++t) {
    const HostTensor &x = a.tensors[t], &y = b.tensors[t];
    if (max_ulps < 0) {
      double num = 0, den = 0;
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        num += (x.get(i) - y.get(i)) * (x.get(i) - y.get(i));
        den += x.get(i) * x.get(i);
      }
      EXPECT_LE(std::sqrt(num / std::max(den, 1e-300)), -max_ulps) << kernel << " tensor " << t;
      continue;
    }
    if (max_ulps == 0) {
      for (int64_t i = 0; i < x.num_elements(); ++i) {
        if (std::isnan(x.get(i)) && std::isnan(y.get(i)))
          continue; // the sign and payload of a NaN are unspecified (tl/ir/ir.h)
        ASSERT_EQ(std::memcmp(x.data() + i * interp::element_size(x.dtype()),
                              y.data() + i * interp::element_size(x.dtype()),
                              interp::element_size(x.dtype())),
                  0)
            << kernel << " tensor " << t << " element " << i << ": " << x.get(i) << " vs "
            << y.get(i);
      }
      continue;
    }
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      const double u = x.get(i), v = y.get(i);
      if (std::isnan(u) && std::isnan(v))
        continue;
      const double ulp = std::abs(std::nextafter(float(u), INFINITY) - float(u));
      ASSERT_LE(std::abs(u - v), max_ulps * ulp) << kernel << " tensor " << t << " at " << i;
    }
  }
}

TEST(LlvmCpu, NarrowFloatDotsWithF32AccumulatorsAreBitExact) {
  // bf16 / f16 / f8 inputs with an f32 accumulator run the register-blocked micro-kernel (the
  // values are held as f32; the dots ask for order = "exact", so bit for bit is the contract),
  // as f32 inputs do: 29x40 @ 40x72 covers whole blocks (4x16 below AVX-512, 8x32 with it), the
  // columns right of them and the rows below them (1 or 5: the scalar loop), with a loop-carried
  // accumulator across two k blocks.
  for (const char *t : {"f32", "bf16", "f16", "f8e4m3", "f8e5m2"}) {
    SCOPED_TRACE(t);
    const std::string text = std::string(R"(
kernel @ndot(%a: tensor<?x?xT>, %b: tensor<?x?xT>, %c: tensor<?x?xf32>) {
  %z = constant {value = 0} : i32
  %k1 = constant {value = 40} : i32
  %x0 = load %a, %z, %z : tile<29x40xT>
  %y0 = load %b, %z, %z : tile<40x72xT>
  %d0 = dot %x0, %y0 {order = "exact", acc_type = f32} : tile<29x72xf32>
  %x1 = load %a, %z, %k1 : tile<29x40xT>
  %y1 = load %b, %k1, %z : tile<40x72xT>
  %d1 = dot %x1, %y1, %d0 {order = "exact", acc_type = f32} : tile<29x72xf32>
  store %c, %z, %z, %d1
  return
}
)");
    const std::string k = with_element_type(text, t);
    const ScalarKind kind = *ir::parse_scalar_name(t);
    std::mt19937_64 rng(31);
    expect_same(k, "ndot",
                {random_tensor(kind, {29, 80}, rng), random_tensor(kind, {80, 72}, rng),
                 HostTensor(ScalarKind::F32, {29, 72})},
                {}, {1, 1, 1});
  }
}

TEST(LlvmCpu, WideningCastsOfNarrowFloatTilesShareTheirStorage) {
  // A bf16 / f16 / fp8 tile is held as f32 values rounded to its type, so its cast to f32 is the
  // identity: the cast's tile shares the load's storage, and its loop only runs the reductions
  // planned into it (the max, min and sum of the one-row tiles: cpu.in_producer). Also a cast
  // of a tile computed per lane (the add, inlined into the cast: no storage to share) and of a
  // loop-carried tile. Fails if a reduction planned into the cast is skipped, the inlined
  // operand's storage is read (never written), or a shared tile is overwritten by a later op.
  for (const char *t : {"bf16", "f16", "f8e4m3"}) {
    SCOPED_TRACE(t);
    std::string k = R"(
kernel @widen(%x: tensor<?x?xT>, %mx: tensor<?xf32>, %o: tensor<?x?xf32>, %o2: tensor<?x?xf32>) {
  %p = program_id {axis = 0} : i32
  %z = constant {value = 0} : i32
  %v = load %x, %p, %z : tile<1x96xT>
  %c = cast %v : tile<1x96xf32>
  %m = reduce %c {axis = 1, kind = "max"} : tile<1xf32>
  store %mx, %p, %m
  %me = expand_dims %m {axis = 1} : tile<1x1xf32>
  %mb = broadcast %me : tile<1x96xf32>
  %d = sub %c, %mb : tile<1x96xf32>
  store %o, %p, %z, %d
  %a = add %v, %v : tile<1x96xT>
  %ca = cast %a : tile<1x96xf32>
  %sa = reduce %ca {axis = 1, kind = "sum"} : tile<1xf32>
  %one = constant {value = 1} : i32
  %two = constant {value = 2} : i32
  %acc = for %i = %z to %two step %one iter_args(%t = %v) : tile<1x96xT> {
    %u = add %t, %v : tile<1x96xT>
    yield %u
  }
  %cc = cast %acc : tile<1x96xf32>
  %sc = reduce %cc {axis = 1, kind = "min"} : tile<1xf32>
  %s = add %ca, %cc : tile<1x96xf32>
  %se = expand_dims %sa {axis = 1} : tile<1x1xf32>
  %sb = broadcast %se : tile<1x96xf32>
  %ce = expand_dims %sc {axis = 1} : tile<1x1xf32>
  %cb = broadcast %ce : tile<1x96xf32>
  %s2 = add %s, %sb : tile<1x96xf32>
  %s3 = add %s2, %cb : tile<1x96xf32>
  store %o2, %p, %z, %s3
  return
}
)";
    k = with_element_type(k, t);
    const ScalarKind kind = *ir::parse_scalar_name(t);
    std::mt19937_64 rng(41);
    expect_same(k, "widen",
                {random_tensor(kind, {3, 96}, rng), HostTensor(ScalarKind::F32, {3}),
                 HostTensor(ScalarKind::F32, {3, 96}), HostTensor(ScalarKind::F32, {3, 96})},
                {}, {3, 1, 1});
  }
}

TEST(LlvmCpu, LibraryKernelsMatchTheInterpreterOnRaggedShapes) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 3; ++trial) {
    const int64_t n = std::uniform_int_distribution<int64_t>(1, 3000)(rng);
    expect_same(read_kernel("vector_add.tlir"), "vector_add",
                {random_tensor(ScalarKind::F32, {n}, rng), random_tensor(ScalarKind::F32, {n}, rng),
                 HostTensor(ScalarKind::F32, {n})},
                {}, {(n + 255) / 256, 1, 1});
    const int64_t M = 1 + rng() % 90, N = 1 + rng() % 90, K = 1 + rng() % 70;
    expect_same(read_kernel("gemm.tlir"), "gemm",
                {random_tensor(ScalarKind::F32, {M, K}, rng),
                 random_tensor(ScalarKind::F32, {K, N}, rng), HostTensor(ScalarKind::F32, {M, N})},
                {}, {(M + 31) / 32, (N + 31) / 32, 1});
    // The CPU-tuned GEMM: full 8x32 micro-kernel blocks plus ragged remainders.
    const int64_t M2 = 100 + rng() % 200, N2 = 100 + rng() % 200, K2 = 1 + rng() % 150;
    expect_same(read_kernel("gemm_cpu.tlir"), "gemm_cpu",
                {random_tensor(ScalarKind::F32, {M2, K2}, rng),
                 random_tensor(ScalarKind::F32, {K2, N2}, rng),
                 HostTensor(ScalarKind::F32, {M2, N2})},
                {}, {(M2 + 127) / 128, (N2 + 127) / 128, 1});
    // The GPU-tuned GEMM (128x64 tiles, K in chunks of 1024): the last trial crosses a chunk.
    const int64_t M3 = 1 + rng() % 200, N3 = 1 + rng() % 150,
                  K3 = trial == 2 ? 1025 + rng() % 100 : 1 + rng() % 200;
    expect_same(read_kernel("gemm_nvptx.tlir"), "gemm_nvptx",
                {random_tensor(ScalarKind::F32, {M3, K3}, rng),
                 random_tensor(ScalarKind::F32, {K3, N3}, rng),
                 HostTensor(ScalarKind::F32, {M3, N3})},
                {}, {(M3 + 127) / 128, (N3 + 63) / 64, 1});
    const int64_t rows_cpu = 1 + rng() % 5, cols_cpu = 1 + rng() % 4096;
    // the op library's one-pass softmax (generated from python/tl/ops/rows.py)
    expect_same(read_kernel("../ops/softmax_onepass4096_f32.tlir"), "softmax_onepass4096_f32",
                {random_tensor(ScalarKind::F32, {rows_cpu, cols_cpu}, rng),
                 HostTensor(ScalarKind::F32, {rows_cpu, cols_cpu})},
                {}, {rows_cpu, 1, 1}, /*normwise=*/-1e-6);
    const int64_t n_cpu = 1 + rng() % 20000;
    expect_same(read_kernel("vector_add_cpu.tlir"), "vector_add_cpu",
                {random_tensor(ScalarKind::F32, {n_cpu}, rng),
                 random_tensor(ScalarKind::F32, {n_cpu}, rng),
                 HostTensor(ScalarKind::F32, {n_cpu})},
                {}, {(n_cpu + 8191) / 8192, 1, 1});
    const int64_t rows = 1 + rng() % 9, cols = 1 + rng() % 400;
    expect_same(read_kernel("softmax.tlir"), "softmax",
                {random_tensor(ScalarKind::F32, {rows, cols}, rng),
                 HostTensor(ScalarKind::F32, {rows, cols})},
                {}, {rows, 1, 1}, /*normwise=*/-1e-6);
  }
}

const char *kIntOps = R"(
kernel @int_ops(%a: tensor<?xi32>, %b: tensor<?xi32>, %o: tensor<?xi32>, %u: tensor<?xu16>, %ou: tensor<?xu16>) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %two = constant {value = 2} : i32
  %three = constant {value = 3} : i32
  %x = load %a, %z : tile<64xi32>
  %y0 = load %b, %z {padding = 7} : tile<64xi32>
  %zero = full {value = 0} : tile<64xi32>
  %isz = cmp %y0, %zero {pred = "eq"} : tile<64xi1>
  %sev = full {value = 7} : tile<64xi32>
  %y = select %isz, %sev, %y0 : tile<64xi32>
  %r0 = add %x, %y : tile<64xi32>
  %r1 = mul %x, %y : tile<64xi32>
  %r2 = div %x, %y : tile<64xi32>
  %r3 = rem %x, %y : tile<64xi32>
  %r4 = shl %x, %y : tile<64xi32>
  %r5 = shr %x, %y : tile<64xi32>
  %r6 = max %x, %y : tile<64xi32>
  %r7 = xor %x, %y : tile<64xi32>
  %r8 = abs %x : tile<64xi32>
  %r9 = neg %y : tile<64xi32>
  %c8 = cast %x : tile<64xi8>
  %r10 = cast %c8 : tile<64xi32>
  %lt = cmp %x, %y {pred = "lt"} : tile<64xi1>
  %r11 = cast %lt : tile<64xi32>
  %off_o_z = constant {value = 0} : i32
  store %o, %off_o_z, %r0
  %off_o_one = constant {value = 64} : i32
  store %o, %off_o_one, %r1
  %off_o_two = constant {value = 128} : i32
  store %o, %off_o_two, %r2
  %off_o_three = constant {value = 192} : i32
  store %o, %off_o_three, %r3
  %c4 = constant {value = 4} : i32
  %c5 = constant {value = 5} : i32
  %c6 = constant {value = 6} : i32
  %c7 = constant {value = 7} : i32
  %c8i = constant {value = 8} : i32
  %c9 = constant {value = 9} : i32
  %c10 = constant {value = 10} : i32
  %c11 = constant {value = 11} : i32
  %off_o_c4 = constant {value = 256} : i32
  store %o, %off_o_c4, %r4
  %off_o_c5 = constant {value = 320} : i32
  store %o, %off_o_c5, %r5
  %off_o_c6 = constant {value = 384} : i32
  store %o, %off_o_c6, %r6
  %off_o_c7 = constant {value = 448} : i32
  store %o, %off_o_c7, %r7
  %off_o_c8i = constant {value = 512} : i32
  store %o, %off_o_c8i, %r8
  %off_o_c9 = constant {value = 576} : i32
  store %o, %off_o_c9, %r9
  %off_o_c10 = constant {value = 640} : i32
  store %o, %off_o_c10, %r10
  %off_o_c11 = constant {value = 704} : i32
  store %o, %off_o_c11, %r11
  %ut = load %u, %z : tile<64xu16>
  %us = sub %ut, %ut : tile<64xu16>
  %um = mul %ut, %ut : tile<64xu16>
  %ud = sub %us, %um : tile<64xu16>
  %umin = min %ut, %ud : tile<64xu16>
  %uc = cmp %ud, %ut {pred = "gt"} : tile<64xi1>
  %us2 = select %uc, %ud, %umin : tile<64xu16>
  %uq = shr %ud, %ut : tile<64xu16>
  %off_ou_z = constant {value = 0} : i32
  store %ou, %off_ou_z, %us2
  %off_ou_one = constant {value = 64} : i32
  store %ou, %off_ou_one, %uq
  return
}
)";

TEST(LlvmCpu, IntegerOpsAreBitExact) {
  std::mt19937_64 rng(5);
  expect_same(kIntOps, "int_ops",
              {random_tensor(ScalarKind::I32, {64}, rng), random_tensor(ScalarKind::I32, {50}, rng),
               HostTensor(ScalarKind::I32, {12 * 64}), random_tensor(ScalarKind::U16, {64}, rng),
               HostTensor(ScalarKind::U16, {2 * 64})},
              {}, {1, 1, 1});
}

const char *kFloatAndShapeOps = R"(
kernel @float_ops(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>, %d: tensor<?x?xf64>, %i: tensor<?x?xi32>) {
  %z = constant {value = 0} : i32
  %p = program_id {axis = 0} : i32
  %c8 = constant {value = 8} : i32
  %r0 = mul %p, %c8 : i32
  %t = load %x, %r0, %z {padding = 1.5} : tile<8x16xf32>
  %tt = transpose %t {perm = [1, 0]} : tile<16x8xf32>
  %col = reduce %t {axis = 1, kind = "sum"} : tile<8xf32>
  %ce = expand_dims %col {axis = 1} : tile<8x1xf32>
  %cb = broadcast %ce : tile<8x16xf32>
  %q = div %t, %cb : tile<8x16xf32>
  %f = fma %t, %q, %cb : tile<8x16xf32>
  %mx = max %f, %t : tile<8x16xf32>
  %s = sqrt %mx : tile<8x16xf32>
  %dot0 = dot %t, %tt {order = "exact", acc_type = f32} : tile<8x8xf32>
  %dot1 = dot %t, %tt, %dot0 {order = "exact", acc_type = f32, input_precision = "tf32"} : tile<8x8xf32>
  %dot = dot %t, %tt, %dot1 {order = "exact", acc_type = f32, input_precision = "bf16"} : tile<8x8xf32>
  %dr = reshape %dot : tile<4x16xf32>
  %am = reduce %t {axis = 1, kind = "argmax"} : tile<8xi32>
  %amx = reduce %t {axis = 0, kind = "min"} : tile<16xf32>
  %sc = scan %t {axis = 1, kind = "sum", order = "exact"} : tile<8x16xf32>
  %w = cast %sc : tile<8x16xf64>
  %ww = mul %w, %w : tile<8x16xf64>
  %neg = cast %q {rounding = "rne"} : tile<8x16xi32>
  store %o, %r0, %z, %s
  %c100 = constant {value = 100} : i32
  store %o, %c100, %z, %sc
  store %d, %r0, %z, %ww
  store %i, %r0, %z, %neg
  %e2 = expand_dims %am {axis = 1} : tile<8x1xi32>
  %c20 = constant {value = 20} : i32
  store %i, %r0, %c20, %e2
  %dd = expand_dims %amx {axis = 0} : tile<1x16xf32>
  %c200 = constant {value = 200} : i32
  store %o, %c200, %p, %dd
  %c300 = constant {value = 300} : i32
  store %o, %c300, %r0, %dr
  return
}
)";

TEST(LlvmCpu, FloatReductionShapeOpsAndRaggedEdgesAreBitExact) {
  std::mt19937_64 rng(9);
  const int64_t R = 21, C = 13;
  expect_same(kFloatAndShapeOps, "float_ops",
              {random_tensor(ScalarKind::F32, {R, C}, rng), HostTensor(ScalarKind::F32, {310, 40}),
               HostTensor(ScalarKind::F64, {R, C}), HostTensor(ScalarKind::I32, {R, 30})},
              {}, {(R + 7) / 8, 1, 1});
}

// sum, max and min down the middle axis of a tile in memory (lower_column_reduce: 4, 2 or 1
// vectors of running values a block of columns), bit for bit against the interpreter: f32 and
// i32 tiles of (2, 7, C) with C = 64 (four 16-lane vectors a block), 96 (two), 48 (one) and 40
// (no whole vector: lane by lane), the f32 ones with NaNs and infinities among them. Fails if a
// block's columns are misplaced, the second outer slice reads the first's rows, a kind starts
// from the wrong identity, max or min drops a NaN, or a sum is reordered (f32, bitwise).
TEST(LlvmCpu, ColumnReductionsInRegistersAreBitExact) {
  for (const char *type : {"f32", "i32"})
    for (int64_t c : {64, 96, 48, 40}) {
      SCOPED_TRACE(std::string(type) + " " + std::to_string(c));
      const std::string t = type, n = std::to_string(c);
      const std::string text = R"(
kernel @columns(%x: tensor<?x?x?x)" +
                               t + R"(>, %s: tensor<?x?x)" + t + R"(>, %m: tensor<?x?x)" + t +
                               R"(>, %n: tensor<?x?x)" + t + R"(>) {
  %z = constant {value = 0} : i32
  %a = load %x, %z, %z, %z : tile<2x7x)" +
                               n + "x" + t + R"(>
  %sum = reduce %a {axis = 1, kind = "sum"} : tile<2x)" +
                               n + "x" + t + R"(>
  %max = reduce %a {axis = 1, kind = "max"} : tile<2x)" +
                               n + "x" + t + R"(>
  %min = reduce %a {axis = 1, kind = "min"} : tile<2x)" +
                               n + "x" + t + R"(>
  store %s, %z, %z, %sum
  store %m, %z, %z, %max
  store %n, %z, %z, %min
  return
}
)";
      const ScalarKind k = t == "f32" ? ScalarKind::F32 : ScalarKind::I32;
      std::mt19937_64 rng(c);
      HostTensor x = random_tensor(k, {2, 7, c}, rng);
      if (k == ScalarKind::F32) {
        x.set(5, NAN);         // slice 0, row 0
        x.set(7 * c + 3, NAN); // slice 1, row 0
        x.set(2 * c + 9, INFINITY);
        x.set(9 * c + 11, -INFINITY);
      }
      expect_same(text, "columns",
                  {x, HostTensor(k, {2, c}), HostTensor(k, {2, c}), HostTensor(k, {2, c})}, {},
                  {1, 1, 1});
    }
}

// Full reductions in lane loops that run in chunks of 64 lanes, fetching the next rows (a load
// view of a 1024-lane row per program, 3 programs): each lane of a chunk keeps a running value,
// combined in halves after the loop (reduce_lanes). Exact: i32 sum and max of a product kept in
// memory (reduced in its producer's loop), f32 max and min of a sum with NaNs, infinities and
// signed zeros in some rows; normwise: an f32 sum in the producer's loop and a sum of
// exponentials computed in the reduction's own loop. Fails if a chunk's lanes fall into the
// wrong running values, a half is skipped in the final combination, the running values start
// from anything but the identity, or a NaN is lost.
TEST(LlvmCpu, ChunkedLaneReductionsMatchTheInterpreter) {
  const char *exact = R"(
kernel @chunked(%x: tensor<?x?xi32>, %f: tensor<?x?xf32>, %y: tensor<?x?xi32>, %g: tensor<?x?xf32>, %si: tensor<?xi32>, %mi: tensor<?xi32>, %mf: tensor<?xf32>, %nf: tensor<?xf32>) {
  %p = program_id {axis = 0} : i32
  %z = constant {value = 0} : i32
  %a = load %x, %p, %z : tile<1x1024xi32>
  %b = mul %a, %a : tile<1x1024xi32>
  %s = reduce %b {axis = 1, kind = "sum"} : tile<1xi32>
  %m = reduce %b {axis = 1, kind = "max"} : tile<1xi32>
  store %y, %p, %z, %b
  store %si, %p, %s
  store %mi, %p, %m
  %v = load %f, %p, %z : tile<1x1024xf32>
  %w = add %v, %v : tile<1x1024xf32>
  %wm = reduce %w {axis = 1, kind = "max"} : tile<1xf32>
  %wn = reduce %w {axis = 1, kind = "min"} : tile<1xf32>
  store %g, %p, %z, %w
  store %mf, %p, %wm
  store %nf, %p, %wn
  return
}
)";
  std::mt19937_64 rng(33);
  HostTensor x = random_tensor(ScalarKind::I32, {3, 1024}, rng);
  HostTensor f = random_tensor(ScalarKind::F32, {3, 1024}, rng);
  set_special_rows(f, /*nan=*/1, /*inf=*/2, /*zeros=*/0);
  auto f32 = [](int64_t n) { return HostTensor(ScalarKind::F32, {n}); };
  auto i32 = [](int64_t n) { return HostTensor(ScalarKind::I32, {n}); };
  expect_same(exact, "chunked",
              {x, f, HostTensor(ScalarKind::I32, {3, 1024}), HostTensor(ScalarKind::F32, {3, 1024}),
               i32(3), i32(3), f32(3), f32(3)},
              {}, {3, 1, 1});

  const char *sums = R"(
kernel @sums(%f: tensor<?x?xf32>, %g: tensor<?x?xf32>, %s: tensor<?xf32>, %e: tensor<?xf32>) {
  %p = program_id {axis = 0} : i32
  %z = constant {value = 0} : i32
  %v = load %f, %p, %z : tile<1x1024xf32>
  %w = add %v, %v : tile<1x1024xf32>
  %ws = reduce %w {axis = 1, kind = "sum"} : tile<1xf32>
  store %g, %p, %z, %w
  store %s, %p, %ws
  %n = neg %v : tile<1x1024xf32>
  %x = exp %n : tile<1x1024xf32>
  %xs = reduce %x {axis = 1, kind = "sum"} : tile<1xf32>
  store %e, %p, %xs
  return
}
)";
  HostTensor v(ScalarKind::F32, {3, 1024});
  std::uniform_real_distribution<double> u(-20.0, 20.0);
  for (int64_t i = 0; i < v.num_elements(); ++i)
    v.set(i, u(rng));
  expect_same(sums, "sums", {v, HostTensor(ScalarKind::F32, {3, 1024}), f32(3), f32(3)}, {},
              {3, 1, 1}, -1e-6);
}

// Reductions along the rows of 4 x 1024 and 6 x 1024 blocks (gemv's and tl.ops' row sums and
// maxima): each row a fetching chunk loop of running values per lane, combined in halves (session
// 34). Exact for i32 sums and f32 maxima and minima (NaN, infinities, zeros of both signs),
// normwise 1e-6 against fp64 for f32 sums and a gemv (a row broadcast inlined into the product).
// Fails if rows share or skip running values (a row's sum landing in another's), if a row's partial
// values do not start from the identity, or if the broadcast row is read at the wrong column.
TEST(LlvmCpu, RowReductionsMatchTheInterpreter) {
  // 4 rows a program (one group side by side, kJamRows) and 6 (a group and two left over:
  // fails if those are skipped or read at the wrong offset).
  std::mt19937_64 rng(34);
  auto f32 = [](int64_t n) { return HostTensor(ScalarKind::F32, {n}); };
  for (int64_t rows : {4, 6}) {
    SCOPED_TRACE(rows);
    std::string exact = R"(
kernel @rows(%x: tensor<?x?xi32>, %f: tensor<?x?xf32>, %si: tensor<?xi32>, %mf: tensor<?xf32>, %nf: tensor<?xf32>) {
  %p = program_id {axis = 0} : i32
  %rows = constant {value = R} : i32
  %r = mul %p, %rows : i32
  %z = constant {value = 0} : i32
  %a = load %x, %r, %z : tile<Rx1024xi32>
  %s = reduce %a {axis = 1, kind = "sum"} : tile<Rxi32>
  store %si, %r, %s
  %v = load %f, %r, %z : tile<Rx1024xf32>
  %m = reduce %v {axis = 1, kind = "max"} : tile<Rxf32>
  %n = reduce %v {axis = 1, kind = "min"} : tile<Rxf32>
  store %mf, %r, %m
  store %nf, %r, %n
  return
}
)";
    for (const char *mark : {"<R", "= R}"})
      for (size_t at; (at = exact.find(mark)) != std::string::npos;)
        exact.replace(at + std::string(mark).find('R'), 1, std::to_string(rows));
    HostTensor x = random_tensor(ScalarKind::I32, {12, 1024}, rng);
    HostTensor f = random_tensor(ScalarKind::F32, {12, 1024}, rng);
    set_special_rows(f, /*nan=*/5, /*inf=*/9, /*zeros=*/2);
    expect_same(exact, "rows", {x, f, HostTensor(ScalarKind::I32, {12}), f32(12), f32(12)}, {},
                {12 / rows, 1, 1});
  }

  const char *sums = R"(
kernel @gemv(%a: tensor<?x?xf32>, %w: tensor<?xf32>, %s: tensor<?xf32>, %y: tensor<?xf32>) {
  %p = program_id {axis = 0} : i32
  %eight = constant {value = 8} : i32
  %r = mul %p, %eight : i32
  %z = constant {value = 0} : i32
  %t = load %a, %r, %z : tile<8x1024xf32>
  %rs = reduce %t {axis = 1, kind = "sum"} : tile<8xf32>
  store %s, %r, %rs
  %v = load %w, %z : tile<1024xf32>
  %ve = expand_dims %v {axis = 0} : tile<1x1024xf32>
  %vb = broadcast %ve : tile<8x1024xf32>
  %pr = mul %t, %vb : tile<8x1024xf32>
  %d = reduce %pr {axis = 1, kind = "sum"} : tile<8xf32>
  store %y, %r, %d
  return
}
)";
  HostTensor a(ScalarKind::F32, {24, 1024}), w(ScalarKind::F32, {1024});
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  for (int64_t i = 0; i < a.num_elements(); ++i)
    a.set(i, u(rng));
  for (int64_t i = 0; i < w.num_elements(); ++i)
    w.set(i, i % 7 == 0 ? 100.0 + i : u(rng)); // a wrong column is far off
  expect_same(sums, "gemv", {a, w, f32(24), f32(24)}, {}, {3, 1, 1}, -1e-6);
}

// A float sum scan along rows in the default order (lower_row_scan_steps: 16 columns in log
// steps, 4 rows together, each row's total carried), against the interpreter's fp64 running
// sums, normwise: 6 rows (a group of 4 and one of 2) of 16, 100 (4 columns past the last whole
// vector) and 1000, values of magnitudes 2^-20 to 2^20. Fails if a vector's carry is dropped or
// taken from another row, a step is missing, the second group or the ragged columns are skipped.
TEST(LlvmCpu, RowScanInAnyOrderIsWithinTheBound) {
  for (int64_t len : {16, 100, 1000}) {
    SCOPED_TRACE(len);
    const std::string n = std::to_string(len);
    const std::string text = R"(
kernel @row_scan(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z, %z {padding = 0.0} : tile<6x)" +
                             n + R"(xf32>
  %s = scan %t {axis = 1, kind = "sum"} : tile<6x)" +
                             n + R"(xf32>
  store %o, %z, %z, %s
  return
}
)";
    std::mt19937_64 rng(len);
    HostTensor x(ScalarKind::F32, {6, len});
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int64_t i = 0; i < 6 * len; ++i)
      x.set(i, u(rng) * std::ldexp(1.0, int(rng() % 41) - 20));
    expect_same(text, "row_scan", {x, HostTensor(ScalarKind::F32, {6, len})}, {}, {1, 1, 1}, -1e-6);
  }
}

// argmax along rows of f32 (lower_row_argmax: 16 columns a step into 4 running maxima, the
// maxima and lanes combined, then the columns past the last whole step one by one), against the
// interpreter's scalar first maximum: rows of 100 (6 whole steps: one group of 4, 2 steps
// left over, 4 columns of tail) and 1000, values drawn from a few levels so that most rows tie,
// with NaNs, infinities and signed zeros among them. Fails if a tie goes to a later column, a NaN
// is not the largest value (or not its first), the left-over steps or the tail are skipped, or
// a lane's column is off by its step.
TEST(LlvmCpu, RowArgmaxIsTheFirstMaximum) {
  for (int64_t len : {100, 1000}) {
    SCOPED_TRACE(len);
    const std::string n = std::to_string(len);
    const std::string text = R"(
kernel @row_argmax(%x: tensor<?x?xf32>, %i: tensor<?x?xi32>) {
  %z = constant {value = 0} : i32
  %p = program_id {axis = 0} : i32
  %c4 = constant {value = 4} : i32
  %r0 = mul %p, %c4 : i32
  %t = load %x, %r0, %z {padding = 0.0} : tile<4x)" +
                             n + R"(xf32>
  %am = reduce %t {axis = 1, kind = "argmax"} : tile<4xi32>
  %e = expand_dims %am {axis = 1} : tile<4x1xi32>
  store %i, %r0, %z, %e
  return
}
)";
    std::mt19937_64 rng(len);
    const int64_t rows = 64;
    HostTensor x(ScalarKind::F32, {rows, len});
    const double levels[] = {-1.0, 0.0, -0.0, 1.0, 2.0, INFINITY, -INFINITY, NAN};
    for (int64_t r = 0; r < rows; ++r) {
      // row r: values from the first 2 + r % 7 levels, mostly the lowest ones
      const int kinds = 2 + int(r % 7);
      for (int64_t c = 0; c < len; ++c) {
        const int l = rng() % 16 == 0 ? int(rng() % kinds) : int(rng() % 2);
        x.set(r * len + c, levels[l]);
      }
    }
    expect_same(text, "row_argmax", {x, HostTensor(ScalarKind::I32, {rows, 1})}, {},
                {rows / 4, 1, 1});
  }
}

// A reduction along rows reading row and column broadcasts and a column mask inside its loop
// (plan_inlining.h: var's sum((x - mean[:, None])^2) with 8 rows a program, and a (1, C) weight
// row): sum over c < n of ((x[r, c] - max_r) w[c])^2, on small integers, so every order of the
// sum is exact and the comparison bit-exact. The tensor has 90 columns (the tile's last 10 are
// padding) and n = 83. Fails if a lane reads the broadcast at its flat index instead of its row
// (or column), the mask at the row, or if d * d reads two different lanes.
TEST(LlvmCpu, RowReductionOfRowAndColumnBroadcastsIsExact) {
  const char *text = R"(
kernel @masked_rows(%x: tensor<?x?xf32>, %w: tensor<?xf32>, %o: tensor<?x?xf32>, %n: i32) {
  %z = constant {value = 0} : i32
  %p = program_id {axis = 0} : i32
  %c8 = constant {value = 8} : i32
  %r0 = mul %p, %c8 : i32
  %t = load %x, %r0, %z {padding = 0.0} : tile<8x100xf32>
  %m = reduce %t {axis = 1, kind = "max"} : tile<8xf32>
  %wt = load %w, %z {padding = 0.0} : tile<100xf32>
  %me = expand_dims %m {axis = 1} : tile<8x1xf32>
  %mb = broadcast %me : tile<8x100xf32>
  %d = sub %t, %mb : tile<8x100xf32>
  %we = expand_dims %wt {axis = 0} : tile<1x100xf32>
  %wb = broadcast %we : tile<8x100xf32>
  %pw = mul %d, %wb : tile<8x100xf32>
  %ar = arange {end = 100, start = 0} : tile<100xi32>
  %ns = splat %n : tile<100xi32>
  %mk = cmp %ar, %ns {pred = "lt"} : tile<100xi1>
  %mke = expand_dims %mk {axis = 0} : tile<1x100xi1>
  %mkb = broadcast %mke : tile<8x100xi1>
  %zero = full {value = 0.0} : tile<8x100xf32>
  %s = select %mkb, %pw, %zero : tile<8x100xf32>
  %q = mul %s, %s : tile<8x100xf32>
  %r = reduce %q {axis = 1, kind = "sum"} : tile<8xf32>
  %re = expand_dims %r {axis = 1} : tile<8x1xf32>
  store %o, %r0, %z, %re
  return
}
)";
  std::mt19937_64 rng(21);
  const int64_t rows = 64, cols = 90;
  HostTensor x(ScalarKind::F32, {rows, cols}), w(ScalarKind::F32, {cols});
  for (int64_t i = 0; i < x.num_elements(); ++i)
    x.set(i, double(int(rng() % 7) - 3));
  for (int64_t i = 0; i < w.num_elements(); ++i)
    w.set(i, double(int(rng() % 5) - 2));
  expect_same(text, "masked_rows", {x, w, HostTensor(ScalarKind::F32, {rows, 1})}, {int64_t(83)},
              {rows / 8, 1, 1});
}

// Transposes in 8 x 8 register blocks (rank 2, and the last two axes of rank 3 with the batch
// axis kept; i32 too) and fused stores whose blocks are rows of a wider tensor (RoPE's half rows,
// a concat's row slices): the stores into columns 8.. of %o and %w are row-strided, the ragged
// last program (rows 16..20 of 21) and the 2 x 8 x 8 block (its batch stride is not 8 rows)
// take the unfused path; 8 x 1 and 1 x 8 x 1 blocks (trailing dimensions of extent 1) are copied
// as strided rows of their 8-long dimension, ragged in the last program. A wrong shuffle mask,
// row stride or trailing offset moves elements.
const char *kTransposeAndStridedRows = R"(
kernel @tr(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>, %i: tensor<?x?x?xi32>, %w: tensor<?x?x?xi32>) {
  %z = constant {value = 0} : i32
  %p = program_id {axis = 0} : i32
  %c8 = constant {value = 8} : i32
  %r0 = mul %p, %c8 : i32
  %t = load %x, %r0, %z : tile<8x16xf32>
  %tt = transpose %t {perm = [1, 0]} : tile<16x8xf32>
  %c24 = constant {value = 24} : i32
  store %o, %z, %r0, %tt
  %h = load %x, %r0, %c8 : tile<8x8xf32>
  %two = full {value = 2.0} : tile<8x8xf32>
  %hh = mul %h, %two : tile<8x8xf32>
  store %o, %r0, %c24, %hh
  %b = load %i, %z, %r0, %z : tile<2x8x16xi32>
  %bt = transpose %b {perm = [0, 2, 1]} : tile<2x16x8xi32>
  store %w, %z, %z, %r0, %bt
  %b2 = load %i, %z, %r0, %c8 : tile<2x8x8xi32>
  %c40 = constant {value = 40} : i32
  store %w, %z, %r0, %c40, %b2
  %one = constant {value = 1} : i32
  %b3 = load %i, %one, %r0, %c8 : tile<1x8x8xi32>
  %c48 = constant {value = 48} : i32
  store %w, %z, %r0, %c48, %b3
  %col = load %x, %r0, %c8 : tile<8x1xf32>
  %c32 = constant {value = 32} : i32
  store %o, %r0, %c32, %col
  %c3 = load %i, %one, %r0, %c8 : tile<1x8x1xi32>
  %c4 = add %c3, %c3 : tile<1x8x1xi32>
  %c55 = constant {value = 55} : i32
  store %w, %one, %r0, %c55, %c4
  return
}
)";

TEST(LlvmCpu, TransposesAndRowStridedFusedStoresAreBitExact) {
  std::mt19937_64 rng(11);
  const int64_t R = 21;
  expect_same(kTransposeAndStridedRows, "tr",
              {random_tensor(ScalarKind::F32, {R, 16}, rng), HostTensor(ScalarKind::F32, {R, 40}),
               random_tensor(ScalarKind::I32, {2, R, 16}, rng),
               HostTensor(ScalarKind::I32, {2, R, 56})},
              {}, {(R + 7) / 8, 1, 1});
}

// Transposes from tensor to tensor (cpu-direct-transposes): a load, its transpose and the store
// of the result, through reshapes. f32 16 x 32 blocks (16 x 16 register blocks with AVX-512)
// of a 40-row tensor: programs 0 and 1 go straight from x to o, program 2's rows 32..47 are
// ragged (the load padded, the store masked: both copies). An i8 16 x 16 diagonal block of s
// transposed in place: source and destination overlap, so the block must be read whole before
// it is written (the direct path, four 8 x 8 register blocks, would overwrite rows 8..15 of
// columns 0..7 before reading them). f64 8 x 16 blocks stored
// through a reshape into a rank-3 tensor. Catches: a wrong lane mask of the 16 x 16 network, a
// row stride of the tile used for the tensor's (or the reverse), the overlap not detected, a
// ragged block written or read past the tensor's edge.
const char *kDirectTransposes = R"(
kernel @dtr(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>, %s: tensor<?x?xi8>, %d: tensor<?x?xf64>, %e: tensor<?x?x?xf64>) {
  %z = constant {value = 0} : i32
  %p = program_id {axis = 0} : i32
  %c16 = constant {value = 16} : i32
  %r16 = mul %p, %c16 : i32
  %t = load %x, %r16, %z : tile<16x32xf32>
  %t3 = reshape %t : tile<1x16x32xf32>
  %t2 = reshape %t3 : tile<16x32xf32>
  %tt = transpose %t2 {perm = [1, 0]} : tile<32x16xf32>
  store %o, %z, %r16, %tt
  %b = load %s, %r16, %r16 : tile<16x16xi8>
  %bt = transpose %b {perm = [1, 0]} : tile<16x16xi8>
  store %s, %r16, %r16, %bt
  %c8 = constant {value = 8} : i32
  %r8 = mul %p, %c8 : i32
  %f = load %d, %r8, %z : tile<8x16xf64>
  %ft = transpose %f {perm = [1, 0]} : tile<16x8xf64>
  %f3 = reshape %ft : tile<1x16x8xf64>
  store %e, %z, %z, %r8, %f3
  return
}
)";

TEST(LlvmCpu, DirectTransposesAreBitExact) {
  std::mt19937_64 rng(12);
  const int64_t R = 40;
  expect_same(kDirectTransposes, "dtr",
              {random_tensor(ScalarKind::F32, {R, 32}, rng), HostTensor(ScalarKind::F32, {32, R}),
               random_tensor(ScalarKind::I8, {48, 48}, rng),
               random_tensor(ScalarKind::F64, {R, 16}, rng),
               HostTensor(ScalarKind::F64, {1, 16, 24})},
              {}, {(R + 15) / 16, 1, 1});
}

// Transposes whose columns are an odd multiple of 8 (16 x 16 blocks, then a 16 x 8 block) and
// of 16-bit integers (with AVX-512BW 32 x 32 blocks of pairs, then 32 x 8), between tiles (the
// sums read them) and tensor to tensor (cache-sized: plain stores), against the interpreter.
// Catches the last 8 columns' rows misplaced or their halves swapped, and the pairs of 16-bit
// rows interleaved in the wrong order.
const char *kOddGroupTransposes = R"(
kernel @ogt(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>, %h: tensor<?x?xi16>, %p: tensor<?x?xi16>,
            %d: tensor<?x?xf32>, %e: tensor<?x?xi16>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z, %z : tile<16x24xf32>
  %tt = transpose %t {perm = [1, 0]} : tile<24x16xf32>
  %t2 = add %tt, %tt : tile<24x16xf32>
  store %o, %z, %z, %t2
  %a = load %h, %z, %z : tile<32x40xi16>
  %at = transpose %a {perm = [1, 0]} : tile<40x32xi16>
  %a2 = add %at, %at : tile<40x32xi16>
  store %p, %z, %z, %a2
  %f = load %x, %z, %z : tile<16x24xf32>
  %ft = transpose %f {perm = [1, 0]} : tile<24x16xf32>
  store %d, %z, %z, %ft
  %g = load %h, %z, %z : tile<32x40xi16>
  %gt = transpose %g {perm = [1, 0]} : tile<40x32xi16>
  store %e, %z, %z, %gt
  return
}
)";

TEST(LlvmCpu, TransposesOfOddGroupsOfEightAreBitExact) {
  std::mt19937_64 rng(42);
  expect_same(kOddGroupTransposes, "ogt",
              {random_tensor(ScalarKind::F32, {16, 24}, rng), HostTensor(ScalarKind::F32, {24, 16}),
               random_tensor(ScalarKind::I16, {32, 40}, rng), HostTensor(ScalarKind::I16, {40, 32}),
               HostTensor(ScalarKind::F32, {24, 16}), HostTensor(ScalarKind::I16, {40, 32})},
              {}, {1, 1, 1});
}

/// The streamed-transpose tests' kernel: program p transposes the 64 x `cols` block of x
/// (`type`) at rows 64 p into the output's columns 64 p ...
std::unique_ptr<tl::llvm_cpu::LoadedProgram> transpose_blocks_program(const std::string &type,
                                                                      int64_t cols) {
  const std::string c = std::to_string(cols);
  const std::string text = "kernel @tr(%x: tensor<?x?x" + type + ">, %o: tensor<?x?x" + type +
                           R"(>) {
  %pm = program_id {axis = 0} : i32
  %b = constant {value = 64} : i32
  %z = constant {value = 0} : i32
  %m0 = mul %pm, %b : i32
  %t = load %x, %m0, %z : tile<64x)" +
                           c + "x" + type + R"(>
  %tt = transpose %t {perm = [1, 0]} : tile<)" +
                           c + "x64x" + type + R"(>
  store %o, %z, %m0, %tt
  return
}
)";
  auto m = parse_ok(text);
  std::string error;
  auto prog = compile_and_load(*m, CompileOptions{}, &error);
  EXPECT_TRUE(prog) << error;
  return prog;
}

/// Runs transpose_blocks_program over x (rows x cols) into `out` (cols x rows, rows apart), then
/// checks every element and the sentinels after it and (`before`) before it.
template <class T>
void expect_transposed_blocks(const tl::llvm_cpu::LoadedProgram &prog, std::vector<T> &x,
                              int64_t rows, int64_t cols, T *out, T sentinel, bool before) {
  std::vector<tl_cpu_arg> args(2);
  args[0] = {x.data(), {rows, cols}, {cols, 1}, 0, 0.0};
  args[1] = {out, {cols, rows}, {rows, 1}, 0, 0.0};
  ASSERT_EQ(launch_programs(prog, "tr", args, (rows + 63) / 64), "");
  for (int64_t j = 0; j < cols; ++j)
    for (int64_t i = 0; i < rows; ++i)
      ASSERT_EQ(out[j * rows + i], x[i * cols + j]) << "output row " << j << " column " << i;
  if (before)
    EXPECT_EQ(out[-1], sentinel) << "wrote before the output";
  EXPECT_EQ(out[rows * cols], sentinel) << "wrote past the end";
}

TEST(LlvmCpu, StreamedTransposesAreExact) {
  // 64 x 1024 f32 blocks transposed into an output over 32 MiB stream (transpose_rows): a column
  // of 16 x 16 blocks at a time, down the block, fetching the rows below. Whole blocks (rows a
  // multiple of 64), a ragged last block (the copy path) and an output misaligned by a line
  // must each be the exact transpose, the fetches past the last row harmless. Catches a
  // streamed block placed at the wrong row or column (the loop order swapped without its
  // indices).
  auto prog = transpose_blocks_program("f32", 1024);
  ASSERT_TRUE(prog);
  for (auto [rows, misalign] : {std::pair<int64_t, int64_t>{9216, 0}, {9200, 0}, {9216, 16}}) {
    SCOPED_TRACE(testing::Message() << "rows " << rows << " misalign " << misalign);
    const int64_t cols = 1024;
    std::vector<float> x(rows * cols), storage(rows * cols + 32, -1.0f);
    for (int64_t i = 0; i < rows * cols; ++i)
      x[i] = float(i % 100003) * 0.5f;
    expect_transposed_blocks(*prog, x, rows, cols, aligned_output(storage, misalign), -1.0f, false);
  }
}

TEST(LlvmCpu, StreamedTransposesOfRowsNotWholeLinesAreExact) {
  // Output rows that start anywhere in a line (rows of the output not a multiple of 16 floats,
  // or a misaligned base) stream their lines inside each block, shifted across the block's
  // pieces, and store their two partial end lines under masks; 1000 columns end in a 16 x 8
  // block. Each case past 32 MiB in all (streamed). Catches a line shifted by the wrong lane
  // count (every row but those starting on a boundary wrong), a head or tail lane unwritten
  // (the -1 sentinels) or written past the row into the neighbour block's lanes, the 8-column
  // group's halves swapped, and a write before the output or past its end.
  for (const int64_t cols : {int64_t(1000), int64_t(1024)}) {
    auto prog = transpose_blocks_program("f32", cols);
    ASSERT_TRUE(prog);
    for (auto [rows, misalign] :
         {std::pair<int64_t, int64_t>{4352, 0}, {4352, 5}, {4353, 0}, {4360, 0}, {4350, 7}}) {
      SCOPED_TRACE(testing::Message()
                   << "cols " << cols << " rows " << rows << " misalign " << misalign);
      std::vector<float> x(rows * cols), storage(rows * cols + 64, -1.0f);
      for (int64_t i = 0; i < rows * cols; ++i)
        x[i] = float(i % 100003) * 0.5f;
      // a line of sentinels before the output
      expect_transposed_blocks(*prog, x, rows, cols, aligned_output(storage, 16 + misalign), -1.0f,
                               true);
    }
  }
}

TEST(LlvmCpu, DirectTransposesOfNarrowFloatsMoveTheirBits) {
  // bf16 and f16 transposes go from tensor to tensor as their stored bits (cpu-direct-
  // transposes; with AVX-512BW in 32 x 32 blocks of 16-bit pairs, transpose_pairs): every bit
  // pattern, NaN payloads and subnormals included, arrives unchanged, where a tile held as f32
  // quietens a signalling NaN and a round trip through f32 could move others. 1016 columns end
  // in 32 x 16 and 32 x 8 blocks, 1000 in a 32 x 8; outputs past 32 MiB stream (whole lines, or
  // lines shifted across the block's pieces where the output rows are not whole lines: 8257 and
  // 8250 rows, a base 7 elements into a line); 200 rows are cache-sized (plain stores, a ragged
  // last block). Catches a pair interleaved in the wrong order (neighbouring rows swapped), the
  // 16-column group misplaced, a line shifted by the wrong lane count, a partial line's lanes lost
  // (the sentinels), bits converted on the way, a tail group's rows misplaced.
  for (const char *type : {"bf16", "f16"})
    for (const int64_t cols : {int64_t(1024), int64_t(1016), int64_t(1000)}) {
      auto prog = transpose_blocks_program(type, cols);
      ASSERT_TRUE(prog);
      for (auto [rows, misalign] :
           {std::pair<int64_t, int64_t>{200, 0}, {8256, 0}, {8257, 0}, {8250, 7}}) {
        SCOPED_TRACE(testing::Message()
                     << type << " cols " << cols << " rows " << rows << " misalign " << misalign);
        std::vector<uint16_t> x(rows * cols), storage(rows * cols + 128, 0xdead);
        std::mt19937 rng(uint32_t(rows + cols));
        for (auto &v : x) // every pattern: NaNs (quiet, signalling, payloads), subnormals
          v = uint16_t(rng());
        uint16_t *out = storage.data();
        while (reinterpret_cast<uintptr_t>(out) % 64)
          ++out;
        out += 32 + misalign; // a line of sentinels before it
        expect_transposed_blocks(*prog, x, rows, cols, out, uint16_t(0xdead), true);
      }
    }
}

// f32 clamp with constant bounds: nonzero ones (-127, 127: the two-select form, vmaxps and
// vminps), bounds in the wrong order (lo > hi: hi), and a zero bound (the general form, which
// orders -0 < +0) over NaN, +-inf, +-0, the bounds themselves, their neighbours and subnormals.
// Catches: a NaN input clamped to a bound (the selects' operands swapped), a signed zero turned
// to the other (the select form taken with a zero bound), lo > hi not giving hi.
const char *kClampConstants = R"(
kernel @clampc(%x: tensor<?xf32>, %o: tensor<?x?xf32>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z : tile<32xf32>
  %lo = full {value = -127.0} : tile<32xf32>
  %hi = full {value = 127.0} : tile<32xf32>
  %a = clamp %t, %lo, %hi : tile<32xf32>
  %a2 = expand_dims %a {axis = 0} : tile<1x32xf32>
  store %o, %z, %z, %a2
  %b = clamp %t, %hi, %lo : tile<32xf32>
  %b2 = expand_dims %b {axis = 0} : tile<1x32xf32>
  %one = constant {value = 1} : i32
  store %o, %one, %z, %b2
  %zero = full {value = 0.0} : tile<32xf32>
  %c = clamp %t, %zero, %hi : tile<32xf32>
  %c2 = expand_dims %c {axis = 0} : tile<1x32xf32>
  %two = constant {value = 2} : i32
  store %o, %two, %z, %c2
  %nz = full {value = -0.0} : tile<32xf32>
  %d = clamp %t, %lo, %nz : tile<32xf32>
  %d2 = expand_dims %d {axis = 0} : tile<1x32xf32>
  %three = constant {value = 3} : i32
  store %o, %three, %z, %d2
  return
}
)";

TEST(LlvmCpu, ClampWithConstantBoundsKeepsNaNAndSignedZeros) {
  const float inf = std::numeric_limits<float>::infinity();
  const float values[] = {std::numeric_limits<float>::quiet_NaN(),
                          -std::numeric_limits<float>::quiet_NaN(),
                          inf,
                          -inf,
                          0.0f,
                          -0.0f,
                          127.0f,
                          -127.0f,
                          std::nextafter(127.0f, inf),
                          std::nextafter(-127.0f, -inf),
                          std::nextafter(127.0f, 0.0f),
                          1e-45f,
                          -1e-45f,
                          1e-40f,
                          3.5f,
                          -3.5f,
                          1e30f,
                          -1e30f,
                          126.5f,
                          -126.5f,
                          0.5f,
                          -0.5f};
  HostTensor x(ScalarKind::F32, {32});
  for (int64_t i = 0; i < 32; ++i)
    x.set(i, values[i % (sizeof(values) / sizeof(values[0]))]);
  expect_same(kClampConstants, "clampc", {x, HostTensor(ScalarKind::F32, {4, 32})}, {}, {1, 1, 1});
}

// An embedding's row copies with their rows fetched ahead (cpu-prefetch-rows): ids in range,
// negative and past the table (the loads pad, the fetches go wherever: prefetches never fault),
// a loop longer than the ids (their load pads: id 0), and no ids at all (the fetch must not read
// the empty index tensor: a null or freed data pointer). Catches: the index read ahead without
// its clamp or its emptiness test (a crash), results changed by the fetch.
const char *kRowsAhead = R"(
kernel @emb(%table: tensor<?x?xf32>, %ids: tensor<?xi32>, %out: tensor<?x?xf32>) {
  %zero = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %n = constant {value = 12} : i32
  for %i = %zero to %n step %one {
    %idt = load %ids, %i : tile<1xi32>
    %id = reduce %idt {axis = 0, kind = "sum"} : i32
    %row = load %table, %id, %zero : tile<1x64xf32>
    store %out, %i, %zero, %row
    yield
  }
  return
}
)";

TEST(LlvmCpu, RowsFetchedAheadLeaveResultsAlone) {
  std::mt19937_64 rng(13);
  HostTensor ids(ScalarKind::I32, {9});
  const int values[] = {3, 0, 19, -3, 20, 1000000, 7, 2, 19};
  for (int64_t i = 0; i < 9; ++i)
    ids.set(i, values[i]);
  expect_same(
      kRowsAhead, "emb",
      {random_tensor(ScalarKind::F32, {20, 64}, rng), ids, HostTensor(ScalarKind::F32, {12, 64})},
      {}, {1, 1, 1});
  expect_same(kRowsAhead, "emb",
              {random_tensor(ScalarKind::F32, {20, 64}, rng), HostTensor(ScalarKind::I32, {0}),
               HostTensor(ScalarKind::F32, {12, 64})},
              {}, {1, 1, 1});
}

TEST(LlvmCpu, TranscendentalMathIsWithinTwoUlps) {
  const char *text = R"(
kernel @math(%x: tensor<?xf32>, %o: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z : tile<128xf32>
  %a = exp %t : tile<128xf32>
  %abs = abs %t : tile<128xf32>
  %half = full {value = 0.5} : tile<128xf32>
  %pos = add %abs, %half : tile<128xf32>
  %b = log %pos : tile<128xf32>
  %c = tanh %t : tile<128xf32>
  %d = sigmoid %t : tile<128xf32>
  %e = sin %t : tile<128xf32>
  %one = constant {value = 1} : i32
  %two = constant {value = 2} : i32
  %three = constant {value = 3} : i32
  %four = constant {value = 4} : i32
  %m_z = constant {value = 0} : i32
  store %o, %m_z, %a
  %m_one = constant {value = 128} : i32
  store %o, %m_one, %b
  %m_two = constant {value = 256} : i32
  store %o, %m_two, %c
  %m_three = constant {value = 384} : i32
  store %o, %m_three, %d
  %m_four = constant {value = 512} : i32
  store %o, %m_four, %e
  return
}
)";
  std::mt19937_64 rng(3);
  expect_same(text, "math",
              {random_tensor(ScalarKind::F32, {128}, rng), HostTensor(ScalarKind::F32, {5 * 128})},
              {}, {1, 1, 1}, 2); // SLEEF within 1 ulp, the interpreter's f32 result within 0.5
  // erf: one rational in f32, within 6 ulp of erf (InlineErfAndTanhF32AreWithinTheirBounds;
  // ~3 near 0: the rounding of P, Q, the product and the quotient), the interpreter within 0.5.
  const char *erf_text = R"(
kernel @erf(%x: tensor<?xf32>, %o: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z : tile<128xf32>
  %f = erf %t : tile<128xf32>
  store %o, %z, %f
  return
}
)";
  std::mt19937_64 rng_erf(3);
  expect_same(erf_text, "erf",
              {random_tensor(ScalarKind::F32, {128}, rng_erf), HostTensor(ScalarKind::F32, {128})},
              {}, {1, 1, 1}, 6.5);
}

/// Compile options for an LLVM CPU name ("host", "x86-64-v3", ...) at `opt_level`.
CompileOptions for_cpu(const char *cpu, int opt_level = 3) {
  CompileOptions options;
  options.cpu = cpu;
  options.opt_level = opt_level;
  return options;
}

/// @f: o = `op`(x) over blocks of `block` elements of `dtype` (4096 f32 unless said).
std::string unary_kernel(const char *op, const std::string &dtype = "f32", int block = 4096) {
  const std::string tile = "tile<" + std::to_string(block) + "x" + dtype + ">";
  return "kernel @f(%x: tensor<?x" + dtype + ">, %o: tensor<?x" + dtype + R"(>) {
  %pid = program_id {axis = 0} : i32
  %n = constant {value = )" +
         std::to_string(block) + R"(} : i32
  %off = mul %pid, %n : i32
  %t = load %x, %off : )" +
         tile + "\n  %e = " + op + " %t : " + tile + R"(
  store %o, %off, %e
  return
}
)";
}

/// Every 2^k-th f32 bit pattern, its low k bits varied too (all exponents and signs).
std::vector<float> f32_sweep(int k) {
  std::vector<float> out;
  for (uint64_t bits = 0; bits < (uint64_t(1) << 32); bits += uint64_t(1) << k) {
    const uint32_t b = uint32_t(bits) | uint32_t(bits >> (32 - k) & ((1u << k) - 1));
    float f;
    std::memcpy(&f, &b, 4);
    out.push_back(f);
  }
  return out;
}

/// One ulp of f32 at |r|, at least the smallest subnormal.
double f32_ulp(float r) {
  return std::max(double(std::nextafter(std::abs(r), INFINITY) - std::abs(r)),
                  double(std::numeric_limits<float>::denorm_min()));
}

// Math through SLEEF (vector_math.h), vectorized at the full width on the host and 4 lanes on
// AVX2: every op against the double-precision libm result over every 2^-12th f32 bit pattern in
// its domain. SLEEF's u10 functions are documented within 1.0 ulp; the bound is 1.5 to leave room
// for the double reference's own rounding.
TEST(LlvmCpu, SleefMathIsWithinOneAndAHalfUlps) {
  struct Case {
    const char *op;
    double (*ref)(double);
    float lo, hi; // the inputs tested
  };
  const Case cases[] = {{"log", [](double x) { return std::log(x); }, 0, INFINITY},
                        {"log2", [](double x) { return std::log2(x); }, 0, INFINITY},
                        {"exp2", [](double x) { return std::exp2(x); }, -150, 128},
                        {"sin", [](double x) { return std::sin(x); }, -INFINITY, INFINITY},
                        {"cos", [](double x) { return std::cos(x); }, -INFINITY, INFINITY}};
  std::vector<float> all;
  for (float f : f32_sweep(12))
    if (!std::isnan(f))
      all.push_back(f);
  for (const char *cpu : {"host", "x86-64-v3"}) {
    for (const Case &c : cases) {
      SCOPED_TRACE(std::string(cpu) + " " + c.op);
      std::vector<float> in;
      for (float f : all)
        if (f >= c.lo && f <= c.hi)
          in.push_back(f);
      in.resize((in.size() + 4095) / 4096 * 4096, c.lo > 0 ? 1.0f : 0.0f);
      auto m = parse_ok(unary_kernel(c.op));
      std::string error;
      auto prog = compile_and_load(*m, for_cpu(cpu), &error);
      ASSERT_TRUE(prog) << error;
      std::vector<float> out(in.size());
      ASSERT_EQ(launch_rank1(*prog, "f", {in.data(), out.data()}, int64_t(in.size()), 4096), "");
      double worst = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        const double ref = c.ref(double(in[i]));
        const float r = float(ref);
        if (std::isinf(r) || std::isnan(r)) {
          ASSERT_TRUE(out[i] == r || (std::isnan(r) && std::isnan(out[i])))
              << c.op << "(" << in[i] << ") = " << out[i];
          continue;
        }
        const double ulp = f32_ulp(r);
        worst = std::max(worst, std::abs(out[i] - ref) / ulp);
        ASSERT_LE(std::abs(out[i] - ref), 1.5 * ulp) << c.op << "(" << in[i] << ") = " << out[i];
      }
      std::printf("%s %s: max error %.3f ulp over %zu values\n", cpu, c.op, worst, in.size());
    }
  }
}

// The inline f32 erf and tanh (codegen_elementwise.cpp: erf one rational, tanh a polynomial or
// the inline exp) against double: every 2^-10th f32 bit pattern, tanh's split between its two
// forms, where they round to +-1, and the special values. tanh within 1.5 ulp, as SLEEF's was
// held to; erf within 6 (the single rational measured 5.2 near erf = 1 here, 5.9 on the denser
// grid of tools/fit_rational.py; tl-conform's f32 bound is 16). Fails: a wrong coefficient, the
// branches swapped, a lost sign, a clamp that lets erf pass 1 or not reach it, or a NaN not kept.
TEST(LlvmCpu, InlineErfAndTanhF32AreWithinTheirBounds) {
  std::vector<float> in = f32_sweep(10);
  for (float f : {0.0f,
                  -0.0f,
                  0.921875f,
                  std::nextafter(0.921875f, 0.0f),
                  -0.921875f,
                  0.875f,
                  std::nextafter(0.875f, 0.0f),
                  3.925f,
                  std::nextafter(3.925f, 0.0f),
                  std::nextafter(3.925f, 4.0f),
                  -3.925f,
                  3.92f,
                  4.0f,
                  -4.0f,
                  9.0f,
                  9.1f,
                  9.2f,
                  -9.2f,
                  1e-30f,
                  -1e-40f,
                  1e30f,
                  INFINITY,
                  -INFINITY,
                  NAN})
    in.push_back(f);
  for (float f = 0.0f; f < 10.0f; f += 1.0f / 4096) // dense where the result is not +-1 or ~x
    in.insert(in.end(), {f, -f});
  in.resize((in.size() + 4095) / 4096 * 4096, 0.0f);
  struct Case {
    const char *op;
    double (*ref)(double);
    double ulps;
  };
  for (auto [op, ref_fn, bound] : {Case{"erf", std::erf, 6}, Case{"tanh", std::tanh, 1.5}}) {
    auto m = parse_ok(unary_kernel(op));
    for (auto [cpu, opt] :
         {std::pair<const char *, int>{"host", 3}, {"x86-64-v3", 3}, {"host", 0}}) {
      SCOPED_TRACE(std::string(op) + " " + cpu + " O" + std::to_string(opt));
      std::string error;
      auto prog = compile_and_load(*m, for_cpu(cpu, opt), &error);
      ASSERT_TRUE(prog) << error;
      std::vector<float> out(in.size());
      ASSERT_EQ(launch_rank1(*prog, "f", {in.data(), out.data()}, int64_t(in.size()), 4096), "");
      double worst = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        if (std::isnan(in[i])) {
          ASSERT_TRUE(std::isnan(out[i]));
          continue;
        }
        const double ref = ref_fn(double(in[i]));
        ASSERT_EQ(std::signbit(out[i]), std::signbit(in[i])) << op << "(" << in[i] << ")";
        const double ulp = f32_ulp(float(ref));
        worst = std::max(worst, std::abs(out[i] - ref) / ulp);
        ASSERT_LE(std::abs(out[i] - ref), bound * ulp) << op << "(" << in[i] << ") = " << out[i];
        ASSERT_LE(std::abs(out[i]), 1.0f) << op << "(" << in[i] << ")";
      }
      std::printf("%s f32 (%s, O%d): max error %.3f ulp over %zu values\n", op, cpu, opt, worst,
                  in.size());
    }
  }
}

/// Compiles `module` (a rank-1 kernel @f(x, o) over blocks of `block` elements of T) for the
/// host at O3 (vscalefps with AVX-512), AVX2 (x86-64-v3: exact power-of-two scalings) and the
/// host at O0 (the helpers inlined without vectorization), runs it over `in` and hands each output
/// to `check(lowering, out)` with the lowering's name.
template <typename T, typename Check>
void for_each_lowering(const tl::ir::Module &module, const std::vector<T> &in, const Check &check,
                       int64_t block = 4096) {
  for (auto [cpu, opt] : {std::pair<const char *, int>{"host", 3}, {"x86-64-v3", 3}, {"host", 0}}) {
    SCOPED_TRACE(std::string(cpu) + " O" + std::to_string(opt));
    std::string error;
    auto prog = compile_and_load(module, for_cpu(cpu, opt), &error);
    ASSERT_TRUE(prog) << error;
    std::vector<T> out(in.size());
    ASSERT_EQ(launch_rank1(*prog, "f", {const_cast<T *>(in.data()), out.data()}, int64_t(in.size()),
                           block),
              "");
    check(std::string(cpu) + ", O" + std::to_string(opt), out);
  }
}

/// Phi(x) in long double (its argument's rounding: 2 z^2 2^-64, 2e-17 at f32's far tail).
long double ndtr_exact(long double x) { return erfcl(-x / sqrtl(2.0L)) / 2; }

// ndtr in f32 (codegen_elementwise.cpp ndtr_f32: e^(-a^2 / 2) times a rational, 1 - that for
// x > 0) against long double: every 2^-10th f32 bit pattern, dense over [-15, 10], where Phi
// turns subnormal (-13.2) and rounds to 0 (-14.1), the clamp at 14.5, the special values. Within
// 7 ulp (tl-conform's f32 bound: 8; tools/fit_rational.py's emulation: 6.0) and 5e-7 relative
// where Phi is normal (the GELU contract's margin: 1/2 + erf / 2 is 8e-5 off at x = -3.4, 6x at
// -5.5). Fails: a coefficient wrong, the tails swapped, the exact split of a^2 dropped (1.5e-6 at
// -5, 6e-6 at -14), a clamp that makes inf a NaN, a NaN not kept, a result outside [0, 1].
TEST(LlvmCpu, InlineNdtrF32IsWithinItsBound) {
  std::vector<float> in = f32_sweep(10);
  for (float f : {0.0f, -0.0f, 14.5f, -14.5f, std::nextafter(-14.5f, 0.0f), -14.6f, -13.2f, -14.1f,
                  1e-30f, -1e-40f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN})
    in.push_back(f);
  for (float f = -15.0f; f < 10.0f; f += 1.0f / 4096)
    in.push_back(f);
  in.resize((in.size() + 4095) / 4096 * 4096, 0.0f);
  for_each_lowering(
      *parse_ok(unary_kernel("ndtr")), in,
      [&](const std::string &lowering, const std::vector<float> &out) {
        double worst = 0, worst_rel = 0;
        for (size_t i = 0; i < in.size(); ++i) {
          if (std::isnan(in[i])) {
            ASSERT_TRUE(std::isnan(out[i])) << lowering;
            continue;
          }
          const double ref = double(ndtr_exact(in[i]));
          ASSERT_TRUE(out[i] >= 0.0f && out[i] <= 1.0f)
              << lowering << ": ndtr(" << in[i] << ") = " << out[i];
          const double ulp = f32_ulp(float(ref)), err = std::abs(out[i] - ref);
          worst = std::max(worst, err / ulp);
          ASSERT_LE(err, 7 * ulp) << lowering << ": ndtr(" << in[i] << ") = " << out[i];
          if (ref >= 0x1p-126) {
            worst_rel = std::max(worst_rel, err / ref);
            ASSERT_LE(err, 5e-7 * ref) << lowering << ": ndtr(" << in[i] << ")";
          }
        }
        std::printf("ndtr f32 (%s): max error %.3f ulp, %.3g relative over %zu values\n",
                    lowering.c_str(), worst, worst_rel, in.size());
      });
}

// ndtr in f64 (ndtr_f64: SLEEF's erfc of the rounded argument, corrected to first order by
// erfc's slope) against long double over both tails, out to where Phi underflows (-38.5):
// within 4 ulp. Fails: the correction dropped (1400 ulp at -37) or of the wrong sign, inf not 0
// or 1, a NaN not kept.
TEST(LlvmCpu, NdtrF64IsWithinItsBound) {
  auto m = parse_ok(unary_kernel("ndtr", "f64", 1024));
  std::vector<double> in;
  for (double x = -39.0; x < 9.0; x += 1.0 / 512)
    in.push_back(x + 1e-7 * std::sin(x * 977)); // off the grid, so arguments round
  for (double x : {0.0, -0.0, 40.0, -40.0, 41.0, -41.0, -1e300, 1e300, double(INFINITY),
                   -double(INFINITY), double(NAN)})
    in.push_back(x);
  in.resize((in.size() + 1023) / 1024 * 1024, 0.0);
  for_each_lowering(
      *m, in,
      [&](const std::string &lowering, const std::vector<double> &out) {
        double worst = 0;
        for (size_t i = 0; i < in.size(); ++i) {
          if (std::isnan(in[i])) {
            ASSERT_TRUE(std::isnan(out[i])) << lowering;
            continue;
          }
          const long double ref = ndtr_exact(in[i]);
          const double r = double(ref);
          const double ulp = std::max(std::nextafter(std::abs(r), double(INFINITY)) - std::abs(r),
                                      std::numeric_limits<double>::denorm_min());
          const double err = double(std::abs(out[i] - ref));
          worst = std::max(worst, err / ulp);
          ASSERT_LE(err, 4 * ulp) << lowering << ": ndtr(" << in[i] << ") = " << out[i] << ", not "
                                  << r;
        }
        std::printf("ndtr f64 (%s): max error %.3f ulp over %zu values\n", lowering.c_str(), worst,
                    in.size());
      },
      1024);
}

// The inline f32 exp (codegen_ops.cpp) against exp in double, rounded: every 2^-10th f32 bit
// pattern (4M values spanning all exponents and signs) and the edges of the range.
TEST(LlvmCpu, ExpF32IsWithinTwoUlps) {
  std::vector<float> in = f32_sweep(10);
  for (float f : {0.0f, -0.0f, 88.72283f, 88.72284f, 89.0f, -87.33654f, -103.9720f, -103.9721f,
                  -104.0f, 1e-30f, -1e-30f, INFINITY, -INFINITY, NAN})
    in.push_back(f);
  in.resize((in.size() + 4095) / 4096 * 4096, 0.0f);
  auto m = parse_ok(unary_kernel("exp"));
  // The host (vscalefps with AVX-512), AVX2 (two exact power-of-two scalings), and the host
  // unoptimized (the scalef helper inlined without vectorization).
  for_each_lowering(*m, in, [&](const std::string &lowering, const std::vector<float> &out) {
    double worst = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const double ref = std::exp(double(in[i]));
      if (std::isnan(in[i])) {
        ASSERT_TRUE(std::isnan(out[i]));
        continue;
      }
      if (std::isinf(float(ref)) || float(ref) == 0.0f) { // beyond the range: exact inf or 0
        ASSERT_EQ(out[i], float(ref)) << "exp(" << in[i] << ")";
        continue;
      }
      const double ulp = f32_ulp(float(ref));
      worst = std::max(worst, std::abs(out[i] - ref) / ulp);
      ASSERT_LE(std::abs(out[i] - ref), 2 * ulp) << "exp(" << in[i] << ")";
    }
    std::printf("exp f32 (%s): max error %.3f ulp over %zu values\n", lowering.c_str(), worst,
                in.size());
  });
}

// The inline f32 sigmoid, 1 / (1 + e^-x) with the exp's OnePlus form (codegen_elementwise.cpp:
// clamped to [-87, 89], one power of two, degree-5 polynomial), against double: every 2^-10th
// f32 bit pattern, the clamps' and the power of two's edges, subnormal and special inputs. Results
// of at least 2^-126 within 3.5 ulp (measured 3.24; tl-conform's sigmoid bound is 5); below, the
// stated flush:
// within 2^-127 of the true value (x < -88.38 gives 0). Fails: a wrong coefficient, a clamp that
// cuts into the normal results (-87 applied to x instead of -x, 89 too low), 2^n wrapping below
// n = -126 (garbage for x > 87), a result past [0, 1] or a NaN not kept.
TEST(LlvmCpu, SigmoidF32IsWithinItsBound) {
  std::vector<float> in = f32_sweep(10);
  for (float f : {0.0f,   -0.0f,     87.0f,      -87.0f,    87.33654f, -87.33654f, 88.0f,
                  -88.0f, 88.37626f, -88.37626f, -88.3763f, 88.72283f, -88.72283f, -88.72284f,
                  89.0f,  -89.0f,    -103.97f,   -104.0f,   104.0f,    1e-30f,     -1e-30f,
                  1e-40f, -1e-40f,   1e30f,      -1e30f,    INFINITY,  -INFINITY,  NAN})
    in.push_back(f);
  for (float f = 0.0f; f < 100.0f; f += 1.0f / 1024) // dense where the result is not 0 or 1
    in.insert(in.end(), {f, -f});
  in.resize((in.size() + 4095) / 4096 * 4096, 0.0f);
  auto m = parse_ok(unary_kernel("sigmoid"));
  for_each_lowering(*m, in, [&](const std::string &lowering, const std::vector<float> &out) {
    double worst = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (std::isnan(in[i])) {
        ASSERT_TRUE(std::isnan(out[i]));
        continue;
      }
      const double ref = 1 / (1 + std::exp(-double(in[i])));
      ASSERT_TRUE(out[i] >= 0.0f && out[i] <= 1.0f) << "sigmoid(" << in[i] << ") = " << out[i];
      if (ref < std::ldexp(1.0, -126)) {
        ASSERT_LE(std::abs(out[i] - ref), std::ldexp(1.0, -127))
            << "sigmoid(" << in[i] << ") = " << out[i];
        continue;
      }
      const double ulp = f32_ulp(float(ref));
      worst = std::max(worst, std::abs(out[i] - ref) / ulp);
      ASSERT_LE(std::abs(out[i] - ref), 3.5 * ulp) << "sigmoid(" << in[i] << ") = " << out[i];
    }
    std::printf("sigmoid f32 (%s): max error %.3f ulp over %zu values\n", lowering.c_str(), worst,
                in.size());
  });
}

// GELU (both forms) and SiLU as tl.ops writes them (python/tl/ops/activations.py), fused by
// float_lane: GELU erf's fma(erf(x 0.70710677), 1/2, 1/2) as Phi = fma(x, P', Q') / (Q' + Q')
// with the 1/sqrt 2 folded into the rational (gelu_phi_f32), x * sigmoid(v) as x / (1 + e^-v),
// and the tanh GELU's and SiLU's e^-v as 2^t with log2 e folded into their constants (the exp's
// base2 form),
// against double over every 2^-10th f32 bit pattern plus a dense grid in [-12, 12]. The error is
// counted in units of max(ulp(ref), |x| 2^-24): for x < 0 GELU is x times 1 + erf(x / sqrt 2)
// (or 1 / (1 + e^-v)) near 0, so the ulp of |x| bounds its absolute error (the unfused forms
// too: 1 + erf cancels). Measured (s18, host, x86-64-v3 and O0 alike): GELU erf 2.58 (unfused:
// 2.26), GELU tanh 1.76 (unfused 1.97; 1.51 with x / d but without the log2 e fold), SiLU 1.49
// (1.90; 1.48 without the fold). The constants are `full` tiles, as the default pipeline leaves
// tl.ops' splats (a splat of a scalar constant is a load here, which the fusions do not match).
// Fails: a folded coefficient wrong (P'_k without its 2^-k, or log2 e halved: off by orders of
// magnitude), Phi's clamp lost or at -1 (x Phi past 1 or negative, GELU(x) > x for large x or of
// the wrong sign), the sign of 0 or NaN lost, x / d taking the wrong operand.
TEST(LlvmCpu, GeluAndSiluF32FusedAreWithinTheirBounds) {
  std::vector<float> in;
  for (float f : f32_sweep(10))
    in.push_back(f);
  for (float f :
       {0.0f, -0.0f, 5.55f, -5.55f, 5.6f, -5.6f, 1e-30f, -1e-40f, 1e30f, -1e30f, INFINITY, NAN})
    in.push_back(f);
  for (float f = 0.0f; f < 12.0f; f += 1.0f / 2048)
    in.insert(in.end(), {f, -f});
  in.resize((in.size() + 4095) / 4096 * 4096, 0.0f);
  struct Case {
    const char *name, *body;
    double (*ref)(double);
    double bound;
  };
  const Case cases[] = {{"gelu erf", R"(
  %cs = full {value = 0.7071067811865476} : tile<4096xf32>
  %u = mul %t, %cs : tile<4096xf32>
  %e = erf %u : tile<4096xf32>
  %hs = full {value = 0.5} : tile<4096xf32>
  %f = fma %e, %hs, %hs : tile<4096xf32>
  %r = mul %t, %f : tile<4096xf32>
)",
                         [](double x) { return x * 0.5 * (1 + std::erf(x / std::sqrt(2.0))); },
                         3.5},
                        {"gelu tanh", R"(
  %as = full {value = 1.5957691216057308} : tile<4096xf32>
  %bs = full {value = 0.07135481627260025} : tile<4096xf32>
  %s = mul %t, %t : tile<4096xf32>
  %p = fma %s, %bs, %as : tile<4096xf32>
  %u = mul %t, %p : tile<4096xf32>
  %g = sigmoid %u : tile<4096xf32>
  %r = mul %t, %g : tile<4096xf32>
)",
                         [](double x) {
                           return x / (1 + std::exp(-x * (double(1.5957691216057308f) +
                                                          double(0.07135481627260025f) * x * x)));
                         },
                         2.5},
                        {"silu", R"(
  %g = sigmoid %t : tile<4096xf32>
  %r = mul %t, %g : tile<4096xf32>
)",
                         [](double x) { return x / (1 + std::exp(-x)); }, 2.5}};
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    auto m = parse_ok(std::string(R"(
kernel @f(%x: tensor<?xf32>, %o: tensor<?xf32>) {
  %pid = program_id {axis = 0} : i32
  %n = constant {value = 4096} : i32
  %off = mul %pid, %n : i32
  %t = load %x, %off : tile<4096xf32>
)") + c.body + R"(
  store %o, %off, %r
  return
}
)");
    for_each_lowering(*m, in, [&](const std::string &lowering, const std::vector<float> &out) {
      double worst = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        const float x = in[i];
        if (std::isnan(x) || x == -INFINITY) { // -inf * 0: NaN, as the unfused forms give
          ASSERT_TRUE(std::isnan(out[i]) || x == -INFINITY) << c.name << "(" << x << ")";
          continue;
        }
        const double ref = c.ref(double(x));
        if (std::isinf(x) || std::abs(ref) > 3e38) {
          ASSERT_EQ(out[i], float(ref)) << c.name << "(" << x << ")";
          continue;
        }
        ASSERT_EQ(std::signbit(out[i]), std::signbit(x)) << c.name << "(" << x << ") = " << out[i];
        const double unit = std::max(f32_ulp(float(ref)), std::abs(double(x)) * 0x1p-24);
        worst = std::max(worst, std::abs(out[i] - ref) / unit);
        ASSERT_LE(std::abs(out[i] - ref), c.bound * unit) << c.name << "(" << x << ") = " << out[i];
      }
      std::printf("%s f32 (%s): max error %.3f units over %zu values\n", c.name, lowering.c_str(),
                  worst, in.size());
    });
  }
}

// The f32 exp of x - max(x) (cpu-exp-ranges marks it; the exp's NonPositive form: clamped at
// -88, one power of two, 2^-127 encoded as 0) against double: every 2^-10th non-positive f32 bit
// pattern, the edges of the subnormal results and -inf, each block's maximum 0 (its first lane),
// so x - max(x) is x. Results of at least 2^-126 within 2 ulp, as the general exp's; below, the
// stated flush: within 2^-126.5 of the true value (0 from x = -87.68 on). Fails: the pass marking
// an exp whose argument can be positive (wrong results above 1 would show here only as the general
// form's failure), 2^n wrapping below n = -127 (garbage for x < -88), a wrong coefficient.
TEST(LlvmCpu, NonPositiveExpF32FlushesOnlyBelowTheNormals) {
  const char *text = R"(
kernel @f(%x: tensor<?xf32>, %o: tensor<?xf32>) {
  %pid = program_id {axis = 0} : i32
  %n = constant {value = 4096} : i32
  %off = mul %pid, %n : i32
  %t = load %x, %off : tile<4096xf32>
  %m = reduce %t {axis = 0, kind = "max"} : f32
  %ms = splat %m : tile<4096xf32>
  %d = sub %t, %ms : tile<4096xf32>
  %e = exp %d : tile<4096xf32>
  store %o, %off, %e
  return
}
)";
  std::vector<float> in;
  for (float f : f32_sweep(10))
    if (f <= 0.0f) // NaN excluded: it would be its block's maximum
      in.push_back(f);
  for (float f : {-87.0f, -87.33654f, -87.33655f, -87.68f, -87.7f, -88.0f, -88.03f, -88.1f,
                  -103.97f, -104.0f, -1e-30f, -1e-40f, -INFINITY})
    in.push_back(f);
  for (float f = 0.0f; f < 110.0f; f += 1.0f / 1024)
    in.push_back(-f);
  in.resize((in.size() + 4095) / 4096 * 4096, 0.0f);
  for (size_t b = 0; b < in.size(); b += 4096)
    in[b] = 0.0f;
  auto m = parse_ok(text);
  for_each_lowering(*m, in, [&](const std::string &lowering, const std::vector<float> &out) {
    double worst = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const double ref = std::exp(double(in[i]));
      // Below 2^-126.5 (with a margin for where the two ways round n), exactly 0: a subnormal
      // there (vscalefps's exact scaling) costs a microcode assist in every operation reading it
      if (ref < std::ldexp(std::sqrt(0.5), -126) * (1 - 1e-4))
        ASSERT_EQ(out[i], 0.0f) << "exp(" << in[i] << ")";
      if (ref < std::ldexp(1.0, -126)) {
        ASSERT_LE(std::abs(out[i] - ref), std::ldexp(std::sqrt(0.5), -126) * (1 + 1e-6))
            << "exp(" << in[i] << ")";
        continue;
      }
      const double ulp = f32_ulp(float(ref));
      worst = std::max(worst, std::abs(out[i] - ref) / ulp);
      ASSERT_LE(std::abs(out[i] - ref), 2 * ulp) << "exp(" << in[i] << ") = " << out[i];
    }
    std::printf("exp f32 of x - max x (%s): max error %.3f ulp over %zu values\n", lowering.c_str(),
                worst, in.size());
  });
}

const char *kMemoryOps = R"(
kernel @memory(%x: tensor<?xf32>, %idx: tensor<?xi32>, %o: tensor<?xf32>, %acc: tensor<?xf32>, %n: i32) {
  %z = constant {value = 0} : i32
  %i = load %idx, %z : tile<32xi32>
  %nt = splat %n : tile<32xi32>
  %m = cmp %i, %nt {pred = "lt"} : tile<32xi1>
  %zt = full {value = 0} : tile<32xi32>
  %m2 = cmp %i, %zt {pred = "ge"} : tile<32xi1>
  %mask = and %m, %m2 : tile<32xi1>
  %g = gather %x, %i, %mask {other = -1.0} : tile<32xf32>
  %lane = arange {end = 32, start = 0} : tile<32xi32>
  scatter %o, %lane, %g
  %ones = full {value = 1.0} : tile<32xf32>
  %old = atomic_add %acc, %i, %ones, %mask : tile<32xf32>
  %k = constant {value = 4} : i32
  %one = constant {value = 1} : i32
  %sum = for %j = %z to %k step %one iter_args(%s = %g) : tile<32xf32> {
    %s2 = add %s, %g : tile<32xf32>
    yield %s2
  }
  %big = cmp %n, %k {pred = "gt"} : i1
  %res = if %big : tile<32xf32> {
    yield %sum
  } else {
    yield %old
  }
  %c32 = constant {value = 32} : i32
  store %o, %c32, %res
  return
}
)";

// Random programs (tl/interpreter/random_programs.h) on blocks with ragged edges: llvm-cpu's
// planning (fusion, inlining into row reductions, load views, broadcasts computed in place) must
// not change one bit. Inputs hold signed zeros, infinities and NaN.
// TL_RANDOM_PROGRAMS=N[:SEED] runs N programs from SEED instead (a long run, by hand).
TEST(LlvmCpu, RandomProgramsMatchTheInterpreter) {
  const auto [programs, seed] = interp::random_program_batch(150);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < programs; ++i) {
    interp::RandomProgramCase c = interp::random_program_case(rng);
    SCOPED_TRACE("program " + std::to_string(i) + ":\n" + c.text);
    expect_same(c.text, "rand", std::move(c.tensors), {}, c.grid);
    if (::testing::Test::HasFatalFailure())
      return;
  }
}

// fma of f16 / bf16 rounds once, as the interpreter: the exact a b + c lies just past a
// midpoint of the type (a b on it, c tiny), which a sum rounded to f32 first loses (a tie,
// then to even: one ulp low).
TEST(LlvmCpu, NarrowFloatFmaRoundsOnce) {
  const char *text = R"(
kernel @fma(%h: tensor<?xf16>, %b: tensor<?xbf16>, %oh: tensor<?xf16>, %ob: tensor<?xbf16>) {
  %z = constant {value = 0} : i32
  %four = constant {value = 4} : i32
  %eight = constant {value = 8} : i32
  %ha = load %h, %z : tile<4xf16>
  %hb = load %h, %four : tile<4xf16>
  %hc = load %h, %eight : tile<4xf16>
  %ba = load %b, %z : tile<4xbf16>
  %bb = load %b, %four : tile<4xbf16>
  %bc = load %b, %eight : tile<4xbf16>
  %hr = fma %ha, %hb, %hc : tile<4xf16>
  %br = fma %ba, %bb, %bc : tile<4xbf16>
  store %oh, %z, %hr
  store %ob, %z, %br
  return
}
)";
  HostTensor h(ScalarKind::F16, {12}), b(ScalarKind::BF16, {12});
  const double tiny = std::ldexp(1.0, -24);
  // lane: a, b, c; f16: (1 + 2^-5)(1 + 2^-6) = 1 + 2^-5 + 2^-6 + 2^-11 (a midpoint)
  const double hv[4][3] = {{1 + 0x1p-5, 1 + 0x1p-6, tiny},
                           {-(1 + 0x1p-5), 1 + 0x1p-6, -tiny},
                           {1 + 0x1p-5, 1 + 0x1p-6, -tiny},
                           {3.0, 5.0, 0.25}};
  // bf16: (1 + 2^-4)^2 = 1 + 2^-3 + 2^-8 (a midpoint); c = 2^-80 lies past f64's 53 bits (an fma
  // in f64 rounded to nearest drops it, then the tie goes to even: 1.125 for 1.1328125)
  const double bv[4][3] = {{1 + 0x1p-4, 1 + 0x1p-4, 0x1p-40},
                           {-(1 + 0x1p-4), 1 + 0x1p-4, -0x1p-40},
                           {1 + 0x1p-4, 1 + 0x1p-4, -0x1p-40},
                           {1 + 0x1p-4, 1 + 0x1p-4, 0x1p-80}};
  for (int l = 0; l < 4; ++l)
    for (int j = 0; j < 3; ++j) {
      h.set(4 * j + l, hv[l][j]);
      b.set(4 * j + l, bv[l][j]);
    }
  ASSERT_EQ(h.get(8), tiny); // f16 holds 2^-24 (its smallest subnormal)
  expect_same(text, "fma",
              {h, b, HostTensor(ScalarKind::F16, {4}), HostTensor(ScalarKind::BF16, {4})}, {},
              {1, 1, 1});
}

TEST(LlvmCpu, GatherScatterAtomicsAndControlFlowAreBitExact) {
  std::mt19937_64 rng(2);
  HostTensor idx(ScalarKind::I32, {32});
  for (int i = 0; i < 32; ++i)
    idx.set(i, double(int(rng() % 60) - 10));
  expect_same(kMemoryOps, "memory",
              {random_tensor(ScalarKind::F32, {40}, rng), idx, HostTensor(ScalarKind::F32, {64}),
               HostTensor(ScalarKind::F32, {40})},
              {int64_t(40)}, {3, 1, 1});
}

// 40 lanes: two vector chunks of 16 and a tail of 8 lane by lane; every element type the
// vector form takes, rank 2 (the row stride enters each lane's offset), masked lanes whose
// indices are out of bounds (never read), and `other` in the lanes masked off. Each result is
// cast to f64 (bf16's cast had stored the f32's bits into the f64 tile).
const char *kVectorGathers = R"(
kernel @vgather(%x: tensor<?x?xf32>, %h: tensor<?x?xf16>, %b: tensor<?x?xbf16>, %d: tensor<?x?xf64>, %q: tensor<?x?xi32>, %c: tensor<?x?xi8>, %r: tensor<?xi32>, %k: tensor<?xi32>, %m: tensor<?xi8>, %o: tensor<?x?xf64>) {
  %z = constant {value = 0} : i32
  %ri = load %r, %z : tile<40xi32>
  %ki = load %k, %z : tile<40xi32>
  %mb = load %m, %z : tile<40xi8>
  %zero = full {value = 0} : tile<40xi8>
  %on = cmp %mb, %zero {pred = "ne"} : tile<40xi1>
  %gx = gather %x, %ri, %ki, %on {other = -2.5} : tile<40xf32>
  %gh = gather %h, %ri, %ki, %on {other = 3.0} : tile<40xf16>
  %gb = gather %b, %ri, %ki, %on : tile<40xbf16>
  %gd = gather %d, %ri, %ki, %on {other = 7.0} : tile<40xf64>
  %gq = gather %q, %ri, %ki, %on {other = -9} : tile<40xi32>
  %gc = gather %c, %ri, %ki, %on {other = 5} : tile<40xi8>
  %lane = arange {end = 40, start = 0} : tile<40xi32>
  %one = constant {value = 1} : i32
  %two = constant {value = 2} : i32
  %three = constant {value = 3} : i32
  %four = constant {value = 4} : i32
  %five = constant {value = 5} : i32
  %r0 = full {value = 0} : tile<40xi32>
  %r1 = full {value = 1} : tile<40xi32>
  %r2 = full {value = 2} : tile<40xi32>
  %r3 = full {value = 3} : tile<40xi32>
  %r4 = full {value = 4} : tile<40xi32>
  %r5 = full {value = 5} : tile<40xi32>
  %fx = cast %gx : tile<40xf64>
  %fh = cast %gh : tile<40xf64>
  %fb = cast %gb : tile<40xf64>
  %fq = cast %gq : tile<40xf64>
  %fc = cast %gc : tile<40xf64>
  scatter %o, %r0, %lane, %fx
  scatter %o, %r1, %lane, %fh
  scatter %o, %r2, %lane, %fb
  scatter %o, %r3, %lane, %gd
  scatter %o, %r4, %lane, %fq
  scatter %o, %r5, %lane, %fc
  return
}
)";

TEST(LlvmCpu, VectorGathersMatchTheInterpreter) {
  std::mt19937_64 rng(7);
  const int64_t rows = 9, cols = 13;
  HostTensor r(ScalarKind::I32, {40}), k(ScalarKind::I32, {40}), m(ScalarKind::I8, {40});
  for (int i = 0; i < 40; ++i) {
    const bool on = rng() % 4 != 0;
    m.set(i, on);
    // masked-off lanes point far outside, negative or past the end
    r.set(i, on ? double(rng() % rows) : (i % 2 ? -3.0 : 1000.0));
    k.set(i, on ? double(rng() % cols) : 77.0);
  }
  std::vector<HostTensor> t{random_tensor(ScalarKind::F32, {rows, cols}, rng),
                            random_tensor(ScalarKind::F16, {rows, cols}, rng),
                            random_tensor(ScalarKind::BF16, {rows, cols}, rng),
                            random_tensor(ScalarKind::F64, {rows, cols}, rng),
                            HostTensor(ScalarKind::I32, {rows, cols}),
                            HostTensor(ScalarKind::I8, {rows, cols}),
                            r,
                            k,
                            m,
                            HostTensor(ScalarKind::F64, {6, 40})};
  for (int64_t i = 0; i < rows * cols; ++i) {
    t[4].set(i, double(int64_t(rng() % 2000000) - 1000000));
    t[5].set(i, double(int(rng() % 256) - 128));
  }
  expect_same(kVectorGathers, "vgather", t, {}, {1, 1, 1});
}

// The first active lane out of bounds is named, in a vector chunk after a clean one (lane 21
// of 32, index 9 of 9 rows); lane 3 (masked off) points further out and is not reported.
TEST(LlvmCpu, VectorGatherFaultNamesTheFirstLaneOutOfBounds) {
  const char *text = R"(
kernel @vfault(%x: tensor<?xf32>, %idx: tensor<?xi32>, %m: tensor<?xi8>, %o: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %i = load %idx, %z : tile<32xi32>
  %mb = load %m, %z : tile<32xi8>
  %zero = full {value = 0} : tile<32xi8>
  %on = cmp %mb, %zero {pred = "ne"} : tile<32xi1>
  %g = gather %x, %i, %on : tile<32xf32>
  store %o, %z, %g
  return
}
)";
  auto mod = parse_ok(text);
  std::mt19937_64 rng(3);
  HostTensor idx(ScalarKind::I32, {32}), m(ScalarKind::I8, {32});
  for (int i = 0; i < 32; ++i) {
    idx.set(i, i % 9);
    m.set(i, 1);
  }
  idx.set(3, 100);
  m.set(3, 0);
  idx.set(21, 9);
  idx.set(30, 11);
  Outcome o = run_llvm(
      *mod, *mod->kernels()[0],
      {random_tensor(ScalarKind::F32, {9}, rng), idx, m, HostTensor(ScalarKind::F32, {32})}, {},
      {1, 1, 1});
  EXPECT_NE(o.error.find("'gather' index out of bounds in dimension 0 (index 9, lane 21)"),
            std::string::npos)
      << o.error;
}

const char *kHalfOps = R"(
kernel @half(%h: tensor<?xf16>, %b: tensor<?xbf16>, %oh: tensor<?xf16>, %ob: tensor<?xbf16>, %of: tensor<?xf32>, %s: bf16) {
  %z = constant {value = 0} : i32
  %x = load %h, %z {padding = 0.1} : tile<64xf16>
  %y = load %b, %z {padding = -0.3} : tile<64xbf16>
  %xs = mul %x, %x : tile<64xf16>
  %xq = div %xs, %x : tile<64xf16>
  %xa = add %xq, %x : tile<64xf16>
  %ys = splat %s : tile<64xbf16>
  %ym = mul %y, %ys : tile<64xbf16>
  %yr = sqrt %ym : tile<64xbf16>
  %ya = sub %yr, %y : tile<64xbf16>
  %xb = cast %xa : tile<64xbf16>
  %yh = cast %ya : tile<64xf16>
  %mx = max %xb, %ya : tile<64xbf16>
  %sum = reduce %xa {axis = 0, kind = "max"} : f16
  %f = cast %ya : tile<64xf32>
  %bits = bitcast %yh : tile<64xi16>
  %back = bitcast %bits : tile<64xf16>
  %ten = constant {value = 10} : i32
  store %oh, %z, %xa
  store %oh, %ten, %back
  store %ob, %z, %mx
  store %of, %z, %f
  %a2 = arange {end = 64, start = 0} : tile<64xi32>
  %m = full {value = 1.0} : tile<8x8xbf16>
  %xr = reshape %x : tile<8x8xf16>
  %xrb = cast %xr : tile<8x8xbf16>
  %d = dot %xrb, %m {order = "exact", acc_type = f32} : tile<8x8xf32>
  %dr = reshape %d : tile<64xf32>
  %c64 = constant {value = 64} : i32
  store %of, %c64, %dr
  %sp = splat %sum : tile<1xf16>
  %c80 = constant {value = 80} : i32
  store %oh, %c80, %sp
  return
}
)";

TEST(LlvmCpu, HalfPrecisionMathIsWithinOneUlpOfTheType) {
  const char *text = R"(
kernel @hmath(%x: tensor<?xf16>, %o: tensor<?xf16>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z : tile<64xf16>
  %a = tanh %t : tile<64xf16>
  %b = erf %t : tile<64xf16>
  %c = exp %t : tile<64xf16>
  store %o, %z, %a
  %c64 = constant {value = 64} : i32
  store %o, %c64, %b
  %c128 = constant {value = 128} : i32
  store %o, %c128, %c
  return
}
)";
  std::mt19937_64 rng(8);
  auto m = parse_ok(text);
  std::vector<HostTensor> t = {random_tensor(ScalarKind::F16, {64}, rng),
                               HostTensor(ScalarKind::F16, {192})};
  Outcome a = run_interpreter(*m->kernels()[0], t, {}, {1, 1, 1});
  Outcome b = run_llvm(*m, *m->kernels()[0], t, {}, {1, 1, 1});
  for (int64_t i = 0; i < 192; ++i) // f32 math rounded to f16: at most one f16 ulp apart
    EXPECT_LE(std::abs(a.tensors[1].get(i) - b.tensors[1].get(i)),
              std::abs(a.tensors[1].get(i)) * 0x1p-10 + 0x1p-24)
        << i;
}

// Every pair of element types, cast with the default rounding, against the interpreter bit
// for bit: each type's extremes, signed zeros, ties, values out of the target's range (floats
// to integers saturate, NaN -> 0), infinities and NaN. bf16 -> f64 had stored the f32's bits.
// e4m3 <-> e5m2 had kept the value unrounded, f16 <-> bf16 and i8 / i16 -> f16 / bf16 had
// ignored a directed mode; f64 -> f16 / bf16 and i32 / u32 -> f16 / bf16 /
// fp8 were refused (they round once now). A pair the backend cannot lower must say so at
// compile time: i64 to the 16- and 8-bit floats only.
TEST(LlvmCpu, CastsBetweenEveryPairOfTypesAreBitExact) {
  const std::vector<double> floats = {0.0,    -0.0,    1.5,     -2.5,     0.3333,    448.0,
                                      464.0,  57344.0, 65504.0, 7e4,      -1e10,     3e9,
                                      0x1p31, 0x1p63,  3e38,    1e300,    1e-7,      -1e-42,
                                      127.5,  -128.5,  255.5,   INFINITY, -INFINITY, NAN};
  const std::vector<double> ints = {
      0,          1,      -1,      127,          -128,          255,
      32767,      -32768, 65535,   2147483647.0, -2147483648.0, 4294967295.0,
      16777217.0, 0x1p62, -0x1p62, 300};
  std::vector<ScalarKind> kinds;
  for (int k = 0; k < TL_DTYPE_COUNT; ++k)
    kinds.push_back(ScalarKind(k));
  std::vector<std::string> unsupported;
  int pairs = 0;
  for (ScalarKind from : kinds) {
    // the source's values: those its type holds (set() rounds floats to the type)
    HostTensor x(from, {32});
    const std::vector<double> &pool = ir::is_float(from) ? floats : ints;
    int n = 0;
    for (double v : pool) {
      if (n == 32)
        break;
      if (!ir::is_float(from)) {
        const int bits = ir::bit_width(from);
        const double lo = from == ScalarKind::I1 ? 0
                          : ir::is_signed(from)  ? -std::ldexp(1, bits - 1)
                                                 : 0;
        const double hi = from == ScalarKind::I1 ? 1
                          : ir::is_signed(from)  ? std::ldexp(1, bits - 1) - 1
                                                 : std::ldexp(1, bits) - 1;
        if (v < lo || v > hi)
          continue;
      }
      x.set(n++, v);
    }
    for (; n < 32; ++n)
      x.set(n, x.get(n % 3));
    for (ScalarKind to : kinds)
      for (const std::string mode : {"", "rtz", "rd", "ru"}) {
        // the directed modes where they round: to a float narrower than the source
        if (!mode.empty() && !(ir::is_float(to) && from != to &&
                               (ir::bit_width(from) >= ir::bit_width(to) ||
                                (!ir::is_float(from) && ir::bit_width(from) > 8))))
          continue;
        const std::string f(ir::scalar_name(from)), t(ir::scalar_name(to));
        const std::string text =
            "kernel @cast(%x: tensor<?x" + f + ">, %o: tensor<?x" + t +
            ">) {\n  %z = constant {value = 0} : i32\n  %v = load %x, %z : tile<32x" + f +
            ">\n  %c = cast %v" + (mode.empty() ? "" : " {rounding = \"" + mode + "\"}") +
            " : tile<32x" + t + ">\n  store %o, %z, %c\n  return\n}\n";
        ++pairs;
        try {
          expect_same(text, "cast", {x, HostTensor(to, {32})}, {}, {1, 1, 1});
        } catch (const std::exception &e) {
          EXPECT_NE(std::string(e.what()).find("i64 to"), std::string::npos)
              << f << " -> " << t << " " << mode << ": " << e.what();
          unsupported.push_back(f + "->" + t + (mode.empty() ? "" : " " + mode));
        }
        if (::testing::Test::HasFatalFailure()) {
          ADD_FAILURE() << "cast " << f << " -> " << t << " " << mode;
          return;
        }
      }
  }
  std::printf("%d casts compared\n", pairs);
  const std::vector<std::string> refused = {
      "i64->f16",        "i64->f16 rtz",   "i64->f16 rd",    "i64->f16 ru",  "i64->bf16",
      "i64->bf16 rtz",   "i64->bf16 rd",   "i64->bf16 ru",   "i64->f32 rtz", "i64->f32 rd",
      "i64->f32 ru",     "i64->f64 rtz",   "i64->f64 rd",    "i64->f64 ru",  "i64->f8e4m3",
      "i64->f8e4m3 rtz", "i64->f8e4m3 rd", "i64->f8e4m3 ru", "i64->f8e5m2",  "i64->f8e5m2 rtz",
      "i64->f8e5m2 rd",  "i64->f8e5m2 ru"};
  EXPECT_EQ(unsupported, refused);
}

TEST(LlvmCpu, DirectedRoundingCastsAreBitExact) {
  std::string text = "kernel @casts(%x: tensor<?xf32>, %d: tensor<?xf64>, %oh: tensor<?xf16>, "
                     "%ob: tensor<?xbf16>, %of: tensor<?xf32>) {\n"
                     "  %z = constant {value = 0} : i32\n"
                     "  %t = load %x, %z : tile<256xf32>\n"
                     "  %w = load %d, %z : tile<256xf64>\n";
  int row = 0;
  for (const char *mode : {"rne", "rtz", "rd", "ru"}) {
    const std::string m = mode, off = std::to_string(256 * row++);
    text += "  %h_" + m + " = cast %t {rounding = \"" + m + "\"} : tile<256xf16>\n";
    text += "  %b_" + m + " = cast %t {rounding = \"" + m + "\"} : tile<256xbf16>\n";
    text += "  %f_" + m + " = cast %w {rounding = \"" + m + "\"} : tile<256xf32>\n";
    text += "  %o_" + m + " = constant {value = " + off + "} : i32\n";
    text += "  store %oh, %o_" + m + ", %h_" + m + "\n  store %ob, %o_" + m + ", %b_" + m +
            "\n  store %of, %o_" + m + ", %f_" + m + "\n";
  }
  text += "  return\n}\n";
  std::mt19937_64 rng(12);
  HostTensor x(ScalarKind::F32, {256}), d(ScalarKind::F64, {256});
  const double specials[] = {0.0,       -0.0,  65504.0,      65520.0,        -65520.0,
                             1e-8,      -1e-8, 3.0e38,       -3.0e38,        INFINITY,
                             -INFINITY, NAN,   1.0 + 0x1p-8, -(1.0 + 0x1p-8)};
  for (int i = 0; i < 256; ++i) {
    const double v = i < 14 ? specials[i]
                            : std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                                         int(rng() % 40) - 20);
    x.set(i, v);
    d.set(i, v * (1 + 0x1p-30));
  }
  expect_same(text, "casts",
              {x, d, HostTensor(ScalarKind::F16, {1024}), HostTensor(ScalarKind::BF16, {1024}),
               HostTensor(ScalarKind::F32, {1024})},
              {}, {1, 1, 1});
}

TEST(LlvmCpu, HalfPrecisionOpsAreBitExact) {
  std::mt19937_64 rng(4);
  expect_same(kHalfOps, "half",
              {random_tensor(ScalarKind::F16, {50}, rng),
               random_tensor(ScalarKind::BF16, {60}, rng), HostTensor(ScalarKind::F16, {100}),
               HostTensor(ScalarKind::BF16, {64}), HostTensor(ScalarKind::F32, {128})},
              {1.7}, {1, 1, 1});
}

TEST(LlvmCpu, FusedLoadOpStoreKeepsOrderAndEdges) {
  // @fuse: x and out may be the same buffer region in spirit (out = x + y in place at an offset);
  // a store between a load and the fused store must block the fusion.
  const char *text = R"(
kernel @fuse(%x: tensor<?xf32>, %y: tensor<?xf32>, %out: tensor<?xf32>) {
  %pid = program_id {axis = 0} : i32
  %c = constant {value = 96} : i32
  %o = mul %pid, %c : i32
  %xt = load %x, %o : tile<96xf32>
  %yt = load %y, %o {padding = 2.0} : tile<96xf32>
  %s = add %xt, %yt : tile<96xf32>
  store %out, %o, %s
  %xt2 = load %out, %o : tile<96xf32>
  store %x, %o, %yt
  %d = mul %xt2, %xt2 : tile<96xf32>
  store %out, %o, %d
  %cp = load %y, %o : tile<96xf32>
  store %x, %o, %cp
  %a = load %y, %o : tile<96xf32>
  %b = load %out, %o {padding = 1.0} : tile<96xf32>
  %three = full {value = 3.0} : tile<96xf32>
  %sb = mul %three, %b : tile<96xf32>
  %tri = add %a, %sb : tile<96xf32>
  %neg = neg %tri : tile<96xf32>
  store %y, %o, %neg
  return
}
)";
  std::mt19937_64 rng(21);
  for (int64_t n : {1, 95, 96, 97, 500}) {
    expect_same(text, "fuse",
                {random_tensor(ScalarKind::F32, {n}, rng), random_tensor(ScalarKind::F32, {n}, rng),
                 HostTensor(ScalarKind::F32, {n})},
                {}, {(n + 95) / 96, 1, 1});
  }
}

TEST(LlvmCpu, LoadViewsInliningAndRank2StoreFusionKeepSemantics) {
  // @views: rows of 2 x 256 read in place when inside and contiguous (a view), copied with
  // padding otherwise (ragged edges); a write to x between a load and a later use of that load
  // must not leak into it (%t is used after `store %x`; %late's chain is inlined into a reduce
  // after that store); splats and single-use chains are computed inside their users; the rank-2
  // store of a chain through a reshape is fused.
  const char *text = R"(
kernel @views(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>, %z: tensor<?x?xf32>) {
  %pid = program_id {axis = 0} : i32
  %two_i = constant {value = 2} : i32
  %r = mul %pid, %two_i : i32
  %c0 = constant {value = 0} : i32
  %t = load %x, %r, %c0 {padding = -1.5} : tile<2x256xf32>
  %v = load %x, %r, %c0 {padding = -1.5} : tile<2x256xf32>
  %tf = reshape %v : tile<512xf32>
  %late = load %x, %r, %c0 : tile<2x256xf32>
  %one = full {value = 1.0} : tile<2x256xf32>
  %late1 = add %late, %one : tile<2x256xf32>
  %m = reduce %tf {axis = 0, kind = "max"} : f32
  %ms = splat %m : tile<512xf32>
  %d = sub %tf, %ms : tile<512xf32>
  %e = exp %d : tile<512xf32>
  %s = reduce %e {axis = 0, kind = "sum"} : f32
  %ss = splat %s : tile<512xf32>
  %p = div %e, %ss : tile<512xf32>
  %p2 = reshape %p : tile<2x256xf32>
  store %y, %r, %c0, %p2
  %u = load %y, %r, %c0 : tile<2x256xf32>
  %ten = full {value = 10.0} : tile<2x256xf32>
  %w = mul %u, %ten : tile<2x256xf32>
  store %x, %r, %c0, %w
  %again = add %t, %t : tile<2x256xf32>
  %lsum = reduce %late1 {axis = 1, kind = "max"} : tile<2xf32>
  %lcol = expand_dims %lsum {axis = 1} : tile<2x1xf32>
  %lb = broadcast %lcol : tile<2x256xf32>
  %out = add %again, %lb : tile<2x256xf32>
  store %z, %r, %c0, %out
  return
}
)";
  std::mt19937_64 rng(5);
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{4, 256}, {5, 256}, {3, 200}, {2, 300}, {1, 256}, {6, 1000}}) {
    expect_same(text, "views",
                {random_tensor(ScalarKind::F32, {rows, cols}, rng),
                 HostTensor(ScalarKind::F32, {rows, cols}),
                 HostTensor(ScalarKind::F32, {rows, cols})},
                {}, {(rows + 1) / 2, 1, 1}, /*normwise=*/-1e-6);
  }
}

TEST(LlvmCpu, ReductionsFusedIntoTheirProducersAreExact) {
  // Full reductions of an elementwise result accumulate in the producer's loop: f16 and i32 sums
  // stay in order (bit-exact), max / min keep NaN and signed zeros, the tile is still stored.
  const char *text = R"(
kernel @red(%a: tensor<?xf16>, %b: tensor<?xf16>, %i: tensor<?xi32>, %o: tensor<?xf16>, %r: tensor<?xf32>, %ri: tensor<?xi32>) {
  %z = constant {value = 0} : i32
  %x = load %a, %z : tile<300xf16>
  %y = load %b, %z {padding = 1.0} : tile<300xf16>
  %e = mul %x, %y : tile<300xf16>
  %s = reduce %e {axis = 0, kind = "sum"} : f16
  %m = reduce %e {axis = 0, kind = "max"} : f16
  %n = reduce %e {axis = 0, kind = "min"} : f16
  store %o, %z, %e
  %p = load %i, %z : tile<300xi32>
  %three = full {value = 3} : tile<300xi32>
  %q = mul %p, %three : tile<300xi32>
  %qs = reduce %q {axis = 0, kind = "sum"} : i32
  %qm = reduce %q {axis = 0, kind = "min"} : i32
  %s32 = cast %s : f32
  %m32 = cast %m : f32
  %n32 = cast %n : f32
  %v = splat %s32 : tile<1xf32>
  %one = constant {value = 1} : i32
  %two = constant {value = 2} : i32
  store %r, %z, %v
  %vm = splat %m32 : tile<1xf32>
  store %r, %one, %vm
  %vn = splat %n32 : tile<1xf32>
  store %r, %two, %vn
  %vq = splat %qs : tile<1xi32>
  store %ri, %z, %vq
  %vqm = splat %qm : tile<1xi32>
  store %ri, %one, %vqm
  return
}
)";
  std::mt19937_64 rng(8);
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t n = 250 + rng() % 100;
    HostTensor a = random_tensor(ScalarKind::F16, {n}, rng),
               b = random_tensor(ScalarKind::F16, {n}, rng);
    if (trial == 1)
      a.set(7, std::nan(""));
    if (trial == 2)
      for (int64_t i = 0; i < n; ++i)
        a.set(i, i % 2 ? 0.0 : -0.0);
    expect_same(text, "red",
                {a, b, random_tensor(ScalarKind::I32, {n}, rng), HostTensor(ScalarKind::F16, {n}),
                 HostTensor(ScalarKind::F32, {3}), HostTensor(ScalarKind::I32, {2})},
                {}, {1, 1, 1});
  }
}

TEST(LlvmCpu, F32MaxMinPropagateNaNAndOrderSignedZerosInEveryLane) {
  // On AVX-512 vector f32 max / min become vrangeps plus a NaN blend (x86_avx512.cpp): NaN in
  // either operand at any lane, -0 against +0 in both orders, infinities, in elementwise ops and
  // in full reductions (vectorized with several accumulators) must match the interpreter.
  const char *text = R"(
kernel @mm(%a: tensor<?xf32>, %b: tensor<?xf32>, %hi: tensor<?xf32>, %lo: tensor<?xf32>, %r: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %one = constant {value = 1} : i32
  %x = load %a, %z {padding = 0.0} : tile<4096xf32>
  %y = load %b, %z {padding = 0.0} : tile<4096xf32>
  %h = max %x, %y : tile<4096xf32>
  %l = min %x, %y : tile<4096xf32>
  store %hi, %z, %h
  store %lo, %z, %l
  %m = reduce %x {axis = 0, kind = "max"} : f32
  %n = reduce %x {axis = 0, kind = "min"} : f32
  %vm = splat %m : tile<1xf32>
  store %r, %z, %vm
  %vn = splat %n : tile<1xf32>
  store %r, %one, %vn
  return
}
)";
  const float specials[] = {0.0f,           -0.0f,  INFINITY, -INFINITY, std::nanf(""),
                            -std::nanf(""), 1e-45f, -1e-45f,  3.4e38f,   -3.4e38f};
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t n = trial < 6 ? 4096 : 1 + rng() % 4096;
    HostTensor a = random_tensor(ScalarKind::F32, {n}, rng),
               b = random_tensor(ScalarKind::F32, {n}, rng);
    for (int64_t i = 0; i < n; ++i) {
      if (rng() % 4 == 0)
        a.set(i, specials[rng() % std::size(specials)]);
      if (rng() % 4 == 0)
        b.set(i, specials[rng() % std::size(specials)]);
    }
    if (trial % 3 == 0) // only zeros of both signs: the sign of the result decides
      for (int64_t i = 0; i < n; ++i)
        a.set(i, rng() % 2 ? 0.0 : -0.0);
    if (trial % 3 == 1) // no NaN in a, so the reductions see one only when a lane has it
      for (int64_t i = 0; i < n; ++i)
        if (std::isnan(a.get(i)))
          a.set(i, 1.0);
    if (trial == 4)
      a.set(int64_t(rng() % n), std::nanf(""));
    expect_same(text, "mm",
                {a, b, HostTensor(ScalarKind::F32, {n}), HostTensor(ScalarKind::F32, {n}),
                 HostTensor(ScalarKind::F32, {2})},
                {}, {1, 1, 1});
  }
}

TEST(LlvmCpu, RowMaxMinPropagateNaNAndOrderSignedZerosAtEveryPosition) {
  // Row reductions (the loop-carried accumulator of x86_isa.cpp's rewrite_reduction without
  // AVX-512DQ: a plain max / min beside NaN and sign accumulators, fixed up after the loop) at
  // f32, f64, f16 and bf16 over rows of 1003 (whole vectors and a scalar tail). Each row is one
  // case that a wrong fix-up gets wrong: a NaN first, in the middle, in the last vector lane or
  // in the tail (max and min NaN); only zeros of mixed signs (max +0, min -0), all -0, all +0, one
  // +0 among -0 (max +0) and one -0 among +0 (min -0), negatives with a -0 (max -0), positives
  // with a +0 (min +0), infinities, all equal, all -inf or +inf.
  for (const char *t : {"f32", "f64", "f16", "bf16"}) {
    SCOPED_TRACE(t);
    std::string text = R"(
kernel @rows(%a: tensor<?x?xT>, %hi: tensor<?xT>, %lo: tensor<?xT>) {
  %pid = program_id {axis = 0} : i32
  %four = constant {value = 4} : i32
  %r0 = mul %pid, %four : i32
  %z = constant {value = 0} : i32
  %x = load %a, %r0, %z {padding = 0.0} : tile<4x1003xT>
  %m = reduce %x {axis = 1, kind = "max"} : tile<4xT>
  %n = reduce %x {axis = 1, kind = "min"} : tile<4xT>
  store %hi, %r0, %m
  store %lo, %r0, %n
  return
}
)";
    text = with_element_type(text, t);
    const ScalarKind kind = *ir::parse_scalar_name(t);
    constexpr int64_t kCols = 1003, kCases = 19, kRows = kCases + 2; // ragged last program
    std::mt19937_64 rng(41);
    HostTensor a = random_tensor(kind, {kRows, kCols}, rng);
    auto row = [&](int64_t r, auto &&value) {
      for (int64_t c = 0; c < kCols; ++c)
        a.set(r * kCols + c, value(c));
    };
    auto zeros = [&](int64_t r, double first, double rest, int64_t at) {
      row(r, [&](int64_t c) { return c == at ? first : rest; });
    };
    const int64_t nan_at[] = {0, kCols / 2, 7, 8, 999, kCols - 1};
    int64_t r = 0;
    for (int64_t c : nan_at) // NaN at one position, the rest random
      a.set(r++ * kCols + c, std::nan(""));
    row(r++, [&](int64_t) { return rng() % 2 ? 0.0 : -0.0; });
    zeros(r++, -0.0, -0.0, 0);
    zeros(r++, 0.0, 0.0, 0);
    zeros(r++, 0.0, -0.0, 517);
    zeros(r++, -0.0, 0.0, 1001);
    zeros(r++, 0.0, -0.0, 3);
    row(r++, [&](int64_t c) { return c == 640 ? -0.0 : -1.0 - double(c % 5); });
    row(r++, [&](int64_t c) { return c == 12 ? 0.0 : 1.0 + double(c % 5); });
    row(r++, [&](int64_t c) { return c == 100 ? INFINITY : c == 900 ? -INFINITY : 0.5; });
    row(r++, [&](int64_t) { return 1.5; });
    row(r++, [&](int64_t) { return -INFINITY; });
    row(r++, [&](int64_t) { return INFINITY; });
    row(r++, [&](int64_t c) { return c == 1002 ? -std::nan("") : -0.0; });
    ASSERT_EQ(r, kCases);
    expect_same(text, "rows", {a, HostTensor(kind, {kRows}), HostTensor(kind, {kRows})}, {},
                {(kRows + 3) / 4, 1, 1});
  }
}

TEST(LlvmCpu, MaxMinAgainstConstantsKeepNaN) {
  // Against a constant without NaN or zero lanes (a clamp's bounds) max / min are one vmaxps /
  // vminps with the constant first (x86_isa.cpp sse_minmax without AVX-512DQ): a NaN x must stay
  // NaN, zeros and values equal to a bound must come out as the interpreter's.
  const char *text = R"(
kernel @bounds(%a: tensor<?xf32>, %c: tensor<?xf32>, %h: tensor<?xf32>, %l: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %x = load %a, %z {padding = 0.0} : tile<1024xf32>
  %lo = full {value = -1.5} : tile<1024xf32>
  %hi = full {value = 2.5} : tile<1024xf32>
  %k = clamp %x, %lo, %hi : tile<1024xf32>
  store %c, %z, %k
  %m = max %lo, %x : tile<1024xf32>
  store %h, %z, %m
  %n = min %x, %hi : tile<1024xf32>
  store %l, %z, %n
  return
}
)";
  const float specials[] = {0.0f,           -0.0f, INFINITY, -INFINITY, std::nanf(""),
                            -std::nanf(""), -1.5f, 2.5f,     1e-45f,    -1e-45f};
  std::mt19937_64 rng(47);
  for (int64_t n : {1024, 1000}) {
    HostTensor a = random_tensor(ScalarKind::F32, {n}, rng);
    for (int64_t i = 0; i < n; ++i) {
      if (i < int64_t(std::size(specials)))
        a.set(i, specials[i]);
      else if (rng() % 3 == 0)
        a.set(i, specials[rng() % std::size(specials)]);
      else
        a.set(i, a.get(i) * 4.0);
    }
    expect_same(text, "bounds",
                {a, HostTensor(ScalarKind::F32, {n}), HostTensor(ScalarKind::F32, {n}),
                 HostTensor(ScalarKind::F32, {n})},
                {}, {1, 1, 1});
  }
}

TEST(LlvmCpu, FusedRowBroadcastsAreExact) {
  // x / s[:, None] of several rows (int8 quantize's, layernorm's statistics) is a per-row value
  // inside the fused store (plan_store_fusion.h), in the row loop, the streaming chunks (a
  // tensor over 32 MiB, aligned) and the unfused branch (a ragged last block). Fails if a lane
  // takes another row's value.
  const char *text = R"(
kernel @rowdiv(%x: tensor<?x?xf32>, %s: tensor<?xf32>, %o: tensor<?x?xf32>) {
  %pid = program_id {axis = 0} : i32
  %four = constant {value = 4} : i32
  %r0 = mul %pid, %four : i32
  %z = constant {value = 0} : i32
  %a = load %x, %r0, %z : tile<4x1024xf32>
  %v = load %s, %r0 : tile<4xf32>
  %e = expand_dims %v {axis = 1} : tile<4x1xf32>
  %b = broadcast %e : tile<4x1024xf32>
  %q = div %a, %b : tile<4x1024xf32>
  store %o, %r0, %z, %q
  return
}
)";
  std::mt19937_64 rng(43);
  for (int64_t rows : {8, 9, 3}) // whole blocks, a ragged last block, one partial block
    expect_same(text, "rowdiv",
                {random_tensor(ScalarKind::F32, {rows, 1024}, rng),
                 random_tensor(ScalarKind::F32, {rows}, rng),
                 HostTensor(ScalarKind::F32, {rows, 1024})},
                {}, {(rows + 3) / 4, 1, 1});
  auto m = parse_ok(text);
  std::string error;
  auto prog = compile_and_load(*m, CompileOptions{}, &error);
  ASSERT_TRUE(prog) << error;
  const int64_t rows = 8300, cols = 1024; // 34 MB of output: the streaming path
  std::vector<float> x(rows * cols), s(rows), storage(rows * cols + 16, -1.0f);
  for (int64_t i = 0; i < rows * cols; ++i)
    x[i] = float(i % 1013) * 0.5f - 200.0f;
  for (int64_t r = 0; r < rows; ++r)
    s[r] = 1.0f + float(r % 97) * 0.125f;
  float *out = aligned_output(storage, 0);
  std::vector<tl_cpu_arg> args(3);
  args[0] = {x.data(), {rows, cols}, {cols, 1}, 0, 0.0};
  args[1] = {s.data(), {rows}, {1}, 0, 0.0};
  args[2] = {out, {rows, cols}, {cols, 1}, 0, 0.0};
  ASSERT_EQ(launch_programs(*prog, "rowdiv", args, (rows + 3) / 4), "");
  for (int64_t i = 0; i < rows * cols; ++i)
    ASSERT_EQ(out[i], x[i] / s[i / cols]) << "at " << i;
}

TEST(LlvmCpu, StreamingStoresToLargeTensorsAreExact) {
  // Tensors over 32 MiB written by fused stores take the non-temporal path when the block is
  // 64-byte aligned (fusion.cpp); a misaligned base, the ragged last block and small tensors take
  // the others. Every path must write exactly x * 3 + y.
  const char *text = R"(
kernel @axpy(%x: tensor<?xf32>, %y: tensor<?xf32>, %o: tensor<?xf32>) {
  %pid = program_id {axis = 0} : i32
  %b = constant {value = 8192} : i32
  %off = mul %pid, %b : i32
  %xt = load %x, %off : tile<8192xf32>
  %yt = load %y, %off : tile<8192xf32>
  %three = full {value = 3.0} : tile<8192xf32>
  %ax = mul %xt, %three : tile<8192xf32>
  %s = add %ax, %yt : tile<8192xf32>
  store %o, %off, %s
  return
}
)";
  auto m = parse_ok(text);
  std::string error;
  auto prog = compile_and_load(*m, CompileOptions{}, &error);
  ASSERT_TRUE(prog) << error;
  for (auto [n, misalign] : {std::pair<int64_t, int64_t>{(int64_t(9) << 20) + 1000, 0},
                             {(int64_t(9) << 20) + 1000, 1},
                             {100000, 0}}) {
    std::vector<float> x(n), y(n), storage(n + 16, -1.0f);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = float(i % 1000) * 0.25f;
      y[i] = float(i % 7) - 3.0f;
    }
    float *out = aligned_output(storage, misalign);
    ASSERT_EQ(launch_rank1(*prog, "axpy", {x.data(), y.data(), out}, n, 8192), "");
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], x[i] * 3.0f + y[i]) << "n " << n << " misalign " << misalign << " at " << i;
    EXPECT_EQ(out[n], -1.0f) << "wrote past the end";
  }
}

TEST(LlvmCpu, StreamedRunsStartAnywhereAndEndAnywhere) {
  // Over 32 MiB a fused store streams from its output's first 64-byte boundary: the lanes before
  // it, and after the last whole vector, are stored plainly (fusion.cpp, heads). Rows of 1000 and
  // 1001 f32 (a row broadcast: x minus its row's max) as one run of a one-row block, as runs of
  // rows (8 rows a block), contiguous or 1003 apart, at misaligned bases, with a ragged last
  // block; and an int8 output (its heads up to 63 lanes). Fails on a lane stored twice from the
  // wrong place, left unwritten (the -1 sentinels), a vector at the wrong offset or the wrong
  // row's max, or a write past a row or the tensor.
  struct Case {
    int64_t block_rows, width, stride, misalign;
  };
  for (Case c : {Case{1, 1000, 1000, 0}, Case{1, 1000, 1000, 3}, Case{8, 1000, 1000, 0},
                 Case{8, 1000, 1003, 5}, Case{8, 1001, 1001, 1}, Case{1, 1001, 1003, 2}}) {
    SCOPED_TRACE(testing::Message() << "block rows " << c.block_rows << " width " << c.width
                                    << " stride " << c.stride << " misalign " << c.misalign);
    const std::string R = std::to_string(c.block_rows), W = std::to_string(c.width);
    const std::string tile = R + "x" + W + "xf32";
    const std::string text = "kernel @center(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>) {\n"
                             "  %p = program_id {axis = 0} : i32\n"
                             "  %b = constant {value = " +
                             R +
                             "} : i32\n"
                             "  %z = constant {value = 0} : i32\n"
                             "  %m0 = mul %p, %b : i32\n"
                             "  %v = load %x, %m0, %z : tile<" +
                             tile +
                             ">\n"
                             "  %m = reduce %v {axis = 1, kind = \"max\"} : tile<" +
                             R +
                             "xf32>\n"
                             "  %e = expand_dims %m {axis = 1} : tile<" +
                             R +
                             "x1xf32>\n"
                             "  %bb = broadcast %e : tile<" +
                             tile +
                             ">\n"
                             "  %d = sub %v, %bb : tile<" +
                             tile +
                             ">\n"
                             "  store %o, %m0, %z, %d\n"
                             "  return\n}\n";
    auto m = parse_ok(text);
    std::string error;
    auto prog = compile_and_load(*m, CompileOptions{}, &error);
    ASSERT_TRUE(prog) << error;
    const int64_t rows = 4203; // 16.8 MB in, as much out: past the 32 MiB in all
    std::vector<float> x(rows * c.width), storage(rows * c.stride + 32, -1.0f);
    for (int64_t i = 0; i < int64_t(x.size()); ++i)
      x[i] = float((i * 7919) % 1000) * 0.25f - 100.0f;
    float *out = aligned_output(storage, c.misalign);
    std::vector<tl_cpu_arg> args(2);
    args[0] = {x.data(), {rows, c.width}, {c.width, 1}, 0, 0.0};
    args[1] = {out, {rows, c.width}, {c.stride, 1}, 0, 0.0};
    ASSERT_EQ(launch_programs(*prog, "center", args, (rows + c.block_rows - 1) / c.block_rows), "");
    for (int64_t r = 0; r < rows; ++r) {
      const float mx = *std::max_element(&x[r * c.width], &x[(r + 1) * c.width]);
      for (int64_t j = 0; j < c.stride && r * c.stride + j < rows * c.stride; ++j)
        ASSERT_EQ(out[r * c.stride + j], j < c.width ? x[r * c.width + j] - mx : -1.0f)
            << "row " << r << " column " << j;
    }
    EXPECT_EQ(out[rows * c.stride], -1.0f) << "wrote past the end";
  }
  // int8 rows of 1000 (quantize's shape): 5 bytes an element, 6720 rows past 32 MiB.
  auto m = parse_ok(R"(
kernel @narrow(%x: tensor<?x?xf32>, %q: tensor<?x?xi8>) {
  %p = program_id {axis = 0} : i32
  %z = constant {value = 0} : i32
  %v = load %x, %p, %z : tile<1x1000xf32>
  %c = cast %v {rounding = "rne"} : tile<1x1000xi8>
  store %q, %p, %z, %c
  return
}
)");
  std::string error;
  auto prog = compile_and_load(*m, CompileOptions{}, &error);
  ASSERT_TRUE(prog) << error;
  const int64_t rows = 6720, n = 1000;
  std::vector<float> x(rows * n);
  for (int64_t i = 0; i < int64_t(x.size()); ++i)
    x[i] = float((i * 7919) % 201) - 100.0f;
  for (int64_t misalign : {0, 1, 37}) {
    std::vector<int8_t> storage(rows * n + 128, int8_t(-1));
    int8_t *q = storage.data();
    while (reinterpret_cast<uintptr_t>(q) % 64)
      ++q;
    q += misalign;
    std::vector<tl_cpu_arg> args(2);
    args[0] = {x.data(), {rows, n}, {n, 1}, 0, 0.0};
    args[1] = {q, {rows, n}, {n, 1}, 0, 0.0};
    ASSERT_EQ(launch_programs(*prog, "narrow", args, rows), "");
    for (int64_t i = 0; i < rows * n; ++i)
      ASSERT_EQ(int(q[i]), int(x[i])) << "misalign " << misalign << " at " << i;
    EXPECT_EQ(int(q[rows * n]), -1) << "wrote past the end";
  }
}

TEST(LlvmCpu, RowStridedStreamingStoresAreExact) {
  // RoPE's shape of fused stores: each half of 64-float rows computed from both halves of x (each
  // store loading its own, as tl.ops' kernel does on llvm-cpu), so the loads are row-strided as
  // well as the output, and the two stores run as one loop (cpu-pair-stores) where neither
  // output overlaps the other's loads. Over 32 MiB with 64-byte aligned rows the loop streams a
  // row per chunk (fusion.cpp); a misaligned base, rows 72 floats apart (not whole lines) and
  // small tensors take the plain paired loop; the ragged last block and an output in place of x
  // run the stores one after the other. Every path must write exactly what the stores in order
  // do (in place, the second half reads the first half's new values) and leave the columns
  // between rows alone.
  const char *text = R"(
kernel @halves(%x: tensor<?x?xf32>, %c: tensor<?x?xf32>, %o: tensor<?x?xf32>) {
  %pm = program_id {axis = 0} : i32
  %b = constant {value = 64} : i32
  %z = constant {value = 0} : i32
  %h = constant {value = 32} : i32
  %m0 = mul %pm, %b : i32
  %a = load %x, %m0, %z : tile<64x32xf32>
  %d = load %x, %m0, %h : tile<64x32xf32>
  %k = load %c, %m0, %z : tile<64x32xf32>
  %e = mul %d, %k : tile<64x32xf32>
  %lo = sub %a, %e : tile<64x32xf32>
  store %o, %m0, %z, %lo
  %a2 = load %x, %m0, %z : tile<64x32xf32>
  %d2 = load %x, %m0, %h : tile<64x32xf32>
  %k2 = load %c, %m0, %z : tile<64x32xf32>
  %f = mul %a2, %k2 : tile<64x32xf32>
  %hi = add %d2, %f : tile<64x32xf32>
  store %o, %m0, %h, %hi
  return
}
)";
  auto m = parse_ok(text);
  std::string error;
  auto prog = compile_and_load(*m, CompileOptions{}, &error);
  ASSERT_TRUE(prog) << error;
  struct Case {
    int64_t rows, stride, misalign;
    bool in_place;
  };
  for (Case c : {Case{140032, 64, 0, false}, Case{140000, 64, 0, false}, Case{140032, 64, 1, false},
                 Case{131072, 72, 0, false}, Case{1000, 64, 0, false}, Case{140032, 64, 0, true},
                 Case{1000, 64, 0, true}}) {
    SCOPED_TRACE(testing::Message() << "rows " << c.rows << " stride " << c.stride << " misalign "
                                    << c.misalign << " in place " << c.in_place);
    std::vector<float> xs(c.rows * 64 + 32), k(c.rows * 32), storage(c.rows * c.stride + 32, -1.0f);
    float *x = aligned_output(xs, 0);
    for (int64_t i = 0; i < c.rows * 64; ++i)
      x[i] = float((i * 7919) % 1000) * 0.25f - 100.0f;
    for (int64_t i = 0; i < int64_t(k.size()); ++i)
      k[i] = float(i % 13) * 0.125f - 0.75f;
    const std::vector<float> x0(x, x + c.rows * 64);
    float *out = c.in_place ? x : aligned_output(storage, c.misalign);
    std::vector<tl_cpu_arg> args(3);
    args[0] = {x, {c.rows, 64}, {64, 1}, 0, 0.0};
    args[1] = {k.data(), {c.rows, 32}, {32, 1}, 0, 0.0};
    args[2] = {out, {c.rows, 64}, {c.stride, 1}, 0, 0.0};
    ASSERT_EQ(launch_programs(*prog, "halves", args, (c.rows + 63) / 64), "");
    for (int64_t r = 0; r < c.rows; ++r)
      for (int64_t j = 0; j < c.stride; ++j) {
        const int64_t col = j % 32;
        const float a = x0[r * 64 + col], d = x0[r * 64 + 32 + col], kk = k[r * 32 + col];
        const float lo = a - d * kk;
        const float want = j < 32 ? lo : j < 64 ? d + (c.in_place ? lo : a) * kk : -1.0f;
        if (r + 1 == c.rows && j >= 64)
          break; // past the last row: the storage's tail
        ASSERT_EQ(out[r * c.stride + j], want) << "row " << r << " column " << j;
      }
  }
}

TEST(LlvmCpu, FusedStoresOfUnitTilesPastTheEndWriteNothing) {
  // A row's sum stored as a (1, 1) tile at (0, pid), and a (2, 1) column at (pid, c): programs
  // past the tensor's rows (a grid rounded up) or a column past its last must store nothing.
  // The fused store's bounds check had skipped the dimensions of extent 1 after the tile's
  // row, so both wrote past the tensor (heap corruption in tl.ops.var, session 30).
  const char *text = R"(
kernel @unit(%x: tensor<?x?xf32>, %out: tensor<?x?xf32>, %col: tensor<?x?xf32>, %c: i32) {
  %p = program_id {axis = 0} : i32
  %z = constant {value = 0} : i32
  %v = load %x, %p, %z {padding = 0.0} : tile<1x16xf32>
  %s = reduce %v {axis = 1, kind = "sum"} : tile<1xf32>
  %one = constant {value = 1.0} : f32
  %ones = splat %one : tile<1xf32>
  %t = add %s, %ones : tile<1xf32>
  %r = reshape %t : tile<1x1xf32>
  store %out, %z, %p, %r
  %two = constant {value = 2} : i32
  %p2 = mul %p, %two : i32
  %w = load %x, %p2, %z {padding = 0.0} : tile<2x16xf32>
  %ws = reduce %w {axis = 1, kind = "sum"} : tile<2xf32>
  %wc = reshape %ws : tile<2x1xf32>
  store %col, %p2, %c, %wc
  return
}
)";
  const int64_t rows = 5, programs = rows + 4;
  // Through the differential harness, whose guard bytes around every tensor catch a
  // write outside it.
  std::mt19937_64 rng(30);
  for (int64_t c : {int64_t(2), int64_t(3)})
    expect_same(text, "unit",
                {random_tensor(ScalarKind::F32, {rows, 16}, rng),
                 HostTensor(ScalarKind::F32, {1, rows}), HostTensor(ScalarKind::F32, {rows, 3})},
                {c}, {programs, 1, 1}, -1e-6);
  // And straight through the calling convention: each stored sum, every float past it alone.
  auto m = parse_ok(text);
  std::string error;
  auto prog = compile_and_load(*m, CompileOptions{}, &error);
  ASSERT_TRUE(prog) << error;
  std::vector<float> x(programs * 2 * 16, 1.0f), out(rows + 8, -7.0f), col(rows * 3 + 8, -7.0f);
  for (int64_t c : {int64_t(1), int64_t(3)}) { // inside the 3 columns of col, and past them
    SCOPED_TRACE(testing::Message() << "column " << c);
    std::fill(out.begin(), out.end(), -7.0f);
    std::fill(col.begin(), col.end(), -7.0f);
    std::vector<tl_cpu_arg> args(4);
    args[0] = {x.data(), {rows, 16}, {16, 1}, 0, 0.0};
    args[1] = {out.data(), {1, rows}, {rows, 1}, 0, 0.0};
    args[2] = {col.data(), {rows, 3}, {3, 1}, 0, 0.0};
    args[3].i = c;
    ASSERT_EQ(launch_programs(*prog, "unit", args, programs), "");
    for (int64_t i = 0; i < int64_t(out.size()); ++i)
      ASSERT_EQ(out[i], i < rows ? 17.0f : -7.0f) << "out[" << i << "]";
    for (int64_t i = 0; i < int64_t(col.size()); ++i)
      ASSERT_EQ(col[i], i < rows * 3 && i % 3 == c ? 16.0f : -7.0f) << "col[" << i << "]";
  }
}

TEST(LlvmCpu, PairedStoresKeepTheirOrder) {
  // The second store reads what the first wrote (the first half of each output row): the pair's
  // run-time check (its loads against the first output) runs them one after the other, as
  // written. Paired, a streamed chunk computes both stores' lanes before writing either, so the
  // second would read the output's old contents (-1).
  const char *text = R"(
kernel @chain(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>) {
  %pm = program_id {axis = 0} : i32
  %b = constant {value = 64} : i32
  %z = constant {value = 0} : i32
  %h = constant {value = 32} : i32
  %m0 = mul %pm, %b : i32
  %a = load %x, %m0, %z : tile<64x32xf32>
  %two = full {value = 2.0} : tile<64x32xf32>
  %lo = mul %a, %two : tile<64x32xf32>
  store %o, %m0, %z, %lo
  %p = load %o, %m0, %z : tile<64x32xf32>
  %d = load %x, %m0, %h : tile<64x32xf32>
  %hi = add %p, %d : tile<64x32xf32>
  store %o, %m0, %h, %hi
  return
}
)";
  auto m = parse_ok(text);
  std::string error;
  auto prog = compile_and_load(*m, CompileOptions{}, &error);
  ASSERT_TRUE(prog) << error;
  // The output's rows also run backwards (a negative row stride): its block's bytes then lie
  // below its base, and a span taken from the base upwards would call it apart from the loads.
  for (auto [rows, backwards] :
       {std::pair<int64_t, bool>{140032, false}, {1000, false}, {140032, true}}) {
    SCOPED_TRACE(testing::Message() << "rows " << rows << " backwards " << backwards);
    std::vector<float> x(rows * 64), storage(rows * 64 + 16, -1.0f);
    for (int64_t i = 0; i < rows * 64; ++i)
      x[i] = float((i * 7919) % 1000) * 0.25f - 100.0f;
    float *out = aligned_output(storage, 0);
    std::vector<tl_cpu_arg> args(2);
    args[0] = {x.data(), {rows, 64}, {64, 1}, 0, 0.0};
    args[1] = backwards ? tl_cpu_arg{out + (rows - 1) * 64, {rows, 64}, {-64, 1}, 0, 0.0}
                        : tl_cpu_arg{out, {rows, 64}, {64, 1}, 0, 0.0};
    ASSERT_EQ(launch_programs(*prog, "chain", args, (rows + 63) / 64), "");
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < 64; ++j) {
        const float lo = x[r * 64 + j % 32] * 2.0f;
        const int64_t at = (backwards ? rows - 1 - r : r) * 64 + j;
        ASSERT_EQ(out[at], j < 32 ? lo : lo + x[r * 64 + j]) << "row " << r << " column " << j;
      }
  }
}

TEST(LlvmCpu, LateStreamingStoresAreExact) {
  // A store after compute passes over a load view (max, then d and its min, as softmax) into a
  // tensor over 32 MiB stores through the caches, its block fetched for ownership during the
  // compute passes (fusion.cpp), not with non-temporal stores; a misaligned base, the ragged last
  // block and small tensors take the other paths. On the host and on AVX2 (no vrangeps).
  const char *text = R"(
kernel @shift(%x: tensor<?xf32>, %o: tensor<?xf32>) {
  %pid = program_id {axis = 0} : i32
  %b = constant {value = 4096} : i32
  %off = mul %pid, %b : i32
  %t = load %x, %off {padding = 0.0} : tile<4096xf32>
  %m = reduce %t {axis = 0, kind = "max"} : f32
  %ms = splat %m : tile<4096xf32>
  %d = sub %t, %ms : tile<4096xf32>
  %n = reduce %d {axis = 0, kind = "min"} : f32
  %ns = splat %n : tile<4096xf32>
  %p = sub %d, %ns : tile<4096xf32>
  store %o, %off, %p
  return
}
)";
  auto m = parse_ok(text);
  for (const char *cpu : {"host", "x86-64-v3"}) {
    SCOPED_TRACE(cpu);
    std::string error;
    auto prog = compile_and_load(*m, for_cpu(cpu), &error);
    ASSERT_TRUE(prog) << error;
    for (auto [n, misalign] : {std::pair<int64_t, int64_t>{(int64_t(9) << 20) + 1000, 0},
                               {(int64_t(9) << 20) + 1000, 1},
                               {100000, 0}}) {
      std::vector<float> x(n), storage(n + 16, -1.0f);
      for (int64_t i = 0; i < n; ++i)
        x[i] = float((i * 7919) % 1000) * 0.25f - 100.0f;
      float *out = aligned_output(storage, misalign);
      ASSERT_EQ(launch_rank1(*prog, "shift", {x.data(), out}, n, 4096), "");
      for (int64_t b = 0; b < n; b += 4096) {
        const int64_t e = std::min(n, b + 4096);
        float mx = *std::max_element(x.begin() + b, x.begin() + e), mn = INFINITY;
        if (e - b < 4096)
          mx = std::max(mx, 0.0f); // the padding
        for (int64_t i = b; i < b + 4096; ++i)
          mn = std::min(mn, (i < e ? x[i] : 0.0f) - mx);
        for (int64_t i = b; i < e; ++i)
          ASSERT_EQ(out[i], (x[i] - mx) - mn)
              << "n " << n << " misalign " << misalign << " at " << i;
      }
      EXPECT_EQ(out[n], -1.0f) << "wrote past the end";
    }
  }
}

TEST(LlvmCpu, RunTimeFaultsAreReportedNotUndefined) {
  const char *text = R"(
kernel @faults(%x: tensor<?xf32>, %d: i32) {
  %z = constant {value = 0} : i32
  %i = arange {end = 8, start = 0} : tile<8xi32>
  %g = gather %x, %i : tile<8xf32>
  %one = constant {value = 1} : i32
  %q = div %one, %d : i32
  return
}
)";
  auto m = parse_ok(text);
  std::mt19937_64 rng(1);
  // Gather past the end of a 5-element tensor: the index and lane are named.
  Outcome o = run_llvm(*m, *m->kernels()[0], {random_tensor(ScalarKind::F32, {5}, rng)},
                       {int64_t(1)}, {2, 1, 1});
  EXPECT_NE(
      o.error.find(
          "'gather' index out of bounds in dimension 0 (index 5, lane 5) in program (0, 0, 0)"),
      std::string::npos)
      << o.error;
  o = run_llvm(*m, *m->kernels()[0], {random_tensor(ScalarKind::F32, {8}, rng)}, {int64_t(0)},
               {1, 1, 1});
  EXPECT_NE(o.error.find("test.tlir:7:3: error: integer division by zero"), std::string::npos)
      << o.error;
}

TEST(LlvmCpu, Fp8StorageArithmeticAndCastsAreBitExact) {
  std::string text = R"(
kernel @f8(%x: tensor<?xf32>, %e: tensor<?xf8e4m3>, %m: tensor<?xf8e5m2>, %o: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z : tile<128xf32>
  %a = cast %t : tile<128xf8e4m3>
  %b = cast %t {rounding = "rtz"} : tile<128xf8e5m2>
  %c = cast %t {rounding = "ru"} : tile<128xf8e4m3>
  %s = add %a, %c : tile<128xf8e4m3>
  %p0 = mul %b, %b : tile<128xf8e5m2>
  %p = add %p0, %b : tile<128xf8e5m2>
  store %e, %z, %s
  store %m, %z, %p
  %l = load %e, %z {padding = 0.5} : tile<128xf8e4m3>
  %w = cast %l : tile<128xf32>
  %h = cast %b : tile<128xf16>
  %hf = cast %h : tile<128xf32>
  store %o, %z, %w
  %c128 = constant {value = 128} : i32
  store %o, %c128, %hf
  return
}
)";
  std::mt19937_64 rng(13);
  HostTensor x(ScalarKind::F32, {128});
  for (int i = 0; i < 128; ++i)
    x.set(i, std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), int(rng() % 24) - 12));
  expect_same(text, "f8",
              {x, HostTensor(ScalarKind::F8E4M3, {100}), HostTensor(ScalarKind::F8E5M2, {128}),
               HostTensor(ScalarKind::F32, {256})},
              {}, {1, 1, 1});
}

// A cast of f32 to fp8 (nearest even) that is stored: its bits come from f8_encode_rne in one
// pass over the f32 bits, not from the rounded value re-encoded. Against the interpreter, bit
// for bit, for both formats over a sweep of f32 bit patterns, every fp8 value, the midpoints
// between neighbours (ties to even) and the f32 values either side of them, the boundaries of the
// subnormals, of the largest finite value and past it (e4m3fn: NaN; e5m2: infinity), infinities,
// NaNs and signed zeros. Fails if a tie rounds away from even, a carry does not move to the next
// binade, a subnormal's step count is off, the overflow code or a sign is wrong.
TEST(LlvmCpu, Fp8CastsStoredAreBitExact) {
  const char *text = R"(
kernel @f8cast(%x: tensor<?xf32>, %e: tensor<?xf8e4m3>, %m: tensor<?xf8e5m2>) {
  %p = program_id {axis = 0} : i32
  %n = constant {value = 1024} : i32
  %off = mul %p, %n : i32
  %t = load %x, %off : tile<1024xf32>
  %a = cast %t : tile<1024xf8e4m3>
  %b = cast %t : tile<1024xf8e5m2>
  store %e, %off, %a
  store %m, %off, %b
  return
}
)";
  std::vector<float> in = f32_sweep(16);
  for (int mbits : {3, 2}) { // every finite value of e4m3 (bias 7) and e5m2 (bias 15)
    const int bias = mbits == 3 ? 7 : 15;
    std::vector<double> values;
    for (int e = 0; e < (mbits == 3 ? 16 : 31); ++e)
      for (int m = 0; m < (1 << mbits); ++m)
        values.push_back(e == 0 ? std::ldexp(m, 1 - bias - mbits)
                                : std::ldexp(1.0 + std::ldexp(m, -mbits), e - bias));
    for (size_t i = 0; i < values.size(); ++i) {
      const float v = float(values[i]);
      in.insert(in.end(), {v, -v});
      const double next = i + 1 < values.size() ? values[i + 1] : 2 * values[i];
      const float mid = float((values[i] + next) / 2); // exact: one bit below the format's
      for (float f : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)})
        in.insert(in.end(), {f, -f});
    }
  }
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 448.0f, 464.0f, 480.0f, 57344.0f,
                  61440.0f, 65536.0f, 1e30f, -1e30f, 1e-30f, 1e-45f})
    in.push_back(f);
  in.resize((in.size() + 1023) / 1024 * 1024, 0.0f);
  const int64_t n = int64_t(in.size());
  HostTensor x(ScalarKind::F32, {n});
  for (int64_t i = 0; i < n; ++i)
    x.set(i, in[size_t(i)]);
  expect_same(text, "f8cast",
              {x, HostTensor(ScalarKind::F8E4M3, {n}), HostTensor(ScalarKind::F8E5M2, {n})}, {},
              {n / 1024, 1, 1});
}

TEST(LlvmCpu, UnsupportedCastsAreClearErrors) {
  auto m = parse_ok("kernel @h(%x: tensor<?xi64>, %y: tensor<?xf16>) {\n"
                    "  %z = constant {value = 0} : i32\n"
                    "  %t = load %x, %z : tile<4xi64>\n"
                    "  %h = cast %t : tile<4xf16>\n"
                    "  store %y, %z, %h\n"
                    "  return\n}\n");
  std::string error;
  EXPECT_TRUE(compile_object(*m, CompileOptions{}, &error).empty());
  EXPECT_NE(error.find("test.tlir:4:3: error: llvm-cpu cannot lower 'cast': i64 to f16"),
            std::string::npos)
      << error;
}

// The elementwise ops of issue 19 at every float type (and the integer ones at every width):
// llvm-cpu against the interpreter. Exact ops bit for bit against its normal mode (NaN payloads
// aside); transcendental ones against its fp64 mode within tl-conform's ULP bounds (f32's bound
// also for f64; 2 for f16 and bf16), exactly where the fp64 value is 0, inf or NaN (Annex F).
struct NewOp {
  const char *name;
  int arity;
  double f32_ulps; // 0: exact
  double lo, hi;   // ordinary inputs: uniform in [lo, hi]
};

const NewOp kNewFloatOps[] = {
    {"tan", 1, 5, -10, 10},  {"asin", 1, 4, -1, 1},     {"acos", 1, 4, -1, 1},
    {"atan", 1, 5, -50, 50}, {"sinh", 1, 4, -10, 10},   {"cosh", 1, 4, -10, 10},
    {"log1p", 1, 2, -1, 8},  {"expm1", 1, 3, -12, 10},  {"erfinv", 1, 8, -1, 1},
    {"atan2", 2, 6, -5, 5},  {"rint", 1, 0, -40, 40},   {"floor", 1, 0, -40, 40},
    {"ceil", 1, 0, -40, 40}, {"trunc", 1, 0, -40, 40},  {"isnan", 1, 0, -5, 5},
    {"isinf", 1, 0, -5, 5},  {"isfinite", 1, 0, -5, 5}, {"minnum", 2, 0, -5, 5},
    {"maxnum", 2, 0, -5, 5}, {"fmod", 2, 0, -40, 40},   {"copysign", 2, 0, -5, 5},
    {"clamp", 3, 0, -5, 5},  {"ndtr", 1, 8, -14, 8}};

std::string new_op_kernel(const NewOp &op, ScalarKind in, ScalarKind out, int64_t block) {
  const std::string ti(ir::scalar_name(in)), to(ir::scalar_name(out)), b = std::to_string(block);
  std::string k = "kernel @k(";
  for (int i = 0; i < op.arity; ++i)
    k += "%x" + std::to_string(i) + ": tensor<?x" + ti + ">, ";
  k += "%y: tensor<?x" + to +
       ">) {\n  %pid = program_id {axis = 0} : i32\n  %b = constant {value = " + b +
       "} : i32\n  %o = mul %pid, %b : i32\n";
  for (int i = 0; i < op.arity; ++i)
    k += "  %a" + std::to_string(i) + " = load %x" + std::to_string(i) + ", %o : tile<" + b + "x" +
         ti + ">\n";
  k += "  %r = " + std::string(op.name) + " %a0";
  for (int i = 1; i < op.arity; ++i)
    k += ", %a" + std::to_string(i);
  return k + " : tile<" + b + "x" + to + ">\n  store %y, %o, %r\n  return\n}\n";
}

/// One ulp of float type `k` at |r| (the subnormal spacing below the normal range).
double ulp_of(ScalarKind k, double r) {
  const auto f = ir::is_float(k) && k != ScalarKind::F64 ? k : ScalarKind::F64;
  const int mant = f == ScalarKind::F32    ? 23
                   : f == ScalarKind::F16  ? 10
                   : f == ScalarKind::BF16 ? 7
                                           : 52;
  const int emin = f == ScalarKind::F16 ? -14 : f == ScalarKind::F64 ? -1022 : -126;
  const int e = std::max(std::ilogb(r), emin);
  return std::ldexp(1.0, e - mant);
}

TEST(LlvmCpu, NewElementwiseOpsMatchTheInterpreterAtEveryFloatType) {
  std::mt19937_64 rng(19);
  const int64_t n = 1030, block = 256; // ragged last program
  for (const NewOp &op : kNewFloatOps)
    for (ScalarKind f : {ScalarKind::F32, ScalarKind::F16, ScalarKind::BF16, ScalarKind::F64}) {
      SCOPED_TRACE(std::string(op.name) + " " + std::string(ir::scalar_name(f)));
      const bool is_class = std::string(op.name).rfind("is", 0) == 0;
      const ScalarKind out = is_class ? ScalarKind::I1 : f;
      const double big = f == ScalarKind::F16 ? 65504 : f == ScalarKind::BF16 ? 3e38 : 3e38;
      // Specials first, every pair (and triple's first two) of them, then ordinary values.
      const std::vector<double> sp = {0, -0.0, INFINITY, -INFINITY, NAN, 1, -1, 0.5, -2.5, big};
      std::vector<HostTensor> ts;
      for (int i = 0; i < op.arity; ++i) {
        HostTensor t(f, {n});
        for (int64_t e = 0; e < n; ++e) {
          double v = std::uniform_real_distribution<double>(op.lo, op.hi)(rng);
          if (e % 7 == 3) // exact halves, for the rounding ops
            v = std::round(v) + 0.5;
          if (e % 11 == 5 && op.lo == -1) // 1 - 2^-j: erfinv's far tail, f64's included
            v = std::copysign(1 - std::ldexp(1.0, -int(rng() % 54)), v);
          if (e < int64_t(sp.size() * sp.size()))
            v = i == 0 ? sp[e / sp.size()] : sp[e % sp.size()];
          t.set(e, v);
        }
        ts.push_back(std::move(t));
      }
      ts.emplace_back(out, std::vector<int64_t>{n});
      auto m = parse_ok(new_op_kernel(op, f, out, block));
      const ir::Kernel &k = *m->kernels()[0];
      const int64_t grid = (n + block - 1) / block;
      Outcome want = run_interpreter(k, ts, {}, {grid, 1, 1}, /*fp64=*/op.f32_ulps > 0);
      Outcome got = run_llvm(*m, k, ts, {}, {grid, 1, 1});
      ASSERT_EQ(want.error, "");
      ASSERT_EQ(got.error, "");
      const HostTensor &w = want.tensors.back(), &g = got.tensors.back();
      const double bound = f == ScalarKind::F16 || f == ScalarKind::BF16 ? 2 : op.f32_ulps;
      double worst = 0;
      for (int64_t e = 0; e < n; ++e) {
        const double r = w.get(e), a = g.get(e);
        if (std::isnan(r) || std::isnan(a)) {
          ASSERT_TRUE(std::isnan(r) && std::isnan(a))
              << "element " << e << ": " << a << " vs " << r;
          continue;
        }
        HostTensor one(f, {1}); // r rounded once to the type
        one.set(0, r);
        const double rr = one.get(0);
        if (op.f32_ulps == 0 || r == 0 || std::isinf(rr)) {
          ASSERT_TRUE(a == rr && std::signbit(a) == std::signbit(rr))
              << "element " << e << " (" << ts[0].get(e) << "): " << a << " vs " << r;
          continue;
        }
        worst = std::max(worst, std::abs(a - r) / ulp_of(f, r));
        ASSERT_LE(std::abs(a - r), bound * ulp_of(f, r))
            << "element " << e << " (" << ts[0].get(e) << "): " << a << " vs " << r;
      }
      if (op.f32_ulps > 0)
        std::printf("%s %s: max error %.3f ulp\n", op.name, ir::scalar_name(f).data(), worst);
    }
}

TEST(LlvmCpu, PopcountClzAndIntegerClampAreBitExact) {
  std::mt19937_64 rng(23);
  for (ScalarKind k : {ScalarKind::I8, ScalarKind::I16, ScalarKind::I32, ScalarKind::I64,
                       ScalarKind::U8, ScalarKind::U32}) {
    SCOPED_TRACE(ir::scalar_name(k));
    for (const NewOp &op :
         {NewOp{"popcount", 1, 0, 0, 0}, NewOp{"clz", 1, 0, 0, 0}, NewOp{"clamp", 3, 0, 0, 0}}) {
      std::vector<HostTensor> ts;
      for (int i = 0; i < op.arity; ++i) {
        HostTensor t(k, {300});
        for (int64_t e = 0; e < 300; ++e) // zero, all ones, then values of every bit length
          t.set(e, e < 2 ? (e ? -1.0 : 0.0)
                         : double(int64_t(rng() >> (12 + rng() % 52))) * (rng() & 1 ? 1 : -1));
        ts.push_back(std::move(t));
      }
      ts.emplace_back(k, std::vector<int64_t>{300});
      expect_same(new_op_kernel(op, k, k, 128), "k", ts, {}, {3, 1, 1});
    }
  }
}

} // namespace
} // namespace tl::llvm_cpu
