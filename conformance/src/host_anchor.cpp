// Host anchors (see host_anchor.h).
// SPDX-License-Identifier: Apache-2.0
#include "host_anchor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sched.h>
#include <thread>
#include <time.h>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/mman.h>
#endif

namespace tl::conform {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

/// Runs body(thread) on `threads` threads (the caller is thread 0) and returns the wall seconds
/// from the release until `finished()` holds (every piece of the work done: a helper that the
/// scheduler holds back afterwards, before it exits, is not timed); adds the helpers' CPU
/// seconds to `cpu`.
double run_parallel(int threads, const std::function<void(int)> &body,
                    const std::function<bool()> &finished, double &cpu) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> helper_cpu(threads, 0.0);
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire))
        std::this_thread::yield();
      body(t);
      helper_cpu[t] = thread_cpu_seconds(); // the whole life of this thread
    });
  while (ready.load() < threads - 1)
    std::this_thread::yield();
  const Clock::time_point t0 = Clock::now();
  go.store(true, std::memory_order_release);
  body(0);
  while (!finished())
    std::this_thread::yield();
  const double s = seconds_since(t0);
  for (std::thread &th : pool)
    th.join();
  for (int t = 1; t < threads; ++t)
    cpu += helper_cpu[t];
  return s;
}

/// run_parallel's threads kept for every pass: the workers wait on a condition variable
/// between passes (no CPU taken from the device's work in between) and run each pass's body
/// when released. Fresh threads each pass started where their parent ran and shared its vCPU
/// until the scheduler moved them (on this 2-vCPU VM a 5 ms memcpy pass read 8-13 GB/s against
/// the cpu plugin's persistent oneTBB workers' steady 12-13, conformance/README.md "Paired
/// rounds"), so the anchor gets a warm pool as the device has one.
class Pool {
public:
  explicit Pool(int threads) : threads_(threads), cpu_(threads, 0.0) {
    for (int t = 1; t < threads; ++t)
      workers_.emplace_back([this, t] { loop(t); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread &w : workers_)
      w.join();
  }
  int threads() const { return threads_; }
  /// As run_parallel: body(thread) on every thread (the caller is thread 0); the wall seconds
  /// from the release until `finished()` holds; returns once every worker is done with body.
  double run(const std::function<void(int)> &body, const std::function<bool()> &finished) {
    running_.store(threads_ - 1, std::memory_order_relaxed);
    const Clock::time_point t0 = Clock::now();
    {
      std::lock_guard<std::mutex> l(mu_);
      body_ = &body;
      ++generation_;
    }
    cv_.notify_all();
    body(0);
    while (!finished())
      std::this_thread::yield();
    const double s = seconds_since(t0);
    while (running_.load(std::memory_order_acquire) > 0)
      std::this_thread::yield();
    return s;
  }
  /// The workers' CPU seconds since they started (blocked waits take none).
  double helper_cpu_s() const {
    double sum = 0;
    for (int t = 1; t < threads_; ++t)
      sum += cpu_[t];
    return sum;
  }

private:
  void loop(int t) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)> *body;
      {
        std::unique_lock<std::mutex> l(mu_);
        cv_.wait(l, [&] { return stop_ || generation_ != seen; });
        if (stop_)
          return;
        seen = generation_;
        body = body_;
      }
      (*body)(t);
      cpu_[t] = thread_cpu_seconds();
      running_.fetch_sub(1, std::memory_order_release);
    }
  }
  int threads_;
  std::vector<double> cpu_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  const std::function<void(int)> *body_ = nullptr;
  std::atomic<int> running_{0};
};

/// Hands out [lo, hi) pieces of `piece` elements of n, as the cpu plugin's oneTBB pool hands
/// out a grid (simple_partitioner: the range halved between the threads, each working through
/// its own span from the front, a thread that runs out taking the pieces left in another's):
/// every thread streams a span of its own, and a thread the scheduler holds back leaves its
/// share to the others, so a loaded host does not make the anchor wait for its slowest thread.
struct Pieces {
  size_t n, piece;
  std::vector<size_t> end;                     // span s is [end[s - 1], end[s]), end[-1] = 0
  std::unique_ptr<std::atomic<size_t>[]> next; // each span's next piece
  std::atomic<size_t> done{0};
  Pieces(size_t n, size_t piece, int spans)
      : n(n), piece(piece), end(spans), next(new std::atomic<size_t>[spans]) {
    for (int s = 0; s < spans; ++s) {
      // span boundaries on whole pieces, as a grid's programs split
      const size_t pieces = (n + piece - 1) / piece;
      end[s] = std::min(n, pieces * (s + 1) / spans * piece);
      next[s] = s == 0 ? 0 : end[s - 1];
    }
  }
  template <class F> void run(int thread, F &&f) {
    const int spans = int(end.size());
    for (int k = 0; k < spans; ++k) {
      const int s = (thread + k) % spans;
      for (size_t lo; (lo = next[s].fetch_add(piece)) < end[s];) {
        const size_t hi = std::min(end[s], lo + piece);
        f(lo, hi);
        done.fetch_add(hi - lo, std::memory_order_release);
      }
    }
  }
  bool finished() const { return done.load(std::memory_order_acquire) == n; }
};

/// The CPU's f32 lanes and FMA pipes per core by CPUID (vendor, family, model and the vector
/// extensions), with the rule applied. Where unsure, the larger figure (a higher peak is the
/// stricter bar).
void peak_rule(HostAnchors &a) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  char vendor[13] = {};
  __get_cpuid(0, &eax, &ebx, &ecx, &edx);
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  unsigned family = (eax >> 8) & 0xf, model = (eax >> 4) & 0xf;
  if (family == 0xf)
    family += (eax >> 20) & 0xff;
  if (family >= 6)
    model |= ((eax >> 16) & 0xf) << 4;
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s family %u model %u", vendor, family, model);
  a.cpu = buf;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f"), avx2 = __builtin_cpu_supports("avx2"),
             avx = __builtin_cpu_supports("avx"), fma = __builtin_cpu_supports("fma");
  const bool amd = std::string(vendor) == "AuthenticAMD" || std::string(vendor) == "HygonGenuine";
  if (avx512 && amd && family < 0x1a) {
    a.f32_lanes = 16, a.fma_pipes = 1; // Zen 4: AVX-512 on two 256-bit pipes
    a.peak_rule = "AVX-512 on AMD before family 26 (Zen 4): 1 x 16 lanes";
  } else if (avx512) {
    a.f32_lanes = 16, a.fma_pipes = 2;
    a.peak_rule = "AVX-512: 2 FMA pipes x 16 lanes (the larger figure where a part has 1)";
  } else if (avx2 && fma && amd && family == 0x17 && model < 0x30) {
    a.f32_lanes = 4, a.fma_pipes = 2; // Zen 1: 256-bit ops split over 128-bit pipes
    a.peak_rule = "AVX2+FMA on AMD family 23 model < 48 (Zen 1): 2 FMA pipes x 4 lanes";
  } else if (avx2 && fma) {
    a.f32_lanes = 8, a.fma_pipes = 2;
    a.peak_rule = "AVX2+FMA: 2 FMA pipes x 8 lanes (Haswell and later, Zen 2 and later)";
  } else if (avx) {
    a.f32_lanes = 8, a.fma_pipes = 1; // one add and one multiply pipe: 2 FLOP per lane
    a.peak_rule = "AVX without FMA: an add and a multiply pipe x 8 lanes";
  } else {
    a.f32_lanes = 4, a.fma_pipes = 1;
    a.peak_rule = "SSE: an add and a multiply pipe x 4 lanes";
  }
#else
  a.cpu = "not x86";
  a.peak_rule = "no CPUID rule for this architecture: no f32 peak";
#endif
}

/// Cycles per second of one thread: a chain of dependent adds (one cycle each on every x86 core
/// since the P6), best of `reps` windows of ~1 ms (a window the scheduler interrupted is slower).
double clock_of_this_thread(int reps) {
#if defined(__x86_64__)
  constexpr int kIters = 40000, kChain = 32;
  double best = 0;
  for (int r = 0; r < reps; ++r) {
    uint64_t x = 0;
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < kIters; ++i)
      asm volatile(".rept 32\n\taddq $1, %0\n\t.endr" : "+r"(x));
    const double s = seconds_since(t0);
    if (x != uint64_t(kIters) * kChain)
      return 0; // cannot happen: the chain is what it says
    best = std::max(best, double(kIters) * kChain / s);
  }
  return best;
#else
  (void)reps;
  return 0;
#endif
}

/// Cycles per second of one thread over one window of `window_s` seconds (at least 0.5 ms): the
/// mean, not the best of short windows, so that the time the scheduler took from the thread
/// counts, as it does in the work it is paired with.
double clock_over(double window_s) {
#if defined(__x86_64__)
  constexpr int kIters = 1000, kChain = 32;
  uint64_t x = 0, done = 0;
  const Clock::time_point t0 = Clock::now();
  double s = 0;
  do {
    for (int i = 0; i < kIters; ++i)
      asm volatile(".rept 32\n\taddq $1, %0\n\t.endr" : "+r"(x));
    done += uint64_t(kIters) * kChain;
    s = seconds_since(t0);
  } while (s < std::max(window_s, 5e-4));
  return x == done ? double(done) / s : 0;
#else
  (void)window_s;
  return 0;
#endif
}

// STREAM's kernels on one piece, restrict-qualified so that they vectorize (this file builds at
// -O3), as the device's kernels do: on a loaded host a scalar anchor would be the one starved of
// CPU per byte.
__attribute__((noinline)) void copy_piece(float *__restrict c, const float *__restrict b,
                                          size_t n) {
  for (size_t i = 0; i < n; ++i)
    c[i] = b[i];
}
__attribute__((noinline)) void triad_piece(float *__restrict a, const float *__restrict b,
                                           const float *__restrict c, float s, size_t n) {
  for (size_t i = 0; i < n; ++i)
    a[i] = b[i] + s * c[i];
}

// The same kernels with streaming (non-temporal) stores, as llvm-cpu writes large outputs
// (plan_streaming_stores): no read for ownership of the destination, so more of the bandwidth
// carries the bytes STREAM counts. The anchor is the better of the two ways.
#if defined(__x86_64__)
// 32-byte streaming stores where the CPU has AVX (a whole line in two stores, as llvm-cpu's
// vectors write it), two lines an iteration with the loads first: one load-store pair an
// iteration measured 0.9 of this on Zen 3 (25.0 against 27.9 GB/s, 2 threads, 64 MiB), below
// llvm-cpu's own unrolled copy (32 GB/s: "implausible" against a slower anchor).
// One streaming form, `V` 32-byte vectors a run: the run's loads (or the triad's results) first,
// then its streaming stores.
template <int V>
__attribute__((target("avx"))) void copy_piece_nt_runs(float *c, const float *b, size_t n) {
  size_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(c + i) & 31); ++i)
    c[i] = b[i];
  for (; i + 8 * V <= n; i += 8 * V) {
    __m256 x[V];
#pragma GCC unroll 32
    for (int v = 0; v < V; ++v)
      x[v] = _mm256_loadu_ps(b + i + 8 * v);
#pragma GCC unroll 32
    for (int v = 0; v < V; ++v)
      _mm256_stream_ps(c + i + 8 * v, x[v]);
  }
  for (; i + 8 <= n; i += 8)
    _mm256_stream_ps(c + i, _mm256_loadu_ps(b + i));
  for (; i < n; ++i)
    c[i] = b[i];
  _mm_sfence();
}
template <int V>
__attribute__((target("avx"))) void triad_piece_nt_runs(float *a, const float *b, const float *c,
                                                        float s, size_t n) {
  size_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(a + i) & 31); ++i)
    a[i] = b[i] + s * c[i];
  const __m256 s8 = _mm256_set1_ps(s);
  for (; i + 8 * V <= n; i += 8 * V) {
    __m256 y[V];
#pragma GCC unroll 32
    for (int v = 0; v < V; ++v)
      y[v] = _mm256_add_ps(_mm256_loadu_ps(b + i + 8 * v),
                           _mm256_mul_ps(s8, _mm256_loadu_ps(c + i + 8 * v)));
#pragma GCC unroll 32
    for (int v = 0; v < V; ++v)
      _mm256_stream_ps(a + i + 8 * v, y[v]);
  }
  for (; i + 8 <= n; i += 8)
    _mm256_stream_ps(
        a + i, _mm256_add_ps(_mm256_loadu_ps(b + i), _mm256_mul_ps(s8, _mm256_loadu_ps(c + i))));
  for (; i < n; ++i)
    a[i] = b[i] + s * c[i];
  _mm_sfence();
}
// The two-line forms: the copy two lines a run, the triad one line a run.
__attribute__((target("avx"))) void copy_piece_nt_avx(float *c, const float *b, size_t n) {
  copy_piece_nt_runs<4>(c, b, n);
}
__attribute__((target("avx"))) void triad_piece_nt_avx(float *a, const float *b, const float *c,
                                                       float s, size_t n) {
  triad_piece_nt_runs<2>(a, b, c, s, n);
}

// llvm-cpu's own form of the streaming copy and triad (`tlc compile --target llvm-cpu` of the
// bandwidth suite's kernels, then `tlc inspect --code` and objdump): 1 KiB of the source loaded
// (or of the triad's results computed, mul then add) into 32 vectors, spilled where they do not
// fit, then 32 streaming stores; the DRAM sees reads and writes in 1 KiB runs rather than
// alternating every two lines. The anchor is the best of both forms (and of plain stores).
__attribute__((target("avx"))) void copy_piece_nt_kib_avx(float *c, const float *b, size_t n) {
  copy_piece_nt_runs<32>(c, b, n);
}
__attribute__((target("avx"))) void triad_piece_nt_kib_avx(float *a, const float *b, const float *c,
                                                           float s, size_t n) {
  triad_piece_nt_runs<32>(a, b, c, s, n);
}
#endif

/// The 1 KiB-run forms where the CPU has AVX, else the plain streaming ones.
void copy_piece_nt_kib(float *c, const float *b, size_t n);
void triad_piece_nt_kib(float *a, const float *b, const float *c, float s, size_t n);

void copy_piece_nt(float *c, const float *b, size_t n) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx"))
    return copy_piece_nt_avx(c, b, n);
  size_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(c + i) & 15); ++i)
    c[i] = b[i];
  for (; i + 4 <= n; i += 4)
    _mm_stream_ps(c + i, _mm_loadu_ps(b + i));
  for (; i < n; ++i)
    c[i] = b[i];
  _mm_sfence(); // the streamed stores are done before the piece is counted
#else
  copy_piece(c, b, n);
#endif
}
void triad_piece_nt(float *a, const float *b, const float *c, float s, size_t n) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx"))
    return triad_piece_nt_avx(a, b, c, s, n);
  size_t i = 0;
  for (; i < n && (reinterpret_cast<uintptr_t>(a + i) & 15); ++i)
    a[i] = b[i] + s * c[i];
  const __m128 s4 = _mm_set1_ps(s);
  for (; i + 4 <= n; i += 4)
    _mm_stream_ps(a + i, _mm_add_ps(_mm_loadu_ps(b + i), _mm_mul_ps(s4, _mm_loadu_ps(c + i))));
  for (; i < n; ++i)
    a[i] = b[i] + s * c[i];
  _mm_sfence();
#else
  triad_piece(a, b, c, s, n);
#endif
}

void copy_piece_nt_kib(float *c, const float *b, size_t n) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx"))
    return copy_piece_nt_kib_avx(c, b, n);
#endif
  copy_piece_nt(c, b, n);
}
void triad_piece_nt_kib(float *a, const float *b, const float *c, float s, size_t n) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx"))
    return triad_piece_nt_kib_avx(a, b, c, s, n);
#endif
  triad_piece_nt(a, b, c, s, n);
}

bool is_copy(AnchorKernel k) {
  return k == AnchorKernel::Copy || k == AnchorKernel::CopyStreaming ||
         k == AnchorKernel::CopyStreamingKiB;
}

std::string read_loadavg() {
  std::ifstream in("/proc/loadavg");
  std::string line;
  std::getline(in, line);
  return line;
}

struct FreeDeleter {
  void operator()(float *p) const { std::free(p); }
};
using Array = std::unique_ptr<float, FreeDeleter>;

/// The anchor's arrays on 2 MiB pages where the kernel allows it (transparent huge pages): the
/// best a host program can stream at, as the cpu device's large buffers do (suite 1.9; on 4 KiB
/// pages a Zen 4 streamed 15-37 GB/s where huge pages gave 42).
Array alloc_array(uint64_t bytes) {
  constexpr uint64_t kHuge = uint64_t(2) << 20;
  const uint64_t align = bytes >= 2 * kHuge ? kHuge : 64;
  const uint64_t rounded = (bytes + align - 1) / align * align;
  auto *p = static_cast<float *>(std::aligned_alloc(align, rounded));
  if (p && align == kHuge)
    madvise(p, rounded, MADV_HUGEPAGE); // advice only: failure leaves 4 KiB pages
  if (!p)
    throw std::runtime_error("host anchors: cannot allocate " + std::to_string(bytes >> 20) +
                             " MiB");
  return Array(p);
}

} // namespace

json HostAnchors::to_json() const {
  return {{"ok", ok},
          {"threads", threads},
          {"array_bytes", array_bytes},
          {"reps", reps},
          {"stream_copy_bytes_per_s", copy_bytes_per_s},
          {"stream_triad_bytes_per_s", triad_bytes_per_s},
          {"memcpy_bytes_per_s", memcpy_bytes_per_s},
          {"by_choice", by_choice},
          {"clock_hz", clock_hz},
          {"peak_flops_f32", peak_flops_f32},
          {"f32_lanes", f32_lanes},
          {"fma_pipes", fma_pipes},
          {"cpu", cpu},
          {"peak_rule", peak_rule},
          {"wall_s", wall_s},
          {"other_cpu_s", other_cpu_s},
          {"loadavg", loadavg}};
}

HostAnchors HostAnchors::from_json(const json &j) {
  HostAnchors a;
  a.ok = j.value("ok", false);
  a.threads = j.value("threads", 0);
  a.array_bytes = j.value("array_bytes", uint64_t(0));
  a.reps = j.value("reps", 0);
  a.copy_bytes_per_s = j.value("stream_copy_bytes_per_s", 0.0);
  a.triad_bytes_per_s = j.value("stream_triad_bytes_per_s", 0.0);
  a.memcpy_bytes_per_s = j.value("memcpy_bytes_per_s", 0.0);
  a.by_choice = j.value("by_choice", json::object());
  a.clock_hz = j.value("clock_hz", 0.0);
  a.peak_flops_f32 = j.value("peak_flops_f32", 0.0);
  a.f32_lanes = j.value("f32_lanes", 0);
  a.fma_pipes = j.value("fma_pipes", 0);
  a.cpu = j.value("cpu", "");
  a.peak_rule = j.value("peak_rule", "");
  a.wall_s = j.value("wall_s", 0.0);
  a.other_cpu_s = j.value("other_cpu_s", 0.0);
  a.loadavg = j.value("loadavg", "");
  return a;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

const char *anchor_kernel_name(AnchorKernel k) {
  switch (k) {
  case AnchorKernel::Copy:
    return "copy";
  case AnchorKernel::CopyStreaming:
    return "copy_streaming";
  case AnchorKernel::CopyStreamingKiB:
    return "copy_streaming_1k";
  case AnchorKernel::Triad:
    return "triad";
  case AnchorKernel::TriadStreaming:
    return "triad_streaming";
  case AnchorKernel::TriadStreamingKiB:
    return "triad_streaming_1k";
  case AnchorKernel::Memcpy:
    return "memcpy";
  }
  return "?";
}

namespace {
/// The piece sizes anchor_round runs kernel k at for a test of `kind`: the copies of buffers
/// (d2d, h2d, d2h) and memcpy in the plugin's pieces, the STREAM kernels at every block size.
std::vector<size_t> anchor_pieces(AnchorKernel k, const std::string &kind) {
  if (k == AnchorKernel::Memcpy || kind == "d2d" || kind == "h2d" || kind == "d2h")
    return {kMemcpyPiece};
  return {std::begin(kStreamPieces), std::end(kStreamPieces)};
}
} // namespace

std::vector<AnchorPass> anchor_schedule(int reps) {
  std::vector<AnchorPass> s;
  for (AnchorKernel k :
       {AnchorKernel::Copy, AnchorKernel::CopyStreaming, AnchorKernel::CopyStreamingKiB,
        AnchorKernel::Triad, AnchorKernel::TriadStreaming, AnchorKernel::TriadStreamingKiB,
        AnchorKernel::Memcpy}) {
    for (size_t piece : anchor_pieces(k, "memory")) {
      s.push_back({k, piece, false}); // the warm-up: the caches as this kernel leaves them
      for (int r = 0; r < reps; ++r)
        s.push_back({k, piece, true});
    }
  }
  return s;
}

/// The anchor's arrays (a = 1, b = 2, c = 0.5 at first touch) and one pass of a kernel over
/// them, shared by measure_host_anchors and the paired rounds (anchor_round).
struct AnchorBench::Impl {
  Pool pool;
  uint64_t array_bytes;
  size_t n;
  Array x, y, z;
  Impl(uint64_t bytes, int threads)
      : pool(threads), array_bytes(bytes), n(bytes / 4), x(alloc_array(bytes)),
        y(alloc_array(bytes)), z(alloc_array(bytes)) {
    float *A = x.get(), *B = y.get(), *C = z.get();
    // First touch by the threads that stream them (pages land near those threads).
    Pieces p(n, kMemcpyPiece, threads);
    pool.run(
        [&](int t) {
          p.run(t, [&](size_t lo, size_t hi) {
            for (size_t i = lo; i < hi; ++i)
              A[i] = 1.0f, B[i] = 2.0f, C[i] = 0.5f;
          });
        },
        [&] { return p.finished(); });
  }
};

AnchorBench::AnchorBench(uint64_t array_bytes, int threads)
    : impl_(std::make_unique<Impl>(array_bytes, threads > 0 ? threads : affinity_cpus())) {}
AnchorBench::~AnchorBench() = default;
int AnchorBench::threads() const { return impl_->pool.threads(); }
uint64_t AnchorBench::array_bytes() const { return impl_->array_bytes; }
double AnchorBench::helper_cpu_s() const { return impl_->pool.helper_cpu_s(); }

double AnchorBench::clock_window(double window_s) {
  Pool &pool = impl_->pool;
  std::vector<double> clocks(pool.threads(), 0.0);
  pool.run([&](int t) { clocks[t] = clock_over(window_s); }, [] { return true; });
  double sum = 0;
  for (double c : clocks)
    sum += c;
  return sum / pool.threads();
}

double AnchorBench::pass(AnchorKernel kernel, size_t piece) {
  Impl &b = *impl_;
  float *A = b.x.get(), *B = b.y.get(), *C = b.z.get();
  const float scalar = 3.0f;
  Pieces p(b.n, piece, b.pool.threads());
  std::function<void(size_t, size_t)> f;
  switch (kernel) {
  case AnchorKernel::Copy:
    f = [&](size_t lo, size_t hi) { copy_piece(C + lo, B + lo, hi - lo); };
    break;
  case AnchorKernel::CopyStreaming:
    f = [&](size_t lo, size_t hi) { copy_piece_nt(C + lo, B + lo, hi - lo); };
    break;
  case AnchorKernel::CopyStreamingKiB:
    f = [&](size_t lo, size_t hi) { copy_piece_nt_kib(C + lo, B + lo, hi - lo); };
    break;
  case AnchorKernel::Triad:
    f = [&](size_t lo, size_t hi) { triad_piece(A + lo, B + lo, C + lo, scalar, hi - lo); };
    break;
  case AnchorKernel::TriadStreaming:
    f = [&](size_t lo, size_t hi) { triad_piece_nt(A + lo, B + lo, C + lo, scalar, hi - lo); };
    break;
  case AnchorKernel::TriadStreamingKiB:
    f = [&](size_t lo, size_t hi) { triad_piece_nt_kib(A + lo, B + lo, C + lo, scalar, hi - lo); };
    break;
  case AnchorKernel::Memcpy:
    f = [&](size_t lo, size_t hi) { std::memcpy(C + lo, B + lo, (hi - lo) * 4); };
    break;
  }
  const double s = b.pool.run([&](int t) { p.run(t, f); }, [&] { return p.finished(); });
  if (!(s > 0))
    return 0;
  const double counted = is_copy(kernel) ? 2.0 : kernel == AnchorKernel::Memcpy ? 1.0 : 3.0;
  return counted * double(b.array_bytes) / s;
}

std::string AnchorBench::wrong_values(bool copied, bool triads) const {
  // STREAM's own check: b = 2 is only read; a copy (or memcpy) leaves c = b, a triad a = b + 3c
  // of the c it read (every copy before every triad in measure_host_anchors' schedule, and a
  // paired round runs one kind).
  const Impl &b = *impl_;
  const float *A = b.x.get(), *B = b.y.get(), *C = b.z.get();
  for (size_t i = 0; i < b.n; i += 4099)
    if (B[i] != 2.0f || C[i] != (copied ? 2.0f : 0.5f) || A[i] != (triads ? 2 + 3 * C[i] : 1.0f))
      return "host anchors: the STREAM arrays hold wrong values at element " + std::to_string(i);
  return {};
}

HostAnchors measure_host_anchors(uint64_t array_bytes, int reps) {
  HostAnchors a;
  a.threads = affinity_cpus();
  a.array_bytes = array_bytes;
  a.reps = reps;
  a.loadavg = read_loadavg();
  peak_rule(a);
  const Clock::time_point start = Clock::now();
  const double process0 = process_cpu_seconds(), self0 = thread_cpu_seconds();
  AnchorBench bench(array_bytes, a.threads);
  // Each kernel's passes in a series of their own (anchor_schedule), as the device's timed
  // runs follow its warm-up of the same operation: a pass through the cache (plain stores, the
  // pieces' memcpy) leaves its destination's lines dirty in the caches, and streaming stores
  // that follow it pay for writing them back: interleaved, the streaming copy ran at 0.85 of
  // its own series (bench/results/2026-12-03-anchor-order-s11cpucert.txt).
  double best[kAnchorKernels] = {};
  for (const AnchorPass &pass : anchor_schedule(reps)) {
    const double counted = bench.pass(pass.kernel, pass.piece);
    if (pass.timed && counted > 0) {
      best[int(pass.kernel)] = std::max(best[int(pass.kernel)], counted);
      const std::string key =
          std::string(anchor_kernel_name(pass.kernel)) + "/" + std::to_string(pass.piece);
      a.by_choice[key] = std::max(a.by_choice.value(key, 0.0), counted);
    }
  }
  if (std::string wrong = bench.wrong_values(true, true); !wrong.empty())
    throw std::runtime_error(wrong);
  // Counted STREAM's way (copy 2 arrays, triad 3), memcpy each byte once.
  a.copy_bytes_per_s =
      std::max({best[int(AnchorKernel::Copy)], best[int(AnchorKernel::CopyStreaming)],
                best[int(AnchorKernel::CopyStreamingKiB)]});
  a.triad_bytes_per_s =
      std::max({best[int(AnchorKernel::Triad)], best[int(AnchorKernel::TriadStreaming)],
                best[int(AnchorKernel::TriadStreamingKiB)]});
  a.memcpy_bytes_per_s = best[int(AnchorKernel::Memcpy)];
  // The clock, on every thread at once (an all-core clock, not one core's boost), best of 30
  // windows whatever the passes' count.
  double helpers = bench.helper_cpu_s();
  std::vector<double> clocks(a.threads, 0.0);
  run_parallel(
      a.threads, [&](int t) { clocks[t] = clock_of_this_thread(30); }, [] { return true; },
      helpers);
  double sum = 0;
  for (double c : clocks)
    sum += c;
  a.clock_hz = sum / a.threads;
  a.peak_flops_f32 = double(a.f32_lanes) * a.fma_pipes * 2.0 * sum;
  a.wall_s = seconds_since(start);
  a.other_cpu_s =
      std::max(0.0, (process_cpu_seconds() - process0) - (thread_cpu_seconds() - self0) - helpers);
  a.ok = a.copy_bytes_per_s > 0 && a.triad_bytes_per_s > 0 && a.memcpy_bytes_per_s > 0;
  return a;
}

std::vector<AnchorKernel> anchor_kernels_for_kind(const std::string &kind) {
  if (kind == "memory")
    return {AnchorKernel::Copy,  AnchorKernel::CopyStreaming,  AnchorKernel::CopyStreamingKiB,
            AnchorKernel::Triad, AnchorKernel::TriadStreaming, AnchorKernel::TriadStreamingKiB,
            AnchorKernel::Memcpy};
  if (kind == "copy")
    return {AnchorKernel::Copy, AnchorKernel::CopyStreaming, AnchorKernel::CopyStreamingKiB};
  if (kind == "triad")
    return {AnchorKernel::Triad, AnchorKernel::TriadStreaming, AnchorKernel::TriadStreamingKiB};
  // d2d, h2d, d2h: a copy of host memory, so every way the host copies (memcpy keeps each
  // destination line in the caches, read before it is written; streaming stores do not), as a
  // plugin may copy either way.
  return {AnchorKernel::Copy, AnchorKernel::CopyStreaming, AnchorKernel::CopyStreamingKiB,
          AnchorKernel::Memcpy};
}

AnchorRound anchor_round(AnchorBench &bench, const std::string &kind, int reps) {
  AnchorRound r;
  const Clock::time_point start = Clock::now();
  const double process0 = process_cpu_seconds(), self0 = thread_cpu_seconds(),
               helpers0 = bench.helper_cpu_s();
  const bool link = kind == "h2d" || kind == "d2h";
  for (AnchorKernel k : anchor_kernels_for_kind(kind)) {
    // Counted as the test counts: a link moves each byte once (STREAM counts a copy's two
    // arrays, a pass of memcpy each byte once); d2d and the memory bound read + write.
    const double times = k == AnchorKernel::Memcpy ? (link ? 1 : 2) : is_copy(k) && link ? 0.5 : 1;
    for (size_t piece : anchor_pieces(k, kind)) {
      bench.pass(k, piece); // the warm-up: the caches as this kernel leaves them
      const std::string key = std::string(anchor_kernel_name(k)) + "/" + std::to_string(piece);
      for (int i = 0; i < reps; ++i) {
        const double v = times * bench.pass(k, piece);
        r.by_choice[key] = std::max(r.by_choice.value(key, 0.0), v);
        if (v > r.bytes_per_s)
          r.bytes_per_s = v, r.choice = key;
      }
    }
  }
  r.wrong = bench.wrong_values(kind != "triad", kind == "triad" || kind == "memory");
  r.wall_s = seconds_since(start);
  r.other_cpu_s =
      std::max(0.0, (process_cpu_seconds() - process0) - (thread_cpu_seconds() - self0) -
                        (bench.helper_cpu_s() - helpers0));
  r.samples_per_choice = reps;
  return r;
}

int anchor_pieces_per_form(const std::string &kind) {
  return int(anchor_pieces(AnchorKernel::Copy, kind).size());
}

size_t median_round(const json &rounds) {
  std::vector<size_t> order(rounds.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return rounds[x]["ratio"].get<double>() < rounds[y]["ratio"].get<double>();
  });
  return order.empty() ? 0 : order[order.size() / 2];
}

AnchorRound clock_round(AnchorBench &bench, double window_s, int reps) {
  AnchorRound r;
  const Clock::time_point start = Clock::now();
  const double process0 = process_cpu_seconds(), self0 = thread_cpu_seconds(),
               helpers0 = bench.helper_cpu_s();
  for (int i = 0; i < reps; ++i)
    r.clock_hz = std::max(r.clock_hz, bench.clock_window(window_s));
  char buf[48];
  std::snprintf(buf, sizeof buf, "clock/%.6f", window_s);
  r.choice = buf;
  r.samples_per_choice = reps;
  r.wall_s = seconds_since(start);
  r.other_cpu_s =
      std::max(0.0, (process_cpu_seconds() - process0) - (thread_cpu_seconds() - self0) -
                        (bench.helper_cpu_s() - helpers0));
  return r;
}

std::string anchor_busy(const AnchorRound &ar, int round) {
  if (ar.other_cpu_s <= 0.01 + 0.05 * ar.wall_s)
    return {};
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "while the kit ran its anchor in round %d, other threads of the process (the "
                "plugin's) used %.3f s of CPU in %.3f s: a device judged on host anchors must be "
                "idle while they run",
                round, ar.other_cpu_s, ar.wall_s);
  return buf;
}

json anchors_datasheet(const HostAnchors &a, const std::string &device_name) {
  char src[768];
  std::snprintf(
      src, sizeof src,
      "measured by the kit in this run: STREAM copy %.2f GB/s, triad %.2f GB/s (the better "
      "of plain and streaming stores in pieces of 16, 64 and 256 KiB; "
      "%d threads, %llu MiB arrays, best of %d passes each), memcpy %.2f GB/s; f32 peak %d lanes "
      "x %d FMA pipes x 2 x %.3f GHz (a dependent add chain) x %d threads (%s; %s)",
      a.copy_bytes_per_s / 1e9, a.triad_bytes_per_s / 1e9, a.threads,
      static_cast<unsigned long long>(a.array_bytes >> 20), a.reps, a.memcpy_bytes_per_s / 1e9,
      a.f32_lanes, a.fma_pipes, a.clock_hz / 1e9, a.threads, a.cpu.c_str(), a.peak_rule.c_str());
  json d = {{"device", device_name},
            {"source", src},
            {"memory_bandwidth_bytes_per_s",
             std::max({a.copy_bytes_per_s, a.triad_bytes_per_s, 2.0 * a.memcpy_bytes_per_s})},
            {"link_bandwidth_bytes_per_s", a.memcpy_bytes_per_s}};
  if (a.peak_flops_f32 > 0)
    d["peak_flops"] = {{"f32", a.peak_flops_f32}};
  return d;
}

bool host_target(const std::string &target) { return target == "llvm-cpu"; }

std::string host_cpu_evidence(double process_cpu_s, double busy_s) {
  if (busy_s <= 0 || process_cpu_s >= 0.1 * busy_s)
    return {};
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "the device is judged on host anchors (its code is the host's: llvm-cpu), but "
                "its timed runs (%.3g s of device intervals) used %.3g s of this process's CPU "
                "(under a tenth): it does not run on the host; pass --datasheet FILE",
                busy_s, process_cpu_s);
  return buf;
}

} // namespace tl::conform
