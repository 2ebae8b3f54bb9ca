#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

TEST(OptimizationBarrierExpanderTest, RemovesBarriersForwardingOperands) {
  Rewrite r = RunAndCheck("cse_barrier_expander", R"(
HloModule m
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = s32[] parameter(1)
  t = (f32[4], s32[]) tuple(p0, p1)
  b = (f32[4], s32[]) opt-barrier(t)
  g0 = f32[4] get-tuple-element(b), index=0
  g1 = s32[] get-tuple-element(b), index=1
  dead = (f32[4], s32[]) opt-barrier(t)
  ROOT out = (s32[], f32[4]) tuple(g1, g0)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kOptimizationBarrier), 0);
  EXPECT_EQ(r.after->entry()->root()->operand(0)->operand(0)->name(), "t");
}

TEST(OptimizationBarrierExpanderTest, MovesControlEdgesToTheOperand) {
  Rewrite r = RunAndCheck("cse_barrier_expander", R"(
HloModule m
ENTRY e {
  p0 = f32[4] parameter(0)
  before = f32[4] negate(p0)
  x = f32[4] exponential(p0)
  b = f32[4] opt-barrier(x), control-predecessors={before}
  ROOT after = f32[4] add(b, before)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* x = r.after->entry()->FindInstruction("x");
  ASSERT_NE(x, nullptr);
  ASSERT_EQ(x->control_predecessors().size(), 1u);
  EXPECT_EQ(x->control_predecessors()[0]->name(), "before");
}

TEST(OptimizationBarrierExpanderTest, NoBarrierNoChange) {
  Rewrite r = RunAndCheck("cse_barrier_expander", R"(
HloModule m
ENTRY e {
  p0 = f32[4] parameter(0)
  ROOT n = f32[4] negate(p0)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

}  // namespace
}  // namespace mltune::passes
