// The null compiler target: a complete, minimal TL compiler-target plugin to copy when porting a
// chip's code generator. Its "code" is one line per kernel (name and parameter count), which the
// null device loads. Replace compile() with your lowering of Tile IR (tl/ir/ir.h) to your ISA;
// report what you cannot lower as "file:line:col: error: <target>: ..." at the op's location.
// SPDX-License-Identifier: Apache-2.0
#include "tl/target_support.hpp"

namespace {

class NullTarget : public tl::sdk::CompilerTarget {
public:
  std::string compile(const tl::ir::Module &module, const tl::sdk::TargetOptions &options,
                      std::vector<uint8_t> &code) override {
    for (const auto &[key, value] : options)
      return "null: unknown target option '" + key + "'";
    for (const auto &kernel : module.kernels()) {
      const std::string line =
          kernel->name() + " " + std::to_string(kernel->body()->arguments().size()) + "\n";
      code.insert(code.end(), line.begin(), line.end());
    }
    return "";
  }
};

} // namespace

TL_DEFINE_COMPILER_TARGET("null", "the template's null target (vendors/sdk/template)", NullTarget)
