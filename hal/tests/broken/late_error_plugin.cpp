// The cpu plugin behind a stream whose launches fail late: after a launch, the next
// stream_synchronize on that stream reports the launch's error once (as every plugin's queue
// does) but takes 300 ms to return it, as a synchronize preempted right after taking the error
// would. The runtime must still hand that error to the caller of tl_stream_synchronize when
// another thread's drain (a buffer release) was the one that took it.
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"
#include "tl/vendor.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

namespace {

const tl_vendor_plugin *real = nullptr;
const tl_vendor_host_api *host = nullptr;
tl_vendor_plugin table;
std::mutex mu;
std::set<void *> failed; // streams with a launch error not yet reported

tl_status initialize(const tl_vendor_host_api *h, void **out_state) {
  host = h;
  return real->initialize(h, out_state);
}

tl_status launch(void *stream, void *executable, const tl_vendor_launch *l) {
  if (tl_status s = real->stream_launch(stream, executable, l))
    return s;
  std::lock_guard lock(mu);
  failed.insert(stream);
  return nullptr;
}

tl_status stream_synchronize(void *stream) {
  tl_status s = real->stream_synchronize(stream);
  bool report = false;
  {
    std::lock_guard lock(mu);
    report = failed.erase(stream) > 0;
  }
  if (!report || s) // (the real launches succeed: their own error would come first)
    return s;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  return host->make_status(TL_STATUS_ABORTED, "late_error: the launch failed");
}

} // namespace

extern "C" TL_VENDOR_EXPORT const tl_vendor_plugin *tl_vendor_plugin_entry(uint32_t host_major) {
  if (!real) {
    real = load_cpu_plugin(host_major);
    if (!real)
      return nullptr;
    table = *real;
    table.name = "late_error";
    table.initialize = initialize;
    table.stream_launch = launch;
    table.stream_synchronize = stream_synchronize;
  }
  return &table;
}
