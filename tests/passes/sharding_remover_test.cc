#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Parse;
using testing::RunPass;

// The evaluator has no sharding custom-calls, so the rewrite is compared with the module written
// without them.
TEST(ShardingRemoverTest, DropsSingleDeviceShardingAnnotations) {
  std::unique_ptr<ir::Module> m = Parse(R"(
HloModule m
ENTRY e {
  p0 = f32[4,8] parameter(0)
  s = f32[4,8] custom-call(p0), custom_call_target="Sharding", sharding={devices=[2,1]0,1}
  full = f32[4,8] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  n = f32[4,8] negate(full)
  back = f32[4,8] custom-call(n), custom_call_target="SPMDShardToFullShape", sharding={replicated}
  ROOT e = f32[4,8] exponential(back)
}
)");
  std::unique_ptr<ir::Module> expected = Parse(R"(
HloModule m
ENTRY e {
  p0 = f32[4,8] parameter(0)
  n = f32[4,8] negate(p0)
  ROOT e = f32[4,8] exponential(n)
}
)");
  ASSERT_NE(m, nullptr);
  ASSERT_NE(expected, nullptr);
  EXPECT_TRUE(RunPass("sharding-remover", *m));
  EXPECT_TRUE(ir::VerifyModule(*m).ok());
  EXPECT_EQ(CountOpcode(*m, Opcode::kCustomCall), 0);
  EXPECT_EQ(CountOpcode(*m, Opcode::kCopy), 1);  // what the Sharding call became
  EXPECT_TRUE(mltune::testing::CheckEquivalent(*expected, *m).ok());
  EXPECT_FALSE(RunPass("sharding-remover", *m));
}

TEST(ShardingRemoverTest, KeepsShapeChangingAnnotations) {
  std::unique_ptr<ir::Module> m = Parse(R"(
HloModule m
ENTRY e {
  p0 = f32[4,8] parameter(0)
  ROOT shard = f32[2,8] custom-call(p0), custom_call_target="SPMDFullToShardShape"
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(RunPass("sharding-remover", *m));
  EXPECT_EQ(CountOpcode(*m, Opcode::kCustomCall), 1);
}

}  // namespace
}  // namespace mltune::passes
