// tlc opt: runs a pass pipeline (and a target's planning passes) over a module and prints it.
// SPDX-License-Identifier: Apache-2.0
#include "tlc.h"

#include "tl/compiler/pipeline.h"
#include "tl/ir/printer.h"
#include "tl/passes/pass_manager.h"

#include <boost/program_options.hpp>

#include <fstream>
#include <iostream>

namespace po = boost::program_options;

namespace tl::tlc {

int cmd_opt(int argc, char **argv) {
  std::string input, output, target, pipeline = passes::default_pipeline();
  std::vector<std::string> target_options;
  passes::PassManagerOptions pm_opts;
  bool verify_each = false, trace = false;
  po::options_description desc("tlc opt options");
  desc.add_options()("help,h", "show this help")("input", po::value(&input), "input .tlir")(
      "passes,p", po::value(&pipeline),
      ("comma-separated pass pipeline (default: " + pipeline + ")").c_str())(
      "print-after-all", po::bool_switch(&pm_opts.print_after_all),
      "print the IR to stderr after every pass")("verify-each", po::bool_switch(&verify_each),
                                                 "verify the IR after every pass")(
      "trace-rewrites", po::bool_switch(&trace), "log each named rewrite to stderr")(
      "output,o", po::value(&output), "write the result here instead of stdout")(
      "target,t", po::value(&target),
      "then run this target's planning passes (their decisions become attributes)")(
      "target-option", po::value(&target_options)->composing(),
      "key=value for the target, repeatable (tnpu: chip=sim/configs/edge.json)");
  if (!parse_options(argc, argv, desc, "usage: tlc opt [options] <file.tlir | ->\n"))
    return 0;
  if (input.empty())
    throw std::runtime_error("no input file (use - for standard input)");
  auto module = load_module(input);
  if (!module)
    return 1;
  pm_opts.verify_each |= verify_each;
  if (trace)
    pm_opts.rewrite_trace = &std::cerr;
  passes::PassManager pm(pm_opts);
  if (passes::Status s = pm.add_pipeline(pipeline); !s) {
    std::cerr << "tlc opt: error: " << s.message << "\n";
    return 2;
  }
  if (target.empty() && !target_options.empty())
    throw std::runtime_error("--target-option needs --target");
  if (!target.empty())
    if (std::string e =
            compile::add_planning_passes(pm, target, parse_target_options(target_options));
        !e.empty()) {
      std::cerr << "tlc opt: error: " << e << "\n";
      return 2;
    }
  if (passes::Status s = pm.run(*module); !s) {
    std::cerr << "tlc opt: error: " << s.message << "\n";
    return 1;
  }
  if (output.empty()) {
    std::cout << ir::print(*module);
  } else {
    std::ofstream out(output);
    out << ir::print(*module);
    if (!out) {
      std::cerr << "tlc opt: error: cannot write '" << output << "'\n";
      return 1;
    }
  }
  return 0;
}

} // namespace tl::tlc
