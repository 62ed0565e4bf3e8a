// tlc inspect: prints a TL executable's header and kernel table, or its code blob.
// SPDX-License-Identifier: Apache-2.0
#include "tlc.h"

#include "tl/format/executable.h"
#include "tl/format/nvptx_code.h"

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

// What a CUDA launch of each kernel takes: threads, shared memory, parameters and the asserts
// the device checks after it (none: no status word is set up or read back), then the images.
void print_nvptx(const exe::Executable &e, std::ostream &os) {
  nvptx::Code code;
  std::string error;
  if (!nvptx::parse_code(e.code.data(), e.code.size(), code, error)) {
    os << "nvptx: unreadable code blob: " << error << "\n";
    return;
  }
  for (const nvptx::Kernel &k : code.kernels)
    os << "  nvptx @" << k.name << ": block=" << k.block[0] << "x" << k.block[1] << "x"
       << k.block[2] << " static_shared=" << k.static_shared_bytes
       << " dynamic_shared=" << k.dynamic_shared_bytes << " params=" << k.params.size()
       << " asserts=" << k.asserts.size() << "\n";
  for (const nvptx::Image &im : code.images)
    os << "  image: " << (im.kind == nvptx::Image::Kind::Cubin ? "cubin" : "ptx") << " sm_" << im.sm
       << (im.arch_specific ? "a" : "") << " " << im.bytes.size() << " bytes\n";
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
  if (e.target == nvptx::kTarget)
    print_nvptx(e, os);
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
