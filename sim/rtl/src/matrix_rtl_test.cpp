// Tests of the matrix unit RTL (sim/rtl/sv, verilated) against sim/numerics, bit for bit: random
// and edge-case tiles of every dtype, partial tiles, K chained over commands, overwrite vs
// accumulate, shadow weights, read-after-write through memory, cycle counts, rejected commands.
// Each test says which wrong RTL it catches.
// SPDX-License-Identifier: Apache-2.0
#include "tl/npu/rtl/matrix_rtl.h"

#include "tiles.h"
#include "tl/npu/rtl/built_arrays.h"

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

// The arrays the per-size tests below run on: every size up to 32 x 32 PEs; larger ones (a
// 128 x 128 array runs about 700 cycles per host second here) only with TL_RTL_ALL_SIZES=1
// (`ctest -C Volume -R sim-rtl-all-sizes`). In CI the largest array gets LargestArrayRandomTiles.
std::vector<BuiltArray> per_size_arrays() {
  const char *all = std::getenv("TL_RTL_ALL_SIZES");
  std::vector<BuiltArray> v;
  for (const BuiltArray &a : built_arrays())
    if (a.rows * a.cols <= 32 * 32 || (all && std::string(all) == "1"))
      v.push_back(a);
  return v;
}

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
      const Values v = static_cast<Values>(((done + i) / 4) % 7);
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

// The fast model's semantics: each command runs to completion before the next, row by row, on
// a copy of memory (sim/model/src/matrix.cpp). The RTL overlaps commands; memory must end equal.
void run_sequentially(std::vector<uint8_t> &mem, const std::vector<MxCommand> &commands) {
  std::vector<uint32_t> w;
  uint32_t wk = 0, wn = 0;
  for (const MxCommand &c : commands) {
    const size_t es = static_cast<size_t>(num::dtype_size(c.mode));
    if (c.op == MxOp::Preload) {
      wk = c.k;
      wn = c.n;
      w.resize(static_cast<size_t>(wk) * wn);
      for (uint32_t r = 0; r < wk; ++r)
        for (uint32_t j = 0; j < wn; ++j)
          w[r * wn + j] = num::load_bits(c.mode, &mem[c.src + r * c.src_stride], j);
      continue;
    }
    std::vector<uint32_t> a(wk), acc(wn);
    for (uint32_t i = 0; i < c.m; ++i) {
      uint8_t *arow = &mem[c.src + i * c.src_stride], *crow = &mem[c.dst + i * c.dst_stride];
      for (uint32_t q = 0; q < wk; ++q)
        a[q] = num::load_bits(c.mode, arow, q);
      for (uint32_t j = 0; j < wn; ++j) {
        uint32_t s = c.op == MxOp::MultiplyAccumulate ? num::load_bits(DType::F32, crow, j)
                     : c.mode == DType::I8            ? 0u
                                                      : num::kF32NegZero;
        for (uint32_t q = 0; q < wk; ++q)
          s = c.mode == DType::I8
                  ? static_cast<uint32_t>(num::mac_i8(static_cast<int8_t>(a[q]),
                                                      static_cast<int8_t>(w[q * wn + j]),
                                                      static_cast<int32_t>(s)))
                  : num::mac_f32(c.mode, a[q], w[q * wn + j], s);
        acc[j] = s;
      }
      for (uint32_t j = 0; j < wn; ++j)
        num::store_bits(DType::F32, crow, j, acc[j]);
    }
    (void)es;
  }
}

// Submits `commands` to the RTL and to run_sequentially on a copy of its memory; both must end
// with the same bytes. Returns the RTL's cycles per command.
std::vector<CommandCycles> run_both(MatrixRtl &rtl, const std::vector<MxCommand> &commands) {
  std::vector<uint8_t> expected(rtl.memory(), rtl.memory() + rtl.memory_size());
  run_sequentially(expected, commands);
  const size_t first = rtl.cycles().size();
  for (const MxCommand &c : commands)
    rtl.submit(c);
  rtl.run();
  for (size_t i = 0; i < expected.size(); ++i)
    if (expected[i] != rtl.memory()[i]) {
      ADD_FAILURE() << "memory differs from the sequential result first at byte " << i << ": 0x"
                    << std::hex << int(rtl.memory()[i]) << ", expected 0x" << int(expected[i]);
      break;
    }
  return {rtl.cycles().begin() + static_cast<std::ptrdiff_t>(first), rtl.cycles().end()};
}

MxCommand preload(DType mode, uint32_t k, uint32_t n, uint32_t src, uint32_t stride) {
  MxCommand c;
  c.op = MxOp::Preload;
  c.mode = mode;
  c.k = k;
  c.n = n;
  c.src = src;
  c.src_stride = stride;
  return c;
}

MxCommand multiply(bool accumulate, DType mode, uint32_t m, uint32_t a, uint32_t lda, uint32_t c,
                   uint32_t ldc) {
  MxCommand x;
  x.op = accumulate ? MxOp::MultiplyAccumulate : MxOp::Multiply;
  x.mode = mode;
  x.m = m;
  x.src = a;
  x.src_stride = lda;
  x.dst = c;
  x.dst_stride = ldc;
  return x;
}

// Fills [at, at + count elements) of dtype t with values v.
void fill(MatrixRtl &rtl, DType t, uint32_t at, size_t count, Values v, test::Rng &rng) {
  for (size_t i = 0; i < count; ++i)
    num::store_bits(t, rtl.memory() + at, i, test::element(t, v, rng));
}

// A Model that fills the read lanes past what a read asked for with NaN patterns (i8: -63)
// where the driver puts zeros: the RTL must not let them into a partial tile's chains.
class PoisonedLanes final : public Model {
public:
  explicit PoisonedLanes(std::unique_ptr<Model> inner)
      : inner_(std::move(inner)),
        lanes_(static_cast<size_t>(std::max(inner_->rows(), inner_->cols()))) {}
  int rows() const override { return inner_->rows(); }
  int cols() const override { return inner_->cols(); }
  int fp32_passes() const override { return inner_->fp32_passes(); }
  void set_reset(bool active) override { inner_->set_reset(active); }
  void set_command(const Command *c) override { inner_->set_command(c); }
  bool settle() override { return inner_->settle(); }
  void set_read_ready(bool weights, bool a) override { inner_->set_read_ready(weights, a); }
  void open_trace(const std::string &path, uint64_t from, uint64_t to,
                  const uint64_t *cycle) override {
    inner_->open_trace(path, from, to, cycle);
  }
  void set_read_data(ReadPort port, const uint32_t *lanes) override {
    const size_t width = static_cast<size_t>(port == ReadPort::A ? rows() : cols());
    for (size_t i = 0; i < width; ++i)
      lanes_[i] = i < count_[static_cast<int>(port)] ? lanes[i] : 0x7fc17fc1u;
    inner_->set_read_data(port, lanes_.data());
  }
  void rising_edge(Edge &e) override {
    inner_->rising_edge(e);
    count_[0] = e.weights.count;
    count_[1] = e.a.count;
    count_[2] = e.accumulator.count;
  }

private:
  std::unique_ptr<Model> inner_;
  std::vector<uint32_t> lanes_;
  uint32_t count_[3] = {};
};

// Every special value against every other, from every special start, one product per chain
// (k = 1) and as 2-term chains: catches a wrong NaN (payload kept, not canonical), inf * 0 or
// inf - inf not NaN, -0 + -0 not -0 or x + -x not +0, a zero product's sign, subnormal inputs
// flushed or outputs flushed, overflow not to infinity, i8 not wrapping.
TEST(RtlMatrix, EdgeValues) {
  for (const BuiltArray &arr : per_size_arrays()) {
    MatrixRtl rtl = make(arr);
    test::Rng rng(7);
    const bool small = arr.rows * arr.cols <= 64; // larger arrays: fewer, shorter tiles
    for (DType mode : kModes) {
      std::vector<Tile> tiles;
      for (int rep = 0; rep < (small ? 64 : 16); ++rep)
        for (int k : {1, 2, arr.rows}) {
          const int n = rep % 2 ? arr.cols : 1 + rep % arr.cols;
          tiles.push_back(test::make_tile(mode, Values::Special, small ? 2 * arr.rows : 16, k, n,
                                          rep % 4 != 0, rng));
        }
      const std::string failures = run_tiles(rtl, tiles, rng);
      EXPECT_EQ(failures, "") << arr.rows << "x" << arr.cols << " " << num::dtype_name(mode);
    }
  }
}

// mx.mm starts each chain from -0 (i8: 0): a zero product must give -0 for -0 products and +0
// for +0 products, and a single product must pass through exactly rounded. Catches a chain
// started from +0 (every -0 result becomes +0), from stale C, or PEs outside a partial tile
// adding zero products (-0 + +0 = +0).
TEST(RtlMatrix, OverwriteStartsFromNegativeZero) {
  const BuiltArray &arr = smallest();
  MatrixRtl rtl = make(arr);
  struct Case {
    DType mode;
    uint32_t a, w, want;
  } cases[] = {
      {DType::BF16, 0x8000, 0x3f80, 0x80000000}, // -0 * 1 = -0; -0 + -0 = -0
      {DType::BF16, 0x0000, 0x3f80, 0x00000000}, // +0 * 1 = +0; -0 + +0 = +0
      {DType::BF16, 0x0000, 0xbf80, 0x80000000}, // +0 * -1 = -0
      {DType::F16, 0x8000, 0x8000, 0x00000000},  // -0 * -0 = +0
      {DType::F16, 0x0001, 0x0001, 0x27800000},  // 2^-24 * 2^-24 = 2^-48, exact
      {DType::F32, 0x80000000, 0x00000001, 0x80000000},
      {DType::F32, 0x3f800001, 0x3f800001, 0x3f800002}, // (1 + u)^2 rounds to 1 + 2u
      {DType::F32, 0x00000003, 0x3f000000, 0x00000002}, // 3 * 2^-150: a tie, to even
      {DType::F32, 0x7f7fffff, 0x40000000, 0x7f800000}, // overflow to +inf
      {DType::I8, 0x80, 0x80, 0x4000},                  // -128 * -128 from 0
  };
  const uint32_t k = static_cast<uint32_t>(arr.rows) - 1; // a partial tile: row k is outside
  for (const Case &c : cases) {
    const uint32_t es = static_cast<uint32_t>(num::dtype_size(c.mode));
    const uint32_t ref = c.mode == DType::I8
                             ? static_cast<uint32_t>(num::mac_i8(static_cast<int8_t>(c.a),
                                                                 static_cast<int8_t>(c.w), 0))
                             : num::mac_f32(c.mode, c.a, c.w, num::kF32NegZero);
    ASSERT_EQ(ref, c.want) << "the table disagrees with sim/numerics";
    std::memset(rtl.memory(), 0, 4096);
    // W: column 0 holds w in row 0 and zeros below; A: a then zeros, so every other step of
    // the chain adds a +0 product (-0 + +0 would be +0: only the first step may see -0).
    num::store_bits(c.mode, rtl.memory(), 0, c.w);
    num::store_bits(c.mode, rtl.memory() + 1024, 0, c.a);
    for (uint32_t i = 0; i < 4; ++i) // C holds garbage mx.mm must ignore
      num::store_bits(DType::F32, rtl.memory() + 2048, i, 0x3f800000u + i);
    MxCommand pre = preload(c.mode, 1, 1, 0, es),
              mm = multiply(false, c.mode, 1, 1024, es, 2048, 4);
    rtl.submit(pre);
    rtl.submit(mm);
    rtl.run();
    EXPECT_EQ(num::load_bits(DType::F32, rtl.memory() + 2048, 0), c.want)
        << num::dtype_name(c.mode) << " 0x" << std::hex << c.a << " * 0x" << c.w;
    // The same product in a k-row tile whose other rows hold +0 products only changes the
    // result where -0 + +0 = +0.
    std::memset(rtl.memory(), 0, 4096);
    num::store_bits(c.mode, rtl.memory(), 0, c.w);
    num::store_bits(c.mode, rtl.memory() + 1024, 0, c.a);
    rtl.submit(preload(c.mode, k, 1, 0, es));
    rtl.submit(multiply(false, c.mode, 1, 1024, k * es, 2048, 4));
    rtl.run();
    const uint32_t want = c.want == 0x80000000u ? 0u : c.want;
    EXPECT_EQ(num::load_bits(DType::F32, rtl.memory() + 2048, 0), want)
        << num::dtype_name(c.mode) << " k = " << k;
  }
}

// f32 products exactly halfway between two f32s, from starts far below them: only the start's
// sign decides the rounding (its bits all fall below the sum's rounding position). Catches an
// MAC that drops a far-below addend instead of keeping it as a sticky bit (the tie would then
// round to even), and one that rounds the product before adding.
TEST(RtlMatrix, FarBelowStartDecidesTies) {
  MatrixRtl rtl = make(smallest());
  const uint32_t a = 0x3f800800, w = 0x3f800800; // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: a tie
  const uint32_t starts[] = {0x00000000, 0x80000000, 0x0d800000,
                             0x8d800000, 0x00000001, 0x80000001};
  const uint32_t wants[] = {0x3f801000, 0x3f801000, 0x3f801001, 0x3f801000, 0x3f801001, 0x3f801000};
  num::store_bits(DType::F32, rtl.memory(), 0, w);
  num::store_bits(DType::F32, rtl.memory() + 64, 0, a);
  for (size_t i = 0; i < std::size(starts); ++i) {
    ASSERT_EQ(num::mac_f32(DType::F32, a, w, starts[i]), wants[i]) << "table entry " << i;
    num::store_bits(DType::F32, rtl.memory() + 128, i, starts[i]);
  }
  // One row per start, all reading the same A row (lda = 0).
  run_both(rtl, {preload(DType::F32, 1, 1, 0, 4),
                 multiply(true, DType::F32, std::size(starts), 64, 0, 128, 4)});
  for (size_t i = 0; i < std::size(starts); ++i)
    EXPECT_EQ(num::load_bits(DType::F32, rtl.memory() + 128, i), wants[i]) << "start " << i;
}

// Every k x n tile shape with m = 0, 1, 3 and rows + 1, with the unused read lanes poisoned.
// Catches PEs outside the tile that still add (a NaN lane or a -0 turned +0), columns past n
// written (the C padding is checked), and an m = 0 command that writes or never finishes.
TEST(RtlMatrix, PartialTiles) {
  for (const BuiltArray &arr : per_size_arrays()) {
    MatrixRtl rtl(std::make_unique<PoisonedLanes>(arr.make()), kMemory);
    test::Rng rng(11);
    // Every shape up to 8 x 8; beyond, the ends of the range and its middle.
    auto sizes = [](int max) {
      std::vector<int> v;
      for (int x = 1; x <= max; ++x)
        if (max <= 8 || x <= 2 || x == max / 2 || x >= max - 1)
          v.push_back(x);
      return v;
    };
    std::vector<Tile> tiles;
    for (DType mode : kModes)
      for (int k : sizes(arr.rows))
        for (int n : sizes(arr.cols))
          for (int m : {0, 1, 3, arr.rows + 1})
            tiles.push_back(test::make_tile(mode, Values::Mixed, m, k, n, (k + n + m) % 2, rng));
    EXPECT_EQ(run_tiles(rtl, tiles, rng), "") << arr.rows << "x" << arr.cols;
  }
}

// The same A, W and starting C through mx.mm and mx.mma. Catches an mx.mm that reads C (its
// result would depend on C's garbage) and an mx.mma that ignores it.
TEST(RtlMatrix, AccumulateVsOverwrite) {
  const BuiltArray &arr = smallest();
  MatrixRtl rtl = make(arr);
  test::Rng rng(5);
  for (DType mode : kModes) {
    const uint32_t es = static_cast<uint32_t>(num::dtype_size(mode));
    const uint32_t k = static_cast<uint32_t>(arr.rows), n = static_cast<uint32_t>(arr.cols), m = 6;
    const uint32_t w = 0, a = 8192, c1 = 16384, c2 = 24576, c3 = 32768;
    fill(rtl, mode, w, k * n, Values::Moderate, rng);
    fill(rtl, mode, a, m * k, Values::Moderate, rng);
    fill(rtl, DType::F32, c1, m * n, Values::Moderate, rng);
    std::memcpy(rtl.memory() + c2, rtl.memory() + c1, m * n * 4);
    fill(rtl, DType::F32, c3, m * n, Values::Bits, rng); // different garbage for the second mm
    run_both(rtl, {preload(mode, k, n, w, n * es), multiply(false, mode, m, a, k * es, c1, n * 4),
                   multiply(true, mode, m, a, k * es, c2, n * 4),
                   multiply(false, mode, m, a, k * es, c3, n * 4)});
    EXPECT_EQ(std::memcmp(rtl.memory() + c1, rtl.memory() + c3, m * n * 4), 0)
        << "mx.mm depends on what C held";
    EXPECT_NE(std::memcmp(rtl.memory() + c1, rtl.memory() + c2, m * n * 4), 0)
        << "mx.mma gave mx.mm's result";
  }
}

// K = rows + 1 ... 4 rows + 1 as a chain of preloads and mx.mma into one C, back to back (each
// mx.mma reads the C rows the previous command is still writing). Equals gemm_reference over
// the whole K (the chains concatenate). Catches chunks in the wrong order, an mx.mma that reads
// C before the previous command wrote it, or a preload that overwrote weights still in use.
TEST(RtlMatrix, KLargerThanArray) {
  for (const BuiltArray &arr : per_size_arrays()) {
    MatrixRtl rtl = make(arr);
    test::Rng rng(3);
    const int R = arr.rows;
    for (DType mode : kModes)
      for (int K : {R + 1, 2 * R, 2 * R + 3, 4 * R + 1})
        for (int m : {1, 3, R + 2}) {
          if (R > 8 && m > 1 && (K == 2 * R || K == 4 * R + 1)) // larger arrays: fewer chains
            continue;
          const bool from_c = (K + m) % 2 == 1;
          Tile t = test::make_tile(mode, Values::Mixed, m, K, arr.cols, from_c, rng);
          const uint32_t es = static_cast<uint32_t>(num::dtype_size(mode)), n = arr.cols;
          t.w_addr = 0;
          t.ldw = n * es;
          t.a_addr = 65536;
          t.lda = static_cast<uint32_t>(K) * es;
          t.c_addr = 131072;
          t.ldc = n * 4;
          for (size_t i = 0; i < t.w.size(); ++i)
            num::store_bits(mode, rtl.memory() + t.w_addr, i, t.w[i]);
          for (size_t i = 0; i < t.a.size(); ++i)
            num::store_bits(mode, rtl.memory() + t.a_addr, i, t.a[i]);
          for (size_t i = 0; i < t.c.size(); ++i)
            num::store_bits(DType::F32, rtl.memory() + t.c_addr, i, t.c[i]);
          std::vector<MxCommand> chain;
          for (int q = 0; q * R < K; ++q) {
            const uint32_t kq = static_cast<uint32_t>(std::min(R, K - q * R));
            chain.push_back(preload(mode, kq, n, t.w_addr + q * R * t.ldw, t.ldw));
            chain.push_back(multiply(from_c || q > 0, mode, static_cast<uint32_t>(m),
                                     t.a_addr + q * R * es, t.lda, t.c_addr, t.ldc));
          }
          run_both(rtl, chain);
          const std::vector<uint32_t> expected = test::reference(t);
          for (size_t i = 0; i < expected.size(); ++i)
            ASSERT_EQ(num::load_bits(DType::F32, rtl.memory() + t.c_addr, i), expected[i])
                << num::dtype_name(mode) << " K = " << K << " m = " << m << " element " << i;
        }
  }
}

// A preload issued while an mx.mm streams goes to the shadow bank: that mm keeps its weights to
// the last row, the next mm gets the new ones, and the preload overlaps the stream. Catches a
// preload that writes the weights in use (the mm's late rows would use the new tile) and one
// that waits for the stream to end.
TEST(RtlMatrix, ShadowWeightsSwapAtNextMultiply) {
  const BuiltArray &arr = smallest();
  MatrixRtl rtl = make(arr);
  test::Rng rng(13);
  for (DType mode : kModes) {
    const uint32_t es = static_cast<uint32_t>(num::dtype_size(mode));
    const uint32_t k = arr.rows, n = arr.cols, m1 = 3 * k, m2 = k;
    const uint32_t w1 = 0, w2 = 4096, a1 = 8192, a2 = 16384, c1 = 32768, c2 = 49152;
    fill(rtl, mode, w1, k * n, Values::Moderate, rng);
    fill(rtl, mode, w2, k * n, Values::Moderate, rng);
    fill(rtl, mode, a1, m1 * k, Values::Moderate, rng);
    fill(rtl, mode, a2, m2 * k, Values::Moderate, rng);
    const std::vector<CommandCycles> cy = run_both(
        rtl, {preload(mode, k, n, w1, n * es), multiply(false, mode, m1, a1, k * es, c1, n * 4),
              preload(mode, k, n, w2, n * es), multiply(false, mode, m2, a2, k * es, c2, n * 4)});
    EXPECT_LT(cy[2].done, cy[1].done) << "the preload did not overlap the stream";
    EXPECT_EQ(cy[2].accepted, cy[1].accepted + 1);
  }
}

// A preload, an idle stretch of every length up to 2 C + 4 edges (MatrixRtl::advance_to stops
// the unit's clock as soon as every command is done, while the last columns' weights are still
// crossing the weight skew), then an mm with those weights: C must be the sequential result.
// Catches a pause that is not exact: state lost or reset over the skipped edges, or weights
// that, resumed, would land after the next rows reach their column.
TEST(RtlMatrix, IdleGapKeepsWeights) {
  for (const BuiltArray &arr : per_size_arrays()) {
    MatrixRtl rtl = make(arr);
    test::Rng rng(17);
    const DType mode = DType::BF16;
    const uint32_t es = 2, k = arr.rows, n = arr.cols, w = 0, a = 16384, c = 32768;
    for (uint32_t gap = 0; gap <= 2 * n + 4; ++gap) {
      fill(rtl, mode, w, k * n, Values::Moderate, rng);
      fill(rtl, mode, a, k, Values::Moderate, rng);
      std::vector<uint8_t> expected(rtl.memory(), rtl.memory() + rtl.memory_size());
      const std::vector<MxCommand> cmds = {preload(mode, k, n, w, n * es),
                                           multiply(false, mode, 1, a, k * es, c, n * 4)};
      run_sequentially(expected, cmds);
      rtl.submit(cmds[0]);
      rtl.run();
      rtl.advance_to(rtl.cycle() + gap);
      rtl.submit(cmds[1]);
      rtl.run();
      ASSERT_EQ(0, std::memcmp(expected.data(), rtl.memory(), expected.size()))
          << arr.rows << "x" << arr.cols << ": C differs after an idle gap of " << gap << " edges";
    }
  }
}

// Reads of bytes that an earlier command is still writing (C rows, A or weights produced by the
// previous mm) see the written value, as in the fast model where commands run one after
// another. Catches a missing or too short read-after-write interlock.
TEST(RtlMatrix, ReadAfterWrite) {
  const BuiltArray &arr = smallest();
  MatrixRtl rtl = make(arr);
  test::Rng rng(17);
  const uint32_t R = arr.rows, C = arr.cols;
  for (DType mode : kModes) {
    const uint32_t es = static_cast<uint32_t>(num::dtype_size(mode));
    fill(rtl, mode, 0, R * C, Values::Moderate, rng);
    fill(rtl, mode, 4096, 8 * R, Values::Moderate, rng);
    fill(rtl, DType::F32, 8192, 8 * C, Values::Moderate, rng);
    // mx.mma one row at a time on the row the previous command writes; then a whole chain into
    // one C row (ldc = 0: row i accumulates onto row i - 1's result).
    run_both(rtl, {preload(mode, R, C, 0, C * es), multiply(false, mode, 1, 4096, R * es, 8192, 0),
                   multiply(true, mode, 1, 4096 + R * es, R * es, 8192, 0),
                   multiply(true, mode, 5, 4096, R * es, 8192, 0),
                   multiply(true, mode, 2, 4096, R * es, 8192, C * 4)});
  }
  // f32: the next mm's A and the next preload's weights are the C rows just written.
  fill(rtl, DType::F32, 0, R * C, Values::Moderate, rng);
  fill(rtl, DType::F32, 4096, R * R, Values::Moderate, rng);
  run_both(rtl, {preload(DType::F32, R, C, 0, C * 4),
                 multiply(false, DType::F32, R, 4096, R * 4, 16384, C * 4),
                 preload(DType::F32, std::min(R, C), C, 16384, C * 4),
                 multiply(false, DType::F32, 2, 16384, C * 4, 24576, C * 4)});
}

// The RTL's cycles per command (edges from acceptance to the last write), as README.md states:
// preload R + 1; a cold mm m + R + C + 1 (f32: (m - 1) * passes + R + C + 2); an mm right behind
// an mm m (f32: m * passes) more; a preload behind an mm delays the next mm by
// max(0, R + 1 - m); after a gap the array has drained: no extra cost. Catches passes ignored,
// commands that do not overlap, a preload that does not overlap the stream.
TEST(RtlMatrix, CycleCounts) {
  const BuiltArray &arr = smallest();
  const uint64_t R = static_cast<uint64_t>(arr.rows), C = static_cast<uint64_t>(arr.cols);
  const uint64_t P = static_cast<uint64_t>(arr.fp32_passes);
  const uint32_t k = arr.rows, n = arr.cols;
  {
    MatrixRtl rtl = make(arr);
    const DType t = DType::BF16;
    const auto cy =
        run_both(rtl, {preload(t, k, n, 0, n * 2), multiply(false, t, 5, 4096, k * 2, 8192, n * 4),
                       multiply(false, t, 7, 4096, k * 2, 12288, n * 4), preload(t, k, n, 0, n * 2),
                       multiply(true, t, 2, 4096, k * 2, 16384, n * 4),
                       multiply(false, t, 0, 4096, k * 2, 20480, n * 4)});
    EXPECT_EQ(cy[0].done - cy[0].accepted, R + 1);
    EXPECT_EQ(cy[1].accepted, cy[0].accepted + R);
    EXPECT_EQ(cy[1].done - cy[1].accepted, 5 + R + C + 1);
    EXPECT_EQ(cy[2].done - cy[1].done, 7u);
    EXPECT_EQ(cy[3].accepted, cy[2].accepted + 1);
    EXPECT_EQ(cy[4].done - cy[2].done,
              2 + std::max<uint64_t>(0, R + 1 - std::min<uint64_t>(R + 1, 7)));
    EXPECT_EQ(cy[5].done - cy[4].done, 1u); // m = 0: one issue slot for its completion
    // A gap of 10 idle cycles: the array drains in place, the next mm pays fill and drain only.
    for (int i = 0; i < 10; ++i)
      rtl.step();
    const auto late = run_both(rtl, {multiply(false, t, 3, 4096, k * 2, 8192, n * 4)});
    EXPECT_EQ(late[0].done - late[0].accepted, 3 + R + C + 1);
  }
  {
    MatrixRtl rtl = make(arr);
    const DType t = DType::F32;
    const auto cy =
        run_both(rtl, {preload(t, k, n, 0, n * 4), multiply(false, t, 3, 4096, k * 4, 8192, n * 4),
                       multiply(false, t, 4, 4096, k * 4, 12288, n * 4)});
    EXPECT_EQ(cy[1].done - cy[1].accepted, 2 * P + R + C + 2);
    EXPECT_EQ(cy[2].done - cy[1].done, 4 * P);
  }
}

// Commands the unit cannot run are rejected with a message naming the command and the reason;
// fields its ports cannot carry are rejected at submit. Catches an RTL that runs a tile larger
// than the array (or with an unknown mode) instead of rejecting it, and a driver that crashes.
TEST(RtlMatrix, RejectsBadCommands) {
  const BuiltArray &arr = smallest();
  const uint32_t R = arr.rows, C = arr.cols;
  struct Case {
    std::vector<MxCommand> commands;
    const char *message;
  } cases[] = {
      {{preload(DType::BF16, R + 1, C, 0, 2 * C)}, "does not fit the array"},
      {{preload(DType::BF16, R, C + 1, 0, 2 * C)}, "does not fit the array"},
      {{preload(DType::BF16, 0, C, 0, 2 * C)}, "does not fit the array"},
      {{preload(DType::I32, R, C, 0, 4 * C)}, "unknown mode"},
      {{preload(static_cast<DType>(7), R, C, 0, 4 * C)}, "unknown mode"},
      {{multiply(false, DType::BF16, 1, 0, 2 * R, 4096, 4 * C)}, "no weights preloaded"},
      {{preload(DType::BF16, R, C, 0, 2 * C),
        multiply(false, DType::F16, 1, 0, 2 * R, 4096, 4 * C)},
       "mode differs"},
      {{preload(DType::F32, R, C, kMemory - 8, 4 * C)}, "outside the"},
      {{preload(DType::I8, R, C, 0, C), multiply(true, DType::I8, 2, 0, R, kMemory - 4, 4 * C)},
       "outside the"},
  };
  for (const Case &c : cases) {
    MatrixRtl rtl = make(arr);
    for (const MxCommand &x : c.commands)
      rtl.submit(x);
    try {
      rtl.run();
      ADD_FAILURE() << "no error; expected one saying \"" << c.message << "\"";
    } catch (const RtlError &e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
  MatrixRtl rtl = make(arr);
  EXPECT_THROW(rtl.submit(preload(DType::BF16, 70000, 1, 0, 2)), std::invalid_argument);
  EXPECT_THROW(rtl.submit(preload(static_cast<DType>(9), 1, 1, 0, 2)), std::invalid_argument);
}

// A few hundred random tiles on the largest array built (128 x 128 by default): every dtype,
// each of the seven value kinds in turn (NaN / inf / subnormal / extremes in Special, Tiny,
// Huge), partial k x n shapes half of the time, mx.mm and mx.mma at random, m up to 2 R, back to
// back. Catches what only shows at size: skew lanes past 8, wide row ports, long flight buffers,
// the hierarchical build's blocks joined wrongly (a block's sums or row index off).
TEST(RtlMatrix, LargestArrayRandomTiles) {
  const BuiltArray &arr = largest();
  MatrixRtl rtl = make(arr);
  test::Rng rng(19);
  std::vector<Tile> tiles;
  for (int i = 0; i < static_cast<int>(env_count("TL_RTL_LARGE_TILES", 300)); ++i)
    tiles.push_back(test::random_tile(kModes[i % 4], static_cast<Values>((i / 4) % 7), arr.rows,
                                      arr.cols, rng));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(run_tiles(rtl, tiles, rng), "");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu tiles on the %dx%d array, %llu cycles, %.1f s\n", tiles.size(), arr.rows,
              arr.cols, static_cast<unsigned long long>(rtl.cycle()), s);
}

} // namespace
} // namespace tl::npu::rtl
