// Unit tests of the Tile IR: builder checks, printer/parser round trip, verifier rules.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/builder.h"
#include "tl/ir/clone.h"
#include "tl/ir/parser.h"
#include "tl/ir/printer.h"
#include "tl/ir/uses.h"
#include "tl/ir/verifier.h"

#include <gtest/gtest.h>

namespace tl::ir {
namespace {

TEST(Types, PrintAndParse) {
  for (const char *s : {"f32", "i1", "tile<128x64xbf16>", "tensor<?x?xf8e4m3>", "tile<7xu16>"}) {
    auto t = parse_type(s);
    ASSERT_TRUE(t) << s;
    EXPECT_EQ(t->str(), s);
  }
  EXPECT_FALSE(parse_type("tile<?xf32>"));
  EXPECT_FALSE(parse_type("tile<0xf32>"));
  EXPECT_FALSE(parse_type("tensor<4xf32>"));
  EXPECT_FALSE(parse_type("f33"));
}

TEST(Builder, BuildsVerifiableVectorAdd) {
  Module m;
  Kernel *k = m.add_kernel("vadd", {});
  Builder b(*k);
  Value *x = b.add_argument(Type::tensor(ScalarKind::F32, 1), "x");
  Value *y = b.add_argument(Type::tensor(ScalarKind::F32, 1), "y");
  Value *pid = b.program_id(0);
  Value *c = b.constant(ScalarKind::I32, int64_t(64));
  Value *off = b.elementwise(Opcode::Mul, {pid, c});
  Value *tx = b.load(x, {off}, {64});
  Value *ty = b.load(y, {off}, {64});
  b.store(y, {off}, b.elementwise(Opcode::Add, {tx, ty}));
  b.ret();
  Diagnostics d;
  EXPECT_TRUE(verify(m, d)) << d.str();
  std::string text = print(m);
  Diagnostics d2;
  auto m2 = parse(text, "rt.tlir", d2);
  ASSERT_TRUE(m2) << d2.str();
  EXPECT_EQ(print(*m2), text);
}

TEST(Builder, RejectsBadOps) {
  Module m;
  Kernel *k = m.add_kernel("bad", {});
  Builder b(*k);
  Value *f = b.constant(ScalarKind::F32, 1.0);
  Value *i = b.constant(ScalarKind::I32, int64_t(1));
  EXPECT_THROW(b.elementwise(Opcode::Add, {f, i}), BuildError);
  EXPECT_THROW(b.elementwise(Opcode::Exp, {i}), BuildError);
  EXPECT_THROW(b.reshape(b.splat(f, {4, 4}), {5}), BuildError);
  EXPECT_THROW(b.reduce("sum", b.splat(f, {4}), 1), BuildError);
  EXPECT_THROW(b.constexpr_param("missing"), BuildError);
  // Shapes the parser cannot even express are still refused when built in C++.
  EXPECT_THROW(b.full(Type::tile(ScalarKind::F32, {65536, 65536, 2}), Attr(0.0)), BuildError);
  EXPECT_THROW(b.full(Type::tile(ScalarKind::F32, {}), Attr(0.0)), BuildError);
  Value *t0 = b.add_argument(Type::tensor(ScalarKind::F32, 0), "t0");
  EXPECT_THROW(b.gather(t0, {i}), BuildError);
}

TEST(Parser, ErrorsNameFileLineColumn) {
  Diagnostics d;
  auto m = parse("kernel @k() {\n  %a = bogus : f32\n  return\n}\n", "bad.tlir", d);
  EXPECT_FALSE(m);
  ASSERT_EQ(d.list().size(), 1u);
  EXPECT_EQ(d.list()[0].str(), "bad.tlir:2:8: error: unknown op 'bogus'");
}

TEST(UseList, ListsReadersInProgramOrderAcrossRegions) {
  const char *text = R"(kernel @k(%x: tensor<?xf32>, %n: i32) {
  %c0 = constant {value = 0} : i32
  %t = load %x, %c0 : tile<16xf32>
  %s = add %t, %t : tile<16xf32>
  %r = for %i = %c0 to %n step %n iter_args(%a = %s) : tile<16xf32> {
    %u = mul %a, %t : tile<16xf32>
    yield %u
  }
  store %x, %c0, %r
  return
}
)";
  Diagnostics d;
  auto m = parse(text, "uses.tlir", d);
  ASSERT_TRUE(m) << d.str();
  const Block &body = *m->kernels()[0]->body();
  std::vector<const Operation *> ops;
  for (const auto &op : body.ops())
    ops.push_back(op.get());
  UseList uses(body);
  const Value *t = ops[1]->result();
  // add reads %t twice, then the mul inside the loop body reads it once more.
  ASSERT_EQ(uses.count(t), 3u);
  EXPECT_EQ(uses.users(t)[0]->opcode(), Opcode::Add);
  EXPECT_EQ(uses.users(t)[1]->opcode(), Opcode::Add);
  EXPECT_EQ(uses.users(t)[2]->opcode(), Opcode::Mul);
  ASSERT_EQ(uses.count(ops[3]->result()), 1u); // the loop's result: read by the store only
  EXPECT_EQ(uses.users(ops[3]->result())[0]->opcode(), Opcode::Store);
  EXPECT_EQ(uses.count(ops[4]->operand(0)), 2u); // %x: read by the load and the store
}

TEST(Parser, RoundTripsControlFlowAndAttributes) {
  const char *text = R"(kernel @k<BLOCK: i32 = 16, SCALE: f32 = 0.5>(%x: tensor<?x?xf32>, %n: i32) {
  %c0 = constant {value = 0} : i32
  %c1 = constant {value = 1} : i32
  %z = full {value = 0.0} : tile<16x16xf32>
  %acc = for %k = %c0 to %n step %c1 iter_args(%a = %z) : tile<16x16xf32> {
    %t = load %x, %k, %c0 {padding = -inf} : tile<16x16xf32>
    %s = add %a, %t : tile<16x16xf32>
    yield %s
  }
  %b = cmp %n, %c0 {pred = "gt"} : i1
  %r = if %b : f32 {
    %one = constant {value = 1.5e-07} : f32
    yield %one
  } else {
    %two = constant {value = 2.0} : f32
    yield %two
  }
  print %r {prefix = "r=\"\n"}
  store %x, %c0, %c0, %acc
  return
}
)";
  Diagnostics d;
  auto m = parse(text, "rt.tlir", d);
  ASSERT_TRUE(m) << d.str();
  EXPECT_TRUE(verify(*m, d)) << d.str();
  EXPECT_EQ(print(*m), text);
}

TEST(Clone, CopiesEverythingAndSharesNothing) {
  const char *text = R"(kernel @k<B: i32 = 16>(%x: tensor<?xf32>, %n: i32) {
  %c0 = constant {value = 0} : i32
  %z = full {tnpu.addr = 64, value = 0.0} : tile<16xf32>
  %acc = for %i = %c0 to %n step %n iter_args(%a = %z) : tile<16xf32> {
    %t = load %x, %i : tile<16xf32>
    %s = add %a, %t : tile<16xf32>
    yield %s
  }
  store %x, %c0, %acc
  return
}
)";
  Diagnostics d;
  auto m = parse(text, "clone.tlir", d);
  ASSERT_TRUE(m) << d.str();
  auto c = clone(*m);
  EXPECT_EQ(print(*c), text);
  EXPECT_TRUE(verify(*c, d)) << d.str();
  const Kernel &k = *m->kernels()[0], &ck = *c->kernels()[0];
  EXPECT_EQ(ck.constexprs().size(), 1u);
  std::vector<Operation *> ops, cops;
  walk(k.body(), [&](Operation *op) { ops.push_back(op); });
  walk(ck.body(), [&](Operation *op) { cops.push_back(op); });
  ASSERT_EQ(ops.size(), cops.size());
  for (size_t i = 0; i < ops.size(); ++i) { // same locations, new objects
    EXPECT_NE(ops[i], cops[i]);
    EXPECT_EQ(ops[i]->loc().str(), cops[i]->loc().str());
    for (Value *v : cops[i]->operands())
      for (const auto &a : k.body()->arguments())
        EXPECT_NE(v, a.get());
  }
  cops[1]->set_attr("tnpu.addr", int64_t(128)); // the copy is independent
  EXPECT_EQ(*ops[1]->attr_as<int64_t>("tnpu.addr"), 64);
  EXPECT_EQ(cops[3]->parent(), cops[2]->region(0)); // the load sits in the copied loop
  EXPECT_EQ(cops[3]->operand(1), cops[2]->region(0)->argument(0));
}

TEST(Attributes, TargetAttributesVerifyOnAnyOpAndCanBeRemoved) {
  const char *text = R"(kernel @k(%x: tensor<?xf32>) {
  %c0 = constant {tnpu.mem = "acc", value = 0} : i32
  %t = load %x, %c0 {padding = 0, tnpu.addr = [0, -1], tnpu.pipelined = true} : tile<16xf32>
  store %x, %c0, %t {tnpu.stride = 4096}
  return {tnpu.persistent = true}
}
)";
  Diagnostics d;
  auto m = parse(text, "attrs.tlir", d);
  ASSERT_TRUE(m) << d.str();
  EXPECT_TRUE(verify(*m, d)) << d.str();
  EXPECT_EQ(print(*m), text);
  Operation *load = std::next(m->kernels()[0]->body()->ops().begin())->get();
  EXPECT_TRUE(load->remove_attr("tnpu.pipelined"));
  EXPECT_FALSE(load->remove_attr("tnpu.pipelined"));
  EXPECT_EQ(load->attrs().size(), 2u);
  // An op's own attributes stay checked: no '.', or nothing on one side of it, is not a target's.
  for (const char *bad : {"pading", ".addr", "tnpu."}) {
    load->set_attr(bad, int64_t(1));
    Diagnostics bd;
    EXPECT_FALSE(verify(*m, bd)) << bad;
    EXPECT_NE(bd.str().find("has no attribute"), std::string::npos) << bd.str();
    load->remove_attr(bad);
  }
}

} // namespace
} // namespace tl::ir
