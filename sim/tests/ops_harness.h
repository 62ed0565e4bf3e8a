// Helpers for the scenario tests of the vector, DMA-indexed and scalar-memory instructions: one
// simulator per process, host data in and out of local memory and HBM, expected-value checks.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "harness.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace tl::npu::test {

/// The process's one simulator, never destroyed (one elaboration per process); a static holds it
/// so that LeakSanitizer sees it reachable rather than leaked.
inline Simulator &make_sim(const std::string &config = "default", SimOptions opts = {}) {
  static Simulator *sim = nullptr;
  sim = new Simulator(chip(config), opts);
  return *sim;
}

template <class T> void put_local(Simulator &s, uint64_t addr, const std::vector<T> &v) {
  s.write_local(0, addr, v.data(), v.size() * sizeof(T));
}
template <class T> std::vector<T> get_local(Simulator &s, uint64_t addr, size_t n) {
  std::vector<T> v(n);
  s.read_local(0, addr, v.data(), n * sizeof(T));
  return v;
}

/// Runs `program` on core 0 and returns the report (the status is the caller's to check).
inline SimReport run_program(Simulator &s, const std::string &program,
                             const std::map<std::string, int64_t> &defines = {}) {
  s.load_program(0, assemble_text(program, defines));
  SimReport r = run_checked(s);
  std::printf("status %s: %s (%llu cycles)\n", status_name(r.status), r.message.c_str(),
              static_cast<unsigned long long>(r.cycles));
  return r;
}

inline SimReport run_ok(Simulator &s, const std::string &program,
                        const std::map<std::string, int64_t> &defines = {}) {
  SimReport r = run_program(s, program, defines);
  TNPU_CHECK(r.status == SimStatus::Ok, r.message);
  return r;
}

inline float f32(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
inline uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}
/// Host f32 result with NaN canonical, as TNPU writes it.
inline uint32_t canon(float f) { return std::isnan(f) ? 0x7fc00000u : bits(f); }
/// A double rounded once to f32 (what the reference interpreter computes for f32 math).
inline uint32_t canon_d(double d) { return canon(static_cast<float>(d)); }

/// Fails naming the element if got != want.
template <class T>
void expect_equal(const std::vector<T> &got, const std::vector<T> &want, const std::string &what) {
  TNPU_CHECK(got.size() == want.size(), what + ": size");
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s: element %zu is 0x%llx, want 0x%llx", what.c_str(), i,
                    static_cast<unsigned long long>(got[i]),
                    static_cast<unsigned long long>(want[i]));
      fail(buf);
    }
}

/// Random f32 values with specials: mostly in [-lo, hi], some zeros, infinities, NaN, subnormals.
inline std::vector<uint32_t> random_f32(std::mt19937 &gen, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  static const uint32_t kSpecial[] = {0,           0x80000000u, 0x7f800000u, 0xff800000u,
                                      0x7fc00000u, 0x00000123u, 0x3f800000u, 0xbf800000u};
  std::vector<uint32_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = i % 9 == 4 ? kSpecial[(i / 9) % 8] : bits(dist(gen));
  return v;
}

} // namespace tl::npu::test
