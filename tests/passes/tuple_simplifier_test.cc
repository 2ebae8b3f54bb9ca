#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

TEST(TupleSimplifierTest, ForwardsGetTupleElementOfTuple) {
  Rewrite r = RunAndCheck("tuple-simplifier", R"(
HloModule m
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = s32[2] parameter(1)
  t = (f32[4], s32[2]) tuple(p0, p1)
  g0 = f32[4] get-tuple-element(t), index=0
  g1 = s32[2] get-tuple-element(t), index=1
  n = f32[4] negate(g0)
  ROOT out = (f32[4], s32[2]) tuple(n, g1)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kGetTupleElement), 0);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kTuple), 1);  // the inner tuple died with its GTEs
  const ir::Instruction* root = r.after->entry()->root();
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kParameter);
  EXPECT_EQ(root->operand(0)->operand(0)->opcode(), Opcode::kParameter);
}

TEST(TupleSimplifierTest, ForwardsThroughNestedTuples) {
  Rewrite r = RunAndCheck("tuple-simplifier", R"(
HloModule m
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  inner = (f32[4], f32[4]) tuple(p0, p1)
  outer = ((f32[4], f32[4]), f32[4]) tuple(inner, p0)
  g = (f32[4], f32[4]) get-tuple-element(outer), index=0
  ROOT gg = f32[4] get-tuple-element(g), index=1
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->root()->name(), "p1");
}

TEST(TupleSimplifierTest, RemovesTupleOfAllElements) {
  Rewrite r = RunAndCheck("tuple-simplifier", R"(
HloModule m
ENTRY e {
  p0 = (f32[4], s32[]) parameter(0)
  g0 = f32[4] get-tuple-element(p0), index=0
  g1 = s32[] get-tuple-element(p0), index=1
  ROOT t = (f32[4], s32[]) tuple(g0, g1)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kParameter);
  EXPECT_EQ(r.after->entry()->instruction_count(), 1);
}

TEST(TupleSimplifierTest, KeepsPartialOrPermutedTuples) {
  Rewrite r = RunAndCheck("tuple-simplifier", R"(
HloModule m
ENTRY e {
  p0 = (f32[4], f32[4], f32[4]) parameter(0)
  g0 = f32[4] get-tuple-element(p0), index=0
  g1 = f32[4] get-tuple-element(p0), index=1
  g2 = f32[4] get-tuple-element(p0), index=2
  swapped = (f32[4], f32[4], f32[4]) tuple(g1, g0, g2)
  partial = (f32[4], f32[4]) tuple(g0, g1)
  ROOT t = ((f32[4], f32[4], f32[4]), (f32[4], f32[4])) tuple(swapped, partial)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(TupleSimplifierTest, SimplifiesWhileBodies) {
  Rewrite r = RunAndCheck("tuple-simplifier", R"(
HloModule m
cond {
  s = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s.1 = (s32[], f32[2]) parameter(0)
  i.1 = s32[] get-tuple-element(s.1), index=0
  one = s32[] constant(1)
  next = s32[] add(i.1, one)
  v = f32[2] get-tuple-element(s.1), index=1
  pair = (s32[], f32[2]) tuple(next, v)
  n0 = s32[] get-tuple-element(pair), index=0
  n1 = f32[2] get-tuple-element(pair), index=1
  twice = f32[2] add(n1, n1)
  ROOT t = (s32[], f32[2]) tuple(n0, twice)
}
ENTRY e {
  p0 = f32[2] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[2]) tuple(zero, p0)
  ROOT w = (s32[], f32[2]) while(init), condition=cond, body=body
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Computation* body = r.after->FindComputation("body");
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(CountOpcode(*body, Opcode::kTuple), 1);
  EXPECT_EQ(CountOpcode(*body, Opcode::kGetTupleElement), 2);
}

}  // namespace
}  // namespace mltune::passes
