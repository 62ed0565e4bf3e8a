// Unit tests of the rewriting helpers: use replacement through regions, erasure, batching.
// SPDX-License-Identifier: Apache-2.0
#include "tl/passes/rewrite.h"

#include "tl/ir/parser.h"
#include "tl/ir/printer.h"
#include "tl/ir/verifier.h"

#include <gtest/gtest.h>

namespace tl::passes {
namespace {

constexpr const char *kLoop = R"(kernel @k(%n: i32) {
  %a = constant {value = 1} : i32
  %b = constant {value = 2} : i32
  %r = for %i = %a to %n step %a iter_args(%s = %a) : i32 {
    %t = add %s, %a : i32
    yield %t
  }
  print %r, %a
  return
}
)";

std::unique_ptr<ir::Module> parse_ok(const char *text) {
  ir::Diagnostics d;
  auto m = ir::parse(text, "t.tlir", d);
  EXPECT_TRUE(m) << d.str();
  return m;
}

ir::Operation *op_at(ir::Block *b, size_t i) { return std::next(b->ops().begin(), i)->get(); }

TEST(Rewrite, ReplaceAllUsesReachesNestedRegions) {
  auto m = parse_ok(kLoop);
  ir::Kernel &k = *m->kernels()[0];
  ir::Value *a = op_at(k.body(), 0)->result();
  ir::Value *b = op_at(k.body(), 1)->result();
  replace_all_uses(k, a, b);
  erase_op(op_at(k.body(), 0));
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(*m, d)) << d.str();
  EXPECT_EQ(ir::print(*m), R"(kernel @k(%n: i32) {
  %b = constant {value = 2} : i32
  %r = for %i = %b to %n step %b iter_args(%s = %b) : i32 {
    %t = add %s, %b : i32
    yield %t
  }
  print %r, %b
  return
}
)");
}

TEST(Rewrite, RewriterResolvesChainsOnCommit) {
  auto m = parse_ok(kLoop);
  ir::Kernel &k = *m->kernels()[0];
  ir::Value *n = k.body()->argument(0);
  {
    Rewriter rw(k);
    ir::Operation *loop = op_at(k.body(), 2);
    ir::Operation *add = loop->region(0)->ops().front().get();
    // %t -> %s, then %r -> its init %a, then %a -> %b: uses of %r must end at %b.
    rw.replace_op(loop->region(0)->ops().begin(), {add->operand(0)});
    rw.replace_op(std::next(k.body()->ops().begin(), 2), {loop->operand(3)});
    rw.replace_op(k.body()->ops().begin(), {op_at(k.body(), 1)->result()});
    EXPECT_EQ(rw.lookup(n), n);
  } // commits
  ir::Diagnostics d;
  EXPECT_TRUE(ir::verify(*m, d)) << d.str();
  EXPECT_EQ(ir::print(*m), "kernel @k(%n: i32) {\n  %b = constant {value = 2} : i32\n"
                           "  print %b, %b\n  return\n}\n");
}

} // namespace
} // namespace tl::passes
