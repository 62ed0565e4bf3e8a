// Fault injection and failure reporting: bit flips change exactly the data they hit, a DMA error
// and a hung unit stop the run with a status naming core, unit, command and pc, a deadlock and a
// runaway loop are reported instead of hanging the host. One scenario per process.
// SPDX-License-Identifier: Apache-2.0
#include "gemm.h"
#include "harness.h"

#include <cstdio>

namespace tl::npu::test {
namespace {

SimReport run(const std::string &program, SimOptions opts, const std::string &config = "default",
              Simulator **keep = nullptr) {
  static Simulator *sim = nullptr;
  sim = new Simulator(chip(config), opts); // leaked on purpose: one elaboration per process
  sim->load_program(0, assemble_text(program));
  if (keep != nullptr)
    *keep = sim;
  SimReport r = run_checked(*sim);
  std::printf("status %s: %s (%llu cycles)\n", status_name(r.status), r.message.c_str(),
              static_cast<unsigned long long>(r.cycles));
  return r;
}

const char *kCopy = R"(
    dma.cfgi n0, 1024
    li r1, 0x10000
    dma.ld dma0, r0, r1      # 1 KiB HBM 0x10000 -> SRAM 0
    fence
    mx.cfgi k, 1
    mx.cfgi n, 1
    mx.pre r0                # the data sits in SRAM while the matrix unit works
    fence
    li r2, 0x20000
    dma.st dma1, r2, r0      # and back to HBM 0x20000
    halt
)";

void bit_flips() {
  SimOptions opts;
  opts.faults = {parse_fault("hbm-flip:addr=0x10005,bit=3,cycle=0"),
                 parse_fault("sram-flip:core=0,addr=0x100,bit=0,cycle=200")};
  Simulator *sim = nullptr;
  SimReport r = run(kCopy, opts, "default", &sim);
  TNPU_CHECK(r.status == SimStatus::Ok, r.message);
  std::vector<uint8_t> out(1024);
  sim->read_hbm(0x20000, out.data(), out.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t want = i == 5 ? 8 : (i == 0x100 ? 1 : 0);
    TNPU_CHECK(out[i] == want, "byte " + std::to_string(i) + " = " + std::to_string(out[i]));
  }
  TNPU_CHECK(stat(r, "faults.bit_flips") == 2, "two flips applied");
}

void dma_error() {
  SimOptions opts;
  opts.faults = {parse_fault("dma-error:core=0,unit=dma1,command=0")};
  SimReport r = run(kCopy, opts);
  TNPU_CHECK(r.status == SimStatus::DmaError, "status");
  TNPU_CHECK(r.message == "core0 dma1: command #0 (dma.st at pc 9) failed: injected DMA error",
             r.message);
}

void hung_unit() {
  SimOptions opts;
  opts.hang_timeout_cycles = 5000;
  opts.faults = {parse_fault("hang:core=0,unit=mx,command=1")};
  SimReport r = run("  mx.cfgi k, 8\n  mx.cfgi n, 8\n  mx.cfgi m, 8\n  li r1, ACC\n"
                    "  mx.pre r0\n  mx.mm r1, r0\n  halt\n",
                    opts);
  TNPU_CHECK(r.status == SimStatus::Hang, "status");
  TNPU_CHECK(r.message.find("no progress for 5000 cycles") != std::string::npos, r.message);
  TNPU_CHECK(r.message.find("core0 mx: command #1 (mx.mm at pc 6) running since cycle") !=
                 std::string::npos,
             r.message);
  TNPU_CHECK(r.message.find("waiting for its units to drain") != std::string::npos, r.message);
}

void deadlock() {
  SimOptions opts;
  opts.hang_timeout_cycles = 1000;
  SimReport r = run("  sem.wait mx, s3, 1\n  sem.wait cp, s4, 2\n  halt\n", opts);
  TNPU_CHECK(r.status == SimStatus::Hang, "status");
  TNPU_CHECK(r.message.find("waiting for semaphore s4 >= 2") != std::string::npos, r.message);
  TNPU_CHECK(r.message.find("core0 mx: command #0 (sem.wait at pc 0)") != std::string::npos ||
                 r.message.find("core0 mx") != std::string::npos,
             r.message);
}

void runaway_loop() {
  SimOptions opts;
  opts.fidelity = Fidelity::Functional;
  opts.max_instructions = 100000;
  SimReport r = run("top: jmp top\n", opts);
  TNPU_CHECK(r.status == SimStatus::InstructionLimit, "status");
  TNPU_CHECK(r.message.find("more than 100000 instructions") != std::string::npos, r.message);
}

void program_errors() {
  SimReport r = run("  dma.cfgi n0, 64\n  li r1, 0x7fffffff\n  dma.ld dma0, r1, r0\n  halt\n", {});
  TNPU_CHECK(r.status == SimStatus::ProgramError, "status");
  TNPU_CHECK(r.message.find("core0 dma0: command #0 (dma.ld at pc 2): dma.ld: local range") !=
                     std::string::npos &&
                 r.message.find("outside the SRAM") != std::string::npos,
             r.message);
}

void missing_engine() {
  SimReport r = run("  dma.ld dma1, r0, r0\n  halt\n", {}, "edge");
  TNPU_CHECK(r.status == SimStatus::ProgramError, "status");
  TNPU_CHECK(r.message == "core0 cp at pc 0: dma1 does not exist: the core has 1 DMA engine(s)",
             r.message);
}

void fault_specs() {
  Fault f = parse_fault("sram-flip:core=2,addr=0x40,bit=7,cycle=99");
  TNPU_CHECK(f.kind == Fault::Kind::SramFlip && f.core == 2 && f.address == 0x40 && f.bit == 7 &&
                 f.cycle == 99,
             "parsed");
  for (const char *bad : {"flip:addr=1", "hbm-flip:addr=1", "hbm-flip:addr=1,bit=9",
                          "dma-error:unit=mx", "hang:core=0", "hbm-flip:addr=zz,bit=1"}) {
    bool threw = false;
    try {
      parse_fault(bad);
    } catch (const std::invalid_argument &e) {
      threw = std::string(e.what()).find(bad) != std::string::npos;
    }
    TNPU_CHECK(threw, std::string("no clear error for ") + bad);
  }
}

} // namespace
} // namespace tl::npu::test

int sc_main(int argc, char **argv) {
  using namespace tl::npu::test;
  return main_with({{"bit-flips", bit_flips},
                    {"dma-error", dma_error},
                    {"hung-unit", hung_unit},
                    {"deadlock", deadlock},
                    {"runaway-loop", runaway_loop},
                    {"program-error", program_errors},
                    {"missing-engine", missing_engine},
                    {"fault-specs", fault_specs}},
                   argc, argv);
}
