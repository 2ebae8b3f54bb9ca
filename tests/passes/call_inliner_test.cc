#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

TEST(CallInlinerTest, InlinesCallAndDropsCallee) {
  Rewrite r = RunAndCheck("call-inliner", R"(
HloModule m
f {
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  s = f32[4] subtract(a, b)
  ROOT e = f32[4] exponential(s)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  c = f32[4] call(p1, p0), to_apply=f
  ROOT n = f32[4] negate(c)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kCall), 0);
  EXPECT_EQ(r.after->computation_count(), 1);
  const ir::Instruction* sub = r.after->entry()->root()->operand(0)->operand(0);
  ASSERT_EQ(sub->opcode(), Opcode::kSubtract);
  EXPECT_EQ(sub->operand(0)->name(), "p1");  // parameters map to the call's operands in order
  EXPECT_EQ(sub->operand(1)->name(), "p0");
}

TEST(CallInlinerTest, InlinesNestedCallsAndEverySite) {
  Rewrite r = RunAndCheck("call-inliner", R"(
HloModule m
inner {
  x = s32[] parameter(0)
  ROOT y = s32[] multiply(x, x)
}
outer {
  u = s32[] parameter(0)
  sq = s32[] call(u), to_apply=inner
  one = s32[] constant(1)
  ROOT v = s32[] add(sq, one)
}
ENTRY main {
  p = s32[] parameter(0)
  c1 = s32[] call(p), to_apply=outer
  c2 = s32[] call(c1), to_apply=outer
  ROOT r = s32[] call(c2), to_apply=inner
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kCall), 0);
  EXPECT_EQ(r.after->computation_count(), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kMultiply), 3);
}

TEST(CallInlinerTest, CalleeReturningAParameterForwardsTheOperand) {
  Rewrite r = RunAndCheck("call-inliner", R"(
HloModule m
second {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  ROOT bb = f32[2] copy(b)
}
pick {
  a.1 = f32[2] parameter(0)
  ROOT b.1 = f32[2] parameter(1)
}
ENTRY main {
  p0 = f32[2] parameter(0)
  p1 = f32[2] parameter(1)
  ROOT c = f32[2] call(p0, p1), to_apply=pick
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->root()->name(), "p1");
}

TEST(CallInlinerTest, KeepsCallsMarkedNotInlineable) {
  Rewrite r = RunAndCheck("call-inliner", R"(
HloModule m
f {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  ROOT c = f32[4] call(p0), to_apply=f, frontend_attributes={inlineable="false"}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kCall), 1);
}

TEST(CallInlinerTest, InlinesCallsInsideWhileBodies) {
  Rewrite r = RunAndCheck("call-inliner", R"(
HloModule m
step {
  x = f32[3] parameter(0)
  ROOT y = f32[3] add(x, x)
}
cond {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s.1 = (s32[], f32[3]) parameter(0)
  i.1 = s32[] get-tuple-element(s.1), index=0
  one = s32[] constant(1)
  i2 = s32[] add(i.1, one)
  v = f32[3] get-tuple-element(s.1), index=1
  v2 = f32[3] call(v), to_apply=step
  ROOT t = (s32[], f32[3]) tuple(i2, v2)
}
ENTRY main {
  p0 = f32[3] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[3]) tuple(zero, p0)
  ROOT w = (s32[], f32[3]) while(init), condition=cond, body=body
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kCall), 0);
  EXPECT_EQ(r.after->FindComputation("step"), nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kWhile), 1);
}

}  // namespace
}  // namespace mltune::passes
