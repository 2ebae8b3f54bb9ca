// Tests of tree_reduction_rewriter: the two-stage rewrite of long reductions, the identity-init
// and reducer restrictions that keep it value-preserving, and a corpus sweep.
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/passes/pass_corpus_sweep.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

// reduce(x[shape], init) over `dims` with a reducer applying `op`.
std::string Reduction(const std::string& type, const std::string& shape, const std::string& dims,
                      const std::string& out, const std::string& op, const std::string& init) {
  return "HloModule m\nreducer {\n  a = " + type + "[] parameter(0)\n  b = " + type +
         "[] parameter(1)\n  ROOT r = " + type + "[] " + op +
         "(a, b)\n}\nENTRY e {\n  x = " + type + shape + " parameter(0)\n  init = " + type +
         "[] constant(" + init + ")\n  ROOT s = " + type + out + " reduce(x, init), dimensions={" +
         dims + "}, to_apply=reducer\n}\n";
}

TEST(TreeReductionRewriterTest, SplitsLongSum) {
  Rewrite r =
      RunAndCheck("tree_reduction_rewriter", Reduction("f64", "[4,1000]", "1", "[4]", "add", "0"),
                  /*idempotent=*/false);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* root = r.after->entry()->root();
  ASSERT_EQ(root->opcode(), Opcode::kReduce);
  const ir::Instruction* rw = root->operand(0);
  ASSERT_EQ(rw->opcode(), Opcode::kReduceWindow);
  EXPECT_EQ(rw->shape().dimensions(), (std::vector<int64_t>{4, 32}));
  EXPECT_EQ(rw->window->dims[1].size, 32);
  EXPECT_EQ(rw->window->dims[1].stride, 32);
  // 32 windows of 32 cover 1024: 24 padding elements, 12 on each side.
  EXPECT_EQ(rw->window->dims[1].padding_low, 12);
  EXPECT_EQ(rw->window->dims[1].padding_high, 12);
  EXPECT_EQ(rw->window->dims[0].size, 1);
}

TEST(TreeReductionRewriterTest, RunsToAFixedPointOnVeryLongReductions) {
  const std::string text = Reduction("s32", "[5000]", "0", "[]", "add", "0");
  Rewrite r = RunAndCheck("tree_reduction_rewriter", text, /*idempotent=*/false);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  std::unique_ptr<ir::Module> m = r.after->Clone();
  EXPECT_TRUE(testing::RunPass("tree_reduction_rewriter", *m));  // 157 -> 5
  EXPECT_FALSE(testing::RunPass("tree_reduction_rewriter", *m));
  EXPECT_EQ(CountOpcode(*m, Opcode::kReduceWindow), 2);
  EXPECT_TRUE(mltune::testing::CheckEquivalent(*r.before, *m).ok());
}

TEST(TreeReductionRewriterTest, SplitsMaxOverSeveralDimensions) {
  Rewrite r = RunAndCheck("tree_reduction_rewriter",
                          Reduction("f32", "[40,3,70]", "0,2", "[3]", "maximum", "-inf"),
                          /*idempotent=*/false);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* rw = r.after->entry()->root()->operand(0);
  ASSERT_EQ(rw->opcode(), Opcode::kReduceWindow);
  EXPECT_EQ(rw->shape().dimensions(), (std::vector<int64_t>{2, 3, 3}));
}

TEST(TreeReductionRewriterTest, LeavesShortReductions) {
  Rewrite r =
      RunAndCheck("tree_reduction_rewriter", Reduction("f32", "[64,32]", "1", "[64]", "add", "0"));
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(TreeReductionRewriterTest, LeavesNonIdentityInitAndUnsafeReducers) {
  for (const std::string& text : {Reduction("f32", "[100]", "0", "[]", "add", "1"),
                                  Reduction("s32", "[100]", "0", "[]", "maximum", "0"),
                                  Reduction("f32", "[100]", "0", "[]", "multiply", "1"),
                                  Reduction("f32", "[100]", "0", "[]", "add", "0"),
                                  Reduction("bf16", "[100]", "0", "[]", "add", "0"),
                                  Reduction("f32", "[100]", "0", "[]", "subtract", "0")}) {
    Rewrite r = RunAndCheck("tree_reduction_rewriter", text);
    ASSERT_NE(r.after, nullptr);
    EXPECT_FALSE(r.changed) << text;
  }
}

TEST(TreeReductionRewriterTest, SplitsIntegerProductAndPredicateReductions) {
  for (const std::string& text : {Reduction("s32", "[100]", "0", "[]", "multiply", "1"),
                                  Reduction("pred", "[3,100]", "1", "[3]", "and", "true"),
                                  Reduction("u8", "[100]", "0", "[]", "minimum", "255"),
                                  Reduction("s64", "[100]", "0", "[]", "or", "0")}) {
    Rewrite r = RunAndCheck("tree_reduction_rewriter", text, /*idempotent=*/false);
    ASSERT_NE(r.after, nullptr);
    EXPECT_TRUE(r.changed) << text;
  }
}

TEST(TreeReductionRewriterTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("tree_reduction_rewriter", /*idempotent=*/false);
}

}  // namespace
}  // namespace mltune::passes
