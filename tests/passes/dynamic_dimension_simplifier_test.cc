// Tests of dynamic-dimension-simplifier: each forwarding rule, that the module still verifies and
// computes the same values, idempotence, and a corpus sweep.
#include "gtest/gtest.h"
#include "tests/passes/pass_corpus_sweep.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

TEST(DynamicDimensionSimplifierTest, FlattensNestedConcat) {
  Rewrite r = RunAndCheck("dynamic-dimension-simplifier", R"(
HloModule m
ENTRY e {
  a = s32[1] parameter(0)
  b = s32[2] parameter(1)
  c = s32[1] parameter(2)
  ab = s32[3] concatenate(a, b), dimensions={0}
  ROOT abc = s32[4] concatenate(ab, c), dimensions={0}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->root()->operand_count(), 3);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConcatenate), 1);
}

TEST(DynamicDimensionSimplifierTest, ForwardsSliceOfConcat) {
  Rewrite r = RunAndCheck("dynamic-dimension-simplifier", R"(
HloModule m
ENTRY e {
  a = s32[1] parameter(0)
  b = s32[2] parameter(1)
  ab = s32[3] concatenate(a, b), dimensions={0}
  s = s32[2] slice(ab), slice={[1:3]}
  ROOT n = s32[2] negate(s)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->root()->operand(0)->opcode(), Opcode::kParameter);
}

TEST(DynamicDimensionSimplifierTest, ForwardsScalarRoundTrips) {
  Rewrite r = RunAndCheck("dynamic-dimension-simplifier", R"(
HloModule m
ENTRY e {
  a = s32[] parameter(0)
  b = s32[1] broadcast(a), dimensions={}
  r1 = s32[] reshape(b)
  c = s32[1] reshape(a)
  r2 = s32[] reshape(c)
  k = s32[] convert(a)
  i = s32[] reshape(k)
  s1 = s32[] add(r1, r2)
  ROOT s2 = s32[] add(s1, i)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* root = r.after->entry()->root();
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kParameter);
  EXPECT_EQ(root->operand(0)->operand(0)->opcode(), Opcode::kParameter);
  EXPECT_EQ(root->operand(0)->operand(1)->opcode(), Opcode::kParameter);
}

TEST(DynamicDimensionSimplifierTest, KeepsRealReshapesAndConverts) {
  Rewrite r = RunAndCheck("dynamic-dimension-simplifier", R"(
HloModule m
ENTRY e {
  a = f32[2,3] parameter(0)
  b = f32[6] reshape(a)
  c = s32[6] convert(b)
  d = s32[3,2] reshape(c)
  ab = f32[12] concatenate(b, b), dimensions={0}
  s = f32[5] slice(ab), slice={[1:6]}
  ROOT t = (s32[3,2], f32[5]) tuple(d, s)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(DynamicDimensionSimplifierTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("dynamic-dimension-simplifier");
}

}  // namespace
}  // namespace mltune::passes
