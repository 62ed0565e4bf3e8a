// tl-sim: assemble, disassemble, and run TNPU programs on a chip config with .npy memory images.
// SPDX-License-Identifier: Apache-2.0
//
//   tl-sim asm PROGRAM.s -o PROGRAM.bin [-D NAME=VALUE]...
//   tl-sim disasm PROGRAM.bin
//   tl-sim run --config CHIP.json --program PROGRAM.{s,bin} [-D NAME=VALUE]...
//              [--load ADDR=FILE.npy]... [--save ADDR:SHAPE:DESCR=FILE.npy]...
//              [--mode cycle|functional] [--stats FILE] [--trace FILE] [--fault SPEC]...
//              [--hang-timeout CYCLES] [--max-instructions N] [--no-compute]
//              [--matrix model|rtl|cross-check] [--compare-speed]
//              [--vcd FILE [--vcd-cycles FROM:TO]]
//   --matrix overrides the config's core.matrix.kind; cross-check prints the RTL-vs-model report
//   (exit 2 on a mismatch). --compare-speed runs the program twice, with the matrix unit as the
//   fast model and as RTL (each in its own process), and prints both speeds side by side.
// Exit status: 0 success, 1 the user's mistake (message on stderr), 2 the run ended badly
// (status and message on stderr).
#include "tl/support/npy.h"

#include "tl/npu/assembler.h"
#include "tl/npu/simulator.h"

#include <boost/program_options.hpp>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

extern "C" int sc_main(int argc, char *argv[]);

namespace po = boost::program_options;
using namespace tl::npu;

namespace {

struct Fatal : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw Fatal(path + ": cannot open");
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

void write_file(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary);
  if (!f || !(f << text))
    throw Fatal(path + ": cannot write");
}

uint64_t number(const std::string &s, const std::string &what) {
  try {
    size_t used = 0;
    uint64_t v = std::stoull(s, &used, 0);
    if (used == s.size())
      return v;
  } catch (const std::exception &) {
  }
  throw Fatal(what + ": '" + s + "' is not a number");
}

std::map<std::string, int64_t> defines(const std::vector<std::string> &ds) {
  std::map<std::string, int64_t> out;
  for (const std::string &d : ds) {
    size_t eq = d.find('=');
    if (eq == std::string::npos)
      throw Fatal("-D " + d + ": expected NAME=VALUE");
    static const std::map<std::string, int64_t> kDtypes = {
        {"bf16", 0}, {"f16", 1}, {"f32", 2}, {"i8", 3}, {"i32", 4}};
    const std::string v = d.substr(eq + 1);
    auto dt = kDtypes.find(v);
    out[d.substr(0, eq)] =
        dt != kDtypes.end() ? dt->second : static_cast<int64_t>(number(v, "-D " + d));
  }
  return out;
}

/// A program file: binary (by its magic) or assembly text.
std::vector<isa::Instr> load_program(const std::string &path,
                                     const std::map<std::string, int64_t> &defs) {
  const std::string bytes = read_file(path);
  std::vector<isa::Instr> code;
  if (bytes.compare(0, 4, "TNPU") == 0) {
    std::string err;
    if (!isa::from_binary(std::vector<uint8_t>(bytes.begin(), bytes.end()), code, err))
      throw Fatal(path + ": " + err);
    return code;
  }
  isa::Assembly a = isa::assemble(bytes, defs);
  if (!a.ok())
    throw Fatal(isa::format_diagnostics(path, a.errors));
  return a.code;
}

int cmd_asm(const po::variables_map &vm) {
  auto code = load_program(vm["input"].as<std::string>(),
                           defines(vm["define"].as<std::vector<std::string>>()));
  auto bin = isa::to_binary(code);
  write_file(vm["output"].as<std::string>(), std::string(bin.begin(), bin.end()));
  return 0;
}

int cmd_disasm(const po::variables_map &vm) {
  std::cout << isa::disassemble(load_program(vm["input"].as<std::string>(), {}));
  return 0;
}

/// --save ADDR:SHAPE:DESCR=FILE, SHAPE like 200x300.
/// The HBM region a --save spec names; `file` gets the spec's file name.
tl::support::npy::Array read_region(const Simulator &sim, const std::string &spec,
                                    std::string &file) {
  size_t eq = spec.find('='), c1 = spec.find(':'), c2 = spec.find(':', c1 + 1);
  if (eq == std::string::npos || c1 == std::string::npos || c2 == std::string::npos || c2 > eq)
    throw Fatal("--save " + spec +
                ": expected ADDR:SHAPE:DESCR=FILE (e.g. 0x4000:200x300:<f4=c.npy)");
  tl::support::npy::Array a;
  a.descr = tl::support::npy::canonical_descr(spec.substr(c2 + 1, eq - c2 - 1));
  if (tl::support::npy::descr_size(a.descr) == 0)
    throw Fatal("--save " + spec + ": unsupported dtype '" + a.descr + "'");
  std::string shape = spec.substr(c1 + 1, c2 - c1 - 1);
  for (size_t p = 0; p <= shape.size();) {
    size_t x = shape.find('x', p);
    const uint64_t dim =
        number(shape.substr(p, x == std::string::npos ? std::string::npos : x - p), "--save shape");
    if (dim > uint64_t(1) << 40)
      throw Fatal("--save " + spec + ": dimension " + std::to_string(dim) + " is too large");
    a.shape.push_back(static_cast<int64_t>(dim));
    if (x == std::string::npos)
      break;
    p = x + 1;
  }
  // Checked before the buffer is made: a huge shape is an error, not an allocation failure.
  a.data.resize(tl::support::npy::data_bytes(a.descr, a.shape, "--save " + spec));
  try {
    sim.read_hbm(number(spec.substr(0, c1), "--save address"), a.data.data(), a.data.size());
  } catch (const std::out_of_range &e) {
    throw Fatal("--save " + spec + ": " + e.what());
  }
  file = spec.substr(eq + 1);
  return a;
}

SimOptions options(const po::variables_map &vm) {
  SimOptions o;
  const std::string mode = vm["mode"].as<std::string>();
  if (mode != "cycle" && mode != "functional")
    throw Fatal("--mode must be cycle or functional, got '" + mode + "'");
  o.fidelity = mode == "cycle" ? Fidelity::CycleApprox : Fidelity::Functional;
  o.trace = vm.count("trace") != 0;
  o.hang_timeout_cycles = vm["hang-timeout"].as<uint64_t>();
  o.max_instructions = vm["max-instructions"].as<uint64_t>();
  o.compute_data = vm.count("no-compute") == 0;
  if (vm.count("vcd")) {
    o.rtl_vcd = vm["vcd"].as<std::string>();
    const std::string w = vm["vcd-cycles"].as<std::string>();
    const size_t colon = w.find(':');
    if (colon == std::string::npos)
      throw Fatal("--vcd-cycles " + w + ": expected FROM:TO");
    o.vcd_from = number(w.substr(0, colon), "--vcd-cycles FROM");
    o.vcd_to = number(w.substr(colon + 1), "--vcd-cycles TO");
    if (o.vcd_to <= o.vcd_from)
      throw Fatal("--vcd-cycles " + w + ": TO must be above FROM");
  }
  for (const std::string &f : vm["fault"].as<std::vector<std::string>>()) {
    try {
      o.faults.push_back(parse_fault(f));
    } catch (const std::invalid_argument &e) {
      throw Fatal(e.what());
    }
  }
  return o;
}

struct RunResult {
  SimReport report;
  uint64_t saved_hash = 1469598103934665603ull; // FNV-1a over every --save region's bytes
};

MatrixKind matrix_kind(const std::string &name) {
  for (MatrixKind k : {MatrixKind::Model, MatrixKind::Rtl, MatrixKind::CrossCheck})
    if (name == matrix_kind_name(k))
      return k;
  throw Fatal("--matrix must be model, rtl or cross-check, got '" + name + "'");
}

/// Loads, runs, and reads back the --save regions (written to their files if `write`).
RunResult run_once(const po::variables_map &vm, const ChipConfig &cfg, bool write) {
  auto code = load_program(vm["program"].as<std::string>(),
                           defines(vm["define"].as<std::vector<std::string>>()));
  std::unique_ptr<Simulator> made;
  try {
    made = std::make_unique<Simulator>(cfg, options(vm));
  } catch (const ConfigError &e) { // e.g. an RTL matrix unit of a size not built
    throw Fatal(vm["config"].as<std::string>() + ": " + e.what());
  }
  Simulator &sim = *made;
  sim.load_program(-1, code);
  for (const std::string &l : vm["load"].as<std::vector<std::string>>()) {
    size_t eq = l.find('=');
    if (eq == std::string::npos)
      throw Fatal("--load " + l + ": expected ADDR=FILE.npy");
    tl::support::npy::Array a = tl::support::npy::load(l.substr(eq + 1));
    try {
      sim.write_hbm(number(l.substr(0, eq), "--load address"), a.data.data(), a.data.size());
    } catch (const std::out_of_range &e) {
      throw Fatal("--load " + l + ": " + e.what());
    }
  }
  RunResult r{sim.run()};
  for (const std::string &s : vm["save"].as<std::vector<std::string>>()) {
    std::string file;
    const tl::support::npy::Array a = read_region(sim, s, file);
    for (uint8_t byte : a.data)
      r.saved_hash = (r.saved_hash ^ byte) * 1099511628211ull;
    if (write)
      tl::support::npy::save(file, a);
  }
  if (write && vm.count("stats"))
    write_file(vm["stats"].as<std::string>(), r.report.stats_json);
  if (write && vm.count("trace"))
    write_file(vm["trace"].as<std::string>(), r.report.trace_json);
  return r;
}

/// Prints each core's cross-check report; returns the mismatches.
uint64_t print_cross_check(const SimReport &r) {
  const auto j = nlohmann::json::parse(r.stats_json);
  uint64_t mismatches = 0;
  for (const auto &[core, x] : j["cross_check"].items()) {
    mismatches += x["mismatches"].get<uint64_t>();
    std::printf("cross-check %s: %llu commands, %llu C rows compared, %llu mismatches\n",
                core.c_str(), static_cast<unsigned long long>(x["commands"].get<uint64_t>()),
                static_cast<unsigned long long>(x["rows_compared"].get<uint64_t>()),
                static_cast<unsigned long long>(x["mismatches"].get<uint64_t>()));
    for (const auto &m : x["first_mismatches"])
      std::printf("  %s\n", m.get<std::string>().c_str());
    std::printf("  cycles per command (model - RTL): MAPE %.2f %%, max |error| %.0f; stream end "
                "%llu (RTL) vs %llu (model), %+.2f %%\n  histogram:",
                x["cycle_mape_percent"].get<double>(), x["cycle_max_abs_error"].get<double>(),
                static_cast<unsigned long long>(x["rtl_end_cycle"].get<uint64_t>()),
                static_cast<unsigned long long>(x["model_end_cycle"].get<uint64_t>()),
                x["total_error_percent"].get<double>());
    for (const auto &[bucket, n] : x["cycle_error_histogram"].items())
      if (n.get<int64_t>() > 0)
        std::printf(" [%s]: %lld", bucket.c_str(), static_cast<long long>(n.get<int64_t>()));
    std::printf("\n");
  }
  return mismatches;
}

/// The same run with the matrix unit as the fast model and as RTL, each in a forked child (a
/// SystemC design elaborates once per process), side by side.
int compare_speed(const po::variables_map &vm, ChipConfig cfg) {
  struct Line {
    int status;
    uint64_t cycles, hash;
    double host;
  } lines[2] = {};
  const MatrixKind kinds[2] = {MatrixKind::Model, MatrixKind::Rtl};
  for (int i = 0; i < 2; ++i) {
    int fds[2];
    if (pipe(fds) != 0)
      throw Fatal("pipe failed");
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      cfg.core.matrix.kind = kinds[i];
      Line l{-1, 0, 0, 0};
      try {
        const RunResult r = run_once(vm, cfg, false);
        l = Line{static_cast<int>(r.report.status), r.report.cycles, r.saved_hash,
                 r.report.host_seconds};
        if (r.report.status != SimStatus::Ok)
          std::fprintf(stderr, "tl-sim: %s: %s: %s\n", matrix_kind_name(kinds[i]),
                       status_name(r.report.status), r.report.message.c_str());
      } catch (const std::exception &e) {
        std::fprintf(stderr, "tl-sim: %s: %s\n", matrix_kind_name(kinds[i]), e.what());
      }
      const bool ok = write(fds[1], &l, sizeof l) == static_cast<ssize_t>(sizeof l);
      std::fflush(nullptr);
      _exit(ok ? 0 : 1);
    }
    close(fds[1]);
    const bool got = read(fds[0], &lines[i], sizeof lines[i]) == sizeof lines[i];
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!got)
      lines[i].status = -1;
  }
  std::printf("%-12s %-8s %14s %10s %22s\n", "matrix unit", "status", "cycles", "host s",
              "sim cycles / host s");
  for (int i = 0; i < 2; ++i)
    std::printf("%-12s %-8s %14llu %10.3f %22.4g\n", matrix_kind_name(kinds[i]),
                lines[i].status < 0 ? "error"
                                    : status_name(static_cast<SimStatus>(lines[i].status)),
                static_cast<unsigned long long>(lines[i].cycles), lines[i].host,
                lines[i].host > 0 ? static_cast<double>(lines[i].cycles) / lines[i].host : 0.0);
  if (lines[0].status != 0 || lines[1].status != 0)
    return 2;
  const bool same = lines[0].hash == lines[1].hash;
  std::printf(
      "rtl vs model: cycles %+.2f %%, host time x%.1f; --save regions %s\n",
      lines[0].cycles > 0
          ? 100.0 * (static_cast<double>(lines[1].cycles) - static_cast<double>(lines[0].cycles)) /
                static_cast<double>(lines[0].cycles)
          : 0.0,
      lines[0].host > 0 ? lines[1].host / lines[0].host : 0.0, same ? "identical" : "DIFFER");
  return same ? 0 : 2;
}

int cmd_run(const po::variables_map &vm) {
  for (const char *req : {"config", "program"})
    if (vm.count(req) == 0)
      throw Fatal(std::string("run needs --") + req);
  ChipConfig cfg = load_config(vm["config"].as<std::string>());
  if (vm.count("matrix"))
    cfg.core.matrix.kind = matrix_kind(vm["matrix"].as<std::string>());
  if (vm.count("compare-speed"))
    return compare_speed(vm, cfg);
  const RunResult run = run_once(vm, cfg, true);
  const SimReport &r = run.report;
  std::printf("%s: %llu cycles, %.3f s host\n", status_name(r.status),
              static_cast<unsigned long long>(r.cycles), r.host_seconds);
  if (r.status != SimStatus::Ok) {
    std::fprintf(stderr, "tl-sim: %s: %s\n", status_name(r.status), r.message.c_str());
    return 2;
  }
  if (cfg.core.matrix.kind == MatrixKind::CrossCheck && print_cross_check(r) > 0) {
    std::fprintf(stderr, "tl-sim: the cross-check found mismatches\n");
    return 2;
  }
  return 0;
}

} // namespace

int sc_main(int argc, char *argv[]) {
  po::options_description desc("tl-sim COMMAND [options]; COMMAND is asm, disasm or run");
  using strings = std::vector<std::string>;
  desc.add_options()("help,h", "this help")("command", po::value<std::string>(),
                                            "asm | disasm | run")(
      "input", po::value<std::string>(), "program to assemble / disassemble")(
      "output,o", po::value<std::string>()->default_value("a.bin"), "asm output")(
      "config", po::value<std::string>(), "chip config JSON")("program", po::value<std::string>(),
                                                              "program (.s text or binary)")(
      "define,D", po::value<strings>()->default_value({}, ""), "assembler symbol NAME=VALUE")(
      "load", po::value<strings>()->default_value({}, ""), "ADDR=FILE.npy into HBM")(
      "save", po::value<strings>()->default_value({}, ""), "ADDR:SHAPE:DESCR=FILE.npy from HBM")(
      "mode", po::value<std::string>()->default_value("cycle"),
      "cycle | functional")("stats", po::value<std::string>(), "write statistics JSON")(
      "trace", po::value<std::string>(), "write Chrome/Perfetto trace JSON")(
      "fault", po::value<strings>()->default_value({}, ""), "fault spec (see README)")(
      "hang-timeout", po::value<uint64_t>()->default_value(10000000), "cycles without progress")(
      "max-instructions", po::value<uint64_t>()->default_value(1000000000),
      "per core")("no-compute", "skip matrix/vector arithmetic (timing only)")(
      "matrix", po::value<std::string>(), "model | rtl | cross-check (overrides the config)")(
      "compare-speed", "run with the matrix unit as model and as RTL, speeds side by side")(
      "vcd", po::value<std::string>(), "RTL matrix unit: VCD waveform file (TL_NPU_RTL_TRACE=ON)")(
      "vcd-cycles", po::value<std::string>()->default_value("0:100000"),
      "RTL matrix unit: the cycles FROM:TO the VCD holds");
  po::positional_options_description pos;
  pos.add("command", 1).add("input", 1);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help") || vm.count("command") == 0) {
      std::cout << desc;
      return vm.count("help") ? 0 : 1;
    }
    const std::string cmd = vm["command"].as<std::string>();
    if ((cmd == "asm" || cmd == "disasm") && vm.count("input") == 0)
      throw Fatal(cmd + " needs an input file");
    if (cmd == "asm")
      return cmd_asm(vm);
    if (cmd == "disasm")
      return cmd_disasm(vm);
    if (cmd == "run")
      return cmd_run(vm);
    throw Fatal("unknown command '" + cmd + "' (asm, disasm, run)");
  } catch (const po::error &e) {
    std::fprintf(stderr, "tl-sim: %s\n", e.what());
  } catch (const Fatal &e) {
    std::fprintf(stderr, "tl-sim: %s\n", e.what());
  } catch (const ConfigError &e) {
    std::fprintf(stderr, "tl-sim: %s\n", e.what());
  } catch (const std::runtime_error &e) {
    std::fprintf(stderr, "tl-sim: %s\n", e.what());
  }
  return 1;
}
