// Unit tests of result-type inference (infer.h): each inferable op, the choices it refuses, and
// the errors for missing operands and attributes; inferred types always pass verify_op.
// SPDX-License-Identifier: Apache-2.0
#include "tl/ir/infer.h"

#include "tl/ir/verifier.h"

#include <gtest/gtest.h>

namespace tl::ir {
namespace {

using Attrs = std::vector<std::pair<std::string, Attr>>;

Type tile(ScalarKind k, std::vector<int64_t> shape) { return Type::tile(k, std::move(shape)); }

/// A kernel with a tensor, scalars and tiles to infer from, and a constexpr parameter N (i32).
class Infer : public ::testing::Test {
protected:
  Infer() : kernel_(*module_.add_kernel("k", {})), b_(kernel_) {
    kernel_.constexprs().push_back({"N", ScalarKind::I32, int64_t(8)});
    t_ = b_.add_argument(Type::tensor(ScalarKind::F32, 2), "t");
    i_ = b_.constant(ScalarKind::I32, int64_t(1));
    f_ = b_.constant(ScalarKind::F32, 1.0);
    a_ = b_.splat(f_, {4, 8});
    b8_ = b_.splat(f_, {8, 2});
    idx_ = b_.splat(i_, {4});
  }

  /// The inferred types, checked to be what verify_op accepts by building the op with them.
  std::vector<Type> infer(Opcode code, std::vector<Value *> operands, Attrs attrs = {}) {
    std::vector<Type> types = infer_result_types(code, operands, attrs, kernel_);
    b_.create(code, operands, types, attrs); // throws BuildError if verify_op disagrees
    return types;
  }
  /// The message of the BuildError that inference throws.
  std::string error(Opcode code, std::vector<Value *> operands, Attrs attrs = {}) {
    try {
      infer_result_types(code, operands, attrs, kernel_);
    } catch (const BuildError &e) {
      return e.what();
    }
    return "(no error)";
  }

  Module module_;
  Kernel &kernel_;
  Builder b_;
  Value *t_, *i_, *f_, *a_, *b8_, *idx_;
};

TEST_F(Infer, Sources) {
  const Type i32 = Type::scalar(ScalarKind::I32), i64 = Type::scalar(ScalarKind::I64);
  EXPECT_EQ(infer(Opcode::ProgramId, {}, {{"axis", int64_t(0)}}), std::vector<Type>{i32});
  EXPECT_EQ(infer(Opcode::NumPrograms, {}, {{"axis", int64_t(2)}}), std::vector<Type>{i32});
  EXPECT_EQ(infer(Opcode::TensorDim, {t_}, {{"axis", int64_t(1)}}), std::vector<Type>{i64});
  EXPECT_EQ(infer(Opcode::TensorStride, {t_}, {{"axis", int64_t(0)}}), std::vector<Type>{i64});
  EXPECT_EQ(infer(Opcode::Constexpr, {}, {{"name", std::string("N")}}), std::vector<Type>{i32});
}

TEST_F(Infer, ShapesAndMemory) {
  EXPECT_EQ(infer(Opcode::Transpose, {a_}, {{"perm", std::vector<int64_t>{1, 0}}}),
            std::vector<Type>{tile(ScalarKind::F32, {8, 4})});
  EXPECT_EQ(infer(Opcode::ExpandDims, {a_}, {{"axis", int64_t(1)}}),
            std::vector<Type>{tile(ScalarKind::F32, {4, 1, 8})});
  EXPECT_EQ(infer(Opcode::ExpandDims, {f_}, {{"axis", int64_t(0)}}),
            std::vector<Type>{tile(ScalarKind::F32, {1})});
  const Type lanes = tile(ScalarKind::F32, {4});
  EXPECT_EQ(infer(Opcode::Gather, {t_, idx_, idx_}), std::vector<Type>{lanes});
  Value *v = b_.splat(f_, {4});
  EXPECT_EQ(infer(Opcode::AtomicAdd, {t_, idx_, idx_, v}), std::vector<Type>{lanes});
  EXPECT_EQ(infer(Opcode::Store, {t_, i_, i_, a_}), std::vector<Type>{});
}

TEST_F(Infer, Compute) {
  EXPECT_EQ(infer(Opcode::Add, {a_, a_}), std::vector<Type>{a_->type()});
  EXPECT_EQ(infer(Opcode::Exp, {f_}), std::vector<Type>{f_->type()});
  EXPECT_EQ(infer(Opcode::Cmp, {a_, a_}, {{"pred", std::string("lt")}}),
            std::vector<Type>{tile(ScalarKind::I1, {4, 8})});
  Value *c = b_.cmp("lt", a_, a_);
  EXPECT_EQ(infer(Opcode::Select, {c, a_, a_}), std::vector<Type>{a_->type()});
  EXPECT_EQ(infer(Opcode::Dot, {a_, b8_}, {{"acc_type", Type::scalar(ScalarKind::F32)}}),
            std::vector<Type>{tile(ScalarKind::F32, {4, 2})});
  EXPECT_EQ(infer(Opcode::Reduce, {a_}, {{"axis", int64_t(1)}, {"kind", std::string("sum")}}),
            std::vector<Type>{tile(ScalarKind::F32, {4})});
  EXPECT_EQ(infer(Opcode::Reduce, {idx_}, {{"axis", int64_t(0)}, {"kind", std::string("argmax")}}),
            std::vector<Type>{Type::scalar(ScalarKind::I32)});
  EXPECT_EQ(infer(Opcode::Scan, {a_}, {{"axis", int64_t(0)}, {"kind", std::string("max")}}),
            std::vector<Type>{a_->type()});
}

TEST_F(Infer, ForAndOpsWithoutResults) {
  Value *n = b_.constant(ScalarKind::I32, int64_t(4));
  std::vector<Type> types = infer_result_types(Opcode::For, {i_, n, i_, f_, a_}, {}, kernel_);
  EXPECT_EQ(types, (std::vector<Type>{f_->type(), a_->type()}));
  for (Opcode code :
       {Opcode::If, Opcode::Yield, Opcode::Return, Opcode::Print, Opcode::Assert, Opcode::Scatter})
    EXPECT_TRUE(infer_result_types(code, {}, {}, kernel_).empty()) << opcode_name(code);
}

TEST_F(Infer, ChoicesNeedExplicitTypes) {
  for (Opcode code :
       {Opcode::Constant, Opcode::Full, Opcode::Arange, Opcode::Splat, Opcode::Broadcast,
        Opcode::Reshape, Opcode::Load, Opcode::Cast, Opcode::Bitcast})
    EXPECT_EQ(error(code, {f_}), "needs explicit result types") << opcode_name(code);
}

TEST_F(Infer, MissingOperandsAndAttributes) {
  EXPECT_EQ(error(Opcode::Add, {}), "expects at least 1 operands");
  EXPECT_EQ(error(Opcode::Select, {i_}), "expects at least 2 operands");
  EXPECT_EQ(error(Opcode::Constexpr, {}, {{"name", std::string("M")}}),
            "kernel has no constexpr parameter 'M'");
  EXPECT_EQ(error(Opcode::Constexpr, {}), "kernel has no constexpr parameter ''");
  // Attributes are read before the operand they apply to.
  EXPECT_EQ(error(Opcode::Transpose, {}), "requires integer list attribute 'perm'");
  EXPECT_EQ(error(Opcode::Transpose, {a_}, {{"perm", std::vector<int64_t>{0, 2}}}),
            "permutation entry out of range");
  EXPECT_EQ(error(Opcode::ExpandDims, {a_}), "requires integer attribute 'axis'");
  EXPECT_EQ(error(Opcode::ExpandDims, {a_}, {{"axis", int64_t(3)}}), "axis out of range");
  EXPECT_EQ(error(Opcode::Dot, {a_, b8_}), "requires type attribute 'acc_type'");
  EXPECT_EQ(error(Opcode::Dot, {idx_, b8_}, {{"acc_type", Type::scalar(ScalarKind::F32)}}),
            "operands must be rank-2 tiles, got tile<4xi32> and tile<8x2xf32>");
  EXPECT_EQ(error(Opcode::Reduce, {}), "requires integer attribute 'axis'");
  EXPECT_EQ(error(Opcode::Reduce, {a_}, {{"axis", int64_t(2)}}),
            "axis 2 out of range for tile<4x8xf32>");
}

TEST_F(Infer, BuilderNamesTheOp) {
  try {
    b_.reduce("sum", a_, 2);
    FAIL() << "no BuildError";
  } catch (const BuildError &e) {
    EXPECT_STREQ(e.what(), "'reduce' axis 2 out of range for tile<4x8xf32>");
  }
  EXPECT_EQ(b_.dot(a_, b8_, nullptr, ScalarKind::F32)->type(), tile(ScalarKind::F32, {4, 2}));
  EXPECT_EQ(b_.reduce("argmax", a_, 0)->type(), tile(ScalarKind::I32, {8}));
}

} // namespace
} // namespace tl::ir
