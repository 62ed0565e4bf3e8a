// The HAL API conformance suite: written once, run against every device the runtime sees.
// It becomes the `api` suite of tl-conform.
// SPDX-License-Identifier: Apache-2.0
#include "test_support.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>
#include <thread>

namespace tl::hal::testing {
namespace {

Runtime &runtime() {
  static Runtime *rt = new Runtime(nullptr, /*validation=*/1);
  return *rt;
}

std::vector<std::string> device_names() {
  std::vector<std::string> names;
  uint32_t n = 0;
  tl_status_free(tl_runtime_device_count(runtime().get(), &n));
  for (uint32_t i = 0; i < n; ++i) {
    tl_device d;
    tl_status_free(tl_runtime_device_get(runtime().get(), i, &d));
    tl_device_info info = Device(d).info();
    // One instance per target the device accepts: every code path of the device is certified.
    std::string targets = info.targets, t;
    std::stringstream ss(targets);
    while (std::getline(ss, t, ','))
      names.push_back(std::string(info.plugin) + ":" + std::to_string(i) + ":" + t);
  }
  return names;
}

class Cts : public ::testing::TestWithParam<std::string> {
protected:
  Device device() {
    const std::string id = GetParam();
    return runtime().devices().at(std::stoul(id.substr(id.find(':') + 1)));
  }
  std::string target() const {
    const std::string id = GetParam();
    return id.substr(id.rfind(':') + 1);
  }
  Executable load_kernels() {
    auto blob = compile(kVectorAdd, target());
    return device().load(blob.data(), blob.size());
  }
};

TEST(CtsSetup, AtLeastOneDevice) {
  ASSERT_FALSE(device_names().empty()) << "no HAL device found: is libtl_plugin_cpu.so beside "
                                          "libtl_hal.so or on TL_PLUGIN_PATH?";
}

TEST_P(Cts, QueryReportsCapabilities) {
  tl_device_info i = device().info();
  EXPECT_GT(std::strlen(i.name), 0u);
  EXPECT_GT(std::strlen(i.vendor), 0u);
  EXPECT_GT(std::strlen(i.target), 0u);
  EXPECT_NE(std::string(i.targets).find(i.target), std::string::npos);
  EXPECT_GT(i.memory_bytes, 0u);
  EXPECT_GT(i.compute_units, 0u);
  EXPECT_GT(i.max_grid[0], 0u);
  EXPECT_GT(i.peak_bandwidth_bytes_per_s, 0.0);
  EXPECT_GT(i.peak_flops[TL_DTYPE_F32], 0.0);
  EXPECT_TRUE(i.supported_dtypes & (1u << TL_DTYPE_F32));
  // 1.1: a link figure is a rate or 0 (not modelled); only known flags are set.
  EXPECT_TRUE(i.link_bandwidth_bytes_per_s >= 0 && std::isfinite(i.link_bandwidth_bytes_per_s));
  EXPECT_EQ(i.flags & ~uint32_t(TL_DEVICE_SIMULATED_TIME), 0u) << "unknown tl_device_flags";
}

TEST_P(Cts, HalOneZeroInfoStructStillWorks) {
  // A caller built against HAL 1.0: its struct ends before the 1.1 fields.
  tl_device_info i;
  std::memset(&i, 0xab, sizeof i);
  i.struct_size = offsetof(tl_device_info, link_bandwidth_bytes_per_s);
  ASSERT_EQ(tl_device_query(device().get(), &i), nullptr);
  EXPECT_GT(std::strlen(i.name), 0u);
  const auto *tail = reinterpret_cast<const unsigned char *>(&i) + i.struct_size;
  for (size_t k = 0; k < sizeof(tl_device_info) - i.struct_size; ++k)
    ASSERT_EQ(tail[k], 0xab) << "wrote byte " << k << " past a 1.0 caller's struct";
}

TEST_P(Cts, OlderSmallerInfoStructStillWorks) {
  tl_device_info i{};
  i.struct_size = offsetof(tl_device_info, supported_dtypes);
  ASSERT_EQ(tl_device_query(device().get(), &i), nullptr);
  EXPECT_GT(std::strlen(i.name), 0u);
  EXPECT_EQ(i.supported_dtypes, 0u) << "wrote past the caller's struct_size";
}

TEST_P(Cts, MappedBufferHoldsWrites) {
  Buffer b = device().buffer(4096, TL_BUFFER_HOST_VISIBLE);
  EXPECT_EQ(b.size(), 4096u);
  auto *p = static_cast<uint8_t *>(b.map());
  for (int i = 0; i < 4096; ++i)
    p[i] = static_cast<uint8_t>(i * 7);
  Stream s = device().stream();
  std::vector<uint8_t> back(4096);
  s.copy_to_host(b, back.data(), 4096);
  s.synchronize();
  for (int i = 0; i < 4096; ++i)
    ASSERT_EQ(back[i], static_cast<uint8_t>(i * 7));
}

TEST_P(Cts, CopiesRoundTripAtOddSizesAndOffsets) {
  Stream s = device().stream();
  for (uint64_t size : {1ull, 4095ull, (1ull << 20) + 3}) {
    std::vector<uint8_t> src(size), dst(size);
    std::iota(src.begin(), src.end(), uint8_t(size));
    Buffer a = device().buffer(size + 17), b = device().buffer(size + 5);
    s.copy_to_device(src.data(), a, size, 17);
    check(tl_stream_copy_buffer(s.get(), a.get(), 17, b.get(), 5, size));
    check(tl_stream_copy_to_host(s.get(), b.get(), 5, dst.data(), size));
    s.synchronize();
    ASSERT_EQ(src, dst) << "size " << size;
  }
}

TEST_P(Cts, FillRepeatsPatterns) {
  Stream s = device().stream();
  Buffer b = device().buffer(64);
  const uint8_t p1 = 0xab;
  const uint16_t p2 = 0x1234;
  const uint32_t p4 = 0xdeadbeef;
  check(tl_stream_fill(s.get(), b.get(), 0, 64, &p4, 4));
  check(tl_stream_fill(s.get(), b.get(), 8, 8, &p2, 2));
  check(tl_stream_fill(s.get(), b.get(), 61, 3, &p1, 1));
  uint8_t out[64];
  s.copy_to_host(b, out, 64);
  s.synchronize();
  uint32_t w;
  std::memcpy(&w, out, 4);
  EXPECT_EQ(w, p4);
  uint16_t h;
  std::memcpy(&h, out + 10, 2);
  EXPECT_EQ(h, p2);
  EXPECT_EQ(out[62], p1);
  std::memcpy(&w, out + 56, 4);
  EXPECT_EQ(w, p4);
}

TEST_P(Cts, EventsCompleteInStreamOrderWithTimestamps) {
  Stream s = device().stream();
  Event a = device().event(), b = device().event();
  s.record(a);
  std::vector<uint8_t> big(8 << 20, 1);
  Buffer buf = device().buffer(big.size());
  s.copy_to_device(big.data(), buf, big.size());
  s.record(b);
  b.synchronize();
  EXPECT_TRUE(a.done());
  EXPECT_TRUE(b.done());
  EXPECT_GE(b.elapsed_ms_since(a), 0.0);
}

TEST_P(Cts, StreamWaitsForEventOfAnotherStream) {
  Executable exe = load_kernels();
  const int64_t n = 50000;
  std::vector<float> x(n, 1.5f), out(n, 0);
  Buffer bx = device().buffer(n * 4), bout = device().buffer(n * 4);
  Stream producer = device().stream(), consumer = device().stream();
  Event ready = device().event();
  producer.copy_to_device(x.data(), bx, n * 4);
  producer.launch(exe, exe.find_kernel("vector_add"), {(n + 255) / 256, 1, 1},
                  {tensor_arg(bx, TL_DTYPE_F32, {n}), tensor_arg(bx, TL_DTYPE_F32, {n}),
                   tensor_arg(bout, TL_DTYPE_F32, {n}), float_arg(TL_DTYPE_F32, 2.0)});
  producer.record(ready);
  consumer.wait(ready);
  consumer.copy_to_host(bout, out.data(), n * 4);
  consumer.synchronize();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], 4.5f) << i;
  producer.synchronize();
}

TEST_P(Cts, ExecutableMetadataMatchesTheKernels) {
  Executable exe = load_kernels();
  uint32_t count;
  check(tl_executable_kernel_count(exe.get(), &count));
  EXPECT_EQ(count, 4u);
  const uint32_t k = exe.find_kernel("vector_add");
  tl_kernel_info info{sizeof info};
  check(tl_executable_kernel_info(exe.get(), k, &info));
  EXPECT_STREQ(info.name, "vector_add");
  EXPECT_EQ(info.param_count, 4u);
  EXPECT_EQ(info.grid_rank, 1u);
  tl_param_info p{sizeof p};
  check(tl_executable_param_info(exe.get(), k, 3, &p));
  EXPECT_STREQ(p.name, "scale");
  EXPECT_EQ(p.kind, TL_PARAM_SCALAR);
  EXPECT_EQ(p.dtype, TL_DTYPE_F32);
  check(tl_executable_param_info(exe.get(), k, 0, &p));
  EXPECT_EQ(p.kind, TL_PARAM_TENSOR);
  EXPECT_EQ(p.rank, 1u);
}

TEST_P(Cts, VectorAddOnRaggedSizes) {
  Executable exe = load_kernels();
  Stream s = device().stream();
  for (int64_t n : {1, 255, 256, 257, 100003}) {
    std::vector<float> x(n), y(n), out(n, -1);
    for (int64_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i) * 0.5f;
      y[i] = static_cast<float>(n - i);
    }
    Buffer bx = device().buffer(n * 4), by = device().buffer(n * 4), bo = device().buffer(n * 4);
    s.copy_to_device(x.data(), bx, n * 4);
    s.copy_to_device(y.data(), by, n * 4);
    s.launch(exe, exe.find_kernel("vector_add"), {uint64_t((n + 255) / 256), 1, 1},
             {tensor_arg(bx, TL_DTYPE_F32, {n}), tensor_arg(by, TL_DTYPE_F32, {n}),
              tensor_arg(bo, TL_DTYPE_F32, {n}), float_arg(TL_DTYPE_F32, -1.0)});
    s.copy_to_host(bo, out.data(), n * 4);
    s.synchronize();
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], x[i] - y[i]) << "n " << n << " i " << i;
  }
}

TEST_P(Cts, StridedViewsAndOffsets) {
  // dst = the transpose of src, by giving src's view swapped strides, at a byte offset.
  Executable exe = load_kernels();
  Stream s = device().stream();
  const int64_t R = 13, C = 21, off = 3;
  std::vector<int32_t> src(off + R * C), dst(C * R, -1);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<int32_t>(i);
  Buffer bs = device().buffer(src.size() * 4), bd = device().buffer(dst.size() * 4);
  s.copy_to_device(src.data(), bs, src.size() * 4);
  s.launch(exe, exe.find_kernel("transpose_copy"), {(C + 7) / 8, (R + 7) / 8, 1},
           {tensor_arg(bs, TL_DTYPE_I32, {C, R}, {1, C}, off * 4),
            tensor_arg(bd, TL_DTYPE_I32, {C, R})});
  s.copy_to_host(bd, dst.data(), dst.size() * 4);
  s.synchronize();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t r = 0; r < R; ++r)
      ASSERT_EQ(dst[c * R + r], src[off + r * C + c]);
}

TEST_P(Cts, KernelFailureSurfacesAtSynchronizeAndStreamRecovers) {
  Executable exe = load_kernels();
  Stream s = device().stream();
  s.launch(exe, exe.find_kernel("fails"), {3, 1, 1}, {int_arg(TL_DTYPE_I32, 5)});
  try {
    s.synchronize();
    FAIL() << "the failed assert was not reported";
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), TL_STATUS_ABORTED);
    EXPECT_NE(std::string(e.what()).find("n must be negative"), std::string::npos) << e.what();
  }
  s.launch(exe, exe.find_kernel("fails"), {3, 1, 1}, {int_arg(TL_DTYPE_I32, -5)});
  s.synchronize();
}

TEST_P(Cts, EmptyGridLaunchesNothing) {
  Executable exe = load_kernels();
  Stream s = device().stream();
  s.launch(exe, exe.find_kernel("fails"), {0, 4, 1}, {int_arg(TL_DTYPE_I32, 5)});
  s.synchronize();
}

TEST_P(Cts, ManyStreamsConcurrently) {
  Executable exe = load_kernels();
  const int64_t n = 4096;
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Stream s = device().stream();
      std::vector<float> x(n, float(t)), out(n);
      Buffer bx = device().buffer(n * 4), bo = device().buffer(n * 4);
      for (int rep = 0; rep < 10; ++rep) {
        s.copy_to_device(x.data(), bx, n * 4);
        s.launch(exe, exe.find_kernel("vector_add"), {n / 256, 1, 1},
                 {tensor_arg(bx, TL_DTYPE_F32, {n}), tensor_arg(bx, TL_DTYPE_F32, {n}),
                  tensor_arg(bo, TL_DTYPE_F32, {n}), float_arg(TL_DTYPE_F32, 1.0)});
        s.copy_to_host(bo, out.data(), n * 4);
        s.synchronize();
      }
      ok[t] = std::all_of(out.begin(), out.end(), [&](float v) { return v == 2.0f * t; });
    });
  for (auto &th : threads)
    th.join();
  EXPECT_EQ(ok, std::vector<int>(4, 1));
}

TEST_P(Cts, RejectsExecutablesForOtherTargets) {
  auto blob = compile(kVectorAdd, "no-such-target");
  tl_executable e = nullptr;
  tl_status s = tl_executable_load(device().get(), blob.data(), blob.size(), &e);
  EXPECT_EQ(tl_status_get_code(s), TL_STATUS_INCOMPATIBLE);
  EXPECT_NE(std::string(tl_status_get_message(s)).find("no-such-target"), std::string::npos);
  EXPECT_EQ(e, nullptr);
  tl_status_free(s);
}

INSTANTIATE_TEST_SUITE_P(Devices, Cts, ::testing::ValuesIn(device_names()), [](const auto &info) {
  std::string n = info.param;
  for (char &c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return n;
});

} // namespace
} // namespace tl::hal::testing
