// Tests of the dot passes: dot_decomposer, batch-dot-simplification and dot-merger. Each case
// checks the exact rewrite, that the module still verifies and computes the same values, and
// (where XLA's pass is idempotent) that a second run is a no-op; each pass also sweeps the corpus.
#include <memory>
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

const ir::Instruction* FindDot(const ir::Module& m) {
  for (const ir::Instruction* i : m.entry()->instructions()) {
    if (i->opcode() == Opcode::kDot) return i;
  }
  return nullptr;
}

std::vector<int64_t> Dims(const ir::Instruction* i) { return i->shape().dimensions(); }

// ---------------------------------------------------------------------------------------------
// dot_decomposer

TEST(DotDecomposerTest, FlattensSeveralContractingDimensions) {
  Rewrite r = RunAndCheck("dot_decomposer", R"(
HloModule m
ENTRY e {
  a = f32[2,3,4] parameter(0)
  b = f32[3,4,5] parameter(1)
  ROOT d = f32[2,5] dot(a, b), lhs_contracting_dims={1,2}, rhs_contracting_dims={0,1}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* dot = FindDot(*r.after);
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(Dims(dot->operand(0)), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(Dims(dot->operand(1)), (std::vector<int64_t>{12, 5}));
  EXPECT_EQ(dot->dot_dnums->lhs_contracting_dimensions, std::vector<int64_t>{1});
  EXPECT_EQ(dot->dot_dnums->rhs_contracting_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kReshape);
}

TEST(DotDecomposerTest, MovesBatchDimensionsFirst) {
  Rewrite r = RunAndCheck("dot_decomposer", R"(
HloModule m
ENTRY e {
  a = f32[3,2,4] parameter(0)
  b = f32[4,2,5] parameter(1)
  ROOT d = f32[2,3,5] dot(a, b), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={1}, rhs_contracting_dims={0}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* dot = FindDot(*r.after);
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(Dims(dot->operand(0)), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(Dims(dot->operand(1)), (std::vector<int64_t>{2, 4, 5}));
  EXPECT_EQ(dot->dot_dnums->lhs_batch_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(dot->dot_dnums->rhs_contracting_dimensions, std::vector<int64_t>{1});
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kTranspose), 2);
}

TEST(DotDecomposerTest, MergesNonContractingDimensionsOfIntegerDot) {
  Rewrite r = RunAndCheck("dot_decomposer", R"(
HloModule m
ENTRY e {
  a = s32[2,3,4] parameter(0)
  b = s32[4,5] parameter(1)
  ROOT d = s32[2,3,5] dot(a, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* dot = FindDot(*r.after);
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(Dims(dot->operand(0)), (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(Dims(dot), (std::vector<int64_t>{6, 5}));
}

TEST(DotDecomposerTest, OuterProductGetsUnitContractingDimension) {
  Rewrite r = RunAndCheck("dot_decomposer", R"(
HloModule m
ENTRY e {
  a = f32[3] parameter(0)
  b = f32[4] parameter(1)
  ROOT d = f32[3,4] dot(a, b)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* dot = FindDot(*r.after);
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(Dims(dot->operand(0)), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(Dims(dot->operand(1)), (std::vector<int64_t>{1, 4}));
}

TEST(DotDecomposerTest, LeavesCanonicalDots) {
  Rewrite r = RunAndCheck("dot_decomposer", R"(
HloModule m
ENTRY e {
  a = f32[8,3,4] parameter(0)
  b = f32[8,5,4] parameter(1)
  c = f32[4,3] parameter(2)
  v = f32[4] parameter(3)
  d = f32[8,3,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}
  k = f32[3] dot(v, c), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (f32[8,3,5], f32[3]) tuple(d, k)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(DotDecomposerTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("dot_decomposer");
}

// ---------------------------------------------------------------------------------------------
// batch-dot-simplification

TEST(BatchDotSimplificationTest, RemovesUnitBatchDimensions) {
  Rewrite r = RunAndCheck("batch-dot-simplification", R"(
HloModule m
ENTRY e {
  a = f32[1,3,2,4] parameter(0)
  b = f32[1,3,4,5] parameter(1)
  ROOT d = f32[1,3,2,5] dot(a, b), lhs_batch_dims={0,1}, lhs_contracting_dims={3}, rhs_batch_dims={0,1}, rhs_contracting_dims={2}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* dot = FindDot(*r.after);
  ASSERT_NE(dot, nullptr);
  EXPECT_EQ(Dims(dot->operand(0)), (std::vector<int64_t>{3, 2, 4}));
  EXPECT_EQ(Dims(dot), (std::vector<int64_t>{3, 2, 5}));
  EXPECT_EQ(dot->dot_dnums->lhs_batch_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(dot->dot_dnums->lhs_contracting_dimensions, std::vector<int64_t>{2});
  EXPECT_EQ(dot->dot_dnums->rhs_contracting_dimensions, std::vector<int64_t>{1});
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kReshape);
}

TEST(BatchDotSimplificationTest, LeavesNonDegenerateOrUnorderedBatches) {
  Rewrite r = RunAndCheck("batch-dot-simplification", R"(
HloModule m
ENTRY e {
  a = f32[2,3,4] parameter(0)
  b = f32[2,4,5] parameter(1)
  c = f32[3,1,4] parameter(2)
  k = f32[1,4,5] parameter(3)
  d = f32[2,3,5] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  u = f32[1,3,5] dot(c, k), lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT t = (f32[2,3,5], f32[1,3,5]) tuple(d, u)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(BatchDotSimplificationTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("batch-dot-simplification");
}

// ---------------------------------------------------------------------------------------------
// dot-merger

TEST(DotMergerTest, MergesDotsSharingLhs) {
  Rewrite r = RunAndCheck("dot-merger", R"(
HloModule m
ENTRY e {
  x = f32[8,16] parameter(0)
  w0 = f32[16,4] parameter(1)
  w1 = f32[16,6] parameter(2)
  d0 = f32[8,4] dot(x, w0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d1 = f32[8,6] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[8,4], f32[8,6]) tuple(d0, d1)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kDot), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConcatenate), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kSlice), 2);
  EXPECT_EQ(Dims(FindDot(*r.after)), (std::vector<int64_t>{8, 10}));
}

TEST(DotMergerTest, MergesBatchDotsSharingRhs) {
  Rewrite r = RunAndCheck("dot-merger", R"(
HloModule m
ENTRY e {
  w = s32[3,16,5] parameter(0)
  a = s32[3,2,16] parameter(1)
  b = s32[3,7,16] parameter(2)
  c = s32[3,4,16] parameter(3)
  d0 = s32[3,2,5] dot(a, w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  d1 = s32[3,7,5] dot(b, w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  d2 = s32[3,4,5] dot(c, w), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT t = (s32[3,2,5], s32[3,7,5], s32[3,4,5]) tuple(d0, d1, d2)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kDot), 1);
  EXPECT_EQ(Dims(FindDot(*r.after)), (std::vector<int64_t>{3, 13, 5}));
}

TEST(DotMergerTest, KeepsDependentOrMismatchedDots) {
  Rewrite r = RunAndCheck("dot-merger", R"(
HloModule m
ENTRY e {
  x = f32[8,8] parameter(0)
  w0 = f32[8,8] parameter(1)
  d0 = f32[8,8] dot(x, w0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d1 = f32[8,8] dot(x, d0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[8,8] dot(x, w0), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (f32[8,8], f32[8,8]) tuple(d1, d2)
}
)");
  ASSERT_NE(r.after, nullptr);
  // d0/d1 depend on each other; d0 and d2 contract different dimensions of x.
  EXPECT_FALSE(r.changed);
}

TEST(DotMergerTest, RespectsSizeThreshold) {
  // Each dot touches 3 x 16 MiB; neither is a merge candidate. (Not evaluated: too big.)
  std::unique_ptr<ir::Module> m = testing::Parse(R"(
HloModule m
ENTRY e {
  x = f32[2048,2048] parameter(0)
  w0 = f32[2048,2048] parameter(1)
  w1 = f32[2048,2048] parameter(2)
  d0 = f32[2048,2048] dot(x, w0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d1 = f32[2048,2048] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[2048,2048], f32[2048,2048]) tuple(d0, d1)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(testing::RunPass("dot-merger", *m));
}

TEST(DotMergerTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("dot-merger", /*idempotent=*/false);
}

}  // namespace
}  // namespace mltune::passes
