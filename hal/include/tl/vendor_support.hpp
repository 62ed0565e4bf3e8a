// C++ helpers for plugin authors (header-only, nothing crosses the ABI): an error value, the one
// guard that keeps exceptions from crossing the ABI, the host's services, and the ordered work
// queue and event state a stream needs. tl/vendor_plugin.hpp builds a whole plugin from them.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/vendor.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>

namespace tl::vendor {

/// A plugin-side error: made on any thread, turned into a tl_status with the host's make_status
/// when it is reported.
struct Error {
  tl_status_code code = TL_STATUS_OK;
  std::string message;
  bool ok() const { return code == TL_STATUS_OK; }
};

/// The one guard of plugin code: runs `fn` (which returns an Error) and turns an exception into
/// an Error: bad_alloc is RESOURCE_EXHAUSTED, anything else INTERNAL with its what().
template <class Fn> Error guard(Fn &&fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc &) {
    return {TL_STATUS_RESOURCE_EXHAUSTED, "out of host memory"};
  } catch (const std::exception &e) {
    try {
      return {TL_STATUS_INTERNAL, e.what()};
    } catch (...) {
      return {TL_STATUS_RESOURCE_EXHAUSTED, "out of host memory"};
    }
  } catch (...) {
    return {TL_STATUS_INTERNAL, "unknown exception"};
  }
}

/// The host's services as one plugin sees them: statuses and log lines carry the plugin's name.
class Host {
public:
  Host(const tl_vendor_host_api &api, const char *plugin) : api_(&api), plugin_(plugin) {}
  const char *plugin() const { return plugin_; }

  /// A status "<plugin>: <message>" made with the host's make_status (null for OK).
  tl_status status(tl_status_code code, const std::string &message) const noexcept {
    if (code == TL_STATUS_OK)
      return nullptr;
    try {
      return api_->make_status(code, (std::string(plugin_) + ": " + message).c_str());
    } catch (...) {
      return api_->make_status(TL_STATUS_RESOURCE_EXHAUSTED, "out of host memory");
    }
  }
  tl_status status(const Error &e) const noexcept { return status(e.code, e.message); }

  /// Logs through the host when it offers a logger (level 0 error ... 3 debug); `log` is
  /// optional: an older host table may end before it, or leave it null.
  void log(int32_t level, const std::string &message) const noexcept {
    if (api_->struct_size >= offsetof(tl_vendor_host_api, log) + sizeof(api_->log) && api_->log)
      api_->log(level, plugin_, message.c_str());
  }

private:
  const tl_vendor_host_api *api_;
  const char *plugin_;
};

/// An entry function's body under the guard: its Error, or the exception, as a tl_status.
template <class Fn> tl_status guard(const Host &host, Fn &&fn) noexcept {
  return host.status(guard(std::forward<Fn>(fn)));
}

/// The same for entry functions that return nothing (`what` names one): failures are logged.
template <class Fn> void guard_void(const Host &host, const char *what, Fn &&fn) noexcept {
  const Error e = guard([&] {
    fn();
    return Error{};
  });
  if (!e.ok()) {
    try {
      host.log(0, std::string(host.plugin()) + ": " + what + ": " + e.message);
    } catch (...) {
    }
  }
}

/// An ordered queue of tasks served by its own thread: what a stream is. synchronize() waits
/// for everything queued so far and returns (and clears) the first error any task returned or
/// threw (tasks run under guard()). Tasks keep running after a failure. Destruction runs what is
/// queued, then joins the thread.
///
/// Both waits spin for up to kSpin before they block: on a virtual machine, waking a thread
/// whose CPU went idle took ~40 µs (an empty launch + synchronize: 46 µs, against 6 µs when the
/// other CPU was busy), which a short kernel should not pay. The spin is bounded, so a long kernel
/// loses at most kSpin of one core per synchronize.
class WorkQueue {
public:
  using Task = std::function<Error()>;

  WorkQueue() : worker_([this] { serve(); }) {}
  WorkQueue(const WorkQueue &) = delete;
  WorkQueue &operator=(const WorkQueue &) = delete;
  ~WorkQueue() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_one();
    worker_.join();
  }

  static constexpr std::chrono::microseconds kSpin{50};

  void enqueue(Task task) {
    {
      std::lock_guard lock(mu_);
      tasks_.push_back(std::move(task));
      queued_.fetch_add(1, std::memory_order_release);
    }
    work_cv_.notify_one();
  }

  Error synchronize() {
    const uint64_t target = queued_.load(std::memory_order_acquire);
    spin_until([&] { return finished_.load(std::memory_order_acquire) >= target; });
    std::unique_lock lock(mu_);
    idle_cv_.wait(lock, [&] { return tasks_.empty() && !running_; });
    return std::exchange(first_error_, Error{});
  }

private:
  /// Spins until `done()` or kSpin has passed, checking after every pause (with 64 sched_yield
  /// calls between checks the empty round trip stayed at 26 µs; checking each pause: 1.9 µs).
  template <class Done> static void spin_until(Done done) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (unsigned i = 1; !done(); ++i) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#else
      std::this_thread::yield();
#endif
      if (i % 64 == 0 && std::chrono::steady_clock::now() > until)
        return;
    }
  }

  void serve() {
    std::unique_lock lock(mu_);
    for (;;) {
      if (tasks_.empty() && !stop_) { // look for more work a moment before sleeping
        const uint64_t seen = queued_.load(std::memory_order_relaxed);
        lock.unlock();
        spin_until([&] { return queued_.load(std::memory_order_acquire) != seen; });
        lock.lock();
      }
      work_cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty())
        return; // stopping, and everything queued has run
      Task task = std::move(tasks_.front());
      tasks_.pop_front();
      running_ = true;
      lock.unlock();
      Error e = guard(task);
      task = nullptr; // release what the task captured before reporting it done
      lock.lock();
      running_ = false;
      if (!e.ok() && first_error_.ok())
        first_error_ = std::move(e);
      finished_.fetch_add(1, std::memory_order_release);
      if (tasks_.empty())
        idle_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_; // a task was queued, or the queue is stopping
  std::condition_variable idle_cv_; // the queue drained
  std::deque<Task> tasks_;
  bool running_ = false; // the worker is running a task it took off the queue
  bool stop_ = false;
  Error first_error_;
  std::atomic<uint64_t> queued_{0};   // tasks enqueued so far
  std::atomic<uint64_t> finished_{0}; // tasks run so far (their errors recorded)
  std::thread worker_;                // last: started after every other member exists
};

/// Event state shared by an event and the stream tasks that record or wait on it, so that
/// releasing the event while they are queued is safe. Each record takes a new generation; a wait
/// is for the newest record queued before it (as in CUDA), so re-recording cannot hold a waiting
/// stream forever and waiting on a never-recorded event does nothing.
struct EventState {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t recorded = 0;  // generations handed out by stream_record_event
  uint64_t completed = 0; // highest generation its stream has reached
  uint64_t timestamp_ns = 0;

  /// The newest record queued so far (0: never recorded).
  uint64_t newest() {
    std::lock_guard lock(mu);
    return recorded;
  }
  /// Starts a record (the event is pending again until it is reached) and returns the stream
  /// task that completes it, stamped with `clock()` (nanoseconds of the device's timeline).
  /// Records on two streams may complete out of order: the newest generation's stamp is kept.
  template <class Clock>
  static WorkQueue::Task record(std::shared_ptr<EventState> state, Clock clock) {
    uint64_t generation;
    {
      std::lock_guard lock(state->mu);
      generation = ++state->recorded;
    }
    return [state = std::move(state), generation, clock] {
      const auto t = static_cast<uint64_t>(clock());
      {
        std::lock_guard lock(state->mu);
        if (generation > state->completed) {
          state->completed = generation;
          state->timestamp_ns = t;
        }
      }
      state->cv.notify_all();
      return Error{};
    };
  }
  /// A stream task that blocks until generation `target` of `state` completes.
  static WorkQueue::Task wait_for(std::shared_ptr<EventState> state, uint64_t target) {
    return [state = std::move(state), target] {
      std::unique_lock lock(state->mu);
      state->cv.wait(lock, [&] { return state->completed >= target; });
      return Error{};
    };
  }
};

} // namespace tl::vendor
