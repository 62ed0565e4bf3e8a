// CPU kernel benchmarks through the HAL (cpu device, llvm-cpu native code): fp32 GEMM against
// OpenBLAS, vector add and row softmax against a STREAM-style triad, and the cold compile time
// of the GEMM kernel, all in one run. Prints `name: value` lines after Google Benchmark's table.
// Run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (the `bench` target does); where OpenBLAS
// takes the CPU for a core without FMA, it runs again naming one (choose_openblas_core).
// SPDX-License-Identifier: Apache-2.0
#include "tl/backends/llvm_cpu.h"
#include "tl/compiler/pipeline.h"
#include "tl/hal.hpp"
#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"
#include "tl/reference/numerics.h"

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace {

using namespace tl::hal;

std::string read_kernel(const std::string &file) {
  std::ifstream in(std::string(TL_KERNELS_DIR) + "/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<tl::ir::Module> parse(const std::string &text) {
  tl::ir::Diagnostics d;
  auto m = tl::ir::parse(text, "bench.tlir", d);
  if (!m || !tl::ir::verify(*m, d))
    throw std::runtime_error(d.str());
  return m;
}

std::vector<uint8_t> executable(const std::string &text) {
  auto m = parse(text);
  std::string error; // the user's path: default passes, planning, code generation
  auto blob = tl::compile::build_executable(*m, "llvm-cpu", "cpu_kernels_bench", &error);
  if (blob.empty())
    throw std::runtime_error(error);
  return blob;
}

/// gemm_cpu.tlir with bf16 a and b (the accumulator stays f32).
std::string bf16_inputs(std::string text) {
  for (const char *from :
       {"%a: tensor<?x?xf32>", "%b: tensor<?x?xf32>", "tile<128x64xf32>", "tile<64x128xf32>"}) {
    const size_t at = text.find(from);
    if (at == std::string::npos)
      throw std::runtime_error(std::string("gemm_cpu.tlir changed: no ") + from);
    std::string to = from;
    to.replace(to.find("f32>"), 3, "bf16");
    text.replace(at, std::string(from).size(), to);
  }
  return text;
}

/// A runtime whose cpu device uses `threads` workers, with the kernels loaded.
struct Env {
  Runtime rt;
  Device dev;
  Stream stream;
  Executable gemm, gemm_bf16, vadd, softmax;
  explicit Env(int threads)
      : rt([&] {
          setenv("TL_CPU_THREADS", std::to_string(threads).c_str(), 1);
          return Runtime(nullptr, 0);
        }()),
        dev(rt.device("cpu")), stream(dev.stream()), gemm(load(read_kernel("gemm_cpu.tlir"))),
        gemm_bf16(load(bf16_inputs(read_kernel("gemm_cpu.tlir")))),
        vadd(load(read_kernel("vector_add_cpu.tlir"))),
        softmax(load(read_kernel("../ops/softmax_onepass4096_f32.tlir"))) {
    unsetenv("TL_CPU_THREADS");
  }
  Executable load(const std::string &text) {
    auto blob = executable(text);
    return dev.load(blob.data(), blob.size());
  }
};

Env &env(int threads) {
  static std::map<int, std::unique_ptr<Env>> envs;
  auto &e = envs[threads];
  if (!e)
    e = std::make_unique<Env>(threads);
  return *e;
}

std::vector<float> random_floats(size_t n) {
  std::vector<float> v(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto &x : v)
    x = u(rng);
  return v;
}

// ---- GEMM: M = N = K = range(0), threads = range(1) ----
constexpr int64_t kGemmTile = 128; // gemm_cpu.tlir's tile of c

/// Times `exe` (gemm_cpu.tlir, n x n) on inputs a and b of `dtype` (`elem` bytes each), c f32.
void time_gemm(benchmark::State &state, Env &e, Executable &exe, const void *a, const void *b,
               tl_dtype dtype, int64_t elem) {
  const int64_t n = state.range(0);
  Buffer ba = e.dev.buffer(n * n * elem), bb = e.dev.buffer(n * n * elem),
         bc = e.dev.buffer(n * n * 4);
  e.stream.copy_to_device(a, ba, n * n * elem);
  e.stream.copy_to_device(b, bb, n * n * elem);
  const uint64_t g = (n + kGemmTile - 1) / kGemmTile;
  auto args = std::vector<tl_arg>{tensor_arg(ba, dtype, {n, n}), tensor_arg(bb, dtype, {n, n}),
                                  tensor_arg(bc, TL_DTYPE_F32, {n, n})};
  for (auto _ : state) {
    e.stream.launch(exe, 0, {g, g, 1}, args);
    e.stream.synchronize();
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_TlGemm(benchmark::State &state) {
  const int64_t n = state.range(0);
  Env &e = env(static_cast<int>(state.range(1)));
  auto a = random_floats(n * n), b = random_floats(n * n);
  time_gemm(state, e, e.gemm, a.data(), b.data(), TL_DTYPE_F32, 4);
}

// bf16 inputs, f32 accumulator (OpenBLAS 0.3.21 in Debian has no sbgemm: the anchors are its
// sgemm and TL's f32 GEMM).
void BM_TlGemmBf16(benchmark::State &state) {
  const int64_t n = state.range(0);
  Env &e = env(static_cast<int>(state.range(1)));
  using tl::numerics::FloatFormat;
  auto fa = random_floats(n * n), fb = random_floats(n * n);
  std::vector<uint16_t> a(n * n), b(n * n);
  for (int64_t i = 0; i < n * n; ++i) {
    a[i] = uint16_t(tl::numerics::encode(FloatFormat::BF16, fa[i]));
    b[i] = uint16_t(tl::numerics::encode(FloatFormat::BF16, fb[i]));
  }
  time_gemm(state, e, e.gemm_bf16, a.data(), b.data(), TL_DTYPE_BF16, 2);
}

void BM_OpenBlasGemm(benchmark::State &state) {
  const int64_t n = state.range(0);
  openblas_set_num_threads(static_cast<int>(state.range(1)));
  auto a = random_floats(n * n), b = random_floats(n * n);
  std::vector<float> c(n * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    benchmark::ClobberMemory();
  }
  state.counters["flops"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations(), benchmark::Counter::kIsRate);
}

// ---- memory-bound kernels: elements = range(0), threads = range(1) ----
/// part(t) for t = 0 .. threads - 1, t = 0 on this thread, the rest on fresh ones.
void on_threads(int threads, const std::function<void(int)> &part) {
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back(part, t);
  part(0);
  for (auto &th : pool)
    th.join();
}

void BM_Triad(benchmark::State &state) {
  const int64_t n = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  auto part = [&](int t) {
    const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
    for (int64_t i = lo; i < hi; ++i)
      a[i] = b[i] + 3.0f * c[i];
  };
  for (auto _ : state) {
    on_threads(threads, part);
    benchmark::ClobberMemory();
  }
  state.counters["bytes"] =
      benchmark::Counter(3.0 * n * 4 * state.iterations(), benchmark::Counter::kIsRate);
}

// A reduction along rows of 4 KiB (a page each) reads one stream per thread, a row at a time,
// or four rows side by side: the bound of tl.ops' row reductions, which read and write nothing
// else. Timed alternately with triad_stream (below) over as many elements, as ops_bench.py
// times an op and its triad, each evicting the other's arrays: back to back, part of x came
// from the L3 (session 38's Xeon has 260 MiB of it). On session 35's Xeon (two threads, 128 MiB,
// AVX-512, back to back) a row at a time read 21-30 GB/s, four rows 31-42. Cloned per ISA
// (target_clones): with SSE2 alone the loads issue too slowly to bound anything (17.7 and 23.9
// GB/s).
constexpr int64_t kRowElems = 1024;
__attribute__((target_clones("avx512f", "avx2", "default"))) void
sum_rows(const uint32_t *x, uint32_t *sums, int64_t lo, int64_t hi, bool four) {
  const int64_t jam = four ? 4 : 1;
  for (int64_t r = lo; r + jam <= hi; r += jam) {
    const uint32_t *row = x + r * kRowElems;
    if (four) {
      uint32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int64_t j = 0; j < kRowElems; ++j) {
        s0 += row[j];
        s1 += row[kRowElems + j];
        s2 += row[2 * kRowElems + j];
        s3 += row[3 * kRowElems + j];
      }
      sums[r] = s0, sums[r + 1] = s1, sums[r + 2] = s2, sums[r + 3] = s3;
    } else {
      uint32_t s = 0;
      for (int64_t j = 0; j < kRowElems; ++j)
        s += row[j];
      sums[r] = s;
    }
  }
}

// The triad with non-temporal stores, as TL's (llvm-cpu streams stores past 32 MiB) and a
// STREAM triad compiled -O3: the anchor of quantize_rows. AVX-512 only.
__attribute__((target("avx512f"))) void triad_stream(const float *b, const float *c, float *a,
                                                     int64_t lo, int64_t hi) {
  const __m512 s = _mm512_set1_ps(3.0f);
  for (int64_t i = lo; i < hi; i += 16)
    _mm512_stream_ps(a + i, _mm512_fmadd_ps(s, _mm512_load_ps(c + i), _mm512_load_ps(b + i)));
  _mm_sfence();
}

__attribute__((target("avx512f"))) float row_max(const float *row) {
  __m512 m = _mm512_setzero_ps();
  for (int64_t k = 0; k < kRowElems; k += 16)
    m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(row + k)));
  return _mm512_reduce_max_ps(m);
}

// Per-row int8 quantization of rows of 1024 f32 as tl.ops.quantize_int8 computes it (each
// row's absolute maximum, then x * (1 / (max / 127)) clamped below at -127, rounded to nearest
// even, saturated, stored non-temporally), hand-written in AVX-512 at its fastest on session
// 36's Xeon: the next row's maximum taken while this row is scaled and stored, the row two
// ahead fetched into L2. Fractions of triad_stream there, two threads, timed alternately: a
// row's two loops one after the other 0.58, fetching 0.70, both 0.75-0.77 at 64 MiB; 0.58,
// 0.68, 0.69 at 512 MiB; this benchmark (128 MiB) 0.67-0.71. So it bounds tl.ops' quantize (5
// bytes an element: 0.58-0.81 of TL's triad at 64 MiB in ops_bench.py that session, 0.67-0.68
// at 512 MiB) on a host.
__attribute__((target("avx512f,avx512bw"))) void
quantize_rows(const float *x, int8_t *q, float *scales, int64_t lo, int64_t hi) {
  const __m512 low = _mm512_set1_ps(-127.0f);
  float amax = lo < hi ? row_max(x + lo * kRowElems) : 0.0f;
  for (int64_t r = lo; r < hi; ++r) {
    const float *row = x + r * kRowElems, *next = r + 1 < hi ? row + kRowElems : row;
    const char *ahead = reinterpret_cast<const char *>(r + 2 < hi ? row + 2 * kRowElems : row);
    const float scale = amax == 0.0f ? 1.0f : amax / 127.0f;
    const __m512 inv = _mm512_set1_ps(1.0f / scale);
    __m512 m = _mm512_setzero_ps();
    for (int64_t k = 0; k < kRowElems; k += 64) {
      __m128i bytes[4];
      for (int j = 0; j < 4; ++j) {
        _mm_prefetch(ahead + 4 * (k + 16 * j), _MM_HINT_T1);
        m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(next + k + 16 * j)));
        const __m512 v = _mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(row + k + 16 * j), inv), low);
        bytes[j] = _mm512_cvtsepi32_epi8(
            _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      }
      __m512i line = _mm512_castsi128_si512(bytes[0]);
      line = _mm512_inserti32x4(line, bytes[1], 1);
      line = _mm512_inserti32x4(line, bytes[2], 2);
      line = _mm512_inserti32x4(line, bytes[3], 3);
      _mm512_stream_si512(reinterpret_cast<__m512i *>(q + r * kRowElems + k), line);
    }
    scales[r] = scale;
    amax = _mm512_reduce_max_ps(m);
  }
  _mm_sfence();
}

template <class T> using Aligned = std::unique_ptr<T[], decltype(&std::free)>;
template <class T> Aligned<T> aligned(int64_t n) {
  return Aligned<T>(
      static_cast<T *>(std::aligned_alloc(4096, (n * sizeof(T) + 4095) / 4096 * 4096)), &std::free);
}

/// Seconds fn takes.
double seconds(const std::function<void()> &fn) {
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// `part(thread)` of a hand-written bound timed alternately with triad_stream over as many
/// elements (`n`) on `threads` threads, as ops_bench.py times an op and its triad: each evicts
/// the other's arrays from the caches (repeated alone, a quantize's 160 MiB stayed in session
/// 36's 480 MiB L3 and read 0.97 of the triad). Sets the counters "bytes" (`bytes_per_element`
/// n a second of `part`) and "triad_bytes" (STREAM's 12 n); false where the triad computed a
/// wrong value.
bool time_against_triad(benchmark::State &state, int64_t n, int threads, double bytes_per_element,
                        const std::function<void(int)> &part) {
  auto a = aligned<float>(n), b = aligned<float>(n), c = aligned<float>(n);
  std::fill_n(a.get(), n, 0.0f), std::fill_n(b.get(), n, 1.0f), std::fill_n(c.get(), n, 2.0f);
  double part_s = 0, triad_s = 0;
  for (auto _ : state) {
    triad_s += seconds([&] {
      on_threads(threads, [&](int t) {
        triad_stream(b.get(), c.get(), a.get(), n / 16 * t / threads * 16,
                     n / 16 * (t + 1) / threads * 16);
      });
    });
    part_s += seconds([&] { on_threads(threads, part); });
    benchmark::ClobberMemory();
  }
  state.counters["bytes"] = bytes_per_element * n * state.iterations() / part_s;
  state.counters["triad_bytes"] = 12.0 * n * state.iterations() / triad_s;
  return a[n / 3] == 7.0f;
}

/// quantize_rows against triad_stream (time_against_triad).
void BM_QuantizeRows(benchmark::State &state) {
  if (!__builtin_cpu_supports("avx512bw"))
    return state.SkipWithError("needs AVX-512 BW");
  const int64_t rows = state.range(0) / kRowElems, n = rows * kRowElems;
  const int threads = static_cast<int>(state.range(1));
  auto x = aligned<float>(n), scales = aligned<float>(rows);
  auto q = aligned<int8_t>(n);
  for (int64_t i = 0; i < n; ++i) // row r: max |x| = 1 + r % 7 at column 7, the rest +-0.5
    x[i] = (i % kRowElems == 7 ? 1.0f + (i / kRowElems) % 7 : 0.5f) * (i % 3 ? 1.0f : -1.0f);
  std::fill_n(q.get(), n, int8_t(0));
  // quantize: x read, q written (its scales: 1/1024 of that)
  bool right = time_against_triad(state, n, threads, 5.0, [&](int t) {
    quantize_rows(x.get(), q.get(), scales.get(), rows * t / threads, rows * (t + 1) / threads);
  });
  for (int64_t r : {int64_t(0), rows / 3, rows - 1}) { // the max to +-127, 0.5 to 63.5 / max
    const float amax = 1.0f + r % 7;
    const int half = static_cast<int>(std::nearbyint(63.5f / amax));
    right = right && scales[r] == amax / 127.0f && std::abs(q[r * kRowElems + 7]) == 127 &&
            std::abs(q[r * kRowElems + 8]) == half;
  }
  if (!right)
    state.SkipWithError("quantize_rows or triad_stream computed a wrong result");
}

/// Row sums (elements = range(0), threads = range(1), rows side by side = range(2): 1 or 4)
/// against triad_stream (time_against_triad).
void BM_ReadRows(benchmark::State &state) {
  const int64_t rows = state.range(0) / kRowElems, n = rows * kRowElems;
  const int threads = static_cast<int>(state.range(1)), jam = state.range(2) == 4 ? 4 : 1;
  auto x = aligned<uint32_t>(n), sums = aligned<uint32_t>(rows);
  for (int64_t i = 0; i < n; ++i) // row r sums to 1024 + r % 5
    x[i] = 1u + (i % kRowElems == 3 ? uint32_t(i / kRowElems % 5) : 0u);
  std::fill_n(sums.get(), rows, 0u);
  bool right = time_against_triad(state, n, threads, 4.0, [&](int t) {
    sum_rows(x.get(), sums.get(), rows * t / threads / jam * jam,
             rows * (t + 1) / threads / jam * jam, jam == 4);
    benchmark::DoNotOptimize(sums.get());
  });
  for (int64_t r : {int64_t(0), rows / 3, rows / jam * jam - 1})
    right = right && sums[r] == 1024u + uint32_t(r % 5);
  if (!right)
    state.SkipWithError("sum_rows or triad_stream computed a wrong result");
}

void BM_TlVectorAdd(benchmark::State &state) {
  const int64_t n = state.range(0);
  Env &e = env(static_cast<int>(state.range(1)));
  Buffer x = e.dev.buffer(n * 4), y = e.dev.buffer(n * 4), o = e.dev.buffer(n * 4);
  const float one = 1.0f;
  check(tl_stream_fill(e.stream.get(), x.get(), 0, n * 4, &one, 4));
  check(tl_stream_fill(e.stream.get(), y.get(), 0, n * 4, &one, 4));
  check(tl_stream_fill(e.stream.get(), o.get(), 0, n * 4, &one, 4));
  auto args =
      std::vector<tl_arg>{tensor_arg(x, TL_DTYPE_F32, {n}), tensor_arg(y, TL_DTYPE_F32, {n}),
                          tensor_arg(o, TL_DTYPE_F32, {n})};
  for (auto _ : state) {
    e.stream.launch(e.vadd, 0, {uint64_t((n + 8191) / 8192), 1, 1}, args);
    e.stream.synchronize();
  }
  state.counters["bytes"] =
      benchmark::Counter(3.0 * n * 4 * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_TlSoftmax(benchmark::State &state) {
  const int64_t n = state.range(0), cols = 4096, rows = n / cols;
  Env &e = env(static_cast<int>(state.range(1)));
  auto host = random_floats(n);
  Buffer x = e.dev.buffer(n * 4), y = e.dev.buffer(n * 4);
  e.stream.copy_to_device(host.data(), x, n * 4);
  auto args = std::vector<tl_arg>{tensor_arg(x, TL_DTYPE_F32, {rows, cols}),
                                  tensor_arg(y, TL_DTYPE_F32, {rows, cols})};
  for (auto _ : state) {
    e.stream.launch(e.softmax, 0, {uint64_t(rows), 1, 1}, args);
    e.stream.synchronize();
  }
  // The bytes a softmax must move: read x once, write y once.
  state.counters["bytes"] =
      benchmark::Counter(2.0 * n * 4 * state.iterations(), benchmark::Counter::kIsRate);
}

constexpr int64_t kStreamElems = int64_t(1) << 25; // 128 MiB per array (the L3 may hold it)

BENCHMARK(BM_TlGemm)
    ->ArgsProduct({{512, 1024, 2048}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_OpenBlasGemm)
    ->ArgsProduct({{512, 1024, 2048}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_TlGemmBf16)
    ->ArgsProduct({{2048}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_Triad)
    ->ArgsProduct({{kStreamElems}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_ReadRows)
    ->ArgsProduct({{kStreamElems}, {1, 2}, {1, 4}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_QuantizeRows)
    ->ArgsProduct({{kStreamElems}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_TlVectorAdd)
    ->ArgsProduct({{kStreamElems}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_TlSoftmax)
    ->ArgsProduct({{kStreamElems}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
// In cache (64 rows: x and y take 512 KiB): the compute cost alone, for diagnosis.
BENCHMARK(BM_TlSoftmax)
    ->ArgsProduct({{int64_t(1) << 18}, {1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

class Collector : public benchmark::ConsoleReporter {
public:
  std::map<std::string, Run> runs;
  bool wrong = false; // a kernel computed a wrong result (a missing ISA is a skip, not wrong)
  void ReportRuns(const std::vector<Run> &report) override {
    ConsoleReporter::ReportRuns(report);
    for (const Run &r : report) {
      runs[r.benchmark_name()] = r;
      wrong |= r.error_occurred && r.error_message.find("wrong result") != std::string::npos;
    }
  }
};

/// Cold compile of the GEMM kernel: parse, verify, lower, optimize, emit object (no caches).
double gemm_compile_ms() {
  const std::string text = read_kernel("gemm_cpu.tlir");
  const auto t0 = std::chrono::steady_clock::now();
  auto m = parse(text);
  std::string error;
  auto object = tl::llvm_cpu::compile_object(*m, tl::llvm_cpu::CompileOptions{}, &error);
  const auto t1 = std::chrono::steady_clock::now();
  if (object.empty())
    throw std::runtime_error(error);
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

} // namespace

/// OpenBLAS picks its kernels by the CPU models it knows: Debian's 0.3.21 takes session 39's
/// Emerald Rapids (CPUID model 207, newer than it) for a Prescott, SSE3 kernels at 32 GFLOP/s a
/// core, an anchor 3.5x too slow. Where the core it chose lacks FMA and this CPU has AVX2 and
/// FMA (or AVX-512), the benchmark runs again with OPENBLAS_CORETYPE naming the core those give
/// (Haswell, SkylakeX), which OpenBLAS reads when it loads; a core it chose with FMA is kept.
void choose_openblas_core(char **argv) {
  const std::string core = openblas_get_corename();
  std::printf("# OpenBLAS %s, core %s%s\n", openblas_get_config(), core.c_str(),
              std::getenv("OPENBLAS_CORETYPE") ? " (OPENBLAS_CORETYPE)" : "");
  if (std::getenv("OPENBLAS_CORETYPE"))
    return;
  static const char *const with_fma[] = {"Haswell",        "Zen",       "SkylakeX",    "Cooperlake",
                                         "SapphireRapids", "Excavator", "Steamroller", "Piledriver",
                                         "Bulldozer"};
  for (const char *name : with_fma)
    if (core == name)
      return;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  const char *want = avx512                                                            ? "SkylakeX"
                     : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "Haswell"
                                                                                       : nullptr;
  if (!want)
    return;
  std::printf("# OpenBLAS took this CPU for %s (no FMA); running again with OPENBLAS_CORETYPE=%s\n",
              core.c_str(), want);
  std::fflush(stdout);
  setenv("OPENBLAS_CORETYPE", want, 1);
  execv("/proc/self/exe", argv);
  std::perror("cpu_kernels_bench: exec /proc/self/exe");
  std::exit(1);
}

int main(int argc, char **argv) {
  choose_openblas_core(argv);
  // The first compile pays LLVM's one-time initialization too: it is the cold figure.
  const double cold = gemm_compile_ms();
  const double warm = gemm_compile_ms();
  benchmark::Initialize(&argc, argv);
  Collector c;
  benchmark::RunSpecifiedBenchmarks(&c);
  auto value = [&](const std::string &name, const char *counter) -> double {
    for (const std::string &key : {name + "/real_time_median", name + "/real_time"})
      if (c.runs.count(key))
        return c.runs[key].counters[counter].value;
    return 0;
  };
  std::printf("\ngemm_cold_compile_ms: %.1f\ngemm_warm_compile_ms: %.1f\n", cold, warm);
  for (int t : {1, 2}) {
    for (int n : {512, 1024, 2048}) {
      const std::string args = "/" + std::to_string(n) + "/" + std::to_string(t);
      const double tl = value("BM_TlGemm" + args, "flops");
      const double blas = value("BM_OpenBlasGemm" + args, "flops");
      std::printf("gemm_%d_threads%d_tl_gflops: %.1f\n", n, t, tl / 1e9);
      std::printf("gemm_%d_threads%d_openblas_gflops: %.1f\n", n, t, blas / 1e9);
      if (blas > 0)
        std::printf("gemm_%d_threads%d_vs_openblas: %.3f\n", n, t, tl / blas);
    }
    {
      const std::string args = "/2048/" + std::to_string(t);
      const double bf = value("BM_TlGemmBf16" + args, "flops");
      const double f32 = value("BM_TlGemm" + args, "flops");
      const double blas = value("BM_OpenBlasGemm" + args, "flops");
      std::printf("gemm_bf16_2048_threads%d_tl_gflops: %.1f\n", t, bf / 1e9);
      if (f32 > 0)
        std::printf("gemm_bf16_2048_threads%d_vs_tl_f32: %.3f\n", t, bf / f32);
      if (blas > 0)
        std::printf("gemm_bf16_2048_threads%d_vs_openblas_sgemm: %.3f\n", t, bf / blas);
    }
    const std::string args = "/" + std::to_string(kStreamElems) + "/" + std::to_string(t);
    const double triad = value("BM_Triad" + args, "bytes");
    for (const char *k : {"VectorAdd", "Softmax"}) {
      const double bw = value(std::string("BM_Tl") + k + args, "bytes");
      std::printf("%s_threads%d_gb_per_s: %.2f\n", k, t, bw / 1e9);
      if (triad > 0)
        std::printf("%s_threads%d_vs_triad: %.3f\n", k, t, bw / triad);
    }
    std::string reads = "BM_ReadRows";
    reads += args;
    const double one = value(reads + "/1", "bytes"), four = value(reads + "/4", "bytes");
    const double one_triad = value(reads + "/1", "triad_bytes");
    const double four_triad = value(reads + "/4", "triad_bytes");
    std::printf("read_rows_threads%d_gb_per_s: %.2f\n", t, one / 1e9);
    std::printf("read_4_rows_threads%d_gb_per_s: %.2f\n", t, four / 1e9);
    if (one > 0)
      std::printf("read_4_rows_threads%d_vs_read_rows: %.3f\n", t, four / one);
    if (one_triad > 0 && four_triad > 0) // the fractions ops_bench.py's row reductions are read as
      std::printf("read_rows_threads%d_vs_triad_stream: %.3f\n"
                  "read_4_rows_threads%d_vs_triad_stream: %.3f\n",
                  t, one / one_triad, t, four / four_triad);
    std::printf("triad_threads%d_gb_per_s: %.2f\n", t, triad / 1e9);
    const double stream = value("BM_QuantizeRows" + args, "triad_bytes");
    const double quantize = value("BM_QuantizeRows" + args, "bytes");
    std::printf("triad_stream_threads%d_gb_per_s: %.2f\n", t, stream / 1e9);
    std::printf("quantize_rows_threads%d_gb_per_s: %.2f\n", t, quantize / 1e9);
    if (stream > 0)
      std::printf("quantize_rows_threads%d_vs_triad_stream: %.3f\n", t, quantize / stream);
  }
  benchmark::Shutdown();
  return c.wrong ? 1 : 0;
}
