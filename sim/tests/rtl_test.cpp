// The matrix unit as RTL inside the simulator (core.matrix.kind "rtl" / "cross-check"): whole
// GEMM programs bit for bit, results held back until they are in memory, the cross-check's report
// and its detection of a wrong row, and the errors for a size not built and a rejected command.
// One scenario per process; each says which wrong transactor fails it.
// SPDX-License-Identifier: Apache-2.0
#include "gemm.h"
#include "harness.h"

#include "../model/src/matrix_cross_check.h"
#include "../model/src/matrix_timing.h"

#include "tl/npu/rtl/built_arrays.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace tl::npu::test {
namespace {

ChipConfig rtl_chip(const std::string &name, MatrixKind kind) {
  ChipConfig cfg = chip(name);
  cfg.core.matrix.kind = kind;
  return cfg;
}

struct GemmRun {
  SimReport report;
  std::vector<uint32_t> c;
};

GemmRun run_gemm(const ChipConfig &cfg, const GemmProblem &p, const std::vector<uint8_t> &a,
                 const std::vector<uint8_t> &b, Fidelity fidelity = Fidelity::CycleApprox) {
  SimOptions opts;
  opts.fidelity = fidelity;
  Simulator sim(cfg, opts);
  sim.load_program(-1, assemble_file(program_path("gemm.s"), p.defines(cfg)));
  sim.write_hbm(p.a_addr, a.data(), a.size());
  sim.write_hbm(p.b_addr, b.data(), b.size());
  GemmRun r{sim.run(), std::vector<uint32_t>(static_cast<size_t>(p.M) * p.N)};
  TNPU_CHECK(r.report.status == SimStatus::Ok, r.report.message);
  sim.read_hbm(p.c_addr, r.c.data(), r.c.size() * 4);
  return r;
}

/// The tiled GEMM on the edge chip (32 x 32) with the RTL unit, against the reference in the
/// program's order, bit for bit. Fails if the RTL computes wrong, if the accumulator is mapped
/// wrong, or if a sem.sig runs ahead of the C rows still draining (the store DMA then copies
/// the accumulator before the last rows land).
void gemm_rtl(num::DType mode, Fidelity fidelity = Fidelity::CycleApprox) {
  ChipConfig cfg = rtl_chip("edge", MatrixKind::Rtl);
  GemmProblem p{70, 50, 90, mode};
  p.layout();
  auto a = random_matrix(mode, p.M, p.K, 11), b = random_matrix(mode, p.K, p.N, 12);
  GemmRun r = run_gemm(cfg, p, a, b, fidelity);
  // Functional mode: the RTL still computes every result, and no simulated time passes.
  TNPU_CHECK((r.report.cycles == 0) == (fidelity == Fidelity::Functional),
             "cycles " + std::to_string(r.report.cycles));
  const std::vector<uint32_t> want = gemm_in_program_order(p, cfg.core.matrix.rows, a, b);
  for (size_t i = 0; i < want.size(); ++i)
    TNPU_CHECK(r.c[i] == want[i], "C[" + std::to_string(i / p.N) + "][" + std::to_string(i % p.N) +
                                      "] = " + std::to_string(r.c[i]) + ", reference " +
                                      std::to_string(want[i]));
  auto j = nlohmann::json::parse(r.report.stats_json);
  TNPU_CHECK(j["matrix_unit"] == "rtl", "stats name the matrix unit's kind");
  TNPU_CHECK(stat(r.report, "core0.mx.flop") == 2.0 * 3 * 2 * 3 * 32 * 32 * 32, "flop count");
  std::printf("edge rtl %s 70x50x90: bit-exact, %llu cycles, %.3f s host\n", num::dtype_name(mode),
              static_cast<unsigned long long>(r.report.cycles), r.report.host_seconds);
}

/// The same GEMM in cross-check mode: every C row compared, and the cycles side by side. Fails
/// if a row is not compared (rows_compared), or compared wrong (mismatches), or if the fast
/// model's pipeline timing (matrix_timing.h) drifts from the RTL's by a single cycle on any
/// command.
void cross_check_gemm() {
  ChipConfig cfg = rtl_chip("edge", MatrixKind::CrossCheck);
  GemmProblem p{70, 50, 90, num::DType::F32};
  p.layout();
  auto a = random_matrix(p.mode, p.M, p.K, 13), b = random_matrix(p.mode, p.K, p.N, 14);
  GemmRun r = run_gemm(cfg, p, a, b);
  auto j = nlohmann::json::parse(r.report.stats_json);
  const auto &x = j["cross_check"]["core0"];
  std::printf("%s\n", x.dump().substr(0, 600).c_str());
  TNPU_CHECK(x["commands"] == 36, "3 x 2 output tiles x 3 k-steps, a preload and an mm each");
  TNPU_CHECK(x["rows_compared"] == 18 * 32, "every C row of the 18 mm commands compared");
  TNPU_CHECK(x["mismatches"] == 0, x["first_mismatches"].dump());
  TNPU_CHECK(x["cycle_max_abs_error"].get<double>() == 0, "per-command cycle error");
  TNPU_CHECK(x["cycle_error_histogram"]["0"] == 36, "histogram");
  TNPU_CHECK(x["rtl_end_cycle"] == x["model_end_cycle"], "stream end");
}

/// The cross-check itself, outside a simulation: a right row passes, one wrong bit is a
/// mismatch, and each model's cycles are what the timing table says. Fails if the comparison
/// ignores the data, or uses the wrong starting sum for mx.mma.
struct VecMemory final : rtl::Memory {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(4096, 0);
  uint8_t *span(uint32_t addr, size_t n, bool, const char *) override {
    TNPU_CHECK(addr + n <= bytes.size(), "range");
    return bytes.data() + addr;
  }
};

void cross_check_detects() {
  MatrixConfig mc{4, 4, 2, MatrixKind::CrossCheck};
  VecMemory mem;
  const float w[2][2] = {{1.5f, -2}, {0.25f, 3}}, a[2] = {2, 4}, c_old[2] = {1, 1};
  std::memcpy(&mem.bytes[0], w, sizeof w);           // W 2 x 2 at 0
  std::memcpy(&mem.bytes[64], a, sizeof a);          // A 1 x 2 at 64
  std::memcpy(&mem.bytes[128], c_old, sizeof c_old); // C 1 x 2 at 128
  model::MatrixCrossCheck check(mc, mem);
  rtl::MxCommand pre{rtl::MxOp::Preload, num::DType::F32, 2, 2, 0, 0, 8, 0, 0};
  rtl::MxCommand mma{rtl::MxOp::MultiplyAccumulate, num::DType::F32, 0, 0, 1, 64, 8, 128, 8};
  check.command(0, pre, 10);
  check.command(1, mma, 11);
  float right[2] = {1 + 2 * 1.5f + 4 * 0.25f, 1 + 2 * -2.0f + 4 * 3.0f}; // from the old C
  uint32_t lanes[2];
  std::memcpy(lanes, right, sizeof lanes);
  check.c_row(rtl::CRow{1, 0, 128, 2, lanes});
  TNPU_CHECK(check.mismatches() == 0, "the right row");
  lanes[1] ^= 1;
  check.c_row(rtl::CRow{1, 0, 128, 2, lanes});
  TNPU_CHECK(check.mismatches() == 1 && check.rows_compared() == 2, "one flipped bit");
  // Given: the RTL's preload done at 16, its mm at 30. The model: the preload taken at 11, its
  // rows at 12..15, done at 16; the mm taken at 15 (the preload's last row), its one row at 16,
  // written R + C + 1 = 9 edges later: 25. Per command, from the later of its issue and the
  // previous end: preload 6 and 6, mm 14 (RTL) and 9 (model).
  auto j = nlohmann::json::parse(check.report_json({16, 30}));
  TNPU_CHECK(j["per_command"][0][3] == 6 && j["per_command"][0][4] == 6, j.dump());
  TNPU_CHECK(j["per_command"][1][3] == 14 && j["per_command"][1][4] == 9, j.dump());
  TNPU_CHECK(j["cycle_max_abs_error"] == 5 && j["mismatches"] == 1, j.dump());
  TNPU_CHECK(j["cycle_error_histogram"]["-9..-3"] == 1 && j["cycle_error_histogram"]["0"] == 1,
             j.dump());
  TNPU_CHECK(j["first_mismatches"][0].get<std::string>().find("element 1") != std::string::npos,
             j.dump());
}

/// A fence (and halt) waits for the RTL's C rows: the command processor loads a C element
/// right after. Fails if the unit reports idle while its rows are still draining (the load then
/// reads the accumulator's old zero).
void fence_holds_back() {
  ChipConfig cfg = rtl_chip("edge", MatrixKind::Rtl);
  Simulator sim(cfg, SimOptions{});
  const float one = 1.0f, two = 2.0f;
  for (int i = 0; i < 32 * 32; ++i)
    sim.write_local(0, 4ull * i, &one, 4); // W: 32 x 32 ones (f32)
  for (int i = 0; i < 8 * 32; ++i)
    sim.write_local(0, 8192 + 4ull * i, &two, 4); // A: 8 x 32 twos
  sim.load_program(0, assemble_text("  mx.cfgi mode, f32\n  mx.cfgi k, 32\n  mx.cfgi n, 32\n"
                                    "  mx.cfgi m, 8\n  mx.cfgi lda, 128\n  mx.cfgi ldw, 128\n"
                                    "  mx.cfgi ldc, 128\n  li r2, ACC\n  li r3, 8192\n"
                                    "  mx.pre r0\n  mx.mm r2, r3\n  fence\n  ldw r5, r2, 924\n"
                                    "  halt\n"));
  SimReport r = sim.run();
  TNPU_CHECK(r.status == SimStatus::Ok, r.message);
  float got;
  const uint32_t bits = static_cast<uint32_t>(sim.reg(0, 5));
  std::memcpy(&got, &bits, 4);
  TNPU_CHECK(got == 64.0f, "C[7][31] loaded after the fence: " + std::to_string(got));
}

/// A chip whose array size this build did not verilate: a ConfigError naming the field, the
/// size and the CMake setting, at construction.
void not_built() {
  ChipConfig cfg = rtl_chip("edge", MatrixKind::Rtl);
  cfg.core.matrix.rows = cfg.core.matrix.cols = 24;
  try {
    Simulator sim(cfg, SimOptions{});
    fail("no error for a 24 x 24 RTL");
  } catch (const ConfigError &e) {
    const std::string m = e.what();
    std::printf("%s\n", m.c_str());
    for (const char *part : {"'core.matrix.kind'", "24x24:4", "TL_NPU_RTL_ARRAYS=", "32x32:4"})
      TNPU_CHECK(m.find(part) != std::string::npos, m);
  }
}

/// The RTL's own rejection (an mm with no weights) ends the run as a program error naming the
/// core, the unit and the command.
void rejected_command() {
  Simulator sim(rtl_chip("edge", MatrixKind::Rtl), SimOptions{});
  sim.load_program(0, assemble_text("  mx.cfgi mode, bf16\n  mx.cfgi m, 4\n  li r2, ACC\n"
                                    "  mx.mm r2, r0\n  halt\n"));
  SimReport r = sim.run();
  TNPU_CHECK(r.status == SimStatus::ProgramError, status_name(r.status));
  for (const char *part : {"core0 mx: command #0 (mx.mm at pc ", "no weights preloaded"})
    TNPU_CHECK(r.message.find(part) != std::string::npos, r.message);
}

/// Compute-only command streams with gaps of 0, 1, 2, 8 and 100 cycles between a command being
/// taken and the next one offered, on every array built and in every mode: random preloads
/// (partial tiles), mx.mm and chained mx.mma (same C: the read-after-write wait), m from 0 to
/// 2R + 3, A rows overlapping C rows in flight now and then. Each command's take and done edges
/// from the fast model's timing (matrix_timing.h) against the RTL's: the issue asks for +-2;
/// the model is exact, and any difference fails. Fails on a wrong fill, drain, preload overlap,
/// f32 pass count, idle-gap cost or interlock in the model.
/// `banks` limit the RTL's and the model's row reads (banks = 0: unlimited); `label` names them.
/// The arrays the command streams run on: every built size up to 32 x 32 PEs (a 128 x 128 array
/// simulates ~700 cycles a host second: minutes a stream, past CI's time), every size with
/// TL_RTL_ALL_SIZES=1 (`ctest -C Volume -R sim-rtl-streams-all-sizes`).
std::vector<rtl::BuiltArray> stream_arrays() {
  const char *all = std::getenv("TL_RTL_ALL_SIZES");
  std::vector<rtl::BuiltArray> v;
  for (const rtl::BuiltArray &a : rtl::built_arrays())
    if (a.rows * a.cols <= 32 * 32 || (all && std::string(all) == "1"))
      v.push_back(a);
  return v;
}

size_t run_streams(const rtl::SramBanks &banks, const std::string &label, int64_t &worst) {
  size_t commands = 0;
  for (const rtl::BuiltArray &arr : stream_arrays()) {
    for (num::DType mode : {num::DType::BF16, num::DType::F32, num::DType::I8, num::DType::F16})
      for (uint64_t gap : {0, 1, 2, 8, 100}) {
        rtl::MatrixRtl unit(arr.make(), 1 << 20);
        unit.set_sram_banks(banks);
        MatrixConfig mc{arr.rows, arr.cols, arr.fp32_passes, MatrixKind::Rtl};
        model::MatrixTiming timing(mc, model::MxBanks{banks.banks, banks.width, banks.end});
        const uint64_t base = unit.cycle();
        std::mt19937 rng(
            static_cast<uint32_t>(arr.rows * 1000 + gap * 10 + static_cast<int>(mode)));
        const uint32_t es = static_cast<uint32_t>(num::dtype_size(mode));
        const uint32_t R = static_cast<uint32_t>(arr.rows), C = static_cast<uint32_t>(arr.cols);
        uint32_t k = 0, n = 0, c_at = 0x40000, last_c = 0x40000;
        std::vector<uint64_t> model_done;
        const std::string what = label + std::to_string(arr.rows) + "x" + std::to_string(arr.cols) +
                                 " " + num::dtype_name(mode) + " gap " + std::to_string(gap);
        for (int i = 0; i < 48; ++i) {
          rtl::MxCommand c;
          c.mode = mode;
          const bool pre = i == 0 || rng() % 3 == 0;
          if (pre) {
            c.op = rtl::MxOp::Preload;
            c.k = k = 1 + rng() % R;
            c.n = n = 1 + rng() % C;
            c.src = 0;
            c.src_stride = C * es;
          } else {
            c.op = rng() % 2 ? rtl::MxOp::MultiplyAccumulate : rtl::MxOp::Multiply;
            c.m = rng() % 8 == 0 ? 0 : 1 + rng() % (2 * R + 3);
            const bool chain = rng() % 2 == 0;
            c.dst = chain ? last_c : (c_at = 0x40000 + (c_at - 0x40000 + 0x8000) % 0x80000);
            last_c = c.dst;
            c.dst_stride = 4 * C;
            // Now and then A is the C rows just written (a read-after-write through A).
            c.src = rng() % 6 == 0 ? last_c : 0x10000;
            c.src_stride = c.src == last_c ? 4 * C : R * es;
          }
          const uint64_t issue = unit.cycle() - base;
          unit.submit(c);
          while (unit.pending())
            unit.step();
          model::MxTimingCommand t;
          t.preload = pre;
          t.accumulate = c.op == rtl::MxOp::MultiplyAccumulate;
          t.m = c.m;
          t.k = k;
          t.n = n;
          t.elem_bytes = es;
          t.passes = mode == num::DType::F32 ? arr.fp32_passes : 1;
          t.src = c.src;
          t.src_stride = c.src_stride;
          t.dst = c.dst;
          t.dst_stride = c.dst_stride;
          const model::MxTimes m = timing.command(t, issue);
          model_done.push_back(m.done);
          const auto accept = static_cast<int64_t>(unit.cycles().back().accepted - base);
          worst = std::max<int64_t>(worst, std::abs(static_cast<int64_t>(m.accept) - accept));
          TNPU_CHECK(static_cast<int64_t>(m.accept) == accept,
                     what + " command " + std::to_string(i) + ": taken at " +
                         std::to_string(m.accept) + " (model), " + std::to_string(accept) +
                         " (RTL)");
          unit.advance_to(unit.cycle() + gap);
        }
        unit.run();
        const std::vector<rtl::CommandCycles> &cc = unit.cycles();
        for (size_t i = 0; i < cc.size(); ++i) {
          const auto done = static_cast<int64_t>(cc[i].done - base);
          worst = std::max<int64_t>(worst, std::abs(static_cast<int64_t>(model_done[i]) - done));
          TNPU_CHECK(static_cast<int64_t>(model_done[i]) == done,
                     what + " command " + std::to_string(i) + ": done at " +
                         std::to_string(model_done[i]) + " (model), " + std::to_string(done) +
                         " (RTL)");
        }
        commands += cc.size();
      }
  }
  return commands;
}

void gap_streams() {
  int64_t worst = 0;
  const size_t commands = run_streams({}, "", worst);
  std::printf("gap streams: %zu commands, largest model - RTL difference %lld cycles\n", commands,
              static_cast<long long>(worst));
}

/// The SRAM banks feeding the array (core.sram.banks x bank_width; MatrixRtl::set_sram_banks,
/// MatrixTiming's MxBanks). Three parts, each failing on its own wrong thing:
///  - one preload and a 64-row mm, bf16, on the largest stream array: with 1 bank of 4 B an A row
///  of
///    R bf16 elements takes R / 2 edges, so the mm streams that much slower in the RTL and in the
///    model, and the two agree exactly (fails if either ignores the banks, or a port's busy
///    edges are off by one);
///  - the gap streams again with narrow banks: 2 x 8 B with the C rows (0x40000 on) outside the
///    banks, as an accumulator is, and 4 x 4 B with everything banked (an mx.mma's C row read
///    shares the A row's banks), every command's take and done edge exact (fails on a wrong
///    closed form: a row's words miscounted, the C row not shared, a stall on an unbanked row,
///    the port's busy edges not carried from one command to the next);
///  - the tiled GEMM on the edge chip with 1 bank of 16 B in cross-check mode: 0 mismatches, 0
///    cycles of error on every command, and the matrix unit busy longer than on the edge chip's
///    own 8 x 32 B banks, in RTL mode and in model mode alike, with identical totals (fails if
///    the simulator does not pass the chip's banks to the RTL, the model or the cross-check).
void narrow_banks() {
  const rtl::BuiltArray arr = stream_arrays().back();
  const uint32_t R = static_cast<uint32_t>(arr.rows), C = static_cast<uint32_t>(arr.cols);
  uint64_t done[2][2] = {}; // [narrow][rtl]
  for (int narrow = 0; narrow < 2; ++narrow) {
    const rtl::SramBanks banks = narrow ? rtl::SramBanks{1, 4, 1u << 20} : rtl::SramBanks{};
    rtl::MatrixRtl unit(arr.make(), 1 << 20);
    unit.set_sram_banks(banks);
    model::MatrixTiming timing(MatrixConfig{arr.rows, arr.cols, arr.fp32_passes, MatrixKind::Rtl},
                               model::MxBanks{banks.banks, banks.width, banks.end});
    const uint64_t base = unit.cycle();
    rtl::MxCommand pre{rtl::MxOp::Preload, num::DType::BF16, R, C, 0, 0, 2 * C, 0, 0};
    rtl::MxCommand mm{
        rtl::MxOp::Multiply, num::DType::BF16, 0, 0, 64, 0x10000, 2 * R, 0x40000, 4 * C};
    unit.submit(pre);
    unit.submit(mm);
    unit.run();
    model::MxTimingCommand tp, tm;
    tp.preload = true;
    tp.k = R;
    tp.n = C;
    tp.src_stride = 2 * C;
    tm.m = 64;
    tm.k = R;
    tm.n = C;
    tm.src = 0x10000;
    tm.src_stride = 2 * R;
    tm.dst = 0x40000;
    tm.dst_stride = 4 * C;
    timing.command(tp, 0);
    done[narrow][0] = timing.command(tm, 0).done;
    done[narrow][1] = unit.cycles().back().done - base;
    TNPU_CHECK(done[narrow][0] == done[narrow][1],
               std::string(narrow ? "narrow" : "wide") + " banks: mm done at " +
                   std::to_string(done[narrow][0]) + " (model), " +
                   std::to_string(done[narrow][1]) + " (RTL)");
  }
  // 1 bank of 4 B: a row of R bf16 elements is R / 2 words, R / 2 edges.
  const uint64_t per_row = R / 2;
  TNPU_CHECK(done[1][1] >= done[0][1] + 63 * (per_row - 1),
             "narrow banks: mm done at " + std::to_string(done[1][1]) + ", wide at " +
                 std::to_string(done[0][1]) + ": the banks do not slow the array");
  std::printf(
      "%ux%u bf16 mm of 64 rows: done at edge %llu with unlimited banks, %llu with 1 x 4 B\n", R, C,
      static_cast<unsigned long long>(done[0][1]), static_cast<unsigned long long>(done[1][1]));

  int64_t worst = 0;
  size_t commands =
      run_streams(rtl::SramBanks{2, 8, 0x40000}, "banks 2 x 8 B, C unbanked: ", worst);
  commands += run_streams(rtl::SramBanks{4, 4, 1u << 20}, "banks 4 x 4 B: ", worst);
  std::printf("narrow-bank streams: %zu commands, largest model - RTL difference %lld cycles\n",
              commands, static_cast<long long>(worst));

  GemmProblem p{70, 50, 90, num::DType::BF16};
  p.layout();
  auto a = random_matrix(p.mode, p.M, p.K, 15), b = random_matrix(p.mode, p.K, p.N, 16);
  double busy[2][2] = {};
  unsigned long long total[2][2] = {};
  for (int narrow = 0; narrow < 2; ++narrow)
    for (int rtl_mode = 0; rtl_mode < 2; ++rtl_mode) {
      ChipConfig cfg = rtl_chip("edge", rtl_mode ? MatrixKind::CrossCheck : MatrixKind::Model);
      if (narrow) {
        cfg.core.sram.banks = 1;
        cfg.core.sram.bank_width = 16;
      }
      // One simulation per process (SystemC elaborates once).
      const std::string out = in_child([&] {
        GemmRun r = run_gemm(cfg, p, a, b);
        if (rtl_mode) {
          auto j = nlohmann::json::parse(r.report.stats_json);
          const auto &x = j["cross_check"]["core0"];
          TNPU_CHECK(x["mismatches"] == 0, x["first_mismatches"].dump());
          TNPU_CHECK(x["cycle_max_abs_error"].get<double>() == 0,
                     std::string(narrow ? "narrow" : "wide") + " banks: per-command cycle error " +
                         x["cycle_error_histogram"].dump());
        }
        return std::to_string(r.report.cycles) + " " +
               std::to_string(stat(r.report, "core0.mx.busy_cycles"));
      });
      std::sscanf(out.c_str(), "%llu %lf", &total[narrow][rtl_mode], &busy[narrow][rtl_mode]);
    }
  for (int narrow = 0; narrow < 2; ++narrow)
    TNPU_CHECK(total[narrow][0] == total[narrow][1] && busy[narrow][0] == busy[narrow][1],
               std::string(narrow ? "narrow" : "wide") + " banks: model " +
                   std::to_string(total[narrow][0]) + " cycles (matrix busy " +
                   std::to_string(busy[narrow][0]) + "), RTL " + std::to_string(total[narrow][1]) +
                   " (busy " + std::to_string(busy[narrow][1]) + ")");
  TNPU_CHECK(busy[1][1] > 1.5 * busy[0][1], "1 x 16 B banks: matrix busy " +
                                                std::to_string(busy[1][1]) +
                                                " cycles, 8 x 32 B: " + std::to_string(busy[0][1]));
  std::printf("edge gemm bf16 70x50x90: matrix busy %.0f cycles (8 x 32 B banks), %.0f (1 x 16 B); "
              "total %llu / %llu; model = RTL in both\n",
              busy[0][1], busy[1][1], total[0][1], total[1][1]);
}

} // namespace
} // namespace tl::npu::test

int sc_main(int argc, char *argv[]) {
  using namespace tl::npu;
  using namespace tl::npu::test;
  return main_with({{"gemm-bf16", [] { gemm_rtl(num::DType::BF16); }},
                    {"gemm-f32", [] { gemm_rtl(num::DType::F32); }},
                    {"gemm-i8", [] { gemm_rtl(num::DType::I8); }},
                    {"gemm-functional", [] { gemm_rtl(num::DType::BF16, Fidelity::Functional); }},
                    {"cross-check-gemm", cross_check_gemm},
                    {"cross-check-detects", cross_check_detects},
                    {"fence-holds-back", fence_holds_back},
                    {"not-built", not_built},
                    {"rejected-command", rejected_command},
                    {"gap-streams", gap_streams},
                    {"narrow-banks", narrow_banks}},
                   argc, argv);
}
