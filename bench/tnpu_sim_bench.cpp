// TNPU simulator speed: simulated cycles per host second for a large tiled GEMM (sim/tests/
// programs/gemm.s) on the default chip in cycle-approximate mode. Prints `name: value` lines.
// SPDX-License-Identifier: Apache-2.0
//
//   tl_tnpu_sim_bench [--size N] [--with-data] [--mode bf16|f16|f32|i8] [--config FILE]
//                     [--save-output FILE] [--functional]
// Default: N = 4096, bf16, all cores, arithmetic off (timing never depends on data; a 128 x 128
// array does 16 K MACs a cycle). --with-data turns the bit-exact arithmetic on (use a smaller N):
// A and B hold seeded pseudo-random values of the mode's dtype, and `output_hash` (SHA-256 of C's
// bytes) lets two builds be compared bit for bit; --save-output writes those bytes to a file.
// host_cpu_seconds (the process's CPU time in the run) is the figure to compare on a shared
// machine, where host_seconds (wall time) depends on the other load.
// --functional runs the functional fidelity (every duration 0, so simulated_cycles is 0 and
// host_seconds is the figure). One run per process (one elaboration).
#include "tl/npu/assembler.h"
#include "tl/npu/simulator.h"

#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include <time.h>

namespace {

/// One element of the mode's dtype as bytes: floats of magnitude in [2^-6, 4) with random signs
/// and fractions (every product and sum stays normal), or any i8.
void random_element(int mode, std::mt19937_64 &rng, uint8_t *out) {
  const uint64_t r = rng();
  const uint32_t sign = static_cast<uint32_t>(r >> 63), exp_step = static_cast<uint32_t>(r % 8);
  switch (mode) {
  case 0: { // bf16: 1 sign, 8 exponent (bias 127), 7 fraction
    const uint16_t bits =
        static_cast<uint16_t>(sign << 15 | (121 + exp_step) << 7 | (r >> 8 & 0x7f));
    std::memcpy(out, &bits, 2);
    break;
  }
  case 1: { // f16: 1, 5 (bias 15), 10
    const uint16_t bits =
        static_cast<uint16_t>(sign << 15 | (9 + exp_step) << 10 | (r >> 8 & 0x3ff));
    std::memcpy(out, &bits, 2);
    break;
  }
  case 2: { // f32: 1, 8 (bias 127), 23
    const uint32_t bits =
        sign << 31 | (121 + exp_step) << 23 | static_cast<uint32_t>(r >> 8 & 0x7fffff);
    std::memcpy(out, &bits, 4);
    break;
  }
  default:
    *out = static_cast<uint8_t>(r >> 8);
  }
}

/// CPU time of this process: on a shared machine, what the run cost regardless of the others' load.
double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::string sha256_hex(const std::vector<uint8_t> &bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  char two[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(two, sizeof two, "%02x", digest[i]);
    hex += two;
  }
  return hex;
}

} // namespace

extern "C" int sc_main(int argc, char *argv[]);

int sc_main(int argc, char *argv[]) {
  using namespace tl::npu;
  int64_t n = 4096;
  bool with_data = false, functional = false;
  int mode = 0;
  std::string save_output;
  std::string config = std::string(TL_NPU_SIM_DIR) + "/configs/default.json";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--size") && i + 1 < argc)
      n = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--with-data"))
      with_data = true;
    else if (!std::strcmp(argv[i], "--config") && i + 1 < argc)
      config = argv[++i];
    else if (!std::strcmp(argv[i], "--functional"))
      functional = true;
    else if (!std::strcmp(argv[i], "--save-output") && i + 1 < argc)
      save_output = argv[++i];
    else if (!std::strcmp(argv[i], "--mode") && i + 1 < argc) {
      static const char *const kModes[] = {"bf16", "f16", "f32", "i8"}; // the MODE numbers
      const std::string name = argv[++i];
      mode = -1;
      for (int m = 0; m < 4; ++m)
        if (name == kModes[m])
          mode = m;
      if (mode < 0) {
        std::fprintf(stderr, "--mode: bf16, f16, f32 or i8, got %s\n", name.c_str());
        return 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: %s [--size N] [--with-data] [--mode bf16|f16|f32|i8] [--config FILE] "
                   "[--save-output FILE] [--functional]\n",
                   argv[0]);
      return 1;
    }
  }
  static const char *const kModeNames[] = {"bf16", "f16", "f32", "i8"};
  ChipConfig cfg = load_config(config);
  std::ifstream f(std::string(TL_NPU_SIM_DIR) + "/tests/programs/gemm.s");
  std::stringstream text;
  text << f.rdbuf();
  const int64_t elems = n * n, es = mode == 2 ? 4 : (mode == 3 ? 1 : 2);
  const int64_t a = 0x1000, b = a + elems * es, c = b + elems * es;
  isa::Assembly prog = isa::assemble(text.str(), {{"M", n},
                                                  {"N", n},
                                                  {"K", n},
                                                  {"A", a},
                                                  {"B", b},
                                                  {"C", c},
                                                  {"MODE", mode},
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
  opts.fidelity = functional ? Fidelity::Functional : Fidelity::CycleApprox;
  Simulator sim(cfg, opts);
  sim.load_program(-1, prog.code);
  if (with_data) {
    std::mt19937_64 rng(20261202);
    std::vector<uint8_t> input(static_cast<size_t>(elems * es));
    for (const int64_t base : {a, b}) {
      for (int64_t i = 0; i < elems; ++i)
        random_element(mode, rng, &input[static_cast<size_t>(i * es)]);
      sim.write_hbm(static_cast<uint64_t>(base), input.data(), input.size());
    }
  }
  const double cpu_before = cpu_seconds();
  SimReport r = sim.run();
  const double cpu = cpu_seconds() - cpu_before;
  if (r.status != SimStatus::Ok) {
    std::fprintf(stderr, "run failed: %s\n", r.message.c_str());
    return 1;
  }
  std::printf("chip: %s\n", cfg.name.c_str());
  std::printf("gemm_size: %lld\n", static_cast<long long>(n));
  std::printf("mode: %s\n", kModeNames[mode]);
  std::printf("fidelity: %s\n", functional ? "functional" : "cycle-approximate");
  std::printf("arithmetic: %s\n", with_data ? "on" : "off");
  std::printf("simulated_cycles: %llu\n", static_cast<unsigned long long>(r.cycles));
  std::printf("host_seconds: %.3f\n", r.host_seconds);
  std::printf("simulated_cycles_per_host_second: %.4g\n",
              static_cast<double>(r.cycles) / r.host_seconds);
  std::printf("host_cpu_seconds: %.3f\n", cpu);
  std::printf("simulated_cycles_per_host_cpu_second: %.4g\n", static_cast<double>(r.cycles) / cpu);
  if (with_data) {
    std::vector<uint8_t> out(static_cast<size_t>(elems * 4)); // f32 or i32
    sim.read_hbm(static_cast<uint64_t>(c), out.data(), out.size());
    std::printf("output_hash: %s\n", sha256_hex(out).c_str());
    if (!save_output.empty())
      std::ofstream(save_output, std::ios::binary)
          .write(reinterpret_cast<const char *>(out.data()),
                 static_cast<std::streamsize>(out.size()));
  }
  return 0;
}
