// tl_buffer_import and tl_stream_import (HAL 1.2): on the cpu device a host array is used in
// place (a launch writes the caller's memory, release leaves it alone); bad inputs are refused
// by name; devices that cannot import say so.
// SPDX-License-Identifier: Apache-2.0
#include "test_support.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace tl::hal::testing {
namespace {

Runtime &runtime() {
  static Runtime *rt = new Runtime(nullptr, /*validation=*/1);
  return *rt;
}

Device cpu() { return runtime().device("cpu"); }

tl_buffer_import_desc import_desc(void *p, uint64_t size, uint32_t flags = 0) {
  tl_buffer_import_desc d{};
  d.struct_size = sizeof d;
  d.pointer = p;
  d.size_bytes = size;
  d.flags = flags;
  return d;
}

Buffer import(const Device &dev, void *p, uint64_t size, uint32_t flags = 0) {
  tl_buffer_import_desc d = import_desc(p, size, flags);
  tl_buffer b = nullptr;
  check(tl_buffer_import(dev.get(), &d, &b));
  return Buffer(b);
}

/// The status code and message of `s` (freed).
std::pair<tl_status_code, std::string> take(tl_status s) {
  std::pair<tl_status_code, std::string> out{tl_status_get_code(s), tl_status_get_message(s)};
  tl_status_free(s);
  return out;
}

// 1.2 added import, 1.3 target_options in tl_device_info: the library says what it implements.
TEST(HalImport, ApiVersionIsOneThree) {
  uint32_t major = 0, minor = 0;
  tl_runtime_get_api_version(&major, &minor);
  EXPECT_EQ(major, 1u);
  EXPECT_EQ(minor, 3u);
}

TEST(HalImport, CpuLaunchWritesTheCallersArrayInPlace) {
  const int64_t n = 1000;
  std::vector<float> x(n), y(n), out(n, -7.0f);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 0.25f * static_cast<float>(i);
  }
  Device dev = cpu();
  auto blob = compile(kVectorAdd, dev.info().target);
  Executable exe = dev.load(blob.data(), blob.size());
  Buffer bx = import(dev, x.data(), n * 4), by = import(dev, y.data(), n * 4);
  Buffer bo = import(dev, out.data(), n * 4, TL_BUFFER_HOST_VISIBLE);
  EXPECT_EQ(bo.size(), uint64_t(n * 4));
  EXPECT_EQ(bo.map(), out.data()) << "a host-visible import maps to the caller's own memory";
  Stream s = dev.stream();
  s.launch(exe, exe.find_kernel("vector_add"), {uint64_t((n + 255) / 256), 1, 1},
           {tensor_arg(bx, TL_DTYPE_F32, {n}), tensor_arg(by, TL_DTYPE_F32, {n}),
            tensor_arg(bo, TL_DTYPE_F32, {n}), float_arg(TL_DTYPE_F32, 2.0)});
  s.synchronize();
  // No copy back: the kernel wrote `out` itself.
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], x[i] + 2.0f * y[i]) << "i " << i;
  // And it reads the caller's memory as it is now, not a snapshot taken at import.
  x[5] = 1000.0f;
  s.launch(exe, exe.find_kernel("vector_add"), {uint64_t((n + 255) / 256), 1, 1},
           {tensor_arg(bx, TL_DTYPE_F32, {n}), tensor_arg(by, TL_DTYPE_F32, {n}),
            tensor_arg(bo, TL_DTYPE_F32, {n}), float_arg(TL_DTYPE_F32, 0.0)});
  s.synchronize();
  EXPECT_EQ(out[5], 1000.0f);
}

TEST(HalImport, CopiesAndFillsReachTheImportedMemory) {
  std::vector<uint8_t> mem(64, 0);
  Device dev = cpu();
  Buffer b = import(dev, mem.data(), mem.size());
  Stream s = dev.stream();
  const uint8_t src[4] = {1, 2, 3, 4};
  s.copy_to_device(src, b, 4, 8);
  const uint16_t pattern = 0xabcd;
  check(tl_stream_fill(s.get(), b.get(), 16, 8, &pattern, 2));
  s.synchronize();
  EXPECT_EQ(mem[8], 1);
  EXPECT_EQ(mem[11], 4);
  uint16_t v;
  std::memcpy(&v, &mem[22], 2);
  EXPECT_EQ(v, 0xabcd);
  EXPECT_EQ(mem[24], 0) << "the fill ran past its range";
}

TEST(HalImport, ReleaseLeavesTheMemoryToItsOwner) {
  // malloc'd, so that a plugin freeing it would make our free() a double free (glibc aborts,
  // ASan reports it).
  auto *p = static_cast<float *>(std::malloc(256));
  ASSERT_NE(p, nullptr);
  p[0] = 42.0f;
  { Buffer b = import(cpu(), p, 256); }
  EXPECT_EQ(p[0], 42.0f);
  p[1] = 1.0f; // still ours to write
  std::free(p);
}

TEST(HalImport, LaunchBoundsUseTheImportedSize) {
  std::vector<float> small(10), big(1000);
  Device dev = cpu();
  auto blob = compile(kVectorAdd, dev.info().target);
  Executable exe = dev.load(blob.data(), blob.size());
  Buffer bs = import(dev, small.data(), small.size() * 4);
  Buffer bb = import(dev, big.data(), big.size() * 4);
  Stream s = dev.stream();
  tl_arg args[4] = {tensor_arg(bb, TL_DTYPE_F32, {1000}), tensor_arg(bb, TL_DTYPE_F32, {1000}),
                    tensor_arg(bs, TL_DTYPE_F32, {1000}), float_arg(TL_DTYPE_F32, 1.0)};
  tl_launch_desc l{};
  l.struct_size = sizeof l;
  l.kernel = exe.find_kernel("vector_add");
  l.grid[0] = 4;
  l.grid[1] = l.grid[2] = 1;
  l.args = args;
  l.arg_count = 4;
  auto [code, message] = take(tl_stream_launch(s.get(), exe.get(), &l));
  EXPECT_EQ(code, TL_STATUS_OUT_OF_RANGE) << message;
}

TEST(HalImport, BadInputsAreRefusedByName) {
  Device dev = cpu();
  float mem[4];
  tl_buffer b = reinterpret_cast<tl_buffer>(uintptr_t(1));
  struct Case {
    const char *what;
    tl_status_code code;
    const char *message;
    tl_status (*call)(tl_device, float *, tl_buffer *);
  };
  const Case cases[] = {
      {"null pointer", TL_STATUS_INVALID_ARGUMENT, "tl_buffer_import: pointer is null",
       [](tl_device d, float *, tl_buffer *out) {
         auto desc = import_desc(nullptr, 16);
         return tl_buffer_import(d, &desc, out);
       }},
      {"zero size", TL_STATUS_INVALID_ARGUMENT, "size_bytes must be positive",
       [](tl_device d, float *m, tl_buffer *out) {
         auto desc = import_desc(m, 0);
         return tl_buffer_import(d, &desc, out);
       }},
      {"unknown flags", TL_STATUS_INVALID_ARGUMENT, "unknown flags",
       [](tl_device d, float *m, tl_buffer *out) {
         auto desc = import_desc(m, 16, 0x80);
         return tl_buffer_import(d, &desc, out);
       }},
      {"null desc", TL_STATUS_INVALID_ARGUMENT, "desc",
       [](tl_device d, float *, tl_buffer *out) { return tl_buffer_import(d, nullptr, out); }},
      {"short struct", TL_STATUS_INVALID_ARGUMENT, "desc",
       [](tl_device d, float *m, tl_buffer *out) {
         auto desc = import_desc(m, 16);
         desc.struct_size = 4;
         return tl_buffer_import(d, &desc, out);
       }},
      {"null device", TL_STATUS_INVALID_ARGUMENT, "device",
       [](tl_device, float *m, tl_buffer *out) {
         auto desc = import_desc(m, 16);
         return tl_buffer_import(nullptr, &desc, out);
       }},
  };
  for (const Case &c : cases) {
    b = reinterpret_cast<tl_buffer>(uintptr_t(1));
    auto [code, message] = take(c.call(dev.get(), mem, &b));
    EXPECT_EQ(code, c.code) << c.what << ": " << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << c.what << ": " << message;
    EXPECT_EQ(b, nullptr) << c.what << ": out_buffer is zeroed first";
  }
  auto desc = import_desc(mem, 16);
  auto [code, message] = take(tl_buffer_import(dev.get(), &desc, nullptr));
  EXPECT_EQ(code, TL_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(message.find("out_buffer is null"), std::string::npos) << message;
}

TEST(HalImport, DevicesWithoutImportSaySo) {
  // npusim's memory lives in the simulator: a host pointer cannot be its memory.
  tl_device d = nullptr;
  tl_status s = tl_runtime_device_find(runtime().get(), "npusim", &d);
  if (s) {
#ifdef TL_HAS_NPUSIM // built with the simulator: the device must be there
    FAIL() << "npusim is not listed: " << tl_status_get_message(s);
#else
    tl_status_free(s);
    GTEST_SKIP() << "this build has no simulator (TL_BUILD_SIM off)";
#endif
  }
  float mem[4];
  auto desc = import_desc(mem, 16);
  tl_buffer b = nullptr;
  auto [code, message] = take(tl_buffer_import(d, &desc, &b));
  EXPECT_EQ(code, TL_STATUS_UNIMPLEMENTED);
  EXPECT_NE(message.find("does not support importing external memory"), std::string::npos)
      << message;
  EXPECT_EQ(b, nullptr);
}

TEST(HalImport, CpuHasNoNativeStreamsToImport) {
  int native = 0;
  tl_stream s = nullptr;
  auto [code, message] = take(tl_stream_import(cpu().get(), &native, &s));
  EXPECT_EQ(code, TL_STATUS_UNIMPLEMENTED);
  EXPECT_NE(message.find("has no native streams to import"), std::string::npos) << message;
  EXPECT_EQ(s, nullptr);
}

} // namespace
} // namespace tl::hal::testing
