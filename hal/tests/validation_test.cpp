// The validation layer's misuse catalog: every case is a call that must fail with a given code
// and a message naming the problem, never crash.
// SPDX-License-Identifier: Apache-2.0
#include "test_support.h"

#include <gtest/gtest.h>

#include <functional>

namespace tl::hal::testing {
namespace {

struct Fixture {
  Runtime rt{nullptr, 1};
  Device dev = rt.device("cpu");
  Stream stream = dev.stream();
  Buffer buf = dev.buffer(1024);
  Buffer local_only = dev.buffer(64, TL_BUFFER_DEVICE_LOCAL);
  Event never_recorded = dev.event();
  std::vector<uint8_t> blob = compile(kVectorAdd);
  Executable exe = dev.load(blob.data(), blob.size());
  uint32_t vadd = exe.find_kernel("vector_add");
  tl_buffer released_buffer = nullptr;
  tl_stream released_stream = nullptr;
  tl_event released_event = nullptr;
  Fixture() {
    tl_buffer_desc d{sizeof d, 16, TL_BUFFER_DEVICE_LOCAL};
    check(tl_buffer_create(dev.get(), &d, &released_buffer));
    check(tl_buffer_release(released_buffer));
    check(tl_stream_create(dev.get(), &released_stream));
    check(tl_stream_release(released_stream));
    check(tl_event_create(dev.get(), &released_event));
    check(tl_event_release(released_event));
  }
  /// A correct vector_add launch over 256 floats of `buf`; cases break one thing.
  std::vector<tl_arg> good_args() {
    return {tensor_arg(buf, TL_DTYPE_F32, {256}), tensor_arg(buf, TL_DTYPE_F32, {256}),
            tensor_arg(buf, TL_DTYPE_F32, {256}), float_arg(TL_DTYPE_F32, 1.0)};
  }
  tl_status launch(std::vector<tl_arg> args, uint64_t gx = 1, uint32_t kernel = ~0u) {
    tl_launch_desc d{sizeof d,
                     kernel == ~0u ? vadd : kernel,
                     {gx, 1, 1},
                     args.data(),
                     static_cast<uint32_t>(args.size())};
    return tl_stream_launch(stream.get(), exe.get(), &d);
  }
};

struct Misuse {
  const char *name;
  tl_status_code code;
  const char *message; // a fragment the message must contain
  std::function<tl_status(Fixture &)> call;
};

template <class T> T bogus(uint64_t v) { return reinterpret_cast<T>(v); }

std::vector<Misuse> catalog() {
  std::vector<Misuse> c;
  auto add = [&](const char *n, tl_status_code code, const char *m,
                 std::function<tl_status(Fixture &)> f) {
    c.push_back({n, code, m, std::move(f)});
  };
  constexpr auto INVALID = TL_STATUS_INVALID_ARGUMENT;
  constexpr auto RANGE = TL_STATUS_OUT_OF_RANGE;
  // Handles.
  add("null runtime", INVALID, "null tl_runtime", [](Fixture &) {
    uint32_t n;
    return tl_runtime_device_count(nullptr, &n);
  });
  add("garbage handle", INVALID, "invalid tl_buffer", [](Fixture &) {
    uint64_t s;
    return tl_buffer_size(bogus<tl_buffer>(0x1234), &s);
  });
  add("stream passed as buffer", INVALID, "a tl_stream was passed as a tl_buffer", [](Fixture &f) {
    uint64_t s;
    return tl_buffer_size(reinterpret_cast<tl_buffer>(f.stream.get()), &s);
  });
  add("device passed as runtime", INVALID, "a tl_device was passed as a tl_runtime",
      [](Fixture &f) {
        uint32_t n;
        return tl_runtime_device_count(reinterpret_cast<tl_runtime>(f.dev.get()), &n);
      });
  add("use after release", INVALID, "tl_buffer was already released", [](Fixture &f) {
    uint64_t s;
    return tl_buffer_size(f.released_buffer, &s);
  });
  add("double buffer release", INVALID, "already released",
      [](Fixture &f) { return tl_buffer_release(f.released_buffer); });
  add("double stream release", INVALID, "already released",
      [](Fixture &f) { return tl_stream_release(f.released_stream); });
  add("double event release", INVALID, "already released",
      [](Fixture &f) { return tl_event_release(f.released_event); });
  add("synchronize released stream", INVALID, "tl_stream was already released",
      [](Fixture &f) { return tl_stream_synchronize(f.released_stream); });
  add("null output pointer", INVALID, "out_count is null",
      [](Fixture &f) { return tl_runtime_device_count(f.rt.get(), nullptr); });
  // Runtime and devices.
  add("device index out of range", RANGE, "device index 99", [](Fixture &f) {
    tl_device d;
    return tl_runtime_device_get(f.rt.get(), 99, &d);
  });
  add("unknown device name", TL_STATUS_NOT_FOUND, "tl_runtime_device_find: no device 'tpu'",
      [](Fixture &f) {
        tl_device d;
        return tl_runtime_device_find(f.rt.get(), "tpu", &d);
      });
  add("plugin index out of range", RANGE, "plugin index", [](Fixture &f) {
    tl_plugin_info i{sizeof i};
    return tl_runtime_plugin_info(f.rt.get(), 1000, &i);
  });
  add("device info struct too small", INVALID, "struct_size is 8", [](Fixture &f) {
    tl_device_info i{};
    i.struct_size = 8;
    return tl_device_query(f.dev.get(), &i);
  });
  add("runtime options struct too small", INVALID, "options->struct_size", [](Fixture &) {
    tl_runtime_options o{4, nullptr, 1};
    tl_runtime r;
    return tl_runtime_create(&o, &r);
  });
  // Buffers.
  add("buffer desc null", INVALID, "desc is null", [](Fixture &f) {
    tl_buffer b;
    return tl_buffer_create(f.dev.get(), nullptr, &b);
  });
  add("buffer desc struct_size zero", INVALID, "desc->struct_size is 0", [](Fixture &f) {
    tl_buffer_desc d{0, 16, 0};
    tl_buffer b;
    return tl_buffer_create(f.dev.get(), &d, &b);
  });
  add("zero-size buffer", INVALID, "size_bytes must be positive", [](Fixture &f) {
    tl_buffer_desc d{sizeof d, 0, TL_BUFFER_DEVICE_LOCAL};
    tl_buffer b;
    return tl_buffer_create(f.dev.get(), &d, &b);
  });
  add("unknown buffer flags", INVALID, "unknown flags", [](Fixture &f) {
    tl_buffer_desc d{sizeof d, 16, 0x80};
    tl_buffer b;
    return tl_buffer_create(f.dev.get(), &d, &b);
  });
  add("buffer larger than the device", TL_STATUS_RESOURCE_EXHAUSTED, "exceeds the device memory",
      [](Fixture &f) {
        tl_buffer_desc d{sizeof d, uint64_t(1) << 62, TL_BUFFER_DEVICE_LOCAL};
        tl_buffer b;
        return tl_buffer_create(f.dev.get(), &d, &b);
      });
  add("map a device-local buffer", TL_STATUS_FAILED_PRECONDITION, "HOST_VISIBLE", [](Fixture &f) {
    void *p;
    return tl_buffer_map(f.local_only.get(), &p);
  });
  // Copies and fills.
  add("copy to device past the end", RANGE, "exceeds the buffer's 1024 bytes", [](Fixture &f) {
    static char src[2048];
    return tl_stream_copy_to_device(f.stream.get(), src, f.buf.get(), 1000, 100);
  });
  add("copy offset overflow", RANGE, "exceeds", [](Fixture &f) {
    static char src[16];
    return tl_stream_copy_to_device(f.stream.get(), src, f.buf.get(), ~uint64_t(0) - 4, 16);
  });
  add("copy from null host pointer", INVALID, "src is null", [](Fixture &f) {
    return tl_stream_copy_to_device(f.stream.get(), nullptr, f.buf.get(), 0, 16);
  });
  add("copy to null host pointer", INVALID, "dst is null", [](Fixture &f) {
    return tl_stream_copy_to_host(f.stream.get(), f.buf.get(), 0, nullptr, 16);
  });
  add("copy to host past the end", RANGE, "src range", [](Fixture &f) {
    static char dst[4096];
    return tl_stream_copy_to_host(f.stream.get(), f.buf.get(), 0, dst, 4096);
  });
  add("overlapping buffer copy", INVALID, "overlap", [](Fixture &f) {
    return tl_stream_copy_buffer(f.stream.get(), f.buf.get(), 0, f.buf.get(), 8, 64);
  });
  add("buffer copy past destination end", RANGE, "dst range", [](Fixture &f) {
    return tl_stream_copy_buffer(f.stream.get(), f.buf.get(), 0, f.local_only.get(), 0, 128);
  });
  add("fill with a 3-byte pattern", INVALID, "pattern_size must be 1, 2 or 4", [](Fixture &f) {
    static const char p[3] = {1, 2, 3};
    return tl_stream_fill(f.stream.get(), f.buf.get(), 0, 12, p, 3);
  });
  add("fill at a misaligned offset", INVALID, "multiples of pattern_size", [](Fixture &f) {
    static const uint32_t p = 7;
    return tl_stream_fill(f.stream.get(), f.buf.get(), 2, 8, &p, 4);
  });
  add("fill with null pattern", INVALID, "pattern is null",
      [](Fixture &f) { return tl_stream_fill(f.stream.get(), f.buf.get(), 0, 8, nullptr, 4); });
  // Events.
  add("query a never-recorded event", TL_STATUS_FAILED_PRECONDITION, "never recorded",
      [](Fixture &f) {
        int32_t d;
        return tl_event_query(f.never_recorded.get(), &d);
      });
  add("wait on a never-recorded event", TL_STATUS_FAILED_PRECONDITION, "block forever",
      [](Fixture &f) { return tl_stream_wait_event(f.stream.get(), f.never_recorded.get()); });
  add("elapsed time of unrecorded events", TL_STATUS_FAILED_PRECONDITION, "never recorded",
      [](Fixture &f) {
        double ms;
        return tl_event_elapsed_ms(f.never_recorded.get(), f.never_recorded.get(), &ms);
      });
  add("buffer passed as event", INVALID, "a tl_buffer was passed as a tl_event", [](Fixture &f) {
    return tl_stream_record_event(f.stream.get(), reinterpret_cast<tl_event>(f.buf.get()));
  });
  // Executables.
  add("load null data", INVALID, "data is null", [](Fixture &f) {
    tl_executable e;
    return tl_executable_load(f.dev.get(), nullptr, 10, &e);
  });
  add("load a truncated executable", TL_STATUS_DATA_LOSS, "", [](Fixture &f) {
    tl_executable e;
    return tl_executable_load(f.dev.get(), f.blob.data(), f.blob.size() / 2, &e);
  });
  add("load a corrupted executable", TL_STATUS_DATA_LOSS, "", [](Fixture &f) {
    std::vector<uint8_t> bad = f.blob;
    bad[bad.size() - 40] ^= 0x5a;
    tl_executable e;
    return tl_executable_load(f.dev.get(), bad.data(), bad.size(), &e);
  });
  add("load garbage bytes", TL_STATUS_DATA_LOSS, "not a TL executable", [](Fixture &f) {
    static const char junk[64] = "this is not an executable";
    tl_executable e;
    return tl_executable_load(f.dev.get(), junk, sizeof junk, &e);
  });
  add("load an executable of another target", TL_STATUS_INCOMPATIBLE, "target 'nvptx'",
      [](Fixture &f) {
        static std::vector<uint8_t> b = compile(kVectorAdd, "nvptx");
        tl_executable e;
        return tl_executable_load(f.dev.get(), b.data(), b.size(), &e);
      });
  add("kernel index out of range", RANGE, "kernel index 9", [](Fixture &f) {
    tl_kernel_info i{sizeof i};
    return tl_executable_kernel_info(f.exe.get(), 9, &i);
  });
  add("param index out of range", RANGE, "parameter 7", [](Fixture &f) {
    tl_param_info i{sizeof i};
    return tl_executable_param_info(f.exe.get(), f.vadd, 7, &i);
  });
  add("unknown kernel name", TL_STATUS_NOT_FOUND, "no kernel 'matmul'", [](Fixture &f) {
    uint32_t k;
    return tl_executable_find_kernel(f.exe.get(), "matmul", &k);
  });
  // Launches.
  add("launch with null desc", INVALID, "launch is null",
      [](Fixture &f) { return tl_stream_launch(f.stream.get(), f.exe.get(), nullptr); });
  add("launch with too few arguments", INVALID, "takes 4 arguments, got 3", [](Fixture &f) {
    auto a = f.good_args();
    a.pop_back();
    return f.launch(a);
  });
  add("launch kernel index out of range", RANGE, "kernel index 42",
      [](Fixture &f) { return f.launch(f.good_args(), 1, 42); });
  add("tensor passed for a scalar", INVALID, "expected a scalar, got a tensor", [](Fixture &f) {
    auto a = f.good_args();
    a[3] = a[0];
    return f.launch(a);
  });
  add("scalar passed for a tensor", INVALID, "expected a tensor, got a scalar", [](Fixture &f) {
    auto a = f.good_args();
    a[0] = float_arg(TL_DTYPE_F32, 1.0);
    return f.launch(a);
  });
  add("tensor dtype mismatch", INVALID, "dtype f16 does not match the kernel's f32",
      [](Fixture &f) {
        auto a = f.good_args();
        a[1].dtype = TL_DTYPE_F16;
        return f.launch(a);
      });
  add("tensor rank mismatch", INVALID, "rank 2 does not match the kernel's 1", [](Fixture &f) {
    auto a = f.good_args();
    a[2] = tensor_arg(f.buf, TL_DTYPE_F32, {16, 16});
    return f.launch(a);
  });
  add("tensor view beyond the buffer", RANGE, "outside the buffer's 1024 bytes", [](Fixture &f) {
    auto a = f.good_args();
    a[0] = tensor_arg(f.buf, TL_DTYPE_F32, {257});
    return f.launch(a);
  });
  add("tensor view with negative extent", RANGE, "outside the buffer", [](Fixture &f) {
    auto a = f.good_args();
    a[0] = tensor_arg(f.buf, TL_DTYPE_F32, {4}, {-1});
    return f.launch(a);
  });
  add("misaligned tensor offset", INVALID, "not a multiple of the element size", [](Fixture &f) {
    auto a = f.good_args();
    a[0] = tensor_arg(f.buf, TL_DTYPE_F32, {4}, {}, 2);
    return f.launch(a);
  });
  add("negative tensor dimension", INVALID, "dimension 0 is negative", [](Fixture &f) {
    auto a = f.good_args();
    a[0].shape[0] = -3;
    return f.launch(a);
  });
  add("released buffer as an argument", INVALID, "tl_buffer was already released", [](Fixture &f) {
    auto a = f.good_args();
    a[1].buffer = f.released_buffer;
    return f.launch(a);
  });
  add("null args with a count", INVALID, "args is null", [](Fixture &f) {
    tl_launch_desc d{sizeof d, f.vadd, {1, 1, 1}, nullptr, 4};
    return tl_stream_launch(f.stream.get(), f.exe.get(), &d);
  });
  add("grid beyond the device limit", RANGE, "exceeds the device's", [](Fixture &f) {
    tl_launch_desc d{sizeof d, f.vadd, {1, uint64_t(1) << 40, 1}, nullptr, 0};
    auto a = f.good_args();
    d.args = a.data();
    d.arg_count = 4;
    return tl_stream_launch(f.stream.get(), f.exe.get(), &d);
  });
  add("argument struct too small", INVALID, "args[0].struct_size is 8", [](Fixture &f) {
    auto a = f.good_args();
    a[0].struct_size = 8;
    return f.launch(a);
  });
  add("scalar out of its dtype's range", INVALID, "does not fit i32", [](Fixture &f) {
    std::vector<tl_arg> a = {int_arg(TL_DTYPE_I32, int64_t(1) << 40)};
    return f.launch(a, 1, f.exe.find_kernel("fails"));
  });
  // Objects of another device (a second runtime's device is another device).
  add("buffer of another device in a copy", INVALID, "belongs to device", [](Fixture &f) {
    static Runtime other(nullptr, 1);
    static Buffer foreign = other.device("cpu").buffer(64);
    return tl_stream_copy_buffer(f.stream.get(), foreign.get(), 0, f.buf.get(), 0, 16);
  });
  add("event of another device", INVALID, "belongs to device", [](Fixture &f) {
    static Runtime other(nullptr, 1);
    static Event foreign = other.device("cpu").event();
    return tl_stream_record_event(f.stream.get(), foreign.get());
  });
  add("destroy a runtime with live objects", TL_STATUS_FAILED_PRECONDITION, "still live",
      [](Fixture &f) { return tl_runtime_destroy(f.rt.get()); });
  return c;
}

class Validation : public ::testing::TestWithParam<Misuse> {};

TEST_P(Validation, MisuseIsAClearError) {
  Fixture f;
  const Misuse &m = GetParam();
  tl_status s = m.call(f);
  ASSERT_NE(s, nullptr) << m.name << ": the misuse was accepted";
  EXPECT_EQ(tl_status_get_code(s), m.code)
      << m.name << ": got " << tl_status_code_name(tl_status_get_code(s)) << ": "
      << tl_status_get_message(s);
  EXPECT_NE(std::string(tl_status_get_message(s)).find(m.message), std::string::npos)
      << m.name << ": message was: " << tl_status_get_message(s);
  tl_status_free(s);
  f.stream.synchronize(); // nothing bad was queued
}

TEST(ValidationCatalog, HasAtLeastFortyCases) { EXPECT_GE(catalog().size(), 40u); }

INSTANTIATE_TEST_SUITE_P(Catalog, Validation, ::testing::ValuesIn(catalog()), [](const auto &info) {
  std::string n = info.param.name;
  for (char &c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return n;
});

TEST(Validation, OffModeSkipsBoundsChecksButStillChecksHandles) {
  Runtime rt(nullptr, 0);
  Device dev = rt.device("cpu");
  uint64_t s;
  tl_status st = tl_buffer_size(bogus<tl_buffer>(0x999), &s);
  EXPECT_EQ(tl_status_get_code(st), TL_STATUS_INVALID_ARGUMENT);
  tl_status_free(st);
}

} // namespace
} // namespace tl::hal::testing
