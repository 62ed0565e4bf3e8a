// DMA gather / scatter / atomic add with index tiles (bounds faults, masking, duplicates, atomicity
// across cores) and the command processor's local loads and stores driving control flow. One
// scenario per process.
// SPDX-License-Identifier: Apache-2.0
#include "ops_harness.h"

namespace tl::npu::test {
namespace {

constexpr uint64_t kTable = 0x100000; // HBM: 32 rows x 8 f32
constexpr int kRows = 32, kCols = 8;

std::vector<uint32_t> table() {
  std::vector<uint32_t> t(kRows * kCols);
  for (int i = 0; i < kRows * kCols; ++i)
    t[i] = bits(static_cast<float>(i) * 0.5f);
  return t;
}

/// i32 and i64 indices; v0 = 6 pads the last two elements of each row.
void gather() {
  Simulator &sim = make_sim();
  auto t = table();
  sim.write_hbm(kTable, t.data(), t.size() * 4);
  const std::vector<int32_t> idx32 = {5, 0, 31, 7, 5};
  const std::vector<int64_t> idx64 = {2, 30};
  put_local(sim, 0x1000, idx32);
  put_local(sim, 0x1100, idx64);
  run_ok(sim, R"(
    dma.cfgi esize, 4
    dma.cfgi n0, 8
    dma.cfgi n1, 5
    dma.cfgi hs1, 32
    dma.cfgi ls1, 32
    dma.cfgi v1, 32
    li r1, 0x100000
    li r2, 0x1000
    li r10, 0x2000
    dma.gather dma0, r10, r1, r2
    dma.cfgi isz, 8
    dma.cfgi n1, 2
    dma.cfgi v0, 6
    dma.cfgi pad, -1
    li r2, 0x1100
    li r10, 0x3000
    dma.gather dma1, r10, r1, r2
    halt
  )");
  std::vector<uint32_t> want;
  for (int k : idx32)
    for (int j = 0; j < kCols; ++j)
      want.push_back(t[k * kCols + j]);
  expect_equal(get_local<uint32_t>(sim, 0x2000, want.size()), want, "gather i32 indices");
  want.clear();
  for (int64_t k : idx64)
    for (int j = 0; j < kCols; ++j)
      want.push_back(j < 6 ? t[k * kCols + j] : 0xffffffffu);
  expect_equal(get_local<uint32_t>(sim, 0x3000, want.size()), want, "gather i64 indices, padded");
}

/// oob = 2: a negative index is a masked lane (pad), the rest are gathered.
void gather_masked() {
  Simulator &sim = make_sim();
  auto t = table();
  sim.write_hbm(kTable, t.data(), t.size() * 4);
  put_local(sim, 0x1000, std::vector<int32_t>{-1, 3, -1, 4});
  run_ok(sim, R"(
    dma.cfgi esize, 4
    dma.cfgi n1, 4
    dma.cfgi hs1, 32
    dma.cfgi ls1, 4
    dma.cfgi v1, 32
    dma.cfgi oob, 2
    dma.cfgi pad, 0x7fc00000
    li r1, 0x100000
    li r2, 0x1000
    li r10, 0x2000
    dma.gather dma0, r10, r1, r2
    halt
  )");
  expect_equal(get_local<uint32_t>(sim, 0x2000, 4),
               std::vector<uint32_t>{0x7fc00000u, t[3 * kCols], 0x7fc00000u, t[4 * kCols]},
               "masked gather");
}

void gather_out_of_bounds() {
  Simulator &sim = make_sim();
  put_local(sim, 0x1000, std::vector<int32_t>{1, 2, 40});
  SimReport r = run_program(sim, R"(
    dma.cfgi esize, 4
    dma.cfgi n1, 3
    dma.cfgi hs1, 32
    dma.cfgi v1, 32
    li r1, 0x100000
    li r2, 0x1000
    li r10, 0x2000
    dma.gather dma0, r10, r1, r2
    halt
  )");
  TNPU_CHECK(r.status == SimStatus::ProgramError, status_name(r.status));
  TNPU_CHECK(r.message == "core0 dma0: command #0 (dma.gather at pc 7): dma.gather: index 40 "
                          "(entry 2 of the index tile) is out of bounds [0, 32)",
             r.message);
}

/// Rows to HBM by index, in order: the later of two equal indices wins.
void scatter() {
  Simulator &sim = make_sim();
  std::vector<uint32_t> rows(4 * kCols);
  for (int i = 0; i < 4 * kCols; ++i)
    rows[i] = 1000 + static_cast<uint32_t>(i);
  put_local(sim, 0x1000, rows);
  put_local(sim, 0x2000, std::vector<int32_t>{9, 2, 9, -1});
  run_ok(sim, R"(
    dma.cfgi esize, 4
    dma.cfgi n0, 8
    dma.cfgi n1, 4
    dma.cfgi hs1, 32
    dma.cfgi ls1, 32
    dma.cfgi v1, 32
    dma.cfgi oob, 1
    li r1, 0x100000
    li r2, 0x1000
    li r3, 0x2000
    dma.scatter dma0, r1, r2, r3
    halt
  )");
  std::vector<uint32_t> got(kRows * kCols);
  sim.read_hbm(kTable, got.data(), got.size() * 4);
  std::vector<uint32_t> want(kRows * kCols, 0);
  for (int j = 0; j < kCols; ++j) {
    want[9 * kCols + j] = rows[2 * kCols + j];
    want[2 * kCols + j] = rows[1 * kCols + j];
  }
  expect_equal(got, want, "scatter");
}

/// Every core adds i32 ones at indices with a duplicate, concurrently: the sums are exact. Core 0
/// also adds f32 values (checked against sequential f32 sums) and gets the old values back.
void atomic_add() {
  Simulator &sim = make_sim();
  const std::vector<int32_t> idx = {0, 1, 2, 3, 4, 5, 6, 7, 0, 3};
  const std::vector<int32_t> ones(idx.size(), 1);
  const int cores = chip("default").cores;
  for (int c = 0; c < cores; ++c) {
    sim.write_local(c, 0x1000, idx.data(), idx.size() * 4);
    sim.write_local(c, 0x2000, ones.data(), ones.size() * 4);
  }
  const std::vector<float> fv = {0.1f, 0.2f, 1e8f, 0.3f, 1.f, -1e8f, 0.25f, 0.5f, 3.f, 0.7f};
  const std::vector<float> base = {1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f};
  sim.write_local(0, 0x3000, fv.data(), fv.size() * 4);
  sim.write_hbm(0x200000, base.data(), base.size() * 4);
  sim.load_program(-1, assemble_text(R"(
    dma.cfgi esize, 4
    dma.cfgi n1, 10
    dma.cfgi hs1, 4
    dma.cfgi ls1, 4
    dma.cfgi v1, 8
    dma.cfgi adt, i32
    li r1, 0x100000
    li r2, 0x2000
    li r3, 0x1000
    dma.atadd dma0, r1, r2, r3
    coreid r4
    bne r4, r0, done
    dma.cfgi adt, f32
    li r1, 0x200000
    li r2, 0x3000
    dma.atadd dma1, r1, r2, r3
done:
    halt
  )"));
  SimReport r = run_checked(sim);
  TNPU_CHECK(r.status == SimStatus::Ok, r.message);
  std::vector<int32_t> sums(8);
  sim.read_hbm(0x100000, sums.data(), 32);
  std::vector<int32_t> want(8, cores);
  want[0] = want[3] = 2 * cores;
  expect_equal(sums, want, "i32 atomic add from every core");
  std::vector<float> acc = base, old;
  for (size_t e = 0; e < idx.size(); ++e) {
    old.push_back(acc[idx[e]]);
    acc[idx[e]] += fv[e];
  }
  std::vector<uint32_t> got(8), want_bits, old_bits;
  sim.read_hbm(0x200000, got.data(), 32);
  for (float x : acc)
    want_bits.push_back(bits(x));
  for (float x : old)
    old_bits.push_back(bits(x));
  expect_equal(got, want_bits, "f32 atomic add");
  expect_equal(get_local<uint32_t>(sim, 0x3000, old.size()), old_bits, "old values returned");
}

void indexed_bad_config() {
  Simulator &sim = make_sim();
  SimReport r = run_program(sim, "  dma.cfgi isz, 3\n  dma.gather dma0, r0, r0, r0\n  halt\n");
  TNPU_CHECK(r.status == SimStatus::ProgramError, status_name(r.status));
  TNPU_CHECK(r.message.find("dma isz (index bytes) must be 4 or 8, got 3") != std::string::npos,
             r.message);
}

/// A vector reduction's result read by `ldw` decides a branch; st / ld round trips; div / rem /
/// sra follow their rules.
void cp_load_store() {
  Simulator &sim = make_sim();
  put_local(sim, 0x1000, std::vector<float>(8, 1.f));
  run_ok(sim, R"(
    li r1, 0x1000
    li r2, 0x2000
    v.cfgi n, 8
    v.rsum r2, r1               # 8.0f at 0x2000
    fence
    ldw r5, r2, 0
    li r6, 8.0f
    bne r5, r6, bad
    li r7, 1
    jmp next
bad: li r7, 2
next:
    li r8, -7
    li r9, 2
    div r10, r8, r9
    rem r11, r8, r9
    sra r12, r8, r9
    div r13, r8, r0
    st r8, r2, 16
    ld r14, r2, 16
    ldb r15, r2, 16
    stw r9, r2, 32
    ldw r16, r2, 32
    li r17, 0x12345678
    stb r17, r2, 40
    ldb r18, r2, 40
    divu r19, r8, r9            # (2^64 - 7) / 2
    remu r20, r8, r9
    li r21, 0
    bltu r9, r8, unsigned_ok    # 2 < 2^64 - 7 unsigned (not signed)
    li r21, 5
unsigned_ok:
    bgeu r9, r8, .+2
    addi r21, r21, 1
    halt
  )");
  auto reg = [&](int i) { return static_cast<int64_t>(sim.reg(0, i)); };
  TNPU_CHECK(reg(5) == 0x41000000, "ldw of the rsum result");
  TNPU_CHECK(reg(7) == 1, "branch on a vector result");
  TNPU_CHECK(reg(10) == -3 && reg(11) == -1 && reg(12) == -2 && reg(13) == -1, "div rem sra");
  TNPU_CHECK(reg(14) == -7 && reg(15) == -7 && reg(16) == 2 && reg(18) == 0x78, "ld / st");
  TNPU_CHECK(sim.reg(0, 19) == (~uint64_t{0} - 6) / 2 && reg(20) == 1, "divu remu");
  TNPU_CHECK(reg(21) == 1, "bltu / bgeu");
}

/// A failed assertion: the program branches around `trap` when its condition holds.
void cp_trap() {
  Simulator &sim = make_sim();
  SimReport r = run_program(sim, "  li r1, 3\n  li r2, 4\n  blt r2, r1, .+2\n  trap 17\n  halt\n");
  TNPU_CHECK(r.status == SimStatus::ProgramError, status_name(r.status));
  TNPU_CHECK(r.message == "core0 cp at pc 3: trap 17", r.message);
}

void cp_load_fault() {
  Simulator &sim = make_sim();
  SimReport r = run_program(sim, "  li r1, 0x7fffffff\n  ld r2, r1, 8\n  halt\n");
  TNPU_CHECK(r.status == SimStatus::ProgramError, status_name(r.status));
  TNPU_CHECK(r.message.find("core0 cp at pc 1: ld: local range") != std::string::npos, r.message);
}

} // namespace
} // namespace tl::npu::test

int sc_main(int argc, char **argv) {
  using namespace tl::npu::test;
  return main_with({{"gather", gather},
                    {"gather-masked", gather_masked},
                    {"gather-out-of-bounds", gather_out_of_bounds},
                    {"scatter", scatter},
                    {"atomic-add", atomic_add},
                    {"indexed-bad-config", indexed_bad_config},
                    {"cp-load-store", cp_load_store},
                    {"cp-trap", cp_trap},
                    {"cp-load-fault", cp_load_fault}},
                   argc, argv);
}
