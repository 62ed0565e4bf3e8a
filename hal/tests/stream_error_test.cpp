// A launch's error reaches the caller of tl_stream_synchronize even when another thread's buffer
// release (which synchronizes every stream of the device) took it from the plugin first. The
// late_error plugin makes that window 300 ms wide; the npusim soak found it as a launch whose
// simulator was killed but which synchronized as a success (its output never written).
// SPDX-License-Identifier: Apache-2.0
#include "test_support.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace tl::hal::testing {
namespace {

TEST(StreamErrors, AnErrorTakenByAnotherThreadsDrainStillReachesTheStreamsSynchronize) {
  Runtime rt(TL_LATE_ERROR_PLUGIN, 1);
  Device d = rt.device("late_error");
  const std::vector<uint8_t> blob = compile(kVectorAdd, d.info().target);
  Executable exe = d.load(blob.data(), blob.size());
  Stream s = d.stream();
  Buffer other = d.buffer(64);
  s.launch(exe, exe.find_kernel("empty"), {1, 1, 1}, {});
  // Another thread releases a buffer: the runtime drains every stream of the device, and that
  // drain is the synchronize that takes the launch's error.
  std::thread releaser([&] { other = Buffer(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  try {
    s.synchronize();
    releaser.join();
    FAIL() << "the launch's error was lost: tl_stream_synchronize reported success";
  } catch (const Error &e) {
    releaser.join();
    EXPECT_EQ(e.code(), TL_STATUS_ABORTED) << e.what();
    EXPECT_NE(std::string(e.what()).find("late_error: the launch failed"), std::string::npos)
        << e.what();
  }
  // Reported once: the next synchronize of the stream is clean.
  EXPECT_NO_THROW(s.synchronize());
}

} // namespace
} // namespace tl::hal::testing
