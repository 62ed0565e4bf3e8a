// Tests of the cpu plugin's table, device query, buffers, copies, fills, streams and events.
// SPDX-License-Identifier: Apache-2.0
#include "plugin_harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

namespace tl::cpu::testing {
namespace {

TEST(CpuPluginTable, EntryReturnsVersionedTable) {
  const tl_vendor_plugin &t = plugin();
  EXPECT_EQ(t.struct_size, sizeof(tl_vendor_plugin));
  EXPECT_EQ(t.abi_major, uint32_t(TL_VENDOR_ABI_MAJOR));
  EXPECT_EQ(t.abi_minor, uint32_t(TL_VENDOR_ABI_MINOR));
  EXPECT_STREQ(t.name, "cpu");
  EXPECT_STREQ(t.version, "0.1.0");
  // Every function of ABI 1.0 is provided; of the optional 1.2 ones buffer_import (host memory
  // is the device's), but no native streams and no event intervals.
  auto fns = reinterpret_cast<void *const *>(&t.initialize);
  auto end = reinterpret_cast<void *const *>(&t.buffer_import);
  for (auto f = fns; f != end; ++f)
    EXPECT_NE(*f, nullptr) << "function #" << (f - fns);
  EXPECT_NE(t.buffer_import, nullptr);
  EXPECT_EQ(t.stream_import, nullptr);
  EXPECT_EQ(t.event_elapsed_ms, nullptr);
  for (void *r : t.reserved)
    EXPECT_EQ(r, nullptr);
}

TEST(CpuPluginTable, InitializeRefusesAnotherHostMajor) {
  tl_vendor_host_api host = host_api();
  host.abi_major = TL_VENDOR_ABI_MAJOR + 1;
  void *state = reinterpret_cast<void *>(1);
  Status s(plugin().initialize(&host, &state));
  EXPECT_EQ(s.code(), TL_STATUS_INCOMPATIBLE);
  EXPECT_EQ(state, nullptr);
}

using CpuPlugin = PluginTest;

TEST_F(CpuPlugin, OneDevice) {
  uint32_t n = 0;
  TL_EXPECT_OK(p->device_count(state, &n));
  EXPECT_EQ(n, 1u);
  void *other = nullptr;
  Status s(p->device_open(state, 1, &other));
  EXPECT_EQ(s.code(), TL_STATUS_NOT_FOUND);
  EXPECT_EQ(other, nullptr);
}

TEST_F(CpuPlugin, QueryDescribesTheHost) {
  tl_device_info info{};
  info.struct_size = sizeof(info);
  auto t0 = std::chrono::steady_clock::now();
  TL_ASSERT_OK(p->device_query(device, &info));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("first_query_ms", std::to_string(ms));
  EXPECT_EQ(info.struct_size, sizeof(info));
  EXPECT_GT(std::strlen(info.name), 0u);
  EXPECT_GT(std::strlen(info.vendor), 0u);
  EXPECT_STREQ(info.driver_version, "0.1.0");
  EXPECT_STREQ(info.plugin, "cpu");
  EXPECT_STREQ(info.target, "llvm-cpu");
  EXPECT_STREQ(info.targets, "llvm-cpu");
  EXPECT_GT(info.memory_bytes, uint64_t(1) << 26);
  EXPECT_EQ(info.compute_units, std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(info.max_grid[0], (uint64_t(1) << 31) - 1);
  EXPECT_EQ(info.max_grid[1], (uint64_t(1) << 31) - 1);
  EXPECT_EQ(info.max_grid[2], (uint64_t(1) << 31) - 1);
  EXPECT_GT(info.peak_bandwidth_bytes_per_s, 1e8);
  if (info.clock_mhz > 0) {
    EXPECT_GT(info.peak_flops[TL_DTYPE_F32], 0);
    EXPECT_DOUBLE_EQ(info.peak_flops[TL_DTYPE_F64], info.peak_flops[TL_DTYPE_F32] / 2);
    EXPECT_DOUBLE_EQ(info.peak_flops[TL_DTYPE_BF16], info.peak_flops[TL_DTYPE_F32]);
  }
  EXPECT_EQ(info.peak_flops[TL_DTYPE_I32], 0);
  EXPECT_EQ(info.supported_dtypes, (uint64_t(1) << TL_DTYPE_COUNT) - 1);
  std::printf("device: %s (%s), %u units at %u MHz, L2 %llu B, %.1f GB/s, %.1f GFLOP/s f32, "
              "first query %.0f ms\n",
              info.name, info.vendor, info.compute_units, info.clock_mhz,
              (unsigned long long)info.onchip_memory_bytes, info.peak_bandwidth_bytes_per_s / 1e9,
              info.peak_flops[TL_DTYPE_F32] / 1e9, ms);
}

TEST_F(CpuPlugin, QueryWritesOnlyTheCallersStruct) {
  // An older caller whose struct ends before max_grid: nothing past it is written.
  constexpr size_t kOld = offsetof(tl_device_info, max_grid);
  tl_device_info info;
  std::memset(&info, 0xab, sizeof(info));
  info.struct_size = kOld;
  TL_ASSERT_OK(p->device_query(device, &info));
  EXPECT_EQ(info.struct_size, kOld);
  EXPECT_STREQ(info.plugin, "cpu");
  auto *tail = reinterpret_cast<const unsigned char *>(&info) + kOld;
  for (size_t i = 0; i < sizeof(info) - kOld; ++i)
    ASSERT_EQ(tail[i], 0xab) << "byte " << kOld + i;
}

TEST_F(CpuPlugin, BandwidthFromEnvironment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The peak is decided once per process: check the variable in a fresh one.
  EXPECT_EXIT(
      {
        setenv("TL_CPU_PEAK_BANDWIDTH", "1.5e9", 1);
        tl_device_info info{};
        info.struct_size = sizeof(info);
        Status s(p->device_query(device, &info));
        std::exit(s.ok() && info.peak_bandwidth_bytes_per_s == 1.5e9 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST_F(CpuPlugin, BuffersAreAlignedHostMemory) {
  for (uint64_t size : {1u, 63u, 1000u, 1u << 20}) {
    void *b = alloc(size);
    void *ptr = nullptr;
    TL_ASSERT_OK(p->buffer_map(device, b, &ptr));
    ASSERT_NE(ptr, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 64, 0u);
    std::memset(ptr, 0x5a, size); // writable over its whole size
  }
}

TEST_F(CpuPlugin, CopiesInAllDirections) {
  void *s = new_stream();
  for (uint64_t n : {uint64_t(1000), uint64_t(3) << 20}) { // small, and the parallel path
    std::vector<uint32_t> host(n), back(n, 0);
    std::iota(host.begin(), host.end(), 7u);
    void *a = alloc(n * 4 + 64), *b = alloc(n * 4 + 128);
    TL_ASSERT_OK(p->stream_copy_to_device(s, host.data(), a, 64, n * 4));
    TL_ASSERT_OK(p->stream_copy_buffer(s, a, 64, b, 128, n * 4));
    TL_ASSERT_OK(p->stream_copy_to_host(s, b, 128, back.data(), n * 4));
    TL_ASSERT_OK(p->stream_synchronize(s));
    EXPECT_EQ(host, back);
  }
}

// Copies from 32 MiB stream their destination past the caches in 1 MiB pieces: every byte at
// any alignment of either side, the ragged head and tail of each piece, nothing written outside.
TEST_F(CpuPlugin, StreamedCopiesAreExactAtAnyAlignment) {
  void *s = new_stream();
  const uint64_t n = (uint64_t(32) << 20) + 77;
  std::vector<uint8_t> host(n + 5), back(n + 16, 0xee);
  for (uint64_t i = 0; i < host.size(); ++i)
    host[i] = uint8_t(i * 131 + (i >> 13));
  for (uint64_t src_offset : {uint64_t(0), uint64_t(5)}) {
    void *a = alloc(n + 64), *b = alloc(n + 64), *c = alloc(n + 64);
    std::vector<uint8_t> guard(n + 64, 0xcd);
    TL_ASSERT_OK(p->stream_copy_to_device(s, guard.data(), b, 0, n + 64));
    TL_ASSERT_OK(p->stream_copy_to_device(s, host.data() + src_offset, a, 3, n));
    TL_ASSERT_OK(p->stream_copy_buffer(s, a, 3, b, 17, n));
    TL_ASSERT_OK(p->stream_copy_buffer(s, b, 0, c, 0, n + 64));
    TL_ASSERT_OK(p->stream_copy_to_host(s, c, 17, back.data() + 1, n));
    TL_ASSERT_OK(p->stream_synchronize(s));
    EXPECT_TRUE(
        std::equal(host.begin() + src_offset, host.begin() + src_offset + n, back.begin() + 1))
        << "source offset " << src_offset;
    EXPECT_EQ(back[0], 0xee); // the host side: nothing before or after the copy
    EXPECT_EQ(back[n + 1], 0xee);
    std::vector<uint8_t> whole(n + 64);
    TL_ASSERT_OK(p->stream_copy_to_host(s, b, 0, whole.data(), n + 64));
    TL_ASSERT_OK(p->stream_synchronize(s));
    EXPECT_TRUE(
        std::all_of(whole.begin(), whole.begin() + 17, [](uint8_t v) { return v == 0xcd; }));
    EXPECT_TRUE(
        std::all_of(whole.begin() + 17 + n, whole.end(), [](uint8_t v) { return v == 0xcd; }));
  }
}

TEST_F(CpuPlugin, FillsRepeatPatterns) {
  void *s = new_stream();
  const uint64_t n = uint64_t(5) << 20; // above the parallel threshold
  void *b = alloc(n);
  uint8_t byte = 0x11;
  uint16_t half = 0x2233;
  uint32_t word = 0x44556677;
  TL_ASSERT_OK(p->stream_fill(s, b, 0, n, &byte, 1));
  TL_ASSERT_OK(p->stream_fill(s, b, 2, 10, &half, 2));
  TL_ASSERT_OK(p->stream_fill(s, b, 4096, n - 8192, &word, 4));
  TL_ASSERT_OK(p->stream_synchronize(s));
  void *ptr = nullptr;
  TL_ASSERT_OK(p->buffer_map(device, b, &ptr));
  auto *bytes = static_cast<uint8_t *>(ptr);
  EXPECT_EQ(bytes[0], 0x11);
  EXPECT_EQ(bytes[1], 0x11);
  for (int i = 2; i < 12; i += 2) {
    uint16_t v;
    std::memcpy(&v, bytes + i, 2);
    EXPECT_EQ(v, half) << i;
  }
  EXPECT_EQ(bytes[12], 0x11);
  EXPECT_EQ(bytes[4095], 0x11);
  for (uint64_t i = 4096; i < n - 4096; i += 4) {
    uint32_t v;
    std::memcpy(&v, bytes + i, 4);
    ASSERT_EQ(v, word) << i;
  }
  EXPECT_EQ(bytes[n - 4096], 0x11);
  EXPECT_EQ(bytes[n - 1], 0x11);
  Status bad(p->stream_fill(s, b, 0, 6, &word, 4));
  EXPECT_EQ(bad.code(), TL_STATUS_INVALID_ARGUMENT);
}

TEST_F(CpuPlugin, StreamsAreOrderedAndIndependent) {
  void *s1 = new_stream(), *s2 = new_stream();
  TL_EXPECT_OK(p->stream_synchronize(s1)); // an empty stream synchronizes at once
  void *b1 = alloc(4096), *b2 = alloc(4096);
  std::vector<uint8_t> out1(4096), out2(4096);
  for (uint8_t v = 1; v <= 50; ++v) { // each fill overwrites the previous one, in order
    TL_ASSERT_OK(p->stream_fill(s1, b1, 0, 4096, &v, 1));
    uint8_t w = uint8_t(v + 100);
    TL_ASSERT_OK(p->stream_fill(s2, b2, 0, 4096, &w, 1));
  }
  TL_ASSERT_OK(p->stream_copy_to_host(s1, b1, 0, out1.data(), 4096));
  TL_ASSERT_OK(p->stream_copy_to_host(s2, b2, 0, out2.data(), 4096));
  TL_ASSERT_OK(p->stream_synchronize(s1));
  TL_ASSERT_OK(p->stream_synchronize(s2));
  EXPECT_EQ(out1, std::vector<uint8_t>(4096, 50));
  EXPECT_EQ(out2, std::vector<uint8_t>(4096, 150));
}

TEST_F(CpuPlugin, UnrecordedEventsAreRefused) {
  void *e = new_event();
  int32_t done = 7;
  uint64_t ns = 7;
  Status q(p->event_query(e, &done));
  EXPECT_EQ(q.code(), TL_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(done, 0);
  EXPECT_EQ(Status(p->event_synchronize(e)).code(), TL_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(Status(p->event_timestamp_ns(e, &ns)).code(), TL_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(ns, 0u);
  // Waiting on an event never recorded does not block the stream.
  void *s = new_stream();
  TL_EXPECT_OK(p->stream_wait_event(s, e));
  TL_EXPECT_OK(p->stream_synchronize(s));
}

TEST_F(CpuPlugin, EventsCompleteInStreamOrderWithTimestamps) {
  void *s = new_stream();
  void *start = new_event(), *end = new_event();
  void *b = alloc(uint64_t(64) << 20);
  uint32_t word = 1;
  TL_ASSERT_OK(p->stream_record_event(s, start));
  TL_ASSERT_OK(p->stream_fill(s, b, 0, uint64_t(64) << 20, &word, 4));
  TL_ASSERT_OK(p->stream_record_event(s, end));
  TL_ASSERT_OK(p->event_synchronize(end));
  int32_t done = 0;
  TL_ASSERT_OK(p->event_query(end, &done));
  EXPECT_EQ(done, 1);
  TL_ASSERT_OK(p->event_query(start, &done)); // reached before `end`
  EXPECT_EQ(done, 1);
  uint64_t t0 = 0, t1 = 0;
  TL_ASSERT_OK(p->event_timestamp_ns(start, &t0));
  TL_ASSERT_OK(p->event_timestamp_ns(end, &t1));
  EXPECT_GT(t0, 0u);
  EXPECT_GE(t1, t0);
  // Recording again makes it pending until reached, then it carries the new time.
  TL_ASSERT_OK(p->stream_record_event(s, start));
  TL_ASSERT_OK(p->stream_synchronize(s));
  uint64_t t2 = 0;
  TL_ASSERT_OK(p->event_timestamp_ns(start, &t2));
  EXPECT_GE(t2, t1);
}

TEST_F(CpuPlugin, EventsOutliveTheirReleaseWhileQueued) {
  void *s = new_stream();
  void *e = nullptr;
  TL_ASSERT_OK(p->event_create(device, &e));
  void *b = alloc(uint64_t(32) << 20);
  uint8_t v = 3;
  TL_ASSERT_OK(p->stream_fill(s, b, 0, uint64_t(32) << 20, &v, 1));
  TL_ASSERT_OK(p->stream_record_event(s, e));
  TL_ASSERT_OK(p->stream_wait_event(s, e));
  p->event_destroy(device, e); // the queued record and wait still hold its state
  TL_EXPECT_OK(p->stream_synchronize(s));
}

} // namespace
} // namespace tl::cpu::testing
