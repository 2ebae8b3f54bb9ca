#include <unordered_map>

#include "gtest/gtest.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

// Every computation called from a call/while/conditional has exactly one such call site.
void ExpectFlat(const ir::Module& m) {
  std::unordered_map<const ir::Computation*, int> sites;
  for (const ir::Computation* c : m.MakeComputationPostOrder()) {
    for (const ir::Instruction* i : c->instructions()) {
      if (i->opcode() != Opcode::kCall && i->opcode() != Opcode::kWhile &&
          i->opcode() != Opcode::kConditional) {
        continue;
      }
      for (const ir::Computation* callee : i->called_computations()) ++sites[callee];
    }
  }
  for (const auto& [c, n] : sites) EXPECT_EQ(n, 1) << c->name();
}

TEST(FlattenCallGraphTest, ClonesComputationCalledTwice) {
  Rewrite r = RunAndCheck("flatten-call-graph", R"(
HloModule m
f {
  a = f32[4] parameter(0)
  ROOT n = f32[4] negate(a)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  c1 = f32[4] call(p0), to_apply=f
  ROOT c2 = f32[4] call(c1), to_apply=f
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->computation_count(), 3);
  ExpectFlat(*r.after);
  const ir::Instruction* c2 = r.after->entry()->root();
  EXPECT_NE(c2->to_apply(), c2->operand(0)->to_apply());
}

TEST(FlattenCallGraphTest, ClonesNestedSequentialCalleesButSharesEmbeddedOnes) {
  Rewrite r = RunAndCheck("flatten-call-graph", R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
leaf {
  v = f32[4] parameter(0)
  ROOT e = f32[4] exponential(v)
}
mid {
  a = f32[4] parameter(0)
  l = f32[4] call(a), to_apply=leaf
  z = f32[] constant(0)
  r = f32[] reduce(l, z), dimensions={0}, to_apply=add
  ROOT b = f32[4] broadcast(r), dimensions={}
}
ENTRY main {
  p0 = f32[4] parameter(0)
  c1 = f32[4] call(p0), to_apply=mid
  c2 = f32[4] call(c1), to_apply=mid
  ROOT c3 = f32[4] call(c2), to_apply=leaf
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  ExpectFlat(*r.after);
  // mid x2, leaf x3 (two through mid's copies, one direct), add shared, entry.
  EXPECT_EQ(r.after->computation_count(), 7);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kReduce), 2);
}

TEST(FlattenCallGraphTest, WhileBodiesAndConditionalBranches) {
  Rewrite r = RunAndCheck("flatten-call-graph", R"(
HloModule m
cond {
  s = s32[] parameter(0)
  n = s32[] constant(5)
  ROOT lt = pred[] compare(s, n), direction=LT
}
body {
  s.1 = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT s1 = s32[] add(s.1, one)
}
ENTRY main {
  p = s32[] parameter(0)
  w1 = s32[] while(p), condition=cond, body=body
  w2 = s32[] while(w1), condition=cond, body=body
  b = pred[] constant(true)
  ROOT c = s32[] conditional(b, w2, w2), true_computation=body, false_computation=body
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  ExpectFlat(*r.after);
  // cond x2, body x4 (two loops, two branches), entry.
  EXPECT_EQ(r.after->computation_count(), 7);
}

TEST(FlattenCallGraphTest, AlreadyFlatIsUnchanged) {
  Rewrite r = RunAndCheck("flatten-call-graph", R"(
HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  p0 = f32[4] parameter(0)
  z = f32[] constant(0)
  r1 = f32[] reduce(p0, z), dimensions={0}, to_apply=add
  r2 = f32[] reduce(p0, z), dimensions={0}, to_apply=add
  ROOT sum = f32[] add(r1, r2)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

}  // namespace
}  // namespace mltune::passes
