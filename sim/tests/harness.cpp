// Scenario test helpers (see harness.h).
// SPDX-License-Identifier: Apache-2.0
#include "harness.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

namespace tl::npu::test {

void fail(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "FAIL: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

ChipConfig chip(const std::string &name) {
  return load_config(std::string(TL_NPU_CONFIG_DIR) + "/" + name + ".json");
}

std::string program_path(const std::string &name) {
  return std::string(TL_NPU_PROGRAM_DIR) + "/" + name;
}

std::vector<isa::Instr> assemble_text(const std::string &text,
                                      const std::map<std::string, int64_t> &defines) {
  isa::Assembly a = isa::assemble(text, defines);
  if (!a.ok())
    fail("assembly failed:\n" + isa::format_diagnostics("<program>", a.errors));
  return a.code;
}

std::vector<isa::Instr> assemble_file(const std::string &path,
                                      const std::map<std::string, int64_t> &defines) {
  std::ifstream f(path);
  if (!f)
    fail("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  isa::Assembly a = isa::assemble(ss.str(), defines);
  if (!a.ok())
    fail("assembly failed:\n" + isa::format_diagnostics(path, a.errors));
  return a.code;
}

std::string in_child(const std::function<std::string()> &body) {
  int fds[2];
  if (pipe(fds) != 0)
    fail("pipe failed");
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out = body();
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0)
        std::_Exit(2);
      off += static_cast<size_t>(n);
    }
    close(fds[1]);
    std::fflush(nullptr);
    std::_Exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fail("a child simulation failed");
  return out;
}

SimReport run_checked(Simulator &sim) {
  // status, message, cycles and the stats JSON (every statistic), one per line.
  auto summary = [](const SimReport &r) {
    return std::string(status_name(r.status)) + "\n" + r.message + "\n" + std::to_string(r.cycles) +
           "\n" + r.stats_json;
  };
  const std::string off = in_child([&] {
    sim.set_compute_data(false);
    return summary(sim.run());
  });
  SimReport r = sim.run();
  const std::string on = summary(r);
  if (on != off) {
    size_t i = 0;
    while (i < on.size() && i < off.size() && on[i] == off[i])
      ++i;
    const size_t from = i > 200 ? i - 200 : 0;
    fail("arithmetic on and off differ at byte " + std::to_string(i) + ":\n--- on:\n" +
         on.substr(from, 400) + "\n--- off:\n" + off.substr(from, 400));
  }
  return r;
}

double stat(const SimReport &r, const std::string &name) {
  auto j = nlohmann::json::parse(r.stats_json);
  if (!j["stats"].contains(name))
    fail("no stat " + name);
  return j["stats"][name]["value"].get<double>();
}

int main_with(const Scenarios &scenarios, int argc, char **argv) {
  if (argc != 2 || scenarios.count(argv[1]) == 0) {
    std::fprintf(stderr, "usage: %s SCENARIO\nscenarios:", argv[0]);
    for (const auto &s : scenarios)
      std::fprintf(stderr, " %s", s.first.c_str());
    std::fprintf(stderr, "\n");
    return 2;
  }
  scenarios.at(argv[1])();
  std::printf("PASS %s\n", argv[1]);
  return 0;
}

} // namespace tl::npu::test
