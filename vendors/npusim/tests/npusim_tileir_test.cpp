// Tile IR compiled by the tnpu target and run on npusim, against the reference interpreter on
// random shapes with ragged edges; and the target's located errors for what it cannot lower.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/tnpu.h"
#include "tl/compiler/pipeline.h"
#include "tl/hal.hpp"
#include "tl/interpreter/interpreter.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace tl::npusim {
namespace {

hal::Runtime &runtime() {
  static auto *rt = new hal::Runtime(nullptr, /*validation=*/1);
  return *rt;
}

std::unique_ptr<ir::Module> parse(const std::string &text) {
  ir::Diagnostics d;
  auto m = ir::parse(text, "test.tlir", d);
  if (!m || !ir::verify(*m, d))
    throw std::runtime_error(d.str());
  return m;
}

std::vector<uint8_t> compile_tnpu(const ir::Module &m) {
  exe::Executable e;
  e.target = tnpu::kTarget;
  e.producer = "npusim tests";
  for (auto &k : m.kernels())
    e.kernels.push_back(compile::kernel_info(*k));
  if (std::string err = tnpu::compile(m, {}, e.code); !err.empty())
    throw std::runtime_error(err);
  return exe::serialize(e);
}

const char *kElementwise = R"(
kernel @axpy_exp(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>, %out: tensor<?x?xf32>, %a: f32) {
  %i = program_id {axis = 0} : i32
  %j = program_id {axis = 1} : i32
  %b = constant {value = 16} : i32
  %c = constant {value = 32} : i32
  %r0 = mul %i, %b : i32
  %c0 = mul %j, %c : i32
  %xt = load %x, %r0, %c0 {padding = 0.0} : tile<16x32xf32>
  %yt = load %y, %r0, %c0 : tile<16x32xf32>
  %as = splat %a : tile<16x32xf32>
  %ax = mul %xt, %as : tile<16x32xf32>
  %s = add %ax, %yt : tile<16x32xf32>
  %e = exp %xt : tile<16x32xf32>
  %m = max %s, %e : tile<16x32xf32>
  %d = sub %m, %yt : tile<16x32xf32>
  store %out, %r0, %c0, %d
  return
}

kernel @checked(%n: i32) {
  %zero = constant {value = 0} : i32
  %ok = cmp %n, %zero {pred = "lt"} : i1
  assert %ok {message = "n must be negative"}
  return
}
)";

TEST(NpusimTileIr, ElementwiseMatchesTheInterpreterOnRaggedShapes) {
  auto m = parse(kElementwise);
  auto blob = compile_tnpu(*m);
  hal::Device d = runtime().device("npusim");
  hal::Executable exe = d.load(blob.data(), blob.size());
  hal::Stream s = d.stream();
  std::mt19937 rng(11);
  for (auto [R, C] : {std::pair<int64_t, int64_t>{1, 1}, {17, 33}, {40, 65}}) {
    std::uniform_real_distribution<float> u(-3, 3);
    // x is a transposed view (strided innermost dimension): exercises the element-wise DMA path.
    std::vector<float> xt(C * R), y(R * C), out(R * C, 0), want(R * C, 0);
    for (auto &v : xt)
      v = u(rng);
    for (auto &v : y)
      v = u(rng);
    hal::Buffer bx = d.buffer(xt.size() * 4), by = d.buffer(y.size() * 4),
                bo = d.buffer(out.size() * 4);
    s.copy_to_device(xt.data(), bx, xt.size() * 4);
    s.copy_to_device(y.data(), by, y.size() * 4);
    const std::array<uint64_t, 3> grid = {uint64_t((R + 15) / 16), uint64_t((C + 31) / 32), 1};
    s.launch(exe, exe.find_kernel("axpy_exp"), grid,
             {hal::tensor_arg(bx, TL_DTYPE_F32, {R, C}, {1, R}),
              hal::tensor_arg(by, TL_DTYPE_F32, {R, C}), hal::tensor_arg(bo, TL_DTYPE_F32, {R, C}),
              hal::float_arg(TL_DTYPE_F32, 0.75)});
    s.copy_to_host(bo, out.data(), out.size() * 4);
    s.synchronize();
    interp::RunOptions o;
    o.grid = {int64_t(grid[0]), int64_t(grid[1]), 1};
    interp::RunResult r =
        interp::run(*m->find_kernel("axpy_exp"),
                    {interp::TensorArg{xt.data(), ir::ScalarKind::F32, {R, C}, {1, R}},
                     interp::TensorArg{y.data(), ir::ScalarKind::F32, {R, C}, {C, 1}},
                     interp::TensorArg{want.data(), ir::ScalarKind::F32, {R, C}, {C, 1}}, 0.75},
                    o);
    ASSERT_TRUE(r.ok) << r.error;
    for (int64_t i = 0; i < R * C; ++i) // exp is within 2 ulp (sim/numerics/SPEC.md)
      ASSERT_NEAR(out[i], want[i], 4e-7f * std::max(1.0f, std::fabs(want[i])))
          << R << "x" << C << " at " << i;
  }
}

TEST(NpusimTileIr, FailedAssertIsAbortedWithItsMessage) {
  auto m = parse(kElementwise);
  auto blob = compile_tnpu(*m);
  hal::Device d = runtime().device("npusim");
  hal::Executable exe = d.load(blob.data(), blob.size());
  hal::Stream s = d.stream();
  s.launch(exe, exe.find_kernel("checked"), {3, 1, 1}, {hal::int_arg(TL_DTYPE_I32, 5)});
  try {
    s.synchronize();
    FAIL() << "the failed assert was not reported";
  } catch (const hal::Error &e) {
    EXPECT_EQ(e.code(), TL_STATUS_ABORTED);
    EXPECT_NE(std::string(e.what()).find("n must be negative"), std::string::npos) << e.what();
  }
  s.launch(exe, exe.find_kernel("checked"), {3, 1, 1}, {hal::int_arg(TL_DTYPE_I32, -5)});
  s.synchronize();
}

std::string read_text(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(NpusimTileIr, LibraryGemmWithKLoopIsBitExact) {
  // kernels/tlir/gemm.tlir: a for loop carrying an f32 tile through dot on the matrix unit.
  auto m = parse(read_text(TL_LIBRARY_TLIR "/gemm.tlir"));
  auto blob = compile_tnpu(*m);
  hal::Device d = runtime().device("npusim");
  hal::Executable exe = d.load(blob.data(), blob.size());
  hal::Stream s = d.stream();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto [M, K, N] : {std::array<int64_t, 3>{100, 45, 70}, {33, 17, 1}, {1, 64, 40}}) {
    std::vector<float> a(M * K), b(K * N), c(M * N, 0), want(M * N, 0);
    for (auto &v : a)
      v = u(rng);
    for (auto &v : b)
      v = u(rng);
    hal::Buffer ba = d.buffer(a.size() * 4), bb = d.buffer(b.size() * 4),
                bc = d.buffer(c.size() * 4);
    s.copy_to_device(a.data(), ba, a.size() * 4);
    s.copy_to_device(b.data(), bb, b.size() * 4);
    const std::array<uint64_t, 3> grid = {uint64_t((M + 31) / 32), uint64_t((N + 31) / 32), 1};
    s.launch(exe, 0, grid,
             {hal::tensor_arg(ba, TL_DTYPE_F32, {M, K}), hal::tensor_arg(bb, TL_DTYPE_F32, {K, N}),
              hal::tensor_arg(bc, TL_DTYPE_F32, {M, N})});
    s.copy_to_host(bc, c.data(), c.size() * 4);
    s.synchronize();
    interp::RunOptions o;
    o.grid = {int64_t(grid[0]), int64_t(grid[1]), 1};
    interp::RunResult r =
        interp::run(*m->kernels()[0],
                    {interp::TensorArg{a.data(), ir::ScalarKind::F32, {M, K}, {K, 1}},
                     interp::TensorArg{b.data(), ir::ScalarKind::F32, {K, N}, {N, 1}},
                     interp::TensorArg{want.data(), ir::ScalarKind::F32, {M, N}, {N, 1}}},
                    o);
    ASSERT_TRUE(r.ok) << r.error;
    for (int64_t i = 0; i < M * N; ++i)
      ASSERT_EQ(c[i], want[i]) << M << "x" << K << "x" << N << " at " << i;
  }
}

uint16_t bf16_of(float f) { // exactly representable inputs
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t(u >> 16);
}

/// c = a @ b by a bf16 kernel on a (ceil(M/bm), ceil(N/bn)) grid, on the device and in the
/// interpreter; returns the device's simulated milliseconds.
double run_bf16_gemm(const ir::Module &m, hal::Executable &exe, int64_t M, int64_t K, int64_t N,
                     int64_t bm, int64_t bn, bool check, std::mt19937 &rng) {
  hal::Device d = runtime().device("npusim");
  hal::Stream s = d.stream();
  std::uniform_int_distribution<int> q(-64, 64);
  std::vector<uint16_t> a(M * K), b(K * N);
  for (auto &v : a)
    v = bf16_of(float(q(rng)) / 16);
  for (auto &v : b)
    v = bf16_of(float(q(rng)) / 16);
  std::vector<float> c(M * N, 0), want(M * N, 0);
  hal::Buffer ba = d.buffer(a.size() * 2 + 2), bb = d.buffer(b.size() * 2 + 2),
              bc = d.buffer(c.size() * 4);
  if (K > 0) {
    s.copy_to_device(a.data(), ba, a.size() * 2);
    s.copy_to_device(b.data(), bb, b.size() * 2);
  }
  const std::array<uint64_t, 3> grid = {uint64_t((M + bm - 1) / bm), uint64_t((N + bn - 1) / bn),
                                        1};
  hal::Event t0 = d.event(), t1 = d.event();
  s.record(t0);
  s.launch(exe, 0, grid,
           {hal::tensor_arg(ba, TL_DTYPE_BF16, {M, K}), hal::tensor_arg(bb, TL_DTYPE_BF16, {K, N}),
            hal::tensor_arg(bc, TL_DTYPE_F32, {M, N})});
  s.record(t1);
  s.copy_to_host(bc, c.data(), c.size() * 4);
  s.synchronize();
  if (check) {
    interp::RunOptions o;
    o.grid = {int64_t(grid[0]), int64_t(grid[1]), 1};
    interp::RunResult r =
        interp::run(*m.kernels()[0],
                    {interp::TensorArg{a.data(), ir::ScalarKind::BF16, {M, K}, {K, 1}},
                     interp::TensorArg{b.data(), ir::ScalarKind::BF16, {K, N}, {N, 1}},
                     interp::TensorArg{want.data(), ir::ScalarKind::F32, {M, N}, {N, 1}}},
                    o);
    EXPECT_TRUE(r.ok) << r.error;
    for (int64_t i = 0; i < M * N; ++i) {
      uint32_t x, y;
      std::memcpy(&x, &c[i], 4);
      std::memcpy(&y, &want[i], 4);
      if (x != y) {
        ADD_FAILURE() << M << "x" << K << "x" << N << " differs at " << i << ": " << c[i]
                      << " != " << want[i];
        break;
      }
    }
  }
  return t1.elapsed_ms_since(t0);
}

TEST(NpusimTileIr, PipelinedBf16GemmIsBitExactOnRaggedShapes) {
  // kernels/tlir/gemm_tnpu.tlir with smaller blocks (320 rows of c per program in chunks of 48,
  // 144 columns: two weight blocks, K up to 320): the chunk loop runs 0 to 7 times (both copies
  // of the double-buffered body and the exit between them); ragged edges pad and mask.
  std::string text = read_text(TL_LIBRARY_TLIR "/gemm_tnpu.tlir");
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"1024", "320"}, {"256", "144"}, {"128", "48"}})
    for (size_t at; (at = text.find(from)) != std::string::npos;)
      text.replace(at, from.size(), to);
  auto m = parse(text);
  auto blob = compile_tnpu(*m);
  hal::Device d = runtime().device("npusim");
  hal::Executable exe = d.load(blob.data(), blob.size());
  std::mt19937 rng(7);
  for (auto [M, K, N] : {std::array<int64_t, 3>{100, 300, 200},
                         {700, 320, 150},
                         {33, 17, 1},
                         {1, 1, 1},
                         {7, 0, 9},
                         {96, 64, 144}})
    run_bf16_gemm(*m, exe, M, K, N, 320, 144, true, rng);
}

// bench-npusim: the compiled library kernel at 1024³, as a fraction of the matrix units' peak.
TEST(NpusimBench, Bf16Gemm1024FractionOfPeak) {
  auto m = parse(read_text(TL_LIBRARY_TLIR "/gemm_tnpu.tlir"));
  auto blob = compile_tnpu(*m);
  hal::Device d = runtime().device("npusim");
  hal::Executable exe = d.load(blob.data(), blob.size());
  std::mt19937 rng(1);
  const int64_t n = 1024;
  const double ms = run_bf16_gemm(*m, exe, n, n, n, 1024, 256, false, rng);
  const double flops = 2.0 * n * n * n / (ms / 1e3);
  std::printf("npusim_bf16_gemm_1024_us: %.2f\n", ms * 1e3);
  std::printf("npusim_bf16_gemm_1024_fraction_of_peak: %.3f\n",
              flops / d.info().peak_flops[TL_DTYPE_BF16]);
}

const char *kBf16Rows = R"(
kernel @bf16_rows(%x: tensor<?x?xbf16>, %y: tensor<?x?xbf16>, %sums: tensor<?xf32>) {
  %i = program_id {axis = 0} : i32
  %b = constant {value = 8} : i32
  %z = constant {value = 0} : i32
  %r0 = mul %i, %b : i32
  %x16 = load %x, %r0, %z : tile<8x64xbf16>
  %x32 = cast %x16 : tile<8x64xf32>
  %sq = mul %x32, %x32 : tile<8x64xf32>
  %sq16 = cast %sq : tile<8x64xbf16>
  store %y, %r0, %z, %sq16
  %s = reduce %sq {axis = 1, kind = "sum"} : tile<8xf32>
  store %sums, %r0, %s
  return
}
)";

TEST(NpusimTileIr, Bf16ElementwiseCastsAndRowSums) {
  auto m = parse(kBf16Rows);
  auto blob = compile_tnpu(*m);
  hal::Device d = runtime().device("npusim");
  hal::Executable exe = d.load(blob.data(), blob.size());
  hal::Stream s = d.stream();
  const int64_t R = 21, C = 50;
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> q(-200, 200);
  std::vector<uint16_t> x(R * C), y(R * C, 0), want_y(R * C, 0);
  for (auto &v : x) { // bf16 bit patterns of small exact values
    const float f = float(q(rng)) / 64;
    uint32_t u;
    std::memcpy(&u, &f, 4);
    v = uint16_t(u >> 16);
  }
  std::vector<float> sums(R, 0), want_sums(R, 0);
  hal::Buffer bx = d.buffer(x.size() * 2), by = d.buffer(y.size() * 2), bs = d.buffer(R * 4);
  s.copy_to_device(x.data(), bx, x.size() * 2);
  s.launch(exe, 0, {uint64_t((R + 7) / 8), 1, 1},
           {hal::tensor_arg(bx, TL_DTYPE_BF16, {R, C}), hal::tensor_arg(by, TL_DTYPE_BF16, {R, C}),
            hal::tensor_arg(bs, TL_DTYPE_F32, {R})});
  s.copy_to_host(by, y.data(), y.size() * 2);
  s.copy_to_host(bs, sums.data(), R * 4);
  s.synchronize();
  interp::RunOptions o;
  o.grid = {(R + 7) / 8, 1, 1};
  interp::RunResult r =
      interp::run(*m->kernels()[0],
                  {interp::TensorArg{x.data(), ir::ScalarKind::BF16, {R, C}, {C, 1}},
                   interp::TensorArg{want_y.data(), ir::ScalarKind::BF16, {R, C}, {C, 1}},
                   interp::TensorArg{want_sums.data(), ir::ScalarKind::F32, {R}, {1}}},
                  o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(y, want_y);           // one rounding each, nearest even: bit-exact
  for (int64_t i = 0; i < R; ++i) // a float sum may associate in any order
    EXPECT_NEAR(sums[i], want_sums[i], 1e-5f * std::fabs(want_sums[i])) << i;
}

TEST(NpusimTileIr, UnsupportedOpsAreLocatedErrors) {
  auto m = parse(R"(
kernel @k(%x: tensor<?xf64>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z : tile<64xf64>
  %r = sqrt %t : tile<64xf64>
  store %x, %z, %r
  return
}
)");
  std::vector<uint8_t> code;
  EXPECT_EQ(tnpu::compile(*m, {}, code),
            "test.tlir:5:3: error: tnpu: tiles of f64 are not supported by the vector unit (bf16, "
            "f16, f32, i8, i32)");
  auto printing = parse(R"(
kernel @k(%n: i32) {
  print %n
  return
}
)");
  EXPECT_EQ(tnpu::compile(*printing, {}, code),
            "test.tlir:3:3: error: tnpu: 'print' is not supported: the TNPU has no channel to the "
            "host's output");
  auto big = parse(R"(
kernel @k(%x: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z : tile<2097152xf32>
  store %x, %z, %t
  return
}
)");
  std::string e = tnpu::compile(*big, {}, code);
  EXPECT_NE(e.find("test.tlir:4:3: error: tnpu: tile tile<2097152xf32> does not fit"),
            std::string::npos)
      << e;
}

TEST(NpusimTileIr, PipelinedLoopOverChunksMatchesTheInterpreter) {
  // Loads prefetched, a vector op on each chunk, stores of its buffered results, and a carried
  // running sum stored after the loop: every trip count from 0 to 9 chunks.
  auto m = parse(R"(
kernel @chunks(%x: tensor<?xf32>, %y: tensor<?xf32>, %s: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %n64 = dim %x {axis = 0} : i64
  %n = cast %n64 : i32
  %step = constant {value = 256} : i32
  %zero = full {value = 0.0} : tile<256xf32>
  %sum = for %i = %z to %n step %step iter_args(%acc = %zero) : tile<256xf32> {
    %t = load %x, %i : tile<256xf32>
    %d = add %t, %t : tile<256xf32>
    %e = mul %d, %t : tile<256xf32>
    store %y, %i, %e
    %acc2 = add %acc, %e : tile<256xf32>
    yield %acc2
  }
  store %s, %z, %sum
  return
}
)");
  auto blob = compile_tnpu(*m);
  hal::Device d = runtime().device("npusim");
  hal::Executable exe = d.load(blob.data(), blob.size());
  hal::Stream st = d.stream();
  std::mt19937 rng(13);
  std::uniform_int_distribution<int> q(-64, 64);
  for (int64_t n : {0, 1, 256, 300, 1000, 2304}) {
    std::vector<float> x(n + 1), y(n + 1, 0), s(256, 0), wy(n + 1, 0), ws(256, 0);
    for (auto &v : x)
      v = float(q(rng)) / 8;
    hal::Buffer bx = d.buffer(x.size() * 4), by = d.buffer(y.size() * 4), bs = d.buffer(1024);
    st.copy_to_device(x.data(), bx, x.size() * 4);
    st.launch(exe, 0, {1, 1, 1},
              {hal::tensor_arg(bx, TL_DTYPE_F32, {n}), hal::tensor_arg(by, TL_DTYPE_F32, {n}),
               hal::tensor_arg(bs, TL_DTYPE_F32, {256})});
    st.copy_to_host(by, y.data(), y.size() * 4);
    st.copy_to_host(bs, s.data(), 1024);
    st.synchronize();
    interp::RunResult r =
        interp::run(*m->kernels()[0],
                    {interp::TensorArg{x.data(), ir::ScalarKind::F32, {n}, {1}},
                     interp::TensorArg{wy.data(), ir::ScalarKind::F32, {n}, {1}},
                     interp::TensorArg{ws.data(), ir::ScalarKind::F32, {256}, {1}}},
                    interp::RunOptions{});
    ASSERT_TRUE(r.ok) << r.error;
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(y[i], wy[i]) << "y[" << i << "] of " << n;
    EXPECT_EQ(s, ws) << n;
  }
}

TEST(NpusimTileIr, PersistentKernelCoversEveryProgram) {
  // No loop: compiled as one program per core looping over its grid programs and prefetching
  // the next ones' loads; 1 to 13 programs on the 4 cores, 2-D grids carry into axis 1.
  auto m = parse(R"(
kernel @twice(%x: tensor<?x?xf32>, %y: tensor<?x?xf32>) {
  %i = program_id {axis = 0} : i32
  %j = program_id {axis = 1} : i32
  %b = constant {value = 8} : i32
  %r0 = mul %i, %b : i32
  %c0 = mul %j, %b : i32
  %t = load %x, %r0, %c0 : tile<8x8xf32>
  %d = add %t, %t : tile<8x8xf32>
  store %y, %r0, %c0, %d
  return
}
)");
  std::vector<uint8_t> code;
  ASSERT_EQ(tnpu::compile(*m, {}, code), "");
  std::vector<tnpu::Kernel> kernels;
  std::string error;
  ASSERT_TRUE(tnpu::parse_code(code.data(), code.size(), kernels, error)) << error;
  EXPECT_TRUE(kernels[0].persistent);
  auto blob = compile_tnpu(*m);
  hal::Device d = runtime().device("npusim");
  hal::Executable exe = d.load(blob.data(), blob.size());
  hal::Stream s = d.stream();
  for (auto [R, C] : {std::pair<int64_t, int64_t>{1, 1}, {8, 40}, {33, 8}, {20, 50}, {100, 9}}) {
    std::vector<float> x(R * C), y(R * C, 0);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = float(i % 97) - 40;
    hal::Buffer bx = d.buffer(x.size() * 4), by = d.buffer(y.size() * 4);
    s.copy_to_device(x.data(), bx, x.size() * 4);
    s.copy_to_device(y.data(), by, y.size() * 4);
    s.launch(
        exe, 0, {uint64_t((R + 7) / 8), uint64_t((C + 7) / 8), 1},
        {hal::tensor_arg(bx, TL_DTYPE_F32, {R, C}), hal::tensor_arg(by, TL_DTYPE_F32, {R, C})});
    s.copy_to_host(by, y.data(), y.size() * 4);
    s.synchronize();
    for (int64_t i = 0; i < R * C; ++i)
      ASSERT_EQ(y[i], 2 * x[i]) << R << "x" << C << " at " << i;
  }
}

TEST(NpusimTileIr, ScratchpadIsReusedByLivenessAndOverflowNamesTheTile) {
  // Two 3 MiB tiles one after the other fit the 4 MiB scratchpad (the first is dead when the
  // second is loaded); both live at once do not, and the error names the second.
  const char *seq = R"(
kernel @k(%x: tensor<?xf32>, %y: tensor<?xf32>) {
  %z = constant {value = 0} : i32
  %t = load %x, %z : tile<786432xf32>
  store %y, %z, %t
  %u = load %y, %z : tile<786432xf32>
  store %x, %z, %u
  return
}
)";
  std::vector<uint8_t> code;
  EXPECT_EQ(tnpu::compile(*parse(seq), {}, code), "");
  std::string both = seq;
  both.replace(both.find("  store %x, %z, %u\n"), 0, "  store %y, %z, %t\n");
  EXPECT_EQ(tnpu::compile(*parse(both), {}, code),
            "test.tlir:6:3: error: tnpu: tile tile<786432xf32> does not fit the scratchpad "
            "(tile %u, 3145728 bytes, while 3145728 bytes of other tiles are live, of 4194304)");
}

} // namespace
} // namespace tl::npusim
