// Per-unit timing against closed forms, and multi-core HBM contention against the HBM model.
// Run one scenario per process: tl_npu_timing_test <scenario>.
// SPDX-License-Identifier: Apache-2.0
#include "harness.h"

#include <cmath>
#include <cstdio>

namespace tl::npu::test {
namespace {

/// Runs `program` on core 0 of `cfg` (cycle-approximate) and returns the report.
SimReport run_one(const ChipConfig &cfg, const std::string &program,
                  const std::map<std::string, int64_t> &defines = {}) {
  Simulator sim(cfg, SimOptions{});
  sim.load_program(0, assemble_text(program, defines));
  SimReport r = run_checked(sim);
  TNPU_CHECK(r.status == SimStatus::Ok, r.message);
  return r;
}

void expect_cycles(double got, double want, const std::string &what) {
  std::printf("%s: %.2f cycles (closed form %.2f)\n", what.c_str(), got, want);
  TNPU_CHECK(std::fabs(got - want) <= 0.01,
             what + ": got " + std::to_string(got) + ", want " + std::to_string(want));
}

/// A 1-D load of N bytes: setup + (N/G - 1) G/E (issue of the last granule) + G/(B/C) (its
/// service) + latency, when the engine rate E is below the HBM rate B (no channel queueing).
void dma_contiguous() {
  ChipConfig cfg = chip("default");
  const double n = 65536, g = static_cast<double>(cfg.hbm.interleave);
  const double e = cfg.dma_bytes_per_cycle(), b = cfg.hbm_bytes_per_cycle();
  const double want = cfg.core.dma.setup * cfg.clock + (n / g - 1) * g / e +
                      g / (b / cfg.hbm.channels) + cfg.hbm.latency * cfg.clock;
  SimReport r =
      run_one(cfg, "  dma.cfgi n0, 65536\n  li r1, 4096\n  dma.ld dma0, r0, r1\n  halt\n");
  expect_cycles(stat(r, "core0.dma0.busy_cycles"), want, "dma 64 KiB contiguous");
  TNPU_CHECK(stat(r, "hbm.read_bytes") == n, "bytes read");
}

/// Rows strided by channels * interleave all land on one channel: they serialize on it.
void dma_channel_conflict() {
  ChipConfig cfg = chip("default");
  const double rows = 64, g = static_cast<double>(cfg.hbm.interleave);
  const double service = g / (cfg.hbm_bytes_per_cycle() / cfg.hbm.channels);
  const double want = cfg.core.dma.setup * cfg.clock + rows * service + cfg.hbm.latency * cfg.clock;
  SimReport r = run_one(cfg,
                        "  dma.cfgi n0, IL\n  dma.cfgi n1, 64\n  dma.cfgi hs1, IL * CH\n"
                        "  dma.cfgi ls1, IL\n  dma.ld dma0, r0, r0\n  halt\n",
                        {{"IL", cfg.hbm.interleave}, {"CH", cfg.hbm.channels}});
  expect_cycles(stat(r, "core0.dma0.busy_cycles"), want, "dma channel conflict");
}

/// Local rows strided by banks * bank_width all hit one bank: one row per cycle.
void dma_bank_conflict() {
  ChipConfig cfg = chip("default");
  const int rows = 512, w = cfg.core.sram.bank_width;
  const double want = cfg.core.dma.setup * cfg.clock + rows;
  SimReport r = run_one(cfg,
                        "  dma.cfgi n0, W\n  dma.cfgi n1, 512\n  dma.cfgi hs1, W\n"
                        "  dma.cfgi ls1, W * BANKS\n  dma.ld dma0, r0, r0\n"
                        "  dma.cfgi ls1, W\n  dma.ld dma1, r0, r0\n  halt\n",
                        {{"W", w}, {"BANKS", cfg.core.sram.banks}});
  expect_cycles(stat(r, "core0.dma0.busy_cycles"), want, "dma bank conflict");
  TNPU_CHECK(stat(r, "core0.dma1.busy_cycles") < want * 0.8, "conflict-free copy is faster");
}

/// Preload R cycles; compute R + m * passes + C.
void matrix_tile() {
  ChipConfig cfg = chip("default");
  const double rr = cfg.core.matrix.rows, cc = cfg.core.matrix.cols;
  SimReport r =
      run_one(cfg, "  mx.cfgi mode, bf16\n  mx.cfgi k, 128\n  mx.cfgi n, 128\n"
                   "  mx.cfgi m, 37\n  mx.cfgi lda, 256\n  mx.cfgi ldw, 256\n"
                   "  mx.cfgi ldc, 512\n  li r2, ACC\n  mx.pre r0\n  mx.mm r2, r0\n  halt\n");
  // The RTL's pipeline (matrix_timing.h): the preload R + 1 edges; the mm taken at the preload's
  // last row, done m + R + C + 1 edges later. Busy: edges with a command taken and not done.
  expect_cycles(stat(r, "core0.mx.busy_cycles"), rr + (37 + rr + cc + 1), "matrix bf16 tile m=37");
  TNPU_CHECK(stat(r, "core0.mx.flop") == 2.0 * 37 * 128 * 128, "flop count");
  SimReport f = [&] { return SimReport{}; }();
  (void)f;
}

void matrix_f32_tile() {
  ChipConfig cfg = chip("default");
  const double rr = cfg.core.matrix.rows, cc = cfg.core.matrix.cols;
  SimReport r =
      run_one(cfg, "  mx.cfgi mode, f32\n  mx.cfgi k, 64\n  mx.cfgi n, 32\n"
                   "  mx.cfgi m, 128\n  mx.cfgi lda, 256\n  mx.cfgi ldw, 128\n"
                   "  mx.cfgi ldc, 128\n  li r2, ACC\n  mx.pre r0\n  mx.mma r2, r0\n  halt\n");
  // f32: the last of m rows issues (m - 1) * passes edges after the first.
  expect_cycles(stat(r, "core0.mx.busy_cycles"),
                rr + (127.0 * cfg.core.matrix.fp32_passes + rr + cc + 2), "matrix f32 tile");
}

const char *kTwoTiles =
    "  mx.cfgi mode, bf16\n  mx.cfgi k, 128\n  mx.cfgi n, 128\n  mx.cfgi m, 256\n"
    "  mx.cfgi lda, 256\n  mx.cfgi ldw, 256\n  mx.cfgi ldc, 512\n  li r2, ACC\n"
    "  mx.pre r0\n  mx.mm r2, r0\n  mx.pre r0\n  mx.mma r2, r0\n";

/// Back to back: the second preload hides behind the first stream, the second mm skips fill and
/// drain; it reads the C rows the first one writes (mx.mma), each one edge after it could have
/// issued, so it waits one edge (m < R + C + 2: the RTL's read-after-write interlock).
void matrix_pipelined() {
  ChipConfig cfg = chip("default");
  const double rr = cfg.core.matrix.rows, cc = cfg.core.matrix.cols;
  SimReport r = run_one(cfg, std::string(kTwoTiles) + "  halt\n");
  expect_cycles(stat(r, "core0.mx.busy_cycles"), rr + (256 + rr + cc + 1) + 256 + 1,
                "back to back");
}

/// After a gap (a semaphore wait on the vector unit's long copy) the array starts cold.
void matrix_cold_after_gap() {
  ChipConfig cfg = chip("default");
  const double rr = cfg.core.matrix.rows, cc = cfg.core.matrix.cols;
  SimReport g = run_one(cfg, std::string(kTwoTiles) +
                                 "  v.cfgi n, 65536\n  v.cfgi rows, 1\n  v.cfgi src, f32\n"
                                 "  v.cfgi dst, f32\n  li r3, 262144\n  v.copy r3, r0\n"
                                 "  sem.sig vec, s1, 1\n  sem.wait mx, s1, 1\n  mx.mma r2, r0\n"
                                 "  halt\n");
  expect_cycles(stat(g, "core0.mx.busy_cycles"),
                rr + (256 + rr + cc + 1) + 256 + 1 + (256 + rr + cc + 1), "cold after a gap");
}

/// depth + rows * ceil(n / W) * passes; reductions + log2 W per row.
void vector_ops() {
  ChipConfig cfg = chip("default");
  const double w = cfg.core.vector.lanes, d = cfg.core.vector.pipeline_depth;
  const double groups = std::ceil(1000 / w);
  SimReport r =
      run_one(cfg, "  v.cfgi n, 1000\n  v.cfgi rows, 3\n  v.cfgi sd, 4000\n"
                   "  v.cfgi sa, 4000\n  v.cfgi sb, 4000\n  li r1, 16384\n  li r2, 32768\n"
                   "  v.add r0, r1, r2\n  halt\n");
  expect_cycles(stat(r, "core0.vec.busy_cycles"), d + 3 * groups, "vector add 3x1000");
  TNPU_CHECK(stat(r, "core0.vec.flop") == 3000, "vector flop");
}

void vector_exp_reduce() {
  ChipConfig cfg = chip("default");
  const double w = cfg.core.vector.lanes, d = cfg.core.vector.pipeline_depth;
  const double groups = std::ceil(1000 / w), passes = cfg.core.vector.exp_passes;
  const double want = (d + 3 * groups * passes) + (d + 3 * (groups + std::log2(w)));
  SimReport r = run_one(cfg, "  v.cfgi n, 1000\n  v.cfgi rows, 3\n  v.cfgi sd, 4000\n"
                             "  v.cfgi sa, 4000\n  li r1, 16384\n  v.exp r0, r1\n"
                             "  v.cfgi sd, 4\n  v.rsum r1, r0\n  halt\n");
  expect_cycles(stat(r, "core0.vec.busy_cycles"), want, "vector exp + rsum 3x1000");
}

/// The new vector commands: div_passes, transcendental_passes, column reductions (one pass per
/// row group, no tree) and scans (log2 W per group) on the edge chip (W = 16).
void vector_new_ops() {
  ChipConfig cfg = chip("edge");
  const double w = cfg.core.vector.lanes, d = cfg.core.vector.pipeline_depth;
  const double groups = std::ceil(1000 / w), rows = 3;
  const double want = (d + rows * groups * cfg.core.vector.div_passes) +
                      (d + rows * groups * cfg.core.vector.transcendental_passes) +
                      (d + rows * groups) + (d + rows * groups * (1 + std::log2(w))) +
                      (d + rows * groups);
  SimReport r = run_one(cfg, R"(
    v.cfgi n, 1000
    v.cfgi rows, 3
    v.cfgi sd, 4000
    v.cfgi sa, 4000
    v.cfgi sb, 4000
    li r1, 16384
    li r2, 32768
    v.div r0, r1, r2
    v.tanh r0, r1
    v.csum r0, r1
    v.cumsum r0, r1
    v.clt r0, r1, r2
    halt
  )");
  expect_cycles(stat(r, "core0.vec.busy_cycles"), want, "vector div, tanh, csum, cumsum, clt");
}

/// Issue 19's vector commands on the edge chip: the math functions take transcendental_passes,
/// v.fmod div_passes (a long division), the exact ones (rint, class tests, maxnum, copysign,
/// popcount) one pass per element group.
void vector_later_ops() {
  ChipConfig cfg = chip("edge");
  const double w = cfg.core.vector.lanes, d = cfg.core.vector.pipeline_depth;
  const double groups = std::ceil(1000 / w), rows = 3;
  const double one = d + rows * groups;
  const double want = 2 * (d + rows * groups * cfg.core.vector.transcendental_passes) +
                      (d + rows * groups * cfg.core.vector.div_passes) + 4 * one;
  SimReport r = run_one(cfg, R"(
    v.cfgi n, 1000
    v.cfgi rows, 3
    v.cfgi sd, 4000
    v.cfgi sa, 4000
    v.cfgi sb, 4000
    li r1, 16384
    li r2, 32768
    v.erfinv r0, r1
    v.atan2 r0, r1, r2
    v.fmod r0, r1, r2
    v.rint r0, r1
    v.isnan r0, r1
    v.maxnum r0, r1, r2
    v.copysign r0, r1, r2
    halt
  )");
  expect_cycles(stat(r, "core0.vec.busy_cycles"), want,
                "vector erfinv, atan2, fmod, rint, isnan, maxnum, copysign");
}

/// A gather of n1 rows costs what a box load of the same n1 rows costs: setup, then one request
/// per row (indices 0..15 from v.iota; the two commands run one after the other).
void dma_gather() {
  SimReport r = run_one(chip("default"), R"(
    v.cfgi t, i32
    v.cfgi n, 16
    li r1, 1
    li r2, 0x8000
    v.iota r2, r0, r1
    fence
    dma.cfgi esize, 4
    dma.cfgi n0, 64
    dma.cfgi n1, 16
    dma.cfgi hs1, 4096
    dma.cfgi ls1, 256
    li r1, 65536
    dma.gather dma0, r0, r1, r2
    fence
    li r3, 0x10000
    dma.ld dma1, r3, r1
    halt
  )");
  const double gather = stat(r, "core0.dma0.busy_cycles"), box = stat(r, "core0.dma1.busy_cycles");
  std::printf("gather of 16 rows: %.2f cycles, box load: %.2f\n", gather, box);
  TNPU_CHECK(gather > 0 && std::fabs(gather - box) <= 0.01, "gather costs a box load of its rows");
}

/// Every core streams `bytes` with both engines at once. Each engine alone runs at its own rate
/// E; together they ask for cores * engines * E, and HBM gives at most B, so the model predicts
/// a slowdown of max(1, cores * engines * E / B) on the streaming part.
std::string contention_run(int active, uint64_t bytes) {
  ChipConfig cfg = chip("default");
  Simulator sim(cfg, SimOptions{});
  sim.load_program(-1,
                   assemble_text(R"(
      coreid r1
      li r9, ACTIVE
      bge r1, r9, done
      dma.cfgi n0, HALF
      li r2, 2 * HALF
      mul r3, r1, r2          # this core's region
      li r4, HALF
      add r4, r3, r4
      dma.ld dma0, r0, r3
      dma.ld dma1, r0, r4
done: halt
  )",
                                 {{"ACTIVE", active}, {"HALF", static_cast<int64_t>(bytes / 2)}}));
  SimReport r = run_checked(sim);
  TNPU_CHECK(r.status == SimStatus::Ok, r.message);
  double worst = 0;
  for (int c = 0; c < active; ++c)
    for (int e = 0; e < 2; ++e)
      worst = std::max(
          worst, stat(r, "core" + std::to_string(c) + ".dma" + std::to_string(e) + ".busy_cycles"));
  return std::to_string(worst);
}

void multicore_contention() {
  ChipConfig cfg = chip("default");
  const uint64_t bytes = 1 << 20;
  const int cores = cfg.cores, engines = cfg.core.dma.engines;
  const double e = cfg.dma_bytes_per_cycle(), b = cfg.hbm_bytes_per_cycle();
  const double fixed = cfg.core.dma.setup * cfg.clock + cfg.hbm.latency * cfg.clock;
  const double t1 = std::stod(in_child([&] { return contention_run(1, bytes); }));
  const double tn = std::stod(in_child([&] { return contention_run(cores, bytes); }));
  const double stream1 = static_cast<double>(bytes) / std::min(engines * e, b);
  const double streamn = static_cast<double>(bytes) * cores / std::min(cores * engines * e, b);
  const double model = std::max(1.0, cores * engines * e / b);
  const double measured = (tn - fixed) / (t1 - fixed);
  std::printf("contention: 1 core %.0f cycles (model %.0f), %d cores %.0f cycles (model %.0f)\n",
              t1, fixed + stream1, cores, tn, fixed + streamn);
  std::printf("slowdown of the streaming part: %.4f (HBM model %.4f)\n", measured, model);
  TNPU_CHECK(std::fabs(t1 - (fixed + stream1)) / t1 < 0.01, "single core vs closed form");
  TNPU_CHECK(std::fabs(tn - (fixed + streamn)) / tn < 0.01, "all cores vs closed form");
  TNPU_CHECK(std::fabs(measured / model - 1) < 0.01, "slowdown vs HBM model");
  TNPU_CHECK(model > 1.1, "the default chip must oversubscribe HBM for this test to mean much");
}

} // namespace
} // namespace tl::npu::test

int sc_main(int argc, char **argv) {
  using namespace tl::npu::test;
  return main_with({{"dma-contiguous", dma_contiguous},
                    {"dma-channel-conflict", dma_channel_conflict},
                    {"dma-bank-conflict", dma_bank_conflict},
                    {"matrix-tile", matrix_tile},
                    {"matrix-f32-tile", matrix_f32_tile},
                    {"matrix-pipelined", matrix_pipelined},
                    {"matrix-cold-after-gap", matrix_cold_after_gap},
                    {"vector-ops", vector_ops},
                    {"vector-exp-reduce", vector_exp_reduce},
                    {"vector-new-ops", vector_new_ops},
                    {"vector-later-ops", vector_later_ops},
                    {"dma-gather", dma_gather},
                    {"multicore-contention", multicore_contention}},
                   argc, argv);
}
