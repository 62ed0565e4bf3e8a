// Tests of the matrix unit RTL (sim/rtl/sv, verilated) against sim/numerics, bit for bit: random
// and edge-case tiles of every dtype, partial tiles, K chained over commands, overwrite vs
// accumulate, shadow weights, read-after-write through memory, cycle counts, rejected commands.
// Each test says which wrong RTL it catches.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/rtl/matrix_rtl.h"

#include "built_arrays.h"
#include "tiles.h"

#include "tl/npu/numerics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace tl::npu::rtl {
namespace {

using num::DType;
using test::Tile;
using test::Values;

constexpr size_t kMemory = 1 << 20;
const DType kModes[] = {DType::BF16, DType::F16, DType::F32, DType::I8};

const BuiltArray &smallest() { return built_arrays().front(); }
const BuiltArray &largest() { return built_arrays().back(); }

MatrixRtl make(const BuiltArray &a) { return MatrixRtl(a.make(), kMemory); }

// Runs tiles back to back in batches that fit the scratchpad; returns the first mismatches.
std::string run_tiles(MatrixRtl &rtl, std::vector<Tile> &tiles, test::Rng &rng) {
  std::string failures;
  for (size_t begin = 0; begin < tiles.size();) {
    std::vector<Tile> batch;
    size_t end = begin, bytes = 0;
    for (; end < tiles.size() && batch.size() < 256; ++end) {
      const Tile &t = tiles[end];
      bytes += 64 + static_cast<size_t>(t.k * t.n * 4 * 3 + t.m * t.k * 4 * 3 + t.m * t.n * 12);
      if (bytes > kMemory / 2 && !batch.empty())
        break;
      batch.push_back(t);
    }
    test::place(batch, rtl.memory(), 0, rtl.memory_size(), rng);
    test::submit(rtl, batch);
    rtl.run();
    for (const Tile &t : batch)
      if (failures.size() < 4000)
        failures += test::check(t, rtl.memory(), test::reference(t));
    begin = end;
  }
  return failures;
}

long env_count(const char *name, long fallback) {
  const char *v = std::getenv(name);
  return v ? std::strtol(v, nullptr, 10) : fallback;
}

// The volume run: TL_RTL_TILES random tiles (default 10^5) on the smallest array, every dtype
// and value mix, mx.mm and mx.mma, partial shapes, pipelined back to back. Catches any wrong bit
// of the MAC (product, alignment, sticky, rounding, subnormals, NaN, zero signs, overflow,
// i8 wrap-around) and any pipeline mistake (skew, weight bank, write-back address).
TEST(RtlMatrix, RandomTiles) {
  const BuiltArray &a = smallest();
  MatrixRtl rtl = make(a);
  const long total = env_count("TL_RTL_TILES", 100000);
  test::Rng rng(20250117);
  long done = 0, chunk = 4096;
  const auto start = std::chrono::steady_clock::now();
  while (done < total) {
    std::vector<Tile> tiles;
    for (long i = 0; i < chunk && done + i < total; ++i) {
      const DType mode = kModes[(done + i) % 4];
      const Values v = static_cast<Values>(((done + i) / 4) % 6);
      tiles.push_back(test::random_tile(mode, v, a.rows, a.cols, rng));
    }
    const std::string failures = run_tiles(rtl, tiles, rng);
    ASSERT_EQ(failures, "") << "after " << done << " tiles";
    done += static_cast<long>(tiles.size());
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%ld tiles on the %dx%d array, %llu cycles, %.1f s\n", done, a.rows, a.cols,
              static_cast<unsigned long long>(rtl.cycle()), s);
}

} // namespace
} // namespace tl::npu::rtl
