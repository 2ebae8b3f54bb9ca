#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

TEST(DceTest, RemovesDeadChainKeepsLiveAndParameters) {
  Rewrite r = RunAndCheck("dce", R"(
HloModule m
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  dead1 = f32[4] multiply(p0, p0)
  dead2 = f32[4] exponential(dead1)
  ROOT live = f32[4] add(p0, p0)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->instruction_count(), 3);  // p0, p1 (unused but kept), live
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kParameter), 2);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kExp), 0);
}

TEST(DceTest, NothingToDoReportsNoChange) {
  Rewrite r = RunAndCheck("dce", R"(
HloModule m
ENTRY e {
  p0 = s32[4] parameter(0)
  ROOT n = s32[4] negate(p0)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(DceTest, KeepsSideEffectsAndControlEdges) {
  Rewrite r = RunAndCheck("dce", R"(
HloModule m
ENTRY e {
  p0 = f32[] parameter(0)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  noise = f32[3] rng(zero, one), distribution=rng_uniform
  token = token[] after-all()
  ordered = f32[] negate(p0)
  ROOT r = f32[] add(p0, p0), control-predecessors={ordered}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kRng), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kAfterAll), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kNegate), 1);
}

TEST(DceTest, RemovesUncalledComputationsAndDeadCallers) {
  Rewrite r = RunAndCheck("dce", R"(
HloModule m
unused {
  a = f32[] parameter(0)
  ROOT n = f32[] negate(a)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
max {
  x.1 = f32[] parameter(0)
  y.1 = f32[] parameter(1)
  ROOT m = f32[] maximum(x.1, y.1)
}
ENTRY e {
  p0 = f32[8] parameter(0)
  zero = f32[] constant(0)
  dead = f32[] reduce(p0, zero), dimensions={0}, to_apply=max
  ROOT live = f32[] reduce(p0, zero), dimensions={0}, to_apply=add
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->computation_count(), 2);
  EXPECT_EQ(r.after->FindComputation("unused"), nullptr);
  EXPECT_EQ(r.after->FindComputation("max"), nullptr);
  EXPECT_NE(r.after->FindComputation("add"), nullptr);
}

TEST(DceTest, RemovesDeadWhileUnlessItsBodyHasSideEffects) {
  const char* kText = R"(
HloModule m
cond {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s.1 = (s32[], f32[]) parameter(0)
  i.1 = s32[] get-tuple-element(s.1), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i.1, one)
  v = f32[] get-tuple-element(s.1), index=1
  v1 = f32[] %OP
  ROOT t = (s32[], f32[]) tuple(i1, v1)
}
ENTRY e {
  p0 = f32[] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[]) tuple(zero, p0)
  loop = (s32[], f32[]) while(init), condition=cond, body=body
  ROOT r = f32[] negate(p0)
}
)";
  std::string pure = kText;
  pure.replace(pure.find("%OP"), 3, "add(v, v)");
  Rewrite r = RunAndCheck("dce", pure);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kWhile), 0);
  EXPECT_EQ(r.after->computation_count(), 1);

  std::string effect = kText;
  effect.replace(effect.find("%OP"), 3, "rng(v, v), distribution=rng_uniform");
  Rewrite kept = RunAndCheck("dce", effect);
  ASSERT_NE(kept.after, nullptr);
  EXPECT_EQ(CountOpcode(*kept.after, Opcode::kWhile), 1);
  EXPECT_EQ(kept.after->computation_count(), 3);
}

}  // namespace
}  // namespace mltune::passes
