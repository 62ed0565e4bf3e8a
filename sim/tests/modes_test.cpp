// Arithmetic on and off (SimOptions::compute_data): out-of-bounds programs fail the same way in
// both modes, and an index tile or scalar load that depends on skipped matrix arithmetic is
// rejected with arithmetic off instead of timed wrong. (Every other scenario compares the two
// modes through run_checked.) One scenario per process.
// SPDX-License-Identifier: Apache-2.0
#include "ops_harness.h"

namespace tl::npu::test {
namespace {

/// One i8 tile (m = 1, k = 1, n = 16) into the accumulator: zeros with arithmetic on (the
/// weights are zero), stale with arithmetic off. r2 = ACC holds the result.
const char *kMatrixTile = R"(
    mx.cfgi mode, i8
    mx.cfgi k, 1
    mx.cfgi n, 16
    mx.cfgi m, 1
    mx.cfgi lda, 64
    mx.cfgi ldw, 64
    mx.cfgi ldc, 64
    li r2, ACC
    mx.pre r0
    mx.mm r2, r0
    fence
    dma.cfgi esize, 4
    dma.cfgi n0, 16
    dma.cfgi hs1, 64
    dma.cfgi ls1, 64
    dma.cfgi isz, 4
    li r1, 0x10000
    li r3, 0x1000
)";

/// Out of bounds is an error in both modes (it was reported as cycles with arithmetic off).
void expect_bounds_error(const std::string &program, const std::string &what) {
  SimReport r = run_program(make_sim(), program); // run_checked: both modes end the same way
  TNPU_CHECK(r.status == SimStatus::ProgramError, "status " + std::string(status_name(r.status)));
  TNPU_CHECK(r.message.find(what) != std::string::npos, r.message);
}

void matrix_out_of_bounds() {
  // 64 rows of C, 1 MiB apart: row 1 is already past the accumulator.
  expect_bounds_error("  mx.cfgi mode, bf16\n  mx.cfgi k, 16\n  mx.cfgi n, 16\n"
                      "  mx.cfgi m, 64\n  mx.cfgi lda, 64\n  mx.cfgi ldw, 64\n"
                      "  mx.cfgi ldc, 0x100000\n  li r2, ACC\n  mx.pre r0\n  mx.mm r2, r0\n"
                      "  halt\n",
                      "mx C row: local range");
}

void vector_out_of_bounds() {
  expect_bounds_error("  v.cfgi t, f32\n  v.cfgi n, 64\n  li r1, 0x7ffffff0\n"
                      "  v.add r1, r0, r0\n  halt\n",
                      "v.add: local range");
}

/// Runs `program` with arithmetic on (must succeed) and off (must be rejected naming the mode).
void expect_rejected_when_off(const std::string &program) {
  Simulator &sim = make_sim();
  sim.load_program(0, assemble_text(program));
  const std::string off = in_child([&] {
    sim.set_compute_data(false);
    SimReport r = sim.run();
    return std::string(status_name(r.status)) + ": " + r.message;
  });
  SimReport on = sim.run();
  std::printf("on: %s (%llu cycles)\noff: %s\n", status_name(on.status),
              static_cast<unsigned long long>(on.cycles), off.c_str());
  TNPU_CHECK(on.status == SimStatus::Ok, on.message);
  TNPU_CHECK(
      off.rfind("program-error: ", 0) == 0 && off.find("arithmetic-off") != std::string::npos, off);
}

void stale_index_tile() {
  expect_rejected_when_off(std::string(kMatrixTile) +
                           "    dma.cfgi n1, 16\n    dma.gather dma0, r3, r1, r2\n    halt\n");
}

/// The stale values go to HBM and come back before they become indices.
void stale_index_through_hbm() {
  expect_rejected_when_off(std::string(kMatrixTile) + R"(
    dma.cfgi n1, 1
    li r4, 0x20000
    dma.st dma1, r4, r2
    fence
    li r5, 0x2000
    dma.ld dma1, r5, r4
    fence
    v.cfgi t, i32
    v.cfgi n, 16
    li r6, 0x3000
    v.abs r6, r5
    fence
    dma.cfgi n1, 16
    dma.gather dma0, r3, r1, r6
    halt
  )");
}

void stale_scalar_load() {
  expect_rejected_when_off(std::string(kMatrixTile) + "    ld r7, r2, 8\n    halt\n");
}

/// Clean data overwriting the stale values makes them indices that both modes time alike.
void overwritten_index_tile() {
  SimReport r = run_program(make_sim(), std::string(kMatrixTile) + R"(
    dma.cfgi n1, 1
    li r4, 0x20000
    dma.st dma1, r4, r2
    fence
    li r5, 0x2000
    dma.st dma1, r4, r5
    fence
    dma.ld dma1, r5, r4
    fence
    dma.cfgi n1, 16
    dma.gather dma0, r3, r1, r5
    halt
  )");
  TNPU_CHECK(r.status == SimStatus::Ok, r.message);
}

} // namespace
} // namespace tl::npu::test

int sc_main(int argc, char **argv) {
  using namespace tl::npu::test;
  return main_with({{"matrix-out-of-bounds", matrix_out_of_bounds},
                    {"vector-out-of-bounds", vector_out_of_bounds},
                    {"stale-index-tile", stale_index_tile},
                    {"stale-index-through-hbm", stale_index_through_hbm},
                    {"stale-scalar-load", stale_scalar_load},
                    {"overwritten-index-tile", overwritten_index_tile}},
                   argc, argv);
}
