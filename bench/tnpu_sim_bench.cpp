// TNPU simulator speed: simulated cycles per host second for a large tiled GEMM (sim/tests/
// programs/gemm.s) on the default chip in cycle-approximate mode. Prints `name: value` lines.
// SPDX-License-Identifier: Apache-2.0
//
//   tl_tnpu_sim_bench [--size N] [--with-data] [--config FILE]
// Default: N = 4096, bf16, all cores, arithmetic off (timing never depends on data; a 128 x 128
// array does 16 K MACs a cycle, which no host can compute at simulation speed). --with-data
// turns the bit-exact arithmetic on (use a smaller N). One run per process (one elaboration).
#include "tl/npu/assembler.h"
#include "tl/npu/simulator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

extern "C" int sc_main(int argc, char *argv[]);

int sc_main(int argc, char *argv[]) {
  using namespace tl::npu;
  int64_t n = 4096;
  bool with_data = false;
  std::string config = std::string(TL_NPU_SIM_DIR) + "/configs/default.json";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--size") && i + 1 < argc)
      n = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--with-data"))
      with_data = true;
    else if (!std::strcmp(argv[i], "--config") && i + 1 < argc)
      config = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--size N] [--with-data] [--config FILE]\n", argv[0]);
      return 1;
    }
  }
  ChipConfig cfg = load_config(config);
  std::ifstream f(std::string(TL_NPU_SIM_DIR) + "/tests/programs/gemm.s");
  std::stringstream text;
  text << f.rdbuf();
  const int64_t elems = n * n, es = 2;
  const int64_t a = 0x1000, b = a + elems * es, c = b + elems * es;
  isa::Assembly prog = isa::assemble(text.str(), {{"M", n},
                                                  {"N", n},
                                                  {"K", n},
                                                  {"A", a},
                                                  {"B", b},
                                                  {"C", c},
                                                  {"MODE", 0},
                                                  {"ES", es},
                                                  {"TM", cfg.core.matrix.rows},
                                                  {"TR", cfg.core.matrix.rows},
                                                  {"TC", cfg.core.matrix.cols}});
  if (!prog.ok()) {
    std::fprintf(stderr, "%s", isa::format_diagnostics("gemm.s", prog.errors).c_str());
    return 1;
  }
  SimOptions opts;
  opts.compute_data = with_data;
  Simulator sim(cfg, opts);
  sim.load_program(-1, prog.code);
  SimReport r = sim.run();
  if (r.status != SimStatus::Ok) {
    std::fprintf(stderr, "run failed: %s\n", r.message.c_str());
    return 1;
  }
  std::printf("chip: %s\n", cfg.name.c_str());
  std::printf("gemm_size: %lld\n", static_cast<long long>(n));
  std::printf("arithmetic: %s\n", with_data ? "on" : "off");
  std::printf("simulated_cycles: %llu\n", static_cast<unsigned long long>(r.cycles));
  std::printf("host_seconds: %.3f\n", r.host_seconds);
  std::printf("simulated_cycles_per_host_second: %.4g\n",
              static_cast<double>(r.cycles) / r.host_seconds);
  return 0;
}
