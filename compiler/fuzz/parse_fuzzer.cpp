// libFuzzer target: any bytes through the .tlir parser and verifier; verified modules must
// round-trip exactly through the printer and run on the interpreter without crashing.
// SPDX-License-Identifier: Apache-2.0
#include "tl/interpreter/host_tensor.h"
#include "tl/ir/parser.h"
#include "tl/ir/printer.h"
#include "tl/ir/verifier.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace {

/// Small tensors (3 per dimension) and scalars of 2 for every kernel argument.
void run_bounded(const tl::ir::Kernel &kernel) {
  std::vector<tl::interp::HostTensor> tensors;
  std::vector<tl::interp::ArgValue> args;
  tensors.reserve(kernel.body()->arguments().size());
  for (auto &p : kernel.body()->arguments()) {
    const tl::ir::Type &t = p->type();
    if (t.is_tensor()) {
      tensors.emplace_back(t.elem(), std::vector<int64_t>(t.rank(), 3));
      args.push_back(tensors.back().arg());
    } else if (tl::ir::is_float(t.elem())) {
      args.push_back(2.0);
    } else {
      args.push_back(int64_t(2));
    }
  }
  tl::interp::RunOptions opts;
  opts.grid = {2, 1, 1};
  opts.max_ops = 20000;
  opts.max_tile_elements = 1 << 14;
  std::ostringstream sink;
  opts.print_stream = &sink;
  (void)tl::interp::run(kernel, args, opts);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  tl::ir::Diagnostics diags;
  auto module = tl::ir::parse(text, "fuzz.tlir", diags);
  if (!module || !tl::ir::verify(*module, diags))
    return 0;
  const std::string printed = tl::ir::print(*module);
  tl::ir::Diagnostics again;
  auto reparsed = tl::ir::parse(printed, "printed.tlir", again);
  if (!reparsed || !tl::ir::verify(*reparsed, again) || tl::ir::print(*reparsed) != printed) {
    std::fprintf(stderr, "round trip failed:\n%s\n%s", printed.c_str(), again.str().c_str());
    std::abort();
  }
  for (auto &k : module->kernels())
    run_bounded(*k);
  return 0;
}
