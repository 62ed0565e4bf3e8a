// Unit tests of the pass table and the pass manager: pipeline parsing, printing, verification.
// SPDX-License-Identifier: Apache-2.0
#include "tl/passes/pass_manager.h"

#include "tl/ir/builder.h"
#include "tl/ir/parser.h"
#include "tl/ir/printer.h"
#include "tl/passes/rewrite.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tl::passes {
namespace {

constexpr const char *kAddZero = R"(kernel @k(%x: i32) {
  %c0 = constant {value = 0} : i32
  %y = add %x, %c0 : i32
  print %y
  return
}
)";

std::unique_ptr<ir::Module> parse_ok(const char *text) {
  ir::Diagnostics d;
  auto m = ir::parse(text, "t.tlir", d);
  EXPECT_TRUE(m) << d.str();
  return m;
}

TEST(PassRegistry, ListsEveryPassOnce) {
  EXPECT_EQ(known_pass_names(), "canonicalize, constfold, cse, dce");
  for (const PassInfo &p : all_passes()) {
    EXPECT_EQ(find_pass(p.name), &p);
    EXPECT_FALSE(p.summary.empty());
  }
  EXPECT_EQ(find_pass("nope"), nullptr);
}

TEST(PassManager, UnknownPassNameListsKnownPasses) {
  PassManager pm;
  Status s = pm.add_pipeline("canonicalize,bogus,dce");
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.message, "unknown pass 'bogus' in pipeline 'canonicalize,bogus,dce'; known passes: "
                       "canonicalize, constfold, cse, dce");
  EXPECT_TRUE(pm.passes().empty()); // nothing added on error
}

TEST(PassManager, EmptyNameIsAnError) {
  PassManager pm;
  EXPECT_FALSE(pm.add_pipeline("cse,,dce").ok);
  EXPECT_FALSE(pm.add_pipeline("cse,").ok);
  EXPECT_TRUE(pm.add_pipeline("").ok);
  EXPECT_TRUE(pm.passes().empty());
}

TEST(PassManager, ParsesPipelineWithBlanks) {
  PassManager pm;
  ASSERT_TRUE(pm.add_pipeline(" cse , dce ").ok);
  ASSERT_EQ(pm.passes().size(), 2u);
  EXPECT_EQ(pm.passes()[0].name, "cse");
  EXPECT_EQ(pm.passes()[1].name, "dce");
}

TEST(PassManager, DefaultPipelineIsRegistered) {
  PassManager pm;
  EXPECT_EQ(default_pipeline(), "canonicalize,constfold,cse,dce");
  ASSERT_TRUE(pm.add_pipeline(default_pipeline()).ok);
  EXPECT_EQ(pm.passes().size(), 4u);
}

TEST(PassManager, RunsPassesInOrderAndPrintsAfterEach) {
  auto m = parse_ok(kAddZero);
  std::ostringstream out;
  PassManagerOptions opts;
  opts.print_after_all = true;
  opts.print_stream = &out;
  opts.verify_each = true;
  PassManager pm(opts);
  ASSERT_TRUE(pm.add_pipeline("canonicalize,dce").ok);
  Status s = pm.run(*m);
  ASSERT_TRUE(s.ok) << s.message;
  const std::string after_dce = "kernel @k(%x: i32) {\n  print %x\n  return\n}\n";
  EXPECT_EQ(ir::print(*m), after_dce);
  const std::string after_canon = "kernel @k(%x: i32) {\n  %c0 = constant {value = 0} : i32\n"
                                  "  print %x\n  return\n}\n";
  EXPECT_EQ(out.str(), "// -----// IR after canonicalize //----- //\n" + after_canon +
                           "// -----// IR after dce //----- //\n" + after_dce);
}

TEST(PassManager, APassCarriesItsOptions) {
  auto m = parse_ok(kAddZero);
  PassManager pm;
  const int64_t budget = 4096; // what a target's pass would take from its CompileOptions
  pm.add_pass({"tag-return", "records an option on the return", [budget](ir::Kernel &k) {
                 k.body()->terminator()->set_attr("test.budget", budget);
                 return true;
               }});
  ASSERT_TRUE(pm.run(*m).ok);
  EXPECT_NE(ir::print(*m).find("return {test.budget = 4096}"), std::string::npos) << ir::print(*m);
}

bool erase_return(ir::Kernel &k) {
  k.body()->ops().pop_back();
  return true;
}

TEST(PassManager, VerifierAfterPassNamesTheBrokenPass) {
  auto m = parse_ok(kAddZero);
  PassManagerOptions opts;
  opts.verify_each = true;
  PassManager pm(opts);
  ASSERT_TRUE(pm.add_pipeline("cse").ok);
  pm.add_pass({"erase-return", "breaks the kernel on purpose", erase_return});
  ASSERT_TRUE(pm.add_pipeline("dce").ok);
  Status s = pm.run(*m);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.message.rfind("pass 'erase-return' produced invalid IR:\n", 0), 0u) << s.message;
  EXPECT_NE(s.message.find("error: kernel body must end with return"), std::string::npos)
      << s.message;
  // The pass after the failure did not run: the add is still there.
  EXPECT_NE(ir::print(*m).find("add"), std::string::npos);
}

TEST(PassManager, VerificationCanBeTurnedOff) {
  auto m = parse_ok(kAddZero);
  PassManagerOptions opts;
  opts.verify_each = false;
  PassManager pm(opts);
  pm.add_pass({"erase-return", "breaks the kernel on purpose", erase_return});
  EXPECT_TRUE(pm.run(*m).ok);
}

bool throw_build_error(ir::Kernel &k) {
  ir::Builder b(k);
  b.constexpr_param("missing"); // throws BuildError
  return true;
}

TEST(PassManager, BuilderErrorInPassBecomesAnError) {
  auto m = parse_ok(kAddZero);
  PassManager pm;
  pm.add_pass({"bad-build", "makes an invalid op", throw_build_error});
  Status s = pm.run(*m);
  EXPECT_FALSE(s.ok);
  EXPECT_EQ(s.message, "pass 'bad-build' failed: kernel has no constexpr parameter 'missing'");
}

TEST(PassManager, TracesNamedRewrites) {
  auto m = parse_ok(kAddZero);
  std::ostringstream trace;
  PassManagerOptions opts;
  opts.rewrite_trace = &trace;
  PassManager pm(opts);
  ASSERT_TRUE(pm.add_pipeline("canonicalize,dce").ok);
  ASSERT_TRUE(pm.run(*m).ok);
  EXPECT_EQ(trace.str(), "rewrite add-zero at t.tlir:3:3\nrewrite dce-constant at t.tlir:2:3\n");
  EXPECT_EQ(rewrite_trace(), nullptr); // restored after the run (TL_DEBUG_REWRITES unset)
}

} // namespace
} // namespace tl::passes
