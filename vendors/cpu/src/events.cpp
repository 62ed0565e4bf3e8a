// Events of the cpu plugin: recorded and waited on by stream tasks, stamped with steady_clock.
// SPDX-License-Identifier: Apache-2.0
#include "cpu_plugin.h"

#include <chrono>

namespace tl::cpu {
namespace {

Event &event_of(void *e) { return *static_cast<Event *>(e); }

uint64_t now_ns() {
  auto t = std::chrono::steady_clock::now().time_since_epoch();
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t).count());
}

tl_status never_recorded(const Plugin &plugin) {
  return plugin.status(TL_STATUS_FAILED_PRECONDITION, "cpu: the event was never recorded");
}

} // namespace

tl_status event_create(void *device, void **out_event) {
  auto *d = static_cast<Device *>(device);
  *out_event = nullptr;
  return guarded(*d->plugin, [&]() -> tl_status {
    *out_event = new Event{d};
    return nullptr;
  });
}

void event_destroy(void *device, void *event) {
  // Tasks still queued keep the shared state alive.
  delete static_cast<Event *>(event);
}

tl_status stream_record_event(void *stream, void *event) {
  auto &s = *static_cast<Stream *>(stream);
  return guarded(*s.device()->plugin, [&]() -> tl_status {
    s.enqueue(EventState::record(event_of(event).state, now_ns));
    return nullptr;
  });
}

tl_status stream_wait_event(void *stream, void *event) {
  auto &s = *static_cast<Stream *>(stream);
  return guarded(*s.device()->plugin, [&]() -> tl_status {
    std::shared_ptr<EventState> state = event_of(event).state;
    if (const uint64_t target = state->newest())
      s.enqueue(EventState::wait_for(state, target));
    return nullptr;
  });
}

tl_status event_query(void *event, int32_t *out_done) {
  Event &e = event_of(event);
  *out_done = 0;
  return guarded(*e.device->plugin, [&]() -> tl_status {
    std::lock_guard lock(e.state->mu);
    if (e.state->recorded == 0)
      return never_recorded(*e.device->plugin);
    *out_done = e.state->completed >= e.state->recorded ? 1 : 0;
    return nullptr;
  });
}

tl_status event_synchronize(void *event) {
  Event &e = event_of(event);
  return guarded(*e.device->plugin, [&]() -> tl_status {
    std::unique_lock lock(e.state->mu);
    uint64_t target = e.state->recorded;
    if (target == 0)
      return never_recorded(*e.device->plugin);
    e.state->cv.wait(lock, [&] { return e.state->completed >= target; });
    return nullptr;
  });
}

tl_status event_timestamp_ns(void *event, uint64_t *out_ns) {
  Event &e = event_of(event);
  *out_ns = 0;
  return guarded(*e.device->plugin, [&]() -> tl_status {
    std::lock_guard lock(e.state->mu);
    if (e.state->recorded == 0)
      return never_recorded(*e.device->plugin);
    if (e.state->completed < e.state->recorded)
      return e.device->plugin->status(TL_STATUS_FAILED_PRECONDITION,
                                      "cpu: the event has not completed yet");
    *out_ns = e.state->timestamp_ns;
    return nullptr;
  });
}

} // namespace tl::cpu
