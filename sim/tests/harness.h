// Helpers for the simulator's scenario tests: each test executable's sc_main picks one scenario by
// name (one ctest per scenario, one elaboration per process); runs that compare two simulations
// run them in forked children.
// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "tl/npu/assembler.h"
#include "tl/npu/config.h"
#include "tl/npu/simulator.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

/// SystemC's main() calls this (declared as SystemC does, without including SystemC).
extern "C" int sc_main(int argc, char *argv[]);

namespace tl::npu::test {

/// Fails the scenario: prints the message and exits with status 1.
[[noreturn]] void fail(const std::string &message);
#define TNPU_CHECK(cond, msg)                                                                      \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::tl::npu::test::fail(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " +        \
                            #cond + ": " + (msg));                                                 \
  } while (0)

ChipConfig chip(const std::string &name); ///< sim/configs/<name>.json
std::vector<isa::Instr> assemble_text(const std::string &text,
                                      const std::map<std::string, int64_t> &defines = {});
std::vector<isa::Instr> assemble_file(const std::string &path,
                                      const std::map<std::string, int64_t> &defines = {});
/// Path of a program under sim/tests/programs.
std::string program_path(const std::string &name);

/// Runs `body` in a forked child and returns the string it produced (a child that fails exits
/// the parent's scenario too).
std::string in_child(const std::function<std::string()> &body);

/// Runs `sim` (loaded, not yet run) in both modes: a forked child with arithmetic off
/// (SimOptions::compute_data = false), then this process as constructed; fails the scenario
/// unless both end with the same status, message, cycles and statistics. Returns this process's
/// report, so the scenario goes on to check its results.
SimReport run_checked(Simulator &sim);

/// A stat's value from a report's stats JSON ("core0.mx.busy_cycles").
double stat(const SimReport &r, const std::string &name);

/// Scenario table: name -> body. main_with() runs argv[1] or lists them.
using Scenarios = std::map<std::string, std::function<void()>>;
int main_with(const Scenarios &scenarios, int argc, char **argv);

} // namespace tl::npu::test
