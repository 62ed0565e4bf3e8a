// Compiler-target plugins: discovery, refusal of broken ones with their reasons, compiling through
// a working one, and plugin errors mapped back to the user's source lines.
// SPDX-License-Identifier: Apache-2.0
#include "tl/compiler/pipeline.h"
#include "tl/ir/parser.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace {

const char *kModule = R"(kernel @k(%x: tensor<?xf32>) {
  %z = constant {value = 0} : i32

  %t = load %x, %z : tile<4xf32>
  store %x, %z, %t
  return
}
)";

std::unique_ptr<tl::ir::Module> module() {
  tl::ir::Diagnostics d;
  auto m = tl::ir::parse(kModule, "user.tlir", d);
  EXPECT_TRUE(m) << d.str();
  return m;
}

class TargetPlugins : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    // Before the first use: discovery happens once per process.
    setenv("TL_TARGET_PATH", TL_BROKEN_TARGETS, 1);
    setenv("TL_TARGET_NO_DEFAULTS", "1", 1);
  }
};

TEST_F(TargetPlugins, BrokenOnesAreListedWithTheirReasons) {
  const std::string help = tl::compile::targets_help();
  EXPECT_NE(help.find("libtl_target_noentry.so: library does not export the entry point "
                      "tl_target_plugin_entry"),
            std::string::npos)
      << help;
  EXPECT_NE(
      help.find(
          "plugin ABI 99.0 does not match the compiler's ABI 1.0 (major versions must be equal)"),
      std::string::npos)
      << help;
  EXPECT_NE(help.find("incomplete target table"), std::string::npos) << help;
  EXPECT_NE(help.find("returned no target table"), std::string::npos) << help;
  EXPECT_NE(help.find("echo  echoes the module"), std::string::npos) << help;
  EXPECT_FALSE(tl::compile::find_target("future"));
  EXPECT_FALSE(tl::compile::find_target("hollow"));
  // A built-in target is linked in, not loaded: the registry lists it first.
  ASSERT_NE(tl::compile::find_target("llvm-cpu"), nullptr);
  EXPECT_TRUE(tl::compile::find_target("llvm-cpu")->plugin_path.empty());
  EXPECT_FALSE(tl::compile::find_target("echo")->plugin_path.empty());
  const std::string e = tl::compile::unknown_target("future");
  EXPECT_NE(e.find("unknown target 'future' (known targets: " + tl::compile::known_targets() + ")"),
            std::string::npos)
      << e;
  EXPECT_NE(tl::compile::known_targets().find("tlir, llvm-cpu"), std::string::npos);
  EXPECT_NE(tl::compile::known_targets().find(", echo"), std::string::npos);
}

TEST_F(TargetPlugins, AWorkingPluginCompilesAndItsErrorsPointAtTheSource) {
  auto m = module();
  tl::exe::Executable out;
  EXPECT_EQ(tl::compile::package(*m, "echo", "test", out), "");
  EXPECT_EQ(out.target, "echo");
  EXPECT_EQ(std::string(out.code.begin(), out.code.end()).rfind("kernel @k", 0), 0u);
  tl::exe::Executable bad;
  // Line 3 of the text handed to the plugin is the load, which the user wrote on line 4.
  EXPECT_EQ(tl::compile::package(*m, "echo", "test", bad, {{"mode", "fail"}}),
            "user.tlir:4:3: error: broken: cannot lower this op");
  tl::exe::Executable silent;
  EXPECT_EQ(tl::compile::package(*m, "echo", "test", silent, {{"mode", "silent"}}),
            "target 'echo' failed without a message");
}

} // namespace
