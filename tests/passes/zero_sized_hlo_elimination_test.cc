#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

TEST(ZeroSizedHloEliminationTest, ReplacesEmptyArraysByConstants) {
  Rewrite r = RunAndCheck("zero_sized_hlo_elimination", R"(
HloModule m
ENTRY e {
  p0 = f32[4,3] parameter(0)
  empty = f32[0,3] slice(p0), slice={[2:2], [0:3]}
  n = f32[0,3] negate(empty)
  c = f32[4,3] concatenate(p0, n), dimensions={0}
  ROOT out = (f32[4,3], f32[0,3]) tuple(c, n)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kSlice), 0);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kNegate), 0);
  const ir::Instruction* root = r.after->entry()->root();
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kConstant);
  EXPECT_EQ(root->operand(0)->operand(1)->opcode(), Opcode::kConstant);
  EXPECT_EQ(root->operand(1)->literal->element_count(), 0);
}

TEST(ZeroSizedHloEliminationTest, KeepsParametersConstantsAndNonEmptyArrays) {
  Rewrite r = RunAndCheck("zero_sized_hlo_elimination", R"(
HloModule m
ENTRY e {
  p0 = f32[0] parameter(0)
  c = f32[0] constant({})
  p1 = f32[2] parameter(1)
  n = f32[2] negate(p1)
  ROOT t = (f32[0], f32[0], f32[2]) tuple(p0, c, n)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

}  // namespace
}  // namespace mltune::passes
