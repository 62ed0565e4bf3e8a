// tlc: the TL compiler driver (verify, print, opt, run, compile, inspect).
// SPDX-License-Identifier: Apache-2.0
#include "tlc.h"

#include "tl/ir/parser.h"
#include "tl/ir/verifier.h"

#include <boost/program_options.hpp>

#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

namespace tl::tlc {

bool parse_options(int argc, char **argv, const boost::program_options::options_description &desc,
                   const std::string &usage, const std::string &more_help, const char *rest) {
  namespace po = boost::program_options;
  po::positional_options_description pos;
  pos.add("input", 1);
  if (rest)
    pos.add(rest, -1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(desc).positional(pos).run(), vm);
  po::notify(vm);
  if (!vm.count("help"))
    return true;
  std::cout << usage << desc << more_help;
  return false;
}

std::optional<std::string> read_input(const std::string &path) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "tlc: error: cannot open '" << path << "': " << std::strerror(errno) << "\n";
    return std::nullopt;
  }
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<ir::Module> load_module(const std::string &path) {
  auto text = read_input(path);
  if (!text)
    return nullptr;
  ir::Diagnostics diags;
  auto module = ir::parse(*text, path == "-" ? "<stdin>" : path, diags);
  if (module)
    ir::verify(*module, diags);
  if (diags.has_errors()) {
    std::cerr << diags.str();
    return nullptr;
  }
  return module;
}

} // namespace tl::tlc

namespace {
const char *kUsage = R"(usage: tlc <command> [options] <file.tlir | file.tlx>

commands:
  verify   parse and verify; --verify-diagnostics checks expected-error comments
  print    parse, verify and print the canonical text
  opt      run passes: --passes=canonicalize,cse,... [--print-after-all]
  run      run a kernel on the reference interpreter with .npy or random inputs
  compile  optimize and package for a target: --target tlir [--passes=...] -o out.tlx
  inspect  print an executable's (.tlx) header and kernel table; --code writes its code

'tlc <command> --help' describes each command's options.
)";
} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "verify")
      return tl::tlc::cmd_verify(argc - 1, argv + 1);
    if (cmd == "print")
      return tl::tlc::cmd_print(argc - 1, argv + 1);
    if (cmd == "opt")
      return tl::tlc::cmd_opt(argc - 1, argv + 1);
    if (cmd == "run")
      return tl::tlc::cmd_run(argc - 1, argv + 1);
    if (cmd == "compile")
      return tl::tlc::cmd_compile(argc - 1, argv + 1);
    if (cmd == "inspect")
      return tl::tlc::cmd_inspect(argc - 1, argv + 1);
  } catch (const std::exception &e) {
    std::cerr << "tlc " << cmd << ": error: " << e.what() << "\n";
    return 2;
  }
  std::cerr << "tlc: error: unknown command '" << cmd << "'\n" << kUsage;
  return 2;
}
