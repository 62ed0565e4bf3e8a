// tlc inspect: prints a TL executable's header and kernel table, or its code blob.
// SPDX-License-Identifier: Apache-2.0
#include "tlc.h"

#include "tl/format/executable.h"

#include <boost/program_options.hpp>

#include <iostream>

namespace po = boost::program_options;

namespace tl::tlc {
namespace {

std::string param_str(const exe::ParamInfo &p, size_t index) {
  std::string s = p.name.empty() ? "#" + std::to_string(index) : p.name;
  const std::string dtype(ir::scalar_name(ir::ScalarKind(p.dtype)));
  if (p.kind == exe::ParamKind::Scalar)
    return s + ": " + dtype;
  return s + ": tensor<" + std::to_string(p.rank) + " x " + dtype + ">";
}

void print_table(const exe::LoadResult &r, std::ostream &os) {
  const exe::Executable &e = r.exe;
  os << "format: " << r.format_major << "." << r.format_minor << "\n"
     << "target: " << e.target << "\n"
     << "producer: " << e.producer << "\n"
     << "sha256: " << r.sha256_hex << "\n"
     << "code: " << e.code.size() << " bytes\n"
     << "kernels: " << e.kernels.size() << "\n";
  for (const exe::KernelInfo &k : e.kernels) {
    os << "  @" << k.name << "(";
    for (size_t i = 0; i < k.params.size(); ++i)
      os << (i ? ", " : "") << param_str(k.params[i], i);
    os << ") grid_rank=" << k.grid_rank << " onchip_memory_bytes=" << k.onchip_memory_bytes << "\n";
  }
}

} // namespace

int cmd_inspect(int argc, char **argv) {
  std::string input;
  bool code = false;
  po::options_description desc("tlc inspect options");
  desc.add_options()("help,h", "show this help")("input", po::value(&input), "input .tlx")(
      "code", po::bool_switch(&code), "write only the code blob, as is, to stdout");
  if (!parse_options(argc, argv, desc, "usage: tlc inspect [--code] <file.tlx>\n"))
    return 0;
  if (input.empty())
    throw std::runtime_error("no input file");
  const exe::LoadResult r = exe::load_file(input);
  if (!r.ok) {
    std::cerr << "tlc inspect: error: " << r.error << "\n";
    return 1;
  }
  if (code)
    std::cout.write(reinterpret_cast<const char *>(r.exe.code.data()),
                    static_cast<std::streamsize>(r.exe.code.size()));
  else
    print_table(r, std::cout);
  return std::cout ? 0 : 1;
}

} // namespace tl::tlc
