// Host copies of the cuda plugin through pinned staging memory: chunked and double-buffered, so
// that the host's memcpy of one chunk overlaps the DMA of the other and copies run at link speed
// (pageable memory would make the driver stage through its own smaller buffers).
// SPDX-License-Identifier: Apache-2.0
#include "cuda_plugin.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tl::cuda {
namespace {

/// Host-side copies into and out of staging on several threads: one core's memcpy (~10-20 GB/s)
/// is slower than a PCIe 5 x16 link (~55 GB/s of DMA), and would cap the pipeline below it.
class CopyPool {
public:
  static CopyPool &get() {
    static CopyPool pool; // threads live for the process: created once, on the first large copy
    return pool;
  }

  void memcpy(void *dst, const void *src, size_t n) {
    const size_t parts = std::min<size_t>(workers_.size() + 1, n / kMinPart);
    if (parts <= 1) {
      std::memcpy(dst, src, n);
      return;
    }
    const size_t part = (n + parts - 1) / parts;
    auto *d = static_cast<char *>(dst);
    auto *s = static_cast<const char *>(src);
    std::lock_guard use(use_mu_); // one large copy at a time owns the pool
    std::unique_lock lock(mu_);
    pending_ = parts - 1;
    for (size_t i = 1; i < parts; ++i) {
      const size_t at = i * part;
      jobs_.push_back([=] { std::memcpy(d + at, s + at, std::min(part, n - at)); });
    }
    lock.unlock();
    work_.notify_all();
    std::memcpy(d, s, std::min(part, n));
    lock.lock();
    done_.wait(lock, [&] { return pending_ == 0; });
  }

private:
  static constexpr size_t kMinPart = size_t(1) << 20;

  CopyPool() {
    // Every core, at most 16 (on the H200 machine's 16 cores, 16 threads with 32 MiB chunks
    // staged 42-47 GB/s at 256 MiB where 8 with 8 MiB staged 34-35), or TL_CUDA_COPY_THREADS
    // (1..64) to tune on a given machine.
    unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
    if (const char *e = std::getenv("TL_CUDA_COPY_THREADS"); e && std::atoi(e) > 0)
      threads = std::min(64u, static_cast<unsigned>(std::atoi(e)));
    const unsigned n = threads - 1;
    for (unsigned i = 0; i < n; ++i)
      workers_.emplace_back([this] { serve(); });
  }
  ~CopyPool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    work_.notify_all();
    for (std::thread &t : workers_)
      t.join();
  }

  void serve() {
    std::unique_lock lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty())
        return;
      std::function<void()> job = std::move(jobs_.back());
      jobs_.pop_back();
      lock.unlock();
      job();
      lock.lock();
      if (--pending_ == 0)
        done_.notify_all();
    }
  }

  std::mutex use_mu_; // held by a caller for its whole copy
  std::mutex mu_;     // guards the fields below
  std::condition_variable work_, done_;
  std::vector<std::function<void()>> jobs_;
  size_t pending_ = 0;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

} // namespace

uint64_t Staging::chunk_bytes() {
  static const uint64_t bytes = [] {
    const char *e = std::getenv("TL_CUDA_STAGING_MIB");
    const int mib = e ? std::atoi(e) : 0;
    return uint64_t(mib >= 1 && mib <= 256 ? mib : 32) << 20;
  }();
  return bytes;
}

namespace {

Error ensure_staging(Stream &s) {
  Staging &st = s.staging;
  for (int i = 0; i < 2; ++i) {
    if (!st.chunk[i])
      TL_CU_CHECK("pinning " + std::to_string(Staging::chunk_bytes()) + " bytes of staging memory",
                  cuMemHostAlloc, &st.chunk[i], Staging::chunk_bytes(), 0);
    if (!st.done[i])
      TL_CU_CHECK("", cuEventCreate, &st.done[i], CU_EVENT_DISABLE_TIMING);
  }
  return {};
}

/// Waits until chunk i's previous DMA has finished, so the host may touch it again.
Error wait_chunk(Staging &st, int i) {
  if (st.used[i])
    TL_CU_CHECK("a queued copy failed", cuEventSynchronize, st.done[i]);
  st.used[i] = false;
  return {};
}

} // namespace

void free_staging(Stream &s) {
  const Driver &d = driver();
  Staging &st = s.staging;
  for (int i = 0; i < 2; ++i) {
    if (st.used[i])
      d.cuEventSynchronize(st.done[i]);
    if (st.chunk[i])
      d.cuMemFreeHost(st.chunk[i]);
    if (st.done[i])
      d.cuEventDestroy(st.done[i]);
  }
  s.staging = Staging{};
}

bool Device::is_pinned(const void *p, uint64_t size) const {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(pinned_mutex);
  auto it = pinned.upper_bound(at);
  if (it == pinned.begin())
    return false;
  --it;
  return at - it->first <= it->second && size <= it->second - (at - it->first);
}

Error copy_to_device(Stream &s, const void *src, Buffer &dst, uint64_t offset, uint64_t size) {
  if (Error e = s.device->bind(); !e.ok())
    return e;
  if (s.device->is_pinned(src, size)) { // a host-visible buffer's memory: one DMA, no staging
    TL_CU_CHECK("", cuMemcpyHtoDAsync, dst.ptr + offset, src, size, s.stream);
    return {};
  }
  std::lock_guard lock(s.staging_mutex);
  if (Error e = ensure_staging(s); !e.ok())
    return e;
  // The host bytes are copied before this call returns, so the caller may reuse `src` at once
  // (stricter than the HAL asks); the DMA of chunk k overlaps the memcpy of chunk k + 1.
  Staging &st = s.staging;
  auto *from = static_cast<const char *>(src);
  for (uint64_t done = 0, k = 0; done < size; ++k) {
    const int i = static_cast<int>(k % 2);
    const uint64_t n = std::min(Staging::chunk_bytes(), size - done);
    if (Error e = wait_chunk(st, i); !e.ok())
      return e;
    CopyPool::get().memcpy(st.chunk[i], from + done, n);
    TL_CU_CHECK("", cuMemcpyHtoDAsync, dst.ptr + offset + done, st.chunk[i], n, s.stream);
    TL_CU_CHECK("", cuEventRecord, st.done[i], s.stream);
    st.used[i] = true;
    done += n;
  }
  return {};
}

Error copy_to_host(Stream &s, Buffer &src, uint64_t offset, void *dst, uint64_t size) {
  if (Error e = s.device->bind(); !e.ok())
    return e;
  if (s.device->is_pinned(dst, size)) { // done when the stream reaches it (a synchronize)
    TL_CU_CHECK("", cuMemcpyDtoHAsync, dst, src.ptr + offset, size, s.stream);
    return {};
  }
  std::lock_guard lock(s.staging_mutex);
  if (Error e = ensure_staging(s); !e.ok())
    return e;
  // The bytes must reach `dst` from the host side, so this waits for the stream to reach the
  // copy (the HAL allows completing early). Chunk k + 1's DMA overlaps chunk k's memcpy out.
  Staging &st = s.staging;
  auto *to = static_cast<char *>(dst);
  uint64_t pending_at = 0, pending_n = 0; // the chunk queued last, not yet copied out
  int pending = -1;
  auto drain = [&]() -> Error {
    if (pending < 0)
      return {};
    if (Error e = wait_chunk(st, pending); !e.ok())
      return e;
    CopyPool::get().memcpy(to + pending_at, st.chunk[pending], pending_n);
    pending = -1;
    return {};
  };
  for (uint64_t done = 0, k = 0; done < size; ++k) {
    const int i = static_cast<int>(k % 2);
    const uint64_t n = std::min(Staging::chunk_bytes(), size - done);
    if (Error e = wait_chunk(st, i); !e.ok()) // a previous copy's DMA into this chunk
      return e;
    TL_CU_CHECK("", cuMemcpyDtoHAsync, st.chunk[i], src.ptr + offset + done, n, s.stream);
    TL_CU_CHECK("", cuEventRecord, st.done[i], s.stream);
    st.used[i] = true;
    if (Error e = drain(); !e.ok())
      return e;
    pending = i;
    pending_at = done;
    pending_n = n;
    done += n;
  }
  return drain();
}

} // namespace tl::cuda
