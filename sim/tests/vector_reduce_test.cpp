// The vector unit's reductions and scans through the model, checked against host values in the
// orders SPEC.md defines (column reductions and scans bit-exact with a sequential sum), and a
// whole kernel: programs/softmax.s. One scenario per process.
// SPDX-License-Identifier: Apache-2.0
#include "ops_harness.h"

#include "tl/reference/numerics.h"

#include <algorithm>

namespace tl::npu::test {
namespace {

namespace ref = tl::numerics;

constexpr uint64_t kA = 0x1000, kB = 0x3000, kC = 0x5000;

float host_max(float x, float y) {
  if (std::isnan(x) || std::isnan(y))
    return NAN;
  return x == y ? (std::signbit(x) ? y : x) : std::max(x, y);
}
float host_min(float x, float y) {
  if (std::isnan(x) || std::isnan(y))
    return NAN;
  return x == y ? (std::signbit(x) ? x : y) : std::min(x, y);
}

/// Row min / argmax, column sum / max / min / argmax (row order: bit-exact with a sequential
/// sum), a sequential row sum by transpose + v.csum, i32 sums wrapping, f16 column sums.
void reductions() {
  constexpr int R = 6, C = 100;
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(-1000, 1000);
  std::vector<uint32_t> a(R * C);
  for (auto &x : a)
    x = bits(dist(gen) * (gen() % 3 == 0 ? 1e-6f : 1.f)); // mixed magnitudes: order matters
  a[3 * C + 40] = 0x7fc00000u;                            // a NaN in row 3, column 40
  std::vector<int32_t> ints(C);
  for (auto &x : ints)
    x = static_cast<int32_t>(gen());
  std::vector<uint16_t> h(R * C);
  for (auto &x : h)
    x = static_cast<uint16_t>(ref::encode(ref::FloatFormat::F16, dist(gen) / 8));
  Simulator &sim = make_sim();
  put_local(sim, kA, a);
  put_local(sim, kB, ints);
  put_local(sim, kC, h);
  run_ok(sim, R"(
    li r1, 0x1000
    v.cfgi n, 100
    v.cfgi rows, 6
    v.cfgi sa, 400
    v.cfgi sd, 4
    li r10, 0x10000
    v.rmin r10, r1
    li r10, 0x10100
    v.rargmax r10, r1
    li r10, 0x11000
    v.csum r10, r1
    li r10, 0x11400
    v.cmax r10, r1
    li r10, 0x11800
    v.cmin r10, r1
    li r10, 0x11c00
    v.cargmax r10, r1
    v.cfgi ea, 400              # transpose 6 x 100 -> 100 x 6 at 0x20000
    v.cfgi sa, 4
    v.cfgi rows, 100
    v.cfgi n, 6
    v.cfgi sd, 24
    v.cfgi ed, 4
    li r10, 0x20000
    v.scopy r10, r1
    v.cfgi sa, 24               # then column sums = sequential row sums
    li r11, 0x12000
    v.csum r11, r10
    v.cfgi t, i32
    v.cfgi rows, 1
    v.cfgi n, 100
    li r2, 0x3000
    li r10, 0x13000
    v.rsum r10, r2
    v.cfgi t, f16
    v.cfgi rows, 6
    v.cfgi sa, 200
    li r3, 0x5000
    li r10, 0x14000
    v.csum r10, r3
    halt
  )");
  std::vector<uint32_t> rmin, rarg, csum(C), cmax(C), cmin(C), carg(C), seq;
  for (int r = 0; r < R; ++r) {
    float m = f32(a[r * C]), s = f32(a[r * C]);
    uint32_t best = 0;
    for (int i = 1; i < C; ++i) {
      const float x = f32(a[r * C + i]);
      m = host_min(m, x);
      s += x;
      const float bv = f32(a[r * C + best]);
      if (!std::isnan(bv) && (std::isnan(x) || x > bv))
        best = static_cast<uint32_t>(i);
    }
    rmin.push_back(canon(m));
    rarg.push_back(best);
    seq.push_back(canon(s));
  }
  for (int j = 0; j < C; ++j) {
    float s = f32(a[j]), mx = s, mn = s;
    uint32_t best = 0;
    for (int r = 1; r < R; ++r) {
      const float x = f32(a[r * C + j]);
      s += x;
      mx = host_max(mx, x);
      mn = host_min(mn, x);
      const float bv = f32(a[best * C + j]);
      if (!std::isnan(bv) && (std::isnan(x) || x > bv))
        best = static_cast<uint32_t>(r);
    }
    csum[j] = canon(s);
    cmax[j] = canon(mx);
    cmin[j] = canon(mn);
    carg[j] = best;
  }
  expect_equal(get_local<uint32_t>(sim, 0x10000, R), rmin, "v.rmin");
  expect_equal(get_local<uint32_t>(sim, 0x10100, R), rarg, "v.rargmax");
  expect_equal(get_local<uint32_t>(sim, 0x11000, C), csum, "v.csum");
  expect_equal(get_local<uint32_t>(sim, 0x11400, C), cmax, "v.cmax");
  expect_equal(get_local<uint32_t>(sim, 0x11800, C), cmin, "v.cmin");
  expect_equal(get_local<uint32_t>(sim, 0x11c00, C), carg, "v.cargmax");
  expect_equal(get_local<uint32_t>(sim, 0x12000, R), seq, "sequential row sums");
  uint32_t isum = 0;
  for (int32_t x : ints)
    isum += static_cast<uint32_t>(x);
  expect_equal(get_local<uint32_t>(sim, 0x13000, 1), std::vector<uint32_t>{isum}, "i32 v.rsum");
  std::vector<uint16_t> hsum(C);
  for (int j = 0; j < C; ++j) {
    double s = ref::decode(ref::FloatFormat::F16, h[j]);
    for (int r = 1; r < R; ++r) // the reference rounds to f16 after every step
      s = ref::round_to(ref::FloatFormat::F16,
                        s + ref::decode(ref::FloatFormat::F16, h[r * C + j]));
    hsum[j] = static_cast<uint16_t>(ref::encode(ref::FloatFormat::F16, s));
  }
  expect_equal(get_local<uint16_t>(sim, 0x14000, C), hsum, "f16 v.csum");
}

/// Inclusive scans per row in element order.
void scans() {
  std::mt19937 gen(6);
  std::vector<uint32_t> a = random_f32(gen, 120, -100, 100);
  for (auto &x : a)
    if (std::isnan(f32(x)) || std::isinf(f32(x)))
      x = bits(1.5f);
  std::vector<int32_t> b(120);
  for (auto &x : b)
    x = static_cast<int32_t>(gen());
  Simulator &sim = make_sim();
  put_local(sim, kA, a);
  put_local(sim, kB, b);
  run_ok(sim, R"(
    v.cfgi n, 40
    v.cfgi rows, 3
    v.cfgi sa, 160
    v.cfgi sd, 160
    li r1, 0x1000
    li r2, 0x3000
    li r10, 0x10000
    v.cumsum r10, r1
    v.cfgi t, i32
    li r10, 0x11000
    v.cummax r10, r2
    v.cfgi u, 1
    li r10, 0x12000
    v.cummin r10, r2
    halt
  )");
  std::vector<uint32_t> sum(120), mx(120), mn(120);
  for (int r = 0; r < 3; ++r) {
    float s = 0;
    int32_t m = INT32_MIN;
    uint32_t um = UINT32_MAX;
    for (int i = 0; i < 40; ++i) {
      const int at = r * 40 + i;
      s = i == 0 ? f32(a[at]) : s + f32(a[at]);
      m = std::max(m, b[at]);
      um = std::min(um, static_cast<uint32_t>(b[at]));
      sum[at] = canon(s);
      mx[at] = static_cast<uint32_t>(m);
      mn[at] = um;
    }
  }
  expect_equal(get_local<uint32_t>(sim, 0x10000, 120), sum, "v.cumsum f32");
  expect_equal(get_local<uint32_t>(sim, 0x11000, 120), mx, "v.cummax i32");
  expect_equal(get_local<uint32_t>(sim, 0x12000, 120), mn, "v.cummin u32");
}

/// programs/softmax.s (row max, broadcast, sub, exp, row sum, broadcast, div) against a double
/// softmax. The f32 difference x - max (|x| <= 20) is off by up to 2^-24 * 40 absolute, which exp
/// turns into ~2.4e-6 relative: an f32 softmax's own error, hence the 1e-5 bound.
void softmax_program() {
  constexpr int M = 37, N = 100;
  std::mt19937 gen(8);
  std::uniform_real_distribution<float> dist(-20, 20);
  std::vector<float> x(M * N);
  for (float &v : x)
    v = dist(gen);
  Simulator &sim = make_sim();
  sim.write_hbm(0x100000, x.data(), x.size() * 4);
  sim.load_program(
      0, assemble_file(program_path("softmax.s"),
                       {{"M", M}, {"N", N}, {"X", 0x100000}, {"Y", 0x200000}, {"TR", 16}}));
  SimReport r = run_checked(sim);
  TNPU_CHECK(r.status == SimStatus::Ok, r.message);
  std::vector<float> y(M * N);
  sim.read_hbm(0x200000, y.data(), y.size() * 4);
  double worst = 0;
  for (int i = 0; i < M; ++i) {
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < N; ++j)
      mx = std::max(mx, double{x[i * N + j]});
    for (int j = 0; j < N; ++j)
      sum += std::exp(double{x[i * N + j]} - mx);
    for (int j = 0; j < N; ++j) {
      const double want = std::exp(double{x[i * N + j]} - mx) / sum;
      worst = std::max(worst, std::fabs(y[i * N + j] - want) / want);
    }
  }
  std::printf("softmax %dx%d: max relative error %.3g, %llu cycles\n", M, N, worst,
              static_cast<unsigned long long>(r.cycles));
  TNPU_CHECK(worst < 1e-5, "softmax error " + std::to_string(worst));
}

} // namespace
} // namespace tl::npu::test

int sc_main(int argc, char **argv) {
  using namespace tl::npu::test;
  return main_with(
      {{"reductions", reductions}, {"scans", scans}, {"softmax-program", softmax_program}}, argc,
      argv);
}
