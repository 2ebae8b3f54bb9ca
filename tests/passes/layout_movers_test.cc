// Passes that move or fold data-movement ops: reshape-mover, transpose-folding, convert-mover,
// simplify-fp-conversions, reshape-decomposer, slice-sinker and the sub-byte layout passes. Each
// rewrite is asserted on a small module, checked for equivalence by evaluation and for
// idempotence (RunAndCheck), and each pass is swept over the corpus.
#include <string>

#include "gtest/gtest.h"
#include "tests/passes/pass_corpus_sweep.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

Rewrite RunOn(const std::string& pass, const std::string& body,
              const std::string& extra_computations = "") {
  return RunAndCheck(pass, "HloModule m\n" + extra_computations + "\nENTRY e {\n" + body + "\n}\n");
}

const ir::Instruction* Root(const Rewrite& r) { return r.after->entry()->root(); }

// --- reshape-mover ---

TEST(ReshapeMoverTest, SinksEquivalentReshapesBelowElementwiseOps) {
  Rewrite r = RunOn("reshape-mover", R"(
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  ra = f32[6] reshape(a)
  rb = f32[6] reshape(b)
  s = f32[6] add(ra, rb)
  ROOT n = f32[6] negate(s))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  // Both ops now work on [2,3]; one reshape remains, at the end.
  EXPECT_EQ(Root(r)->opcode(), Opcode::kReshape);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kNegate);
  EXPECT_EQ(Root(r)->operand(0)->shape().dimensions(), std::vector<int64_t>({2, 3}));
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kReshape), 1);
}

TEST(ReshapeMoverTest, SinksTransposesWithConstantsAndScalarBroadcasts) {
  Rewrite r = RunOn("reshape-mover", R"(
  a = f32[2,3] parameter(0)
  s = f32[] parameter(1)
  ta = f32[3,2] transpose(a), dimensions={1,0}
  c = f32[3,2] constant({{1, 2}, {3, 4}, {5, 6}})
  bs = f32[3,2] broadcast(s), dimensions={}
  m = f32[3,2] multiply(ta, c)
  ROOT x = f32[3,2] subtract(m, bs))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kTranspose);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kTranspose), 1);
  // The constant was transposed to [2,3] (the evaluation check proves its values).
  const ir::Instruction* m = Root(r)->operand(0)->operand(0);
  ASSERT_EQ(m->opcode(), Opcode::kMultiply);
  EXPECT_EQ(m->operand(1)->opcode(), Opcode::kConstant);
  EXPECT_EQ(m->operand(1)->shape().dimensions(), std::vector<int64_t>({2, 3}));
}

// A transpose of a square array keeps its dimensions: the broadcast and the constant beside it
// must still be transposed (found by cpu_dtype_fuzz_test; the evaluation check proves values).
TEST(ReshapeMoverTest, TransposesOperandsOfSquareTransposes) {
  Rewrite r = RunOn("reshape-mover", R"(
  a = f32[3,3] parameter(0)
  v = f32[3] parameter(1)
  ta = f32[3,3] transpose(a), dimensions={1,0}
  b = f32[3,3] broadcast(v), dimensions={1}
  c = f32[3,3] constant({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})
  m = f32[3,3] multiply(ta, b)
  ROOT x = f32[3,3] subtract(m, c))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kTranspose);
  const ir::Instruction* m = Root(r)->operand(0)->operand(0);
  ASSERT_EQ(m->opcode(), Opcode::kMultiply);
  ASSERT_EQ(m->operand(1)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(m->operand(1)->dimensions, std::vector<int64_t>({0}));
}

TEST(ReshapeMoverTest, KeepsReshapesWithOtherUsersOrDifferentInputs) {
  Rewrite shared = RunOn("reshape-mover", R"(
  a = f32[2,3] parameter(0)
  b = f32[2,3] parameter(1)
  ra = f32[6] reshape(a)
  rb = f32[6] reshape(b)
  s = f32[6] add(ra, rb)
  ROOT t = (f32[6], f32[6]) tuple(s, ra))");
  ASSERT_NE(shared.after, nullptr);
  EXPECT_FALSE(shared.changed);

  Rewrite different = RunOn("reshape-mover", R"(
  a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  ra = f32[6] reshape(a)
  rb = f32[6] reshape(b)
  ROOT s = f32[6] add(ra, rb))");
  ASSERT_NE(different.after, nullptr);
  EXPECT_FALSE(different.changed);
}

TEST(ReshapeMoverTest, NeedsANontrivialRearrange) {
  Rewrite r = RunOn("reshape-mover", R"(
  a = f32[6] parameter(0)
  c = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})
  rc = f32[6] reshape(c)
  ROOT s = f32[6] add(a, rc))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

// --- transpose-folding ---

TEST(TransposeFoldingTest, FoldsRowColumnTransposesIntoDot) {
  Rewrite r = RunOn("transpose-folding", R"(
  a = f32[4,3] parameter(0)
  b = f32[5,4] parameter(1)
  ta = f32[3,4] transpose(a), dimensions={1,0}
  tb = f32[4,5] transpose(b), dimensions={1,0}
  ROOT d = f32[3,5] dot(ta, tb), lhs_contracting_dims={1}, rhs_contracting_dims={0})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kTranspose), 0);
  EXPECT_EQ(Root(r)->dot_dnums->lhs_contracting_dimensions, std::vector<int64_t>({0}));
  EXPECT_EQ(Root(r)->dot_dnums->rhs_contracting_dimensions, std::vector<int64_t>({1}));
}

TEST(TransposeFoldingTest, FoldsStackedTransposesInOneRun) {
  Rewrite r = RunOn("transpose-folding", R"(
  a = f32[3,4] parameter(0)
  b = f32[4,5] parameter(1)
  t1 = f32[4,3] transpose(a), dimensions={1,0}
  t2 = f32[3,4] transpose(t1), dimensions={1,0}
  ROOT d = f32[3,5] dot(t2, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kTranspose), 0);
  EXPECT_EQ(Root(r)->operand(0)->name(), "a");
  EXPECT_EQ(Root(r)->dot_dnums->lhs_contracting_dimensions, std::vector<int64_t>({1}));
}

TEST(TransposeFoldingTest, FoldsBatchedDotWhenBatchDimensionsStay) {
  Rewrite r = RunOn("transpose-folding", R"(
  a = f32[2,4,3] parameter(0)
  b = f32[2,4,5] parameter(1)
  ta = f32[2,3,4] transpose(a), dimensions={0,2,1}
  ROOT d = f32[2,3,5] dot(ta, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->dot_dnums->lhs_contracting_dimensions, std::vector<int64_t>({1}));
  EXPECT_EQ(Root(r)->dot_dnums->lhs_batch_dimensions, std::vector<int64_t>({0}));
}

TEST(TransposeFoldingTest, KeepsTransposesThatMoveBatchDimensions) {
  Rewrite r = RunOn("transpose-folding", R"(
  a = f32[4,2,3] parameter(0)
  b = f32[2,4,5] parameter(1)
  ta = f32[2,3,4] transpose(a), dimensions={1,2,0}
  ROOT d = f32[2,3,5] dot(ta, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(TransposeFoldingTest, FoldsTransposesIntoConvolution) {
  Rewrite r = RunOn("transpose-folding", R"(
  img = f32[1,2,5,5] parameter(0)
  ker = f32[3,3,2,4] parameter(1)
  t = f32[1,5,5,2] transpose(img), dimensions={0,2,3,1}
  tk = f32[3,3,4,2] transpose(ker), dimensions={0,1,3,2}
  ROOT conv = f32[1,3,3,4] convolution(t, tk), window={size=3x3}, dim_labels=b01f_01oi->b01f)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kTranspose), 0);
  const ir::ConvolutionDimensionNumbers& dn = *Root(r)->conv_dnums;
  EXPECT_EQ(dn.input_feature_dimension, 1);
  EXPECT_EQ(dn.input_spatial_dimensions, std::vector<int64_t>({2, 3}));
  EXPECT_EQ(dn.kernel_input_feature_dimension, 2);
  EXPECT_EQ(dn.kernel_output_feature_dimension, 3);
}

// --- convert-mover ---

TEST(ConvertMoverTest, MovesWideningConvertsDown) {
  Rewrite r = RunOn("convert-mover", R"(
  a = bf16[2,3] parameter(0)
  b = bf16[2,3] parameter(1)
  ca = f32[2,3] convert(a)
  cb = f32[2,3] convert(b)
  c = f32[2,1] constant({{0.5}, {2}})
  cat = f32[2,7] concatenate(ca, c, cb), dimensions={1}
  ROOT r = f32[14] reshape(cat))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kConvert);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kReshape);
  EXPECT_EQ(Root(r)->operand(0)->shape().element_type(), ir::PrimitiveType::kBF16);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConvert), 1);
}

TEST(ConvertMoverTest, KeepsConvertsWhenAConstantWouldRound) {
  Rewrite r = RunOn("convert-mover", R"(
  a = bf16[2] parameter(0)
  ca = f32[2] convert(a)
  c = f32[1] constant({0.1})
  ROOT cat = f32[3] concatenate(ca, c), dimensions={0})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(ConvertMoverTest, MovesNarrowingConvertsUp) {
  Rewrite r = RunOn("convert-mover", R"(
  a = f32[4,6] parameter(0)
  z = f32[] constant(0)
  p = f32[6,6] pad(a, z), padding=1_1x0_0
  s = f32[3,6] slice(p), slice={[0:3], [0:6]}
  ROOT c = bf16[3,6] convert(s))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kSlice);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kPad);
  EXPECT_EQ(Root(r)->operand(0)->shape().element_type(), ir::PrimitiveType::kBF16);
  EXPECT_EQ(Root(r)->operand(0)->operand(0)->opcode(), Opcode::kConvert);
}

TEST(ConvertMoverTest, KeepsConvertsWithOtherUsers) {
  Rewrite r = RunOn("convert-mover", R"(
  a = bf16[2,3] parameter(0)
  ca = f32[2,3] convert(a)
  ra = f32[6] reshape(ca)
  ROOT t = (f32[6], f32[2,3]) tuple(ra, ca))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

// --- simplify-fp-conversions ---

TEST(SimplifyFpConversionsTest, RemovesExactChains) {
  Rewrite r = RunOn("simplify-fp-conversions", R"(
  a = f16[4] parameter(0)
  b = bf16[4] parameter(1)
  up = f32[4] convert(a)
  back = f16[4] convert(up)
  w = f32[4] convert(b)
  ww = f64[4] convert(w)
  ROOT t = (f16[4], f64[4]) tuple(back, ww))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->operand(0)->name(), "a");
  EXPECT_EQ(Root(r)->operand(1)->opcode(), Opcode::kConvert);
  EXPECT_EQ(Root(r)->operand(1)->operand(0)->name(), "b");
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConvert), 1);
}

TEST(SimplifyFpConversionsTest, KeepsRoundingChains) {
  Rewrite r = RunOn("simplify-fp-conversions", R"(
  a = f32[4] parameter(0)
  down = bf16[4] convert(a)
  ROOT up = f32[4] convert(down))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

// --- reshape-decomposer ---

TEST(ReshapeDecomposerTest, SplitsMixedReshapesIntoCollapseAndExpand) {
  Rewrite r = RunOn("reshape-decomposer", R"(
  a = f32[6,4] parameter(0)
  b = f32[2,3,4] parameter(1)
  ra = f32[4,6] reshape(a)
  rb = f32[6,2,2] reshape(b)
  ROOT t = (f32[4,6], f32[6,2,2]) tuple(ra, rb))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->operand(0)->operand(0)->shape().dimensions(), std::vector<int64_t>({24}));
  EXPECT_EQ(Root(r)->operand(1)->operand(0)->shape().dimensions(), std::vector<int64_t>({6, 4}));
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kReshape), 4);
}

TEST(ReshapeDecomposerTest, KeepsPureCollapsesAndExpansions) {
  Rewrite r = RunOn("reshape-decomposer", R"(
  a = f32[2,3,4] parameter(0)
  collapse = f32[6,4] reshape(a)
  expand = f32[2,3,2,2] reshape(a)
  ones = f32[1,6,1,4] reshape(a)
  ROOT t = (f32[6,4], f32[2,3,2,2], f32[1,6,1,4]) tuple(collapse, expand, ones))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

// --- slice-sinker ---

TEST(SliceSinkerTest, RunsOpsOnSlicesOnceOnTheWholeArrays) {
  Rewrite r = RunOn("slice-sinker", R"(
  a = f32[8,2] parameter(0)
  b = f32[8,2] parameter(1)
  a0 = f32[4,2] slice(a), slice={[0:4], [0:2]}
  b0 = f32[4,2] slice(b), slice={[0:4], [0:2]}
  a1 = f32[4,2] slice(a), slice={[4:8], [0:2]}
  b1 = f32[4,2] slice(b), slice={[4:8], [0:2]}
  s0 = f32[4,2] add(a0, b0)
  s1 = f32[4,2] add(a1, b1)
  ROOT t = (f32[4,2], f32[4,2]) tuple(s0, s1))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kAdd), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kSlice), 2);
  EXPECT_EQ(Root(r)->operand(0)->operand(0)->shape().dimensions(), std::vector<int64_t>({8, 2}));
}

TEST(SliceSinkerTest, NeedsTheSlicesToCoverTheArrays) {
  Rewrite r = RunOn("slice-sinker", R"(
  a = f32[8] parameter(0)
  b = f32[8] parameter(1)
  a0 = f32[4] slice(a), slice={[0:4]}
  b0 = f32[4] slice(b), slice={[0:4]}
  a1 = f32[4] slice(a), slice={[4:8]}
  b1 = f32[4] slice(b), slice={[4:8]}
  s0 = f32[4] add(a0, b0)
  s1 = f32[4] multiply(a1, b1)
  ROOT t = (f32[4], f32[4]) tuple(s0, s1))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

// --- sub-byte layouts ---

TEST(SubByteNormalizationTest, SetsAndRemovesElementSize) {
  const std::string text = R"(
HloModule m, entry_computation_layout={(s4[4]{0})->s8[4]{0}}
ENTRY e {
  p = s4[4]{0} parameter(0)
  ROOT c = s8[4]{0} convert(p)
}
)";
  Rewrite set = RunAndCheck("sub-byte-size-setter", text);
  ASSERT_NE(set.after, nullptr);
  EXPECT_TRUE(set.changed);
  EXPECT_EQ(set.after->entry()->parameter(0)->shape().layout()->element_size_in_bits, 4);
  EXPECT_EQ(Root(set)->shape().layout()->element_size_in_bits, 0);
  EXPECT_EQ(set.after->entry_computation_layout, "{(s4[4]{0:E(4)})->s8[4]{0}}");

  std::unique_ptr<ir::Module> removed = set.after->Clone();
  EXPECT_TRUE(testing::RunPass("sub-byte-size-removal", *removed));
  EXPECT_EQ(removed->entry()->parameter(0)->shape().layout()->element_size_in_bits, 0);
  EXPECT_EQ(removed->entry_computation_layout, "{(s4[4]{0})->s8[4]{0}}");
  EXPECT_FALSE(testing::RunPass("sub-byte-size-removal", *removed));
}

// --- corpus ---

class MoversCorpusTest : public ::testing::TestWithParam<const char*> {};

TEST_P(MoversCorpusTest, VerifiesAndPreservesResults) {
  if (testing::LoadCorpus().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus(GetParam());
}

// After algsimp (and the expanders that make work for the movers) more of each pass fires.
TEST_P(MoversCorpusTest, AfterAlgsimpVerifiesAndPreservesResults) {
  if (testing::LoadCorpus().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus(GetParam(), /*idempotent=*/true, /*seeds=*/1,
                       {"logistic-expander", "operand_upcaster", "algsimp"});
}

INSTANTIATE_TEST_SUITE_P(Passes, MoversCorpusTest,
                         ::testing::Values("reshape-mover", "transpose-folding", "convert-mover",
                                           "simplify-fp-conversions", "reshape-decomposer",
                                           "slice-sinker", "sub-byte-size-setter",
                                           "sub-byte-size-removal"));

}  // namespace
}  // namespace mltune::passes
