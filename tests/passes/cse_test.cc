#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

TEST(CseTest, MergesIdenticalInstructionsAndTheirUsers) {
  Rewrite r = RunAndCheck("cse", R"(
HloModule m
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  a1 = f32[4] add(p0, p1)
  a2 = f32[4] add(p0, p1)
  e1 = f32[4] exponential(a1)
  e2 = f32[4] exponential(a2)
  ROOT t = (f32[4], f32[4]) tuple(e1, e2)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kAdd), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kExp), 1);
  const ir::Instruction* root = r.after->entry()->root();
  EXPECT_EQ(root->operand(0), root->operand(1));
}

TEST(CseTest, CommutativeOperandsInEitherOrder) {
  Rewrite r = RunAndCheck("cse", R"(
HloModule m
ENTRY e {
  p0 = s32[4] parameter(0)
  p1 = s32[4] parameter(1)
  a = s32[4] multiply(p0, p1)
  b = s32[4] multiply(p1, p0)
  c = s32[4] subtract(p0, p1)
  d = s32[4] subtract(p1, p0)
  ROOT t = (s32[4], s32[4], s32[4], s32[4]) tuple(a, b, c, d)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kMultiply), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kSubtract), 2);  // not commutative
}

TEST(CseTest, FloatMaxOperandOrderIsKept) {
  // max(-0, +0) and max(+0, -0) may differ in sign; only integer max/min are commutative here.
  Rewrite r = RunAndCheck("cse", R"(
HloModule m
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  a = f32[4] maximum(p0, p1)
  b = f32[4] maximum(p1, p0)
  ROOT t = (f32[4], f32[4]) tuple(a, b)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(CseTest, DifferentAttributesOrShapesAreNotMerged) {
  Rewrite r = RunAndCheck("cse", R"(
HloModule m
ENTRY e {
  p0 = f32[8] parameter(0)
  s1 = f32[4] slice(p0), slice={[0:4]}
  s2 = f32[4] slice(p0), slice={[4:8]}
  c1 = s32[8] convert(p0)
  c2 = f16[8] convert(p0)
  ROOT t = (f32[4], f32[4], s32[8], f16[8]) tuple(s1, s2, c1, c2)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(CseTest, MergesEqualConstantsBitExactlyOnly) {
  Rewrite r = RunAndCheck("cse", R"(
HloModule m
ENTRY e {
  p0 = f32[2] parameter(0)
  c1 = f32[2] constant({1, 2})
  c2 = f32[2] constant({1, 2})
  z1 = f32[] constant(0)
  z2 = f32[] constant(-0)
  a1 = f32[2] add(p0, c1)
  a2 = f32[2] add(p0, c2)
  b1 = f32[2] broadcast(z1), dimensions={}
  b2 = f32[2] broadcast(z2), dimensions={}
  d1 = f32[2] divide(a1, b1)
  d2 = f32[2] divide(a2, b2)
  ROOT t = (f32[2], f32[2]) tuple(d1, d2)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  // {1,2} merged (and with it a1/a2); 0 and -0 kept apart, so the divisions stay distinct.
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConstant), 3);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kAdd), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kDivide), 2);
}

TEST(CseTest, MergesIotas) {
  Rewrite r = RunAndCheck("cse", R"(
HloModule m
ENTRY e {
  i1 = s32[3,4] iota(), iota_dimension=1
  i2 = s32[3,4] iota(), iota_dimension=1
  i3 = s32[3,4] iota(), iota_dimension=0
  a = s32[3,4] add(i1, i3)
  b = s32[3,4] add(i2, i3)
  ROOT t = (s32[3,4], s32[3,4]) tuple(a, b)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kIota), 2);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kAdd), 1);
}

TEST(CseTest, NeverMergesSideEffectsOrRng) {
  Rewrite r = RunAndCheck("cse", R"(
HloModule m
ENTRY e {
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r1 = f32[4] rng(lo, hi), distribution=rng_uniform
  r2 = f32[4] rng(lo, hi), distribution=rng_uniform
  ROOT t = (f32[4], f32[4]) tuple(r1, r2)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kRng), 2);
}

TEST(CseTest, CalledComputationsCompareByStructure) {
  Rewrite r = RunAndCheck("cse", R"(
HloModule m
add1 {
  x1 = f32[] parameter(0)
  y1 = f32[] parameter(1)
  ROOT s1 = f32[] add(x1, y1)
}
add2 {
  x2 = f32[] parameter(0)
  y2 = f32[] parameter(1)
  ROOT s2 = f32[] add(x2, y2)
}
mul {
  x3 = f32[] parameter(0)
  y3 = f32[] parameter(1)
  ROOT s3 = f32[] multiply(x3, y3)
}
ENTRY e {
  p0 = f32[8] parameter(0)
  zero = f32[] constant(0)
  r1 = f32[] reduce(p0, zero), dimensions={0}, to_apply=add1
  r2 = f32[] reduce(p0, zero), dimensions={0}, to_apply=add2
  r3 = f32[] reduce(p0, zero), dimensions={0}, to_apply=mul
  ROOT t = (f32[], f32[], f32[]) tuple(r1, r2, r3)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after->entry(), Opcode::kReduce), 2);
}

}  // namespace
}  // namespace mltune::passes
