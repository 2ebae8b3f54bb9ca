#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/hlo_builder.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

TEST(ConstantFoldingTest, FoldsArithmeticOnConstantsExactly) {
  Rewrite r = RunAndCheck("constant_folding", R"(
HloModule m
ENTRY e {
  p0 = f32[3] parameter(0)
  a = f32[3] constant({1.5, -2, 3})
  b = f32[3] constant({0.25, 4, -1})
  s = f32[3] add(a, b)
  m = f32[3] multiply(s, a)
  ROOT out = f32[3] add(p0, m)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kMultiply), 0);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kAdd), 1);  // only the one reading p0
  const ir::Instruction* folded = r.after->entry()->root()->operand(1);
  ASSERT_EQ(folded->opcode(), Opcode::kConstant);
  ASSERT_TRUE(folded->literal.has_value());
  EXPECT_EQ(folded->literal->Get<float>(0), (1.5f + 0.25f) * 1.5f);
  EXPECT_EQ(folded->literal->Get<float>(1), (-2.0f + 4.0f) * -2.0f);
  EXPECT_EQ(folded->literal->Get<float>(2), (3.0f - 1.0f) * 3.0f);
}

TEST(ConstantFoldingTest, DoesNotFoldBroadcastIotaOrAllBroadcastOperands) {
  Rewrite r = RunAndCheck("constant_folding", R"(
HloModule m
ENTRY e {
  c = s32[] constant(7)
  b = s32[16] broadcast(c), dimensions={}
  i = s32[16] iota(), iota_dimension=0
  ROOT t = (s32[16], s32[16]) tuple(b, i)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(ConstantFoldingTest, FoldsConstantWithBroadcastOrIotaOperand) {
  Rewrite r = RunAndCheck("constant_folding", R"(
HloModule m
ENTRY e {
  c = s32[] constant(7)
  b = s32[4] broadcast(c), dimensions={}
  v = s32[4] constant({1, 2, 3, 4})
  i = s32[4] iota(), iota_dimension=0
  s = s32[4] add(b, v)
  ROOT m = s32[4] multiply(s, i)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* root = r.after->entry()->root();
  ASSERT_EQ(root->opcode(), Opcode::kConstant);
  EXPECT_EQ(r.after->entry()->instruction_count(), 1);  // dead operands removed too
  for (int k = 0; k < 4; ++k) EXPECT_EQ(root->literal->Get<int32_t>(k), (7 + k + 1) * k);
}

TEST(ConstantFoldingTest, FoldsReduceWithItsComputation) {
  Rewrite r = RunAndCheck("constant_folding", R"(
HloModule m
add {
  x = s32[] parameter(0)
  y = s32[] parameter(1)
  ROOT s = s32[] add(x, y)
}
ENTRY e {
  p0 = s32[] parameter(0)
  v = s32[5] constant({1, 2, 3, 4, 5})
  z = s32[] constant(0)
  r = s32[] reduce(v, z), dimensions={0}, to_apply=add
  ROOT out = s32[] add(p0, r)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after->entry(), Opcode::kReduce), 0);
  EXPECT_EQ(r.after->entry()->root()->operand(1)->literal->Get<int32_t>(0), 15);
}

TEST(ConstantFoldingTest, FoldsThroughTuplesOfConstants) {
  Rewrite r = RunAndCheck("constant_folding", R"(
HloModule m
ENTRY e {
  a = f32[2] constant({1, 2})
  b = f32[2] constant({3, 4})
  t = (f32[2], f32[2]) tuple(a, b)
  ROOT g = f32[2] get-tuple-element(t), index=1
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kConstant);
}

TEST(ConstantFoldingTest, SkipsRngWhileCustomCallAndTupleResults) {
  Rewrite r = RunAndCheck("constant_folding", R"(
HloModule m
cond {
  s = s32[] parameter(0)
  n = s32[] constant(3)
  ROOT lt = pred[] compare(s, n), direction=LT
}
body {
  s.1 = s32[] parameter(0)
  one = s32[] constant(1)
  ROOT s1 = s32[] add(s.1, one)
}
ENTRY e {
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r = f32[4] rng(lo, hi), distribution=rng_uniform
  zero = s32[] constant(0)
  w = s32[] while(zero), condition=cond, body=body
  a = f32[2] constant({1, 2})
  srt = (f32[2], f32[2]) sort(a, a), dimensions={0}, to_apply=lt2
  ROOT t = (f32[4], s32[], (f32[2], f32[2])) tuple(r, w, srt)
}
lt2 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  x2 = f32[] parameter(2)
  y2 = f32[] parameter(3)
  ROOT c = pred[] compare(x, y), direction=LT
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(ConstantFoldingTest, SkipsElidedConstantsAndCustomCalls) {
  // Not evaluable (the constant's value is unknown), so only the rewrite itself is checked.
  std::unique_ptr<ir::Module> m = testing::Parse(R"(
HloModule m
ENTRY e {
  a = f32[2] constant({...})
  n = f32[2] negate(a)
  b = f32[2] constant({1, 2})
  c = f32[2] custom-call(b), custom_call_target="Sharding"
  ROOT t = (f32[2], f32[2]) tuple(n, c)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(testing::RunPass("constant_folding", *m));
  EXPECT_EQ(CountOpcode(*m, Opcode::kNegate), 1);
  EXPECT_EQ(CountOpcode(*m, Opcode::kCustomCall), 1);
}

// A dot of two constants, built in place (n x n each, too big to spell in HLO text).
std::unique_ptr<ir::Module> ConstantDot(int64_t n) {
  const std::string shape = absl::StrCat("f32[", n, ",", n, "]");
  std::unique_ptr<ir::Module> m = testing::Parse(
      absl::StrCat("HloModule m\nENTRY e {\n  a = ", shape, " parameter(0)\n  ROOT d = ", shape,
                   " dot(a, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"));
  if (m == nullptr) return nullptr;
  ir::Instruction* a = m->entry()->FindInstruction("a");
  ir::Instruction* c = MakeConstant(*m->entry(), *ir::Literal::Create(a->shape()));
  a->ReplaceAllUsesWith(c);
  return m;
}

TEST(ConstantFoldingTest, SkipsDotsTooCostlyToEvaluate) {
  std::unique_ptr<ir::Module> small = ConstantDot(64);
  ASSERT_NE(small, nullptr);
  EXPECT_TRUE(testing::RunPass("constant_folding", *small));
  EXPECT_EQ(CountOpcode(*small, Opcode::kDot), 0);
  std::unique_ptr<ir::Module> big = ConstantDot(500);  // 1.25e8 multiply-adds
  ASSERT_NE(big, nullptr);
  EXPECT_FALSE(testing::RunPass("constant_folding", *big));
  EXPECT_EQ(CountOpcode(*big, Opcode::kDot), 1);
}

}  // namespace
}  // namespace mltune::passes
