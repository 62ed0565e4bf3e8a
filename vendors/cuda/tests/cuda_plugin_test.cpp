// The cuda plugin without a GPU: it loads, exports a complete 1.2 table, and its device_count
// says exactly why there is no device (the reason tl-info shows).
// SPDX-License-Identifier: Apache-2.0
#include "tl/vendor.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <string>

namespace {

tl_status make_status(tl_status_code code, const char *message);

/// A status object of this test's own: the plugin only calls the host's make_status.
struct FakeStatus {
  tl_status_code code;
  std::string message;
};
tl_status make_status(tl_status_code code, const char *message) {
  return reinterpret_cast<tl_status>(new FakeStatus{code, message});
}
const tl_vendor_host_api kHost = {sizeof(tl_vendor_host_api), TL_VENDOR_ABI_MAJOR,
                                  TL_VENDOR_ABI_MINOR, make_status, nullptr};

const tl_vendor_plugin *table() {
  // TL_PLUGIN_CUDA: the plugin where the build was unpacked (bench/cuda/run_on_device.sh).
  const char *env = std::getenv("TL_PLUGIN_CUDA");
  void *lib = dlopen(env && *env ? env : TL_PLUGIN_CUDA_PATH, RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    ADD_FAILURE() << dlerror();
  auto entry = lib ? reinterpret_cast<tl_vendor_plugin_entry_fn>(dlsym(lib, TL_VENDOR_ENTRY_POINT))
                   : nullptr;
  return entry ? entry(TL_VENDOR_ABI_MAJOR) : nullptr;
}

/// What the plugin must say: TL_CUDA_EXPECT_REASON, or what dlopen says of the driver library
/// (empty when the driver opens: a GPU machine, where this test has nothing to check).
std::string expected_reason() {
  if (const char *e = std::getenv("TL_CUDA_EXPECT_REASON"))
    return e;
  const char *env = std::getenv("TL_CUDA_LIBRARY");
  const char *path = env && *env ? env : "libcuda.so.1";
  if (void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) {
    dlclose(lib);
    return "";
  }
  return std::string("no device: ") + dlerror();
}

TEST(CudaPlugin, TableIsCompleteWithTheOneTwoFunctions) {
  const tl_vendor_plugin *t = table();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(std::string(t->name), "cuda");
  EXPECT_EQ(t->abi_major, TL_VENDOR_ABI_MAJOR);
  EXPECT_EQ(t->abi_minor, 2u);
  EXPECT_EQ(t->struct_size, sizeof(tl_vendor_plugin));
  EXPECT_NE(t->buffer_import, nullptr);
  EXPECT_NE(t->stream_import, nullptr);
  EXPECT_NE(t->event_elapsed_ms, nullptr);
  EXPECT_NE(t->executable_free, nullptr);
}

TEST(CudaPlugin, LoadsAndSaysWhyItHasNoDevice) {
  const std::string reason = expected_reason();
  if (reason.empty())
    GTEST_SKIP() << "a CUDA driver opens on this machine";
  const tl_vendor_plugin *t = table();
  ASSERT_NE(t, nullptr);
  void *state = nullptr;
  ASSERT_EQ(t->initialize(&kHost, &state), nullptr) << "initialize must not need a driver";
  uint32_t count = 7;
  auto *s = reinterpret_cast<FakeStatus *>(t->device_count(state, &count));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(s->code, TL_STATUS_UNAVAILABLE);
  EXPECT_EQ(s->message, "cuda: " + reason);
  delete s;
  // Asking again gives the same answer (the driver is opened once per process).
  s = reinterpret_cast<FakeStatus *>(t->device_count(state, &count));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->message, "cuda: " + reason);
  delete s;
  t->shutdown(state);
}

} // namespace
