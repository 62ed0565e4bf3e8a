// The npusim device through the HAL: capabilities from the chip config, copies in simulated time,
// hand-assembled "tnpu" kernels (device copy at HBM bandwidth, bf16 GEMM), faults, traces.
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/tnpu.h"
#include "tl/hal.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace tl::npusim {
namespace {

using hal::Buffer;
using hal::Device;
using tnpu::BindKind;

hal::Runtime &runtime() {
  static auto *rt = new hal::Runtime(nullptr, /*validation=*/1);
  return *rt;
}
Device npu() { return runtime().device("npusim"); }

std::string read_text(const std::string &path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

exe::ParamInfo tensor(const char *name, ir::ScalarKind dt, int rank) {
  return {name, exe::ParamKind::Tensor, tl_dtype(dt), rank};
}

/// The hand-written kernels of kernels/, packaged as a "tnpu" executable.
std::vector<uint8_t> copy_executable() {
  const std::string file = std::string(TL_NPUSIM_KERNELS) + "/copy.s";
  tnpu::Kernel k = tnpu::assemble_kernel(read_text(file), file,
                                         {{BindKind::Address, 1, 0, 0},
                                          {BindKind::Address, 2, 1, 0},
                                          {BindKind::Shape, 3, 0, 0},
                                          {BindKind::Grid, 4, 0, 0}});
  exe::KernelInfo info{
      "copy", {tensor("src", ir::ScalarKind::F32, 1), tensor("dst", ir::ScalarKind::F32, 1)}, 1, 0};
  return tnpu::package({info}, {k});
}

constexpr int kTile = 128;

std::vector<uint8_t> gemm_executable(int tm) {
  const std::string file = std::string(TL_NPUSIM_KERNELS) + "/gemm_bf16.s";
  tnpu::Kernel k = tnpu::assemble_kernel(read_text(file), file,
                                         {{BindKind::Address, 1, 0, 0},
                                          {BindKind::Address, 2, 1, 0},
                                          {BindKind::Address, 3, 2, 0},
                                          {BindKind::Shape, 12, 0, 0},
                                          {BindKind::Shape, 13, 0, 1},
                                          {BindKind::Shape, 14, 1, 1},
                                          {BindKind::StrideBytes, 15, 0, 0},
                                          {BindKind::StrideBytes, 16, 1, 0},
                                          {BindKind::StrideBytes, 17, 2, 0}},
                                         {{"TM", tm}, {"TR", kTile}, {"TC", kTile}});
  exe::KernelInfo info{"gemm_bf16",
                       {tensor("a", ir::ScalarKind::BF16, 2), tensor("b", ir::ScalarKind::BF16, 2),
                        tensor("c", ir::ScalarKind::F32, 2)},
                       2,
                       0};
  return tnpu::package({info}, {k});
}

uint16_t to_bf16(float f) { // inputs are chosen exactly representable
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}
float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Npusim, ListedWithTheChipConfigsCapabilities) {
  tl_device_info i = npu().info();
  EXPECT_STREQ(i.plugin, "npusim");
  EXPECT_STREQ(i.target, "tnpu");
  EXPECT_EQ(i.compute_units, 4u); // sim/configs/default.json
  EXPECT_EQ(i.clock_mhz, 1000u);
  EXPECT_DOUBLE_EQ(i.peak_bandwidth_bytes_per_s, 819.2e9);
  EXPECT_DOUBLE_EQ(i.peak_flops[TL_DTYPE_BF16], 4 * 2.0 * 128 * 128 * 1e9);
  EXPECT_DOUBLE_EQ(i.peak_flops[TL_DTYPE_F32], 4 * 2.0 * 128 * 128 * 1e9 / 4);
  EXPECT_EQ(i.onchip_memory_bytes, 4u << 20);
  EXPECT_EQ(i.memory_bytes, (8ull << 30) - 4096);
  EXPECT_DOUBLE_EQ(i.link_bandwidth_bytes_per_s, 32e9);
  EXPECT_EQ(i.flags, uint32_t(TL_DEVICE_SIMULATED_TIME));
}

TEST(Npusim, CopiesTakeSimulatedTime) {
  Device d = npu();
  hal::Stream s = d.stream();
  hal::Event a = d.event(), b = d.event();
  const uint64_t n = 8 << 20;
  std::vector<uint8_t> host(n, 7);
  Buffer buf = d.buffer(n);
  s.record(a);
  s.copy_to_device(host.data(), buf, n);
  s.record(b);
  s.synchronize();
  // Across the host link at 32 GB/s after its 1 us latency (sim/configs/default.json).
  const double expect_ms = (1e-6 + double(n) / 32e9) * 1e3;
  EXPECT_NEAR(b.elapsed_ms_since(a), expect_ms, 1e-5);
}

TEST(Npusim, DeviceCopyKernelReachesHbmBandwidth) {
  Device d = npu();
  auto blob = copy_executable();
  hal::Executable exe = d.load(blob.data(), blob.size());
  hal::Stream s = d.stream();
  const int64_t n = (4 << 20) + 333; // 16 MiB and a ragged tail
  std::vector<float> src(n), dst(n, -1);
  for (int64_t i = 0; i < n; ++i)
    src[i] = float(i % 9973) * 0.25f;
  Buffer bs = d.buffer(n * 4), bd = d.buffer(n * 4 + 64);
  s.copy_to_device(src.data(), bs, n * 4);
  const float sentinel[16] = {-2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2, -2};
  s.copy_to_device(sentinel, bd, 64, n * 4);
  hal::Event t0 = d.event(), t1 = d.event();
  s.record(t0);
  s.launch(exe, 0, {4, 1, 1},
           {hal::tensor_arg(bs, TL_DTYPE_F32, {n}), hal::tensor_arg(bd, TL_DTYPE_F32, {n})});
  s.record(t1);
  s.copy_to_host(bd, dst.data(), n * 4);
  float after[16];
  s.copy_to_host(bd, after, 64, n * 4);
  s.synchronize();
  ASSERT_EQ(std::memcmp(src.data(), dst.data(), n * 4), 0);
  EXPECT_EQ(after[0], -2.0f) << "the copy wrote past n";
  const double seconds = t1.elapsed_ms_since(t0) / 1e3;
  const double achieved = 2.0 * double(n) * 4 / seconds; // read + write
  const double peak = d.info().peak_bandwidth_bytes_per_s;
  std::printf("device copy: %.1f GB/s of %.1f GB/s (%.1f %%)\n", achieved / 1e9, peak / 1e9,
              100 * achieved / peak);
  EXPECT_GE(achieved, 0.85 * peak);
}

/// C = A * B on the matrix unit against the sequential f32 sum of exact bf16 products.
void check_gemm(int64_t M, int64_t N, int64_t K, int tm) {
  Device d = npu();
  auto blob = gemm_executable(tm);
  hal::Executable exe = d.load(blob.data(), blob.size());
  std::mt19937 rng(M * 7 + N * 3 + K);
  std::uniform_int_distribution<int> q(-64, 64);
  std::vector<uint16_t> a(M * K), b(K * N);
  for (auto &x : a)
    x = to_bf16(float(q(rng)) / 16);
  for (auto &x : b)
    x = to_bf16(float(q(rng)) / 32);
  Buffer ba = d.buffer(a.size() * 2), bb = d.buffer(b.size() * 2), bc = d.buffer(M * N * 4);
  hal::Stream s = d.stream();
  s.copy_to_device(a.data(), ba, a.size() * 2);
  s.copy_to_device(b.data(), bb, b.size() * 2);
  s.launch(exe, 0, {uint64_t((M + tm - 1) / tm), uint64_t((N + kTile - 1) / kTile), 1},
           {hal::tensor_arg(ba, TL_DTYPE_BF16, {M, K}), hal::tensor_arg(bb, TL_DTYPE_BF16, {K, N}),
            hal::tensor_arg(bc, TL_DTYPE_F32, {M, N})});
  std::vector<float> c(M * N);
  s.copy_to_host(bc, c.data(), c.size() * 4);
  s.synchronize();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = -0.0f;
      for (int64_t k = 0; k < K; ++k)
        acc = std::fma(from_bf16(a[i * K + k]), from_bf16(b[k * N + j]), acc);
      ASSERT_EQ(c[i * N + j], acc)
          << "C[" << i << "][" << j << "] of " << M << "x" << N << "x" << K;
    }
}

TEST(Npusim, Bf16GemmRaggedIsBitExact) { check_gemm(200, 300, 150, kTile); }
TEST(Npusim, Bf16GemmSmallAndTall) {
  check_gemm(1, 1, 1, kTile);
  check_gemm(257, 5, 130, 256);
}

/// Run by `ninja bench-npusim`, not ctest (long): the fraction of the matrix units' peak that the
/// hand-written gemm_bf16.s reaches on 1024^3 in simulated time, for comparison with the
/// compiled kernel (NpusimBench.Bf16Gemm1024FractionOfPeak in npusim_tileir_test.cpp).
TEST(NpusimBench, HandWrittenBf16Gemm1024FractionOfPeak) {
  Device d = npu();
  const int64_t n = 1024;
  for (int tm : {128, 256, 512}) {
    auto blob = gemm_executable(tm);
    hal::Executable exe = d.load(blob.data(), blob.size());
    Buffer ba = d.buffer(n * n * 2), bb = d.buffer(n * n * 2), bc = d.buffer(n * n * 4);
    hal::Stream s = d.stream();
    hal::Event t0 = d.event(), t1 = d.event();
    s.record(t0);
    s.launch(exe, 0, {uint64_t(n / tm), uint64_t(n / kTile), 1},
             {hal::tensor_arg(ba, TL_DTYPE_BF16, {n, n}),
              hal::tensor_arg(bb, TL_DTYPE_BF16, {n, n}),
              hal::tensor_arg(bc, TL_DTYPE_F32, {n, n})});
    s.record(t1);
    s.synchronize();
    const double flops = 2.0 * n * n * n / (t1.elapsed_ms_since(t0) / 1e3);
    std::printf("npusim_bf16_gemm_1024_handwritten_tm%d_fraction_of_peak: %.3f\n", tm,
                flops / d.info().peak_flops[TL_DTYPE_BF16]);
  }
}

TEST(Npusim, KernelFaultSurfacesAsAbortedAndStreamRecovers) {
  Device d = npu();
  tnpu::Kernel bad = tnpu::assemble_kernel(
      "li r1, 0\nlih r1, 64\ndma.cfgi esize, 4\ndma.cfgi n0, 4\ndma.ld dma0, r0, r1\nhalt\n",
      "bad.s", {});
  tnpu::Kernel good = tnpu::assemble_kernel("halt\n", "good.s", {});
  auto blob = tnpu::package({{"bad", {}, 1, 0}, {"good", {}, 1, 0}}, {bad, good});
  hal::Executable exe = d.load(blob.data(), blob.size());
  hal::Stream s = d.stream();
  s.launch(exe, 0, {1, 1, 1}, {});
  try {
    s.synchronize();
    FAIL() << "the fault was not reported";
  } catch (const hal::Error &e) {
    EXPECT_EQ(e.code(), TL_STATUS_ABORTED);
    EXPECT_NE(std::string(e.what()).find("kernel bad"), std::string::npos) << e.what();
  }
  s.launch(exe, 1, {3, 2, 1}, {});
  s.synchronize();
}

TEST(Npusim, RejectsTileIrPackagedAsTnpu) {
  exe::Executable e;
  e.target = "tnpu";
  e.producer = "test";
  e.code = {'k', 'e', 'r', 'n', 'e', 'l'};
  auto blob = exe::serialize(e);
  tl_executable out = nullptr;
  tl_status st = tl_executable_load(npu().get(), blob.data(), blob.size(), &out);
  EXPECT_EQ(tl_status_get_code(st), TL_STATUS_DATA_LOSS);
  EXPECT_NE(std::string(tl_status_get_message(st)).find("tnpu code"), std::string::npos);
  tl_status_free(st);
}

TEST(NpusimEnv, FreeingABufferKeepsItsNeighboursInTheSamePage) {
  // A fresh device: the first buffer starts a page, the second shares that page. Freeing the
  // first gave its pages back with MADV_REMOVE, rounded up to the page: it zeroed the second.
  hal::Runtime rt(nullptr, 1);
  Device d = rt.device("npusim");
  Buffer first = d.buffer(256), second = d.buffer(256);
  auto *p = static_cast<uint8_t *>(second.map());
  for (int i = 0; i < 256; ++i)
    p[i] = static_cast<uint8_t>(i + 1);
  first.release();
  for (int i = 0; i < 256; ++i)
    ASSERT_EQ(p[i], static_cast<uint8_t>(i + 1)) << "byte " << i << " of the neighbour";
}

TEST(NpusimEnv, SimulatorThatDiesBeforeReadingIsAnErrorNotASignal) {
  // A simulator process that exits without reading its request (here /bin/true; in life one
  // killed or crashed at start): the request is larger than a pipe holds, so the write meets a
  // closed pipe. That must fail the launch, not raise SIGPIPE and end the host process.
  setenv("TL_NPUSIM_WORKER", "/bin/true", 1);
  {
    hal::Runtime rt(nullptr, 1);
    Device d = rt.device("npusim");
    std::string text;
    for (int i = 0; i < 20000; ++i)
      text += "li r1, 0\n";
    text += "halt\n";
    tnpu::Kernel big = tnpu::assemble_kernel(text, "big.s", {});
    auto blob = tnpu::package({{"big", {}, 1, 0}}, {big});
    hal::Executable exe = d.load(blob.data(), blob.size());
    hal::Stream s = d.stream();
    s.launch(exe, 0, {1, 1, 1}, {});
    try {
      s.synchronize();
      ADD_FAILURE() << "a launch without a simulator succeeded";
    } catch (const hal::Error &e) {
      EXPECT_NE(std::string(e.what()).find("simulator process"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("exited with status 0"), std::string::npos) << e.what();
    }
  }
  unsetenv("TL_NPUSIM_WORKER");
}

TEST(NpusimEnv, TraceAndConfigFromTheEnvironment) {
  // Its own runtime: the device reads TL_NPUSIM_CONFIG and TL_NPUSIM_TRACE when opened.
  const auto dir =
      std::filesystem::temp_directory_path() / ("npusim-trace-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  setenv("TL_NPUSIM_CONFIG", TL_NPUSIM_CONFIGS "/datacenter.json", 1);
  setenv("TL_NPUSIM_TRACE", dir.c_str(), 1);
  {
    hal::Runtime rt(nullptr, 1);
    Device d = rt.device("npusim");
    EXPECT_NE(std::string(d.info().name).find("datacenter"), std::string::npos) << d.info().name;
    auto blob = copy_executable();
    hal::Executable exe = d.load(blob.data(), blob.size());
    Buffer b1 = d.buffer(4096), b2 = d.buffer(4096);
    hal::Stream s = d.stream();
    s.launch(
        exe, 0, {2, 1, 1},
        {hal::tensor_arg(b1, TL_DTYPE_F32, {1024}), hal::tensor_arg(b2, TL_DTYPE_F32, {1024})});
    s.synchronize();
  }
  unsetenv("TL_NPUSIM_CONFIG");
  unsetenv("TL_NPUSIM_TRACE");
  const std::string trace = read_text((dir / "launch-1-copy.trace.json").string());
  const std::string stats = read_text((dir / "launch-1-copy.stats.json").string());
  EXPECT_NE(trace.find("traceEvents"), std::string::npos) << trace.substr(0, 200);
  EXPECT_NE(stats.find("total_cycles"), std::string::npos);
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace tl::npusim
