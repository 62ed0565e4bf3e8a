// Test harness for the cpu plugin: dlopen of the built module and a minimal host table.
// SPDX-License-Identifier: Apache-2.0
#include "plugin_harness.h"

#include "tl/compiler/pipeline.h"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <dlfcn.h>

#include <stdexcept>

#include <cstdlib>
#include <mutex>

namespace tl::cpu::testing {
namespace {

tl_status make_status(tl_status_code code, const char *message) {
  if (code == TL_STATUS_OK)
    return nullptr;
  return new tl_status_s{code, message ? message : ""};
}

void log(int32_t level, const char *plugin, const char *message) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  logged().push_back(std::string(plugin) + ": " + message);
}

} // namespace

std::vector<std::string> &logged() {
  static std::vector<std::string> messages;
  return messages;
}

const tl_vendor_host_api &host_api() {
  static const tl_vendor_host_api host = {sizeof(tl_vendor_host_api), TL_VENDOR_ABI_MAJOR,
                                          TL_VENDOR_ABI_MINOR, make_status, log};
  return host;
}

const tl_vendor_plugin &plugin() {
  static const tl_vendor_plugin *table = [] {
    void *lib = dlopen(TL_PLUGIN_CPU_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      ADD_FAILURE() << "dlopen " << TL_PLUGIN_CPU_PATH << ": " << dlerror();
      std::abort();
    }
    auto entry = reinterpret_cast<tl_vendor_plugin_entry_fn>(dlsym(lib, TL_VENDOR_ENTRY_POINT));
    if (!entry) {
      ADD_FAILURE() << "no " << TL_VENDOR_ENTRY_POINT << " in " << TL_PLUGIN_CPU_PATH;
      std::abort();
    }
    return entry(TL_VENDOR_ABI_MAJOR);
  }();
  return *table;
}

void PluginTest::SetUp() {
  p = &plugin();
  TL_ASSERT_OK(p->initialize(&host_api(), &state));
  TL_ASSERT_OK(p->device_open(state, 0, &device));
}

void PluginTest::TearDown() {
  for (void *s : streams_) {
    Status(p->stream_synchronize(s));
    p->stream_destroy(device, s);
  }
  for (void *e : events_)
    p->event_destroy(device, e);
  for (void *b : buffers_)
    p->buffer_free(device, b);
  if (device)
    p->device_close(device);
  if (state)
    p->shutdown(state);
}

void *PluginTest::alloc(uint64_t size) {
  tl_buffer_desc desc{sizeof(desc), size, TL_BUFFER_DEVICE_LOCAL | TL_BUFFER_HOST_VISIBLE};
  void *b = nullptr;
  TL_EXPECT_OK(p->buffer_allocate(device, &desc, &b));
  buffers_.push_back(b);
  return b;
}

void *PluginTest::new_stream() {
  void *s = nullptr;
  TL_EXPECT_OK(p->stream_create(device, &s));
  streams_.push_back(s);
  return s;
}

void *PluginTest::new_event() {
  void *e = nullptr;
  TL_EXPECT_OK(p->event_create(device, &e));
  events_.push_back(e);
  return e;
}

Image::Image(std::string target, std::string code, std::vector<KernelSpec> kernels)
    : target_(std::move(target)), code_(std::move(code)), specs_(std::move(kernels)) {
  for (auto &k : specs_)
    kernels_.push_back(
        {k.name.c_str(), k.params.data(), uint32_t(k.params.size()), k.grid_rank, 0});
  image_.struct_size = sizeof(image_);
  image_.target = target_.c_str();
  image_.code = code_.data();
  image_.code_size = code_.size();
  image_.kernels = kernels_.data();
  image_.kernel_count = uint32_t(kernels_.size());
}

tl_vendor_param tensor_param(const char *name, tl_dtype dtype, uint32_t rank) {
  return {name, TL_PARAM_TENSOR, uint32_t(dtype), rank};
}

tl_vendor_param scalar_param(const char *name, tl_dtype dtype) {
  return {name, TL_PARAM_SCALAR, uint32_t(dtype), 0};
}

tl_vendor_arg tensor_arg(void *buffer, tl_dtype dtype, std::vector<int64_t> shape,
                         uint64_t offset_bytes) {
  tl_vendor_arg a{};
  a.kind = TL_PARAM_TENSOR;
  a.dtype = dtype;
  a.buffer = buffer;
  a.offset_bytes = offset_bytes;
  a.rank = uint32_t(shape.size());
  int64_t stride = 1;
  for (int i = int(shape.size()) - 1; i >= 0; --i) {
    a.shape[i] = shape[i];
    a.strides[i] = stride;
    stride *= shape[i];
  }
  return a;
}

const char *const kVectorAdd =
    R"(kernel @vector_add(%x: tensor<?xf32>, %y: tensor<?xf32>, %out: tensor<?xf32>) {
  %pid = program_id {axis = 0} : i32
  %block = constant {value = 256} : i32
  %offset = mul %pid, %block : i32
  %xt = load %x, %offset : tile<256xf32>
  %yt = load %y, %offset : tile<256xf32>
  %sum = add %xt, %yt : tile<256xf32>
  store %out, %offset, %sum
  return
}
)";

std::string native_code(const std::string &tlir) {
  ir::Diagnostics diags;
  auto module = ir::parse(tlir, "test.tlir", diags);
  if (!module || !ir::verify(*module, diags))
    throw std::runtime_error(diags.str());
  std::string error;
  const std::vector<uint8_t> blob = compile::build_executable(*module, "llvm-cpu", "test", &error);
  if (blob.empty())
    throw std::runtime_error(error);
  const exe::LoadResult r = exe::deserialize(blob.data(), blob.size());
  return std::string(r.exe.code.begin(), r.exe.code.end());
}

Image vector_add_image() {
  return Image("llvm-cpu", native_code(kVectorAdd),
               {{"vector_add",
                 {tensor_param("x", TL_DTYPE_F32, 1), tensor_param("y", TL_DTYPE_F32, 1),
                  tensor_param("out", TL_DTYPE_F32, 1)}}});
}

} // namespace tl::cpu::testing
