#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

TEST(ComputationDeduplicatorTest, MergesIdenticalComputations) {
  Rewrite r = RunAndCheck("computation-deduplicator", R"(
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
sub {
  x3 = f32[] parameter(0)
  y3 = f32[] parameter(1)
  ROOT s3 = f32[] subtract(x3, y3)
}
ENTRY e {
  p0 = f32[8] parameter(0)
  z = f32[] constant(0)
  r1 = f32[] reduce(p0, z), dimensions={0}, to_apply=add1
  r2 = f32[] reduce(p0, z), dimensions={0}, to_apply=add2
  r3 = f32[] reduce(p0, z), dimensions={0}, to_apply=sub
  ROOT t = (f32[], f32[], f32[]) tuple(r1, r2, r3)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->computation_count(), 3);
  EXPECT_EQ(r.after->FindComputation("add2"), nullptr);
  const ir::Instruction* root = r.after->entry()->root();
  EXPECT_EQ(root->operand(0)->to_apply(), root->operand(1)->to_apply());
}

TEST(ComputationDeduplicatorTest, CallersOfDuplicatesBecomeDuplicates) {
  Rewrite r = RunAndCheck("computation-deduplicator", R"(
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
f1 {
  a1 = f32[8] parameter(0)
  z1 = f32[] constant(0)
  ROOT r1 = f32[] reduce(a1, z1), dimensions={0}, to_apply=add1
}
f2 {
  a2 = f32[8] parameter(0)
  z2 = f32[] constant(0)
  ROOT r2 = f32[] reduce(a2, z2), dimensions={0}, to_apply=add2
}
ENTRY e {
  p0 = f32[8] parameter(0)
  c1 = f32[] call(p0), to_apply=f1
  c2 = f32[] call(p0), to_apply=f2
  ROOT t = (f32[], f32[]) tuple(c1, c2)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->computation_count(), 3);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kCall), 2);
}

TEST(ComputationDeduplicatorTest, MatchesUnusedParametersByNumber) {
  Rewrite r = RunAndCheck("computation-deduplicator", R"(
HloModule m
first1 {
  a1 = f32[] parameter(0)
  b1 = f32[] parameter(1)
  ROOT n1 = f32[] negate(a1)
}
first2 {
  a2 = f32[] parameter(0)
  b2 = f32[] parameter(1)
  ROOT n2 = f32[] negate(a2)
}
second {
  a3 = f32[] parameter(0)
  b3 = f32[] parameter(1)
  ROOT n3 = f32[] negate(b3)
}
ENTRY e {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  k1 = f32[] call(p0, p1), to_apply=first1
  k2 = f32[] call(p0, p1), to_apply=first2
  k3 = f32[] call(p0, p1), to_apply=second
  ROOT t = (f32[], f32[], f32[]) tuple(k1, k2, k3)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->computation_count(), 3);
  EXPECT_EQ(r.after->FindComputation("first2"), nullptr);
  EXPECT_NE(r.after->FindComputation("second"), nullptr);
}

TEST(ComputationDeduplicatorTest, DifferentConstantsStayApart) {
  Rewrite r = RunAndCheck("computation-deduplicator", R"(
HloModule m
f1 {
  a1 = f32[] parameter(0)
  c1 = f32[] constant(1)
  ROOT r1 = f32[] add(a1, c1)
}
f2 {
  a2 = f32[] parameter(0)
  c2 = f32[] constant(2)
  ROOT r2 = f32[] add(a2, c2)
}
ENTRY e {
  p0 = f32[] parameter(0)
  k1 = f32[] call(p0), to_apply=f1
  k2 = f32[] call(p0), to_apply=f2
  ROOT t = (f32[], f32[]) tuple(k1, k2)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

}  // namespace
}  // namespace mltune::passes
