// The cuda device through the HAL on a real GPU, with hand-written PTX (independent of the nvptx
// compiler): PTX JIT and cubin loading, launches (grids past CUDA's axis limits too), imported
// device pointers and streams, asserts that leave the stream usable, host copies (their
// bandwidth printed). Each test skips without a GPU, except PtxAssembles (ptxas only).
// SPDX-License-Identifier: Apache-2.0
#include "tl/format/executable.h"
#include "tl/format/nvptx_code.h"
#include "tl/hal.hpp"

#include <array>
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace tl::cuda::testing {
namespace {

using namespace tl::hal;

// axpy: out[i] = x[i] + s * y[i] for i < n (one thread per element); check: the assert "n must be
// negative", reported through the status word.
const char *kPtx = R"(.version 7.0
.target sm_80
.address_size 64

.visible .entry tl_axpy(.param .u64 px, .param .u64 py, .param .u64 po, .param .u32 pn,
                        .param .f32 ps)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<5>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [px];
  ld.param.u64 %rd2, [py];
  ld.param.u64 %rd3, [po];
  ld.param.u32 %r1, [pn];
  ld.param.f32 %f1, [ps];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra AXPY_DONE;
  cvta.to.global.u64 %rd4, %rd1;
  cvta.to.global.u64 %rd5, %rd2;
  cvta.to.global.u64 %rd6, %rd3;
  mul.wide.s32 %rd7, %r5, 4;
  add.s64 %rd8, %rd4, %rd7;
  ld.global.f32 %f2, [%rd8];
  add.s64 %rd8, %rd5, %rd7;
  ld.global.f32 %f3, [%rd8];
  fma.rn.f32 %f4, %f1, %f3, %f2;
  add.s64 %rd8, %rd6, %rd7;
  st.global.f32 [%rd8], %f4;
AXPY_DONE:
  ret;
}

.visible .entry tl_check(.param .u64 pstatus, .param .u32 pn)
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u32 %r1, [pn];
  setp.lt.s32 %p1, %r1, 0;
  @%p1 bra CHECK_OK;
  ld.param.u64 %rd1, [pstatus];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r2, 1;
  st.global.u32 [%rd2], %r2;
CHECK_OK:
  ret;
}
)";

std::string ptxas() {
  for (const char *p :
       {static_cast<const char *>(std::getenv("TL_PTXAS")), "/usr/local/cuda/bin/ptxas"})
    if (p && std::filesystem::exists(p))
      return p;
  return "";
}

/// The PTX assembled for sm_<sm> ("" without ptxas or when it fails; `log` says why).
std::vector<uint8_t> assemble(int sm, std::string &log) {
  const std::string tool = ptxas();
  if (tool.empty()) {
    log = "no ptxas";
    return {};
  }
  const auto dir = std::filesystem::temp_directory_path();
  const std::string base = (dir / ("tl-cuda-test-" + std::to_string(getpid()))).string();
  std::ofstream(base + ".ptx") << kPtx;
  const std::string cmd = tool + " -arch=sm_" + std::to_string(sm) + " " + base + ".ptx -o " +
                          base + ".cubin > " + base + ".log 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream in(base + ".cubin", std::ios::binary);
  std::vector<uint8_t> out((std::istreambuf_iterator<char>(in)), {});
  std::ifstream l(base + ".log");
  log.assign((std::istreambuf_iterator<char>(l)), {});
  for (const char *ext : {".ptx", ".cubin", ".log"})
    std::filesystem::remove(base + ext);
  return rc == 0 ? out : std::vector<uint8_t>{};
}

/// A "nvptx" executable of the two kernels with the given images.
std::vector<uint8_t> executable(std::vector<nvptx::Image> images) {
  nvptx::Code code;
  code.images = std::move(images);
  nvptx::Kernel axpy;
  axpy.name = "tl_axpy";
  axpy.block[0] = 256;
  using S = nvptx::Slot;
  axpy.params = {{S::Kind::Pointer, 0, 0, 8},
                 {S::Kind::Pointer, 1, 0, 8},
                 {S::Kind::Pointer, 2, 0, 8},
                 {S::Kind::Shape, 2, 0, 4},
                 {S::Kind::Scalar, 3, 0, 4}};
  nvptx::Kernel check;
  check.name = "tl_check";
  check.params = {{S::Kind::Status, 0, 0, 8}, {S::Kind::Scalar, 0, 0, 4}};
  check.asserts = {"n must be negative"};
  code.kernels = {axpy, check};
  const std::vector<uint8_t> blob = nvptx::serialize_code(code);
  exe::Executable e;
  e.target = nvptx::kTarget;
  e.producer = "cuda device tests";
  using P = exe::ParamKind;
  e.kernels.push_back({"tl_axpy",
                       {{"x", P::Tensor, TL_DTYPE_F32, 1},
                        {"y", P::Tensor, TL_DTYPE_F32, 1},
                        {"out", P::Tensor, TL_DTYPE_F32, 1},
                        {"s", P::Scalar, TL_DTYPE_F32, 0}},
                       1,
                       0});
  e.kernels.push_back({"tl_check", {{"n", P::Scalar, TL_DTYPE_I32, 0}}, 1, 0});
  e.code = blob;
  return exe::serialize(e);
}

nvptx::Image ptx_image() {
  nvptx::Image im;
  im.sm = 80;
  im.bytes.assign(kPtx, kPtx + std::strlen(kPtx));
  return im;
}

Runtime &runtime() {
  static Runtime *rt = new Runtime(nullptr, /*validation=*/1);
  return *rt;
}

/// The first cuda device, or null (the test then skips).
bool cuda_device(Device &out) {
  for (const Device &d : runtime().devices())
    if (std::string(d.info().plugin) == "cuda") {
      out = d;
      return true;
    }
  return false;
}

int device_sm(const Device &d) {
  const std::string v = d.info().driver_version; // "CUDA 13.0, sm_90"
  return std::atoi(v.c_str() + v.rfind("sm_") + 3);
}

#define NEED_GPU(d)                                                                                \
  Device d(nullptr);                                                                               \
  if (!cuda_device(d))                                                                             \
  GTEST_SKIP() << "no cuda device"

/// Runs axpy on n elements and checks every output.
void check_axpy(const Device &d, const Executable &exe, Stream &s, int64_t n) {
  std::vector<float> x(n), y(n), out(n, -1);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = static_cast<float>(n - i) * 0.5f;
  }
  Buffer bx = d.buffer(n * 4, TL_BUFFER_DEVICE_LOCAL), by = d.buffer(n * 4, TL_BUFFER_DEVICE_LOCAL);
  Buffer bo = d.buffer(n * 4, TL_BUFFER_DEVICE_LOCAL);
  s.copy_to_device(x.data(), bx, n * 4);
  s.copy_to_device(y.data(), by, n * 4);
  s.launch(exe, exe.find_kernel("tl_axpy"), {uint64_t((n + 255) / 256), 1, 1},
           {tensor_arg(bx, TL_DTYPE_F32, {n}), tensor_arg(by, TL_DTYPE_F32, {n}),
            tensor_arg(bo, TL_DTYPE_F32, {n}), float_arg(TL_DTYPE_F32, 2.0)});
  s.copy_to_host(bo, out.data(), n * 4);
  s.synchronize();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], x[i] + 2.0f * y[i]) << "i " << i;
}

TEST(CudaDevice, PtxAssemblesForSm80AndSm90) {
  if (ptxas().empty())
    GTEST_SKIP() << "no ptxas (set TL_PTXAS)";
  for (int sm : {80, 90}) {
    std::string log;
    EXPECT_FALSE(assemble(sm, log).empty()) << "sm_" << sm << ": " << log;
  }
}

TEST(CudaDevice, InfoComesFromTheDriver) {
  NEED_GPU(d);
  const tl_device_info i = d.info();
  EXPECT_NE(std::string(i.name).find("(cuda:0)"), std::string::npos) << i.name;
  EXPECT_EQ(std::string(i.vendor), "NVIDIA");
  EXPECT_EQ(std::string(i.target), "nvptx");
  {
    // The architecture of exact builds (a JIT's), from the driver's compute capability read here.
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(cuda, nullptr) << "the plugin did not load libcuda.so.1";
    auto get = reinterpret_cast<int (*)(int *, int)>(dlsym(cuda, "cuDeviceGet"));
    auto attr = reinterpret_cast<int (*)(int *, int, int)>(dlsym(cuda, "cuDeviceGetAttribute"));
    int dev = 0, major = 0, minor = 0;
    ASSERT_EQ(get(&dev, 0), 0);
    ASSERT_EQ(attr(&major, 75, dev), 0); // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    ASSERT_EQ(attr(&minor, 76, dev), 0); // ..._MINOR
    const int sm = major * 10 + minor;
    const std::string arch = sm == 90 ? "sm_90a" : "sm_" + std::to_string(sm);
    EXPECT_EQ(std::string(i.target_options),
              sm >= 80 && sm <= 90 ? "{\"arch\":\"" + arch + "\"}" : "");
    dlclose(cuda);
  }
  EXPECT_GT(i.compute_units, 0u);
  EXPECT_GE(i.onchip_memory_bytes, 48u * 1024);
  EXPECT_GT(i.peak_bandwidth_bytes_per_s, 1e11);
  EXPECT_GT(i.peak_flops[TL_DTYPE_F32], 1e12);
  std::printf("cuda: %s, %s, %u SMs at %u MHz, HBM peak %.0f GB/s, link %.1f GB/s\n", i.name,
              i.driver_version, i.compute_units, i.clock_mhz, i.peak_bandwidth_bytes_per_s / 1e9,
              i.link_bandwidth_bytes_per_s / 1e9);
}

TEST(CudaDevice, LaunchThroughPtxJit) {
  NEED_GPU(d);
  const auto blob = executable({ptx_image()});
  Executable exe = d.load(blob.data(), blob.size());
  Stream s = d.stream();
  for (int64_t n : {1, 255, 257, 100003})
    check_axpy(d, exe, s, n);
}

TEST(CudaDevice, LaunchThroughCubinForThisGpu) {
  NEED_GPU(d);
  if (ptxas().empty())
    GTEST_SKIP() << "no ptxas (set TL_PTXAS)";
  std::string log;
  nvptx::Image cubin;
  cubin.kind = nvptx::Image::Kind::Cubin;
  cubin.sm = static_cast<uint32_t>(device_sm(d));
  cubin.bytes = assemble(device_sm(d), log);
  ASSERT_FALSE(cubin.bytes.empty())
      << "ptxas cannot assemble for sm_" << device_sm(d) << ": " << log;
  const auto blob = executable({cubin}); // no PTX: the cubin must be what loads
  Executable exe = d.load(blob.data(), blob.size());
  Stream s = d.stream();
  check_axpy(d, exe, s, 4099);
}

TEST(CudaDevice, NoImageForThisGpuIsIncompatible) {
  NEED_GPU(d);
  nvptx::Image other;
  other.kind = nvptx::Image::Kind::Cubin;
  other.sm = 75; // never this device's exact capability here
  other.bytes = {1, 2, 3};
  const auto blob = executable({other});
  tl_executable e = nullptr;
  tl_status st = tl_executable_load(d.get(), blob.data(), blob.size(), &e);
  EXPECT_EQ(tl_status_get_code(st), TL_STATUS_INCOMPATIBLE) << tl_status_get_message(st);
  tl_status_free(st);
}

TEST(CudaDevice, FailedAssertIsReportedAndTheStreamRecovers) {
  NEED_GPU(d);
  const auto blob = executable({ptx_image()});
  Executable exe = d.load(blob.data(), blob.size());
  Stream s = d.stream();
  s.launch(exe, exe.find_kernel("tl_check"), {1, 1, 1}, {int_arg(TL_DTYPE_I32, 5)});
  tl_status st = tl_stream_synchronize(s.get());
  EXPECT_EQ(tl_status_get_code(st), TL_STATUS_ABORTED);
  EXPECT_NE(std::string(tl_status_get_message(st)).find("assert failed: n must be negative"),
            std::string::npos)
      << tl_status_get_message(st);
  tl_status_free(st);
  s.launch(exe, exe.find_kernel("tl_check"), {1, 1, 1}, {int_arg(TL_DTYPE_I32, -1)});
  s.synchronize(); // passes: the failure was reported once, the context is healthy
  check_axpy(d, exe, s, 1000);
  // Past the stream's 1024 status words, which are read back and zeroed in bulk: a stale word
  // (not zeroed again) would report a passing launch; a word read before its kernel ran, or
  // the wrong launch's word, would miss or misname the failure of launch 2500.
  for (int i = 0; i < 3000; ++i)
    s.launch(exe, exe.find_kernel("tl_check"), {1, 1, 1},
             {int_arg(TL_DTYPE_I32, i == 2500 ? 7 : -1)});
  st = tl_stream_synchronize(s.get());
  EXPECT_EQ(tl_status_get_code(st), TL_STATUS_ABORTED);
  EXPECT_NE(std::string(tl_status_get_message(st)).find("assert failed: n must be negative"),
            std::string::npos)
      << tl_status_get_message(st);
  tl_status_free(st);
  for (int i = 0; i < 3000; ++i)
    s.launch(exe, exe.find_kernel("tl_check"), {1, 1, 1}, {int_arg(TL_DTYPE_I32, -1)});
  s.synchronize(); // every word zero again
}

// ids: out[(x gz + z) gy + y] = that index, where y and z are ctaid plus this launch's first
// program (GridBase) and gy, gz the whole grid's axes (Grid): what the nvptx compiler emits for
// program_id and num_programs on axes 1 and 2 (format 2).
const char *kIdsPtx = R"(.version 7.0
.target sm_80
.address_size 64

.visible .entry tl_ids(.param .u64 pout, .param .u32 pby, .param .u32 pbz, .param .u32 pgy,
                       .param .u32 pgz)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [pout];
  ld.param.u32 %r1, [pby];
  ld.param.u32 %r2, [pbz];
  ld.param.u32 %r3, [pgy];
  ld.param.u32 %r4, [pgz];
  mov.u32 %r5, %ctaid.x;
  mov.u32 %r6, %ctaid.y;
  mov.u32 %r7, %ctaid.z;
  add.u32 %r6, %r6, %r1;
  add.u32 %r7, %r7, %r2;
  mad.lo.u32 %r8, %r5, %r4, %r7;
  mad.lo.u32 %r9, %r8, %r3, %r6;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r9, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r9;
  ret;
}
)";

std::vector<uint8_t> ids_executable() {
  nvptx::Code code;
  nvptx::Image im;
  im.sm = 80;
  im.bytes.assign(kIdsPtx, kIdsPtx + std::strlen(kIdsPtx));
  code.images = {im};
  nvptx::Kernel ids;
  ids.name = "tl_ids";
  using S = nvptx::Slot;
  ids.params = {{S::Kind::Pointer, 0, 0, 8},
                {S::Kind::GridBase, 0, 1, 4},
                {S::Kind::GridBase, 0, 2, 4},
                {S::Kind::Grid, 0, 1, 4},
                {S::Kind::Grid, 0, 2, 4}};
  code.kernels = {ids};
  exe::Executable e;
  e.target = nvptx::kTarget;
  e.producer = "cuda device tests";
  e.kernels.push_back({"tl_ids", {{"out", exe::ParamKind::Tensor, TL_DTYPE_I32, 1}}, 1, 0});
  e.code = nvptx::serialize_code(code);
  return exe::serialize(e);
}

TEST(CudaDevice, GridPastTheAxisLimitRunsInParts) {
  // Axes y and z stop at 65535 programs in CUDA; the device runs a larger grid as several
  // launches, each told its first program. Every program writes its own index once: a part
  // without its base would rewrite the first 65535 programs' entries and leave the rest -1; the
  // part's size taken for the axis's (Grid) would misplace every index.
  NEED_GPU(d);
  const auto blob = ids_executable();
  Executable exe = d.load(blob.data(), blob.size());
  Stream s = d.stream();
  for (const std::array<uint64_t, 3> grid :
       {std::array<uint64_t, 3>{2, 70000, 1}, {1, 3, 140000}, {3, 65536, 2}, {1, 65535, 1}}) {
    const int64_t n = static_cast<int64_t>(grid[0] * grid[1] * grid[2]);
    Buffer out = d.buffer(n * 4, TL_BUFFER_DEVICE_LOCAL);
    std::vector<int32_t> got(n, -1);
    s.copy_to_device(got.data(), out, n * 4);
    s.launch(exe, exe.find_kernel("tl_ids"), {grid[0], grid[1], grid[2]},
             {tensor_arg(out, TL_DTYPE_I32, {n})});
    s.copy_to_host(out, got.data(), n * 4);
    s.synchronize();
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[i], i) << "grid " << grid[0] << " x " << grid[1] << " x " << grid[2];
  }
  // Code without the base parameters (nvptx format 1) cannot be split: a clear refusal.
  const auto old = executable({ptx_image()});
  Executable axpy = d.load(old.data(), old.size());
  Buffer b = d.buffer(4, TL_BUFFER_DEVICE_LOCAL);
  tl_arg args[4] = {tensor_arg(b, TL_DTYPE_F32, {1}), tensor_arg(b, TL_DTYPE_F32, {1}),
                    tensor_arg(b, TL_DTYPE_F32, {1}), float_arg(TL_DTYPE_F32, 1.0)};
  const tl_launch_desc launch{
      sizeof(tl_launch_desc), axpy.find_kernel("tl_axpy"), {1, 70000, 1}, args, 4};
  tl_status st = tl_stream_launch(s.get(), axpy.get(), &launch);
  EXPECT_EQ(tl_status_get_code(st), TL_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tl_status_get_message(st)).find("predates split grids"), std::string::npos)
      << tl_status_get_message(st);
  tl_status_free(st);
}

/// The driver, for memory and streams that TL did not make (as PyTorch's).
struct Cu {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  template <class F> F fn(const char *name) { return reinterpret_cast<F>(dlsym(lib, name)); }
};

TEST(CudaDevice, ImportedPointerAndStreamAreUsedInPlace) {
  NEED_GPU(d);
  Cu cu;
  ASSERT_NE(cu.lib, nullptr);
  using CUdeviceptr = unsigned long long;
  auto mem_alloc = cu.fn<int (*)(CUdeviceptr *, size_t)>("cuMemAlloc_v2");
  auto mem_free = cu.fn<int (*)(CUdeviceptr)>("cuMemFree_v2");
  auto htod = cu.fn<int (*)(CUdeviceptr, const void *, size_t)>("cuMemcpyHtoD_v2");
  auto dtoh = cu.fn<int (*)(void *, CUdeviceptr, size_t)>("cuMemcpyDtoH_v2");
  auto stream_create = cu.fn<int (*)(void **, unsigned)>("cuStreamCreate");
  auto stream_destroy = cu.fn<int (*)(void *)>("cuStreamDestroy_v2");
  auto stream_sync = cu.fn<int (*)(void *)>("cuStreamSynchronize");
  // The plugin made the primary context current on this thread when it opened the device.
  const int64_t n = 5000;
  std::vector<float> x(n, 1.0f), y(n, 3.0f), out(n, 0.0f);
  CUdeviceptr px = 0, py = 0, po = 0;
  ASSERT_EQ(mem_alloc(&px, n * 4), 0);
  ASSERT_EQ(mem_alloc(&py, n * 4), 0);
  ASSERT_EQ(mem_alloc(&po, n * 4), 0);
  ASSERT_EQ(htod(px, x.data(), n * 4), 0);
  ASSERT_EQ(htod(py, y.data(), n * 4), 0);
  void *native = nullptr;
  ASSERT_EQ(stream_create(&native, 1 /* non-blocking */), 0);
  {
    auto import = [&](CUdeviceptr p) {
      tl_buffer_import_desc desc{sizeof desc, reinterpret_cast<void *>(p), uint64_t(n * 4), 0};
      tl_buffer b = nullptr;
      check(tl_buffer_import(d.get(), &desc, &b));
      return Buffer(b);
    };
    Buffer bx = import(px), by = import(py), bo = import(po);
    tl_stream ts = nullptr;
    check(tl_stream_import(d.get(), native, &ts));
    Stream s(ts);
    const auto blob = executable({ptx_image()});
    Executable exe = d.load(blob.data(), blob.size());
    s.launch(exe, exe.find_kernel("tl_axpy"), {uint64_t((n + 255) / 256), 1, 1},
             {tensor_arg(bx, TL_DTYPE_F32, {n}), tensor_arg(by, TL_DTYPE_F32, {n}),
              tensor_arg(bo, TL_DTYPE_F32, {n}), float_arg(TL_DTYPE_F32, 0.5)});
    EXPECT_EQ(stream_sync(native), 0); // the work went to the native stream
    ASSERT_EQ(dtoh(out.data(), po, n * 4), 0);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], 2.5f) << "i " << i;
  } // releasing the imports and the stream wrapper must leave both alive
  EXPECT_EQ(stream_destroy(native), 0);
  EXPECT_EQ(mem_free(px), 0);
  EXPECT_EQ(mem_free(py), 0);
  EXPECT_EQ(mem_free(po), 0);
  // A host pointer is not device memory of this GPU.
  std::vector<float> host(16);
  tl_buffer_import_desc desc{sizeof desc, host.data(), 64, 0};
  tl_buffer b = nullptr;
  tl_status st = tl_buffer_import(d.get(), &desc, &b);
  EXPECT_NE(tl_status_get_code(st), TL_STATUS_OK);
  EXPECT_NE(std::string(tl_status_get_message(st)).find("cuPointerGetAttribute"), std::string::npos)
      << tl_status_get_message(st);
  tl_status_free(st);
}

TEST(CudaDevice, HostCopiesOfPageableMemoryMoveEveryByte) {
  // 512 MiB of pageable host memory through the staging buffers, both ways. Their speed is
  // tl-conform's bandwidth suite's to judge (bandwidth.h2d / d2h against the datasheet), not a
  // unit test's: the figures are printed (a bar of half the link here failed on a fresh H100
  // host at 0.47 while the same host had given 0.69 an hour before).
  NEED_GPU(d);
  const double link = d.info().link_bandwidth_bytes_per_s;
  const size_t bytes = size_t(512) << 20;
  std::vector<uint8_t> host(bytes, 7), back(bytes);
  Buffer b = d.buffer(bytes, TL_BUFFER_DEVICE_LOCAL);
  Stream s = d.stream();
  auto rate = [&](auto copy) {
    copy(); // warm: pages, staging, pool threads
    s.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    copy();
    s.synchronize();
    return bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double h2d = rate([&] { s.copy_to_device(host.data(), b, bytes); });
  const double d2h = rate([&] { s.copy_to_host(b, back.data(), bytes); });
  std::printf("h2d_GBps: %.1f\nd2h_GBps: %.1f\nlink_GBps: %.1f\n", h2d / 1e9, d2h / 1e9,
              link / 1e9);
  EXPECT_EQ(back, host);
}

TEST(CudaDevice, HostVisibleBuffersArePinnedAndMapped) {
  // A HOST_VISIBLE buffer without DEVICE_LOCAL is pinned host memory mapped into the GPU: its
  // mapped memory is page-locked and device-mapped (the driver says so), one DMA away from the
  // GPU, and copies from and to it move every byte. Their speed (the link's) is tl-conform's
  // bandwidth suite's to judge, not a unit test's: the figures are printed.
  NEED_GPU(d);
  const size_t bytes = size_t(512) << 20;
  Buffer pinned = d.buffer(bytes, TL_BUFFER_HOST_VISIBLE);
  Buffer dev = d.buffer(bytes, TL_BUFFER_DEVICE_LOCAL);
  auto *host = static_cast<uint8_t *>(pinned.map());
  {
    // cuMemHostGetFlags answers only for memory cuMemHostAlloc gave (pageable: an error).
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(cuda, nullptr) << "the plugin did not load libcuda.so.1";
    using GetFlags = int (*)(unsigned *, void *);
    auto get_flags = reinterpret_cast<GetFlags>(dlsym(cuda, "cuMemHostGetFlags"));
    ASSERT_NE(get_flags, nullptr);
    unsigned flags = 0;
    EXPECT_EQ(get_flags(&flags, host), 0) << "the mapped memory is not pinned host memory";
    EXPECT_NE(flags & 0x02u, 0u) << "not mapped into the device (CU_MEMHOSTALLOC_DEVICEMAP)";
    dlclose(cuda);
  }
  for (size_t i = 0; i < bytes; i += 4096)
    host[i] = static_cast<uint8_t>(i >> 12);
  Stream s = d.stream();
  auto rate = [&](auto copy) {
    copy();
    s.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    copy();
    s.synchronize();
    return bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double h2d = rate([&] { s.copy_to_device(host, dev, bytes); });
  // Zeroed, then the device's copy brings every byte back.
  std::memset(host, 0, bytes);
  const double d2h = rate([&] { s.copy_to_host(dev, host, bytes); });
  std::printf("pinned_h2d_GBps: %.1f\npinned_d2h_GBps: %.1f\n", h2d / 1e9, d2h / 1e9);
  for (size_t i = 0; i < bytes; i += 4096)
    ASSERT_EQ(host[i], static_cast<uint8_t>(i >> 12)) << "byte " << i;
}

} // namespace
} // namespace tl::cuda::testing
