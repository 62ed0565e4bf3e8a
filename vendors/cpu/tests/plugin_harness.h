// Test harness for the cpu plugin: loads the .so, gives it a host table, wraps statuses.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/vendor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

/// The tests' own status object: the runtime that defines the real one is not linked here.
struct tl_status_s {
  tl_status_code code;
  std::string message;
};

namespace tl::cpu::testing {

/// Owns a status from the plugin; null is OK.
class Status {
public:
  Status(tl_status s = nullptr) : s_(s) {}
  ~Status() { delete s_; }
  Status(const Status &) = delete;
  Status &operator=(const Status &) = delete;
  tl_status_code code() const { return s_ ? s_->code : TL_STATUS_OK; }
  std::string message() const { return s_ ? s_->message : ""; }
  bool ok() const { return s_ == nullptr; }

private:
  tl_status s_;
};

#define TL_EXPECT_OK(expr)                                                                         \
  do {                                                                                             \
    ::tl::cpu::testing::Status s_(expr);                                                           \
    EXPECT_TRUE(s_.ok()) << #expr << ": " << s_.message();                                         \
  } while (0)
#define TL_ASSERT_OK(expr)                                                                         \
  do {                                                                                             \
    ::tl::cpu::testing::Status s_(expr);                                                           \
    ASSERT_TRUE(s_.ok()) << #expr << ": " << s_.message();                                         \
  } while (0)

/// The plugin's table, loaded once per process (the library stays loaded).
const tl_vendor_plugin &plugin();
/// The host table the tests give the plugin.
const tl_vendor_host_api &host_api();
/// Messages the plugin logged through the host.
std::vector<std::string> &logged();

/// Initializes the plugin and opens device 0 for each test; closes both afterwards.
class PluginTest : public ::testing::Test {
protected:
  void SetUp() override;
  void TearDown() override;

  void *alloc(uint64_t size);
  void *new_stream();
  void *new_event();

  const tl_vendor_plugin *p = nullptr;
  void *state = nullptr;
  void *device = nullptr;

private:
  std::vector<void *> buffers_, streams_, events_;
};

/// One kernel's metadata for a hand-made executable image.
struct KernelSpec {
  std::string name;
  std::vector<tl_vendor_param> params;
  uint32_t grid_rank = 1;
};

/// llvm-cpu object code for Tile IR text, through the compiler's pipeline (the tests sit above
/// the compiler; the plugin itself links none of it).
std::string native_code(const std::string &tlir);

/// An executable image as the runtime would pass it: target, code blob, kernel metadata.
class Image {
public:
  Image(std::string target, std::string code, std::vector<KernelSpec> kernels);
  Image(const Image &) = delete; // the image points into its own members
  Image &operator=(const Image &) = delete;
  const tl_vendor_executable_image *get() const { return &image_; }

private:
  std::string target_, code_;
  std::vector<KernelSpec> specs_;
  std::vector<tl_vendor_kernel> kernels_;
  tl_vendor_executable_image image_{};
};

tl_vendor_param tensor_param(const char *name, tl_dtype dtype, uint32_t rank);
tl_vendor_param scalar_param(const char *name, tl_dtype dtype);
/// A contiguous tensor argument over `buffer`.
tl_vendor_arg tensor_arg(void *buffer, tl_dtype dtype, std::vector<int64_t> shape,
                         uint64_t offset_bytes = 0);

/// The vector-add kernel of the plugin's tests, and its image.
extern const char *const kVectorAdd;
Image vector_add_image();

} // namespace tl::cpu::testing
