// Expander passes: operand_upcaster, comparison-expander, logistic-expander, real_imag_expander,
// map-inline, dynamic-index-splitter, stable-sort-expander, batchnorm_expander and
// bitcast_dtypes_expander. Each rewrite is asserted on a small module, checked for equivalence by
// evaluation and for idempotence (RunAndCheck), and each pass is swept over the corpus.
#include <string>

#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "tests/passes/pass_corpus_sweep.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using ir::PrimitiveType;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

Rewrite RunOn(const std::string& pass, const std::string& body,
              const std::string& extra_computations = "") {
  return RunAndCheck(pass, "HloModule m\n" + extra_computations + "\nENTRY e {\n" + body + "\n}\n");
}

const ir::Instruction* Root(const Rewrite& r) { return r.after->entry()->root(); }

// The printed module parses back to a module that verifies (new computations are printable).
void ExpectReparses(const ir::Module& m) {
  absl::StatusOr<std::unique_ptr<ir::Module>> again = ir::ParseHloText(ir::PrintModule(m));
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << ir::PrintModule(m);
  EXPECT_TRUE(ir::VerifyModule(**again).ok());
}

// --- operand_upcaster ---

TEST(OperandUpcasterTest, ConvertsNarrowOperandsToTheResultType) {
  Rewrite r = RunOn("operand_upcaster", R"(
  a = bf16[2,3] parameter(0)
  b = bf16[3,4] parameter(1)
  ROOT d = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConvert), 2);
  EXPECT_EQ(Root(r)->operand(0)->shape().element_type(), PrimitiveType::kF32);
  EXPECT_EQ(Root(r)->operand(1)->shape().element_type(), PrimitiveType::kF32);
}

TEST(OperandUpcasterTest, UpcastsIntegerOperands) {
  Rewrite r = RunOn("operand_upcaster", R"(
  a = s8[2,3] parameter(0)
  b = s8[3,4] parameter(1)
  d1 = s32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (s32[2,4], f32[2,4]) tuple(d1, d2))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConvert), 4);
  EXPECT_EQ(Root(r)->operand(1)->operand(0)->shape().element_type(), PrimitiveType::kF32);
}

TEST(OperandUpcasterTest, LeavesSameTypeAndNarrowingOps) {
  Rewrite r = RunOn("operand_upcaster", R"(
  a = f32[2,3] parameter(0)
  b = f32[3,4] parameter(1)
  d1 = f32[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = bf16[2,4] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[2,4], bf16[2,4]) tuple(d1, d2))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(OperandUpcasterTest, UpcastsConvolutionOperands) {
  Rewrite r = RunOn("operand_upcaster", R"(
  img = f16[1,5,5,2] parameter(0)
  ker = f16[3,3,2,4] parameter(1)
  ROOT conv = f32[1,3,3,4] convolution(img, ker), window={size=3x3}, dim_labels=b01f_01io->b01f)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConvert), 2);
}

// --- comparison-expander ---

TEST(ComparisonExpanderTest, ExpandsTotalOrderComparesIncludingSpecialValues) {
  Rewrite r = RunOn("comparison-expander", R"(
  p = f32[8] parameter(0)
  c = f32[8] constant({nan, -nan, -0, 0, inf, -inf, 1, -1})
  lt = pred[8] compare(p, c), direction=LT, type=TOTALORDER
  ge = pred[8] compare(c, p), direction=GE, type=TOTALORDER
  eq = pred[8] compare(c, c), direction=EQ, type=TOTALORDER
  ROOT t = (pred[8], pred[8], pred[8]) tuple(lt, ge, eq))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  for (const ir::Instruction* i : r.after->entry()->instructions()) {
    if (i->opcode() == Opcode::kCompare) {
      EXPECT_FALSE(ir::IsFloatingPoint(i->operand(0)->shape().element_type())) << i->name();
    }
  }
  EXPECT_GT(CountOpcode(*r.after, Opcode::kBitcastConvert), 0);
}

TEST(ComparisonExpanderTest, Bf16GoesThroughF32AndF16StaysSixteenBits) {
  Rewrite r = RunOn("comparison-expander", R"(
  a = bf16[4] parameter(0)
  b = bf16[4] parameter(1)
  x = f16[4] parameter(2)
  y = f16[4] parameter(3)
  c1 = pred[4] compare(a, b), direction=LT, type=TOTALORDER
  c2 = pred[4] compare(x, y), direction=GT, type=TOTALORDER
  ROOT t = (pred[4], pred[4]) tuple(c1, c2))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->operand(0)->operand(0)->shape().element_type(), PrimitiveType::kS32);
  EXPECT_EQ(Root(r)->operand(1)->operand(0)->shape().element_type(), PrimitiveType::kS16);
}

TEST(ComparisonExpanderTest, ExpandsInsideSortComparators) {
  Rewrite r = RunOn("comparison-expander", R"(
  p = f32[16] parameter(0)
  ROOT s = f32[16] sort(p), dimensions={0}, to_apply=lt)",
                    R"(
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT, type=TOTALORDER
})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
}

TEST(ComparisonExpanderTest, LeavesOtherComparesAlone) {
  Rewrite r = RunOn("comparison-expander", R"(
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  ROOT c = pred[4] compare(a, b), direction=LT)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

// --- logistic-expander ---

TEST(LogisticExpanderTest, ExpandsToOneOverOnePlusExp) {
  Rewrite r = RunOn("logistic-expander", R"(
  p = f32[4] parameter(0)
  ROOT l = f32[4] logistic(p))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kLogistic), 0);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kDivide);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kExp), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kNegate), 1);
}

TEST(LogisticExpanderTest, NarrowTypesExpandInF32) {
  Rewrite r = RunOn("logistic-expander", R"(
  p = bf16[64] parameter(0)
  ROOT l = bf16[64] logistic(p))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kConvert);
  EXPECT_EQ(Root(r)->operand(0)->shape().element_type(), PrimitiveType::kF32);
}

// --- real_imag_expander ---

TEST(RealImagExpanderTest, RealIsOperandImagIsZero) {
  Rewrite r = RunOn("real_imag_expander", R"(
  p = f32[4] parameter(0)
  c = c64[4] parameter(1)
  re = f32[4] real(p)
  im = f32[4] imag(p)
  cre = f32[4] real(c)
  ROOT t = (f32[4], f32[4], f32[4]) tuple(re, im, cre))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->operand(0)->name(), "p");
  EXPECT_EQ(Root(r)->operand(1)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(Root(r)->operand(2)->opcode(), Opcode::kReal);
}

// --- map-inline ---

TEST(MapInlinerTest, InlinesSingleOpComputations) {
  Rewrite r = RunOn("map-inline", R"(
  a = f32[4] parameter(0)
  b = f32[4] parameter(1)
  m1 = f32[4] map(a, b), dimensions={0}, to_apply=sub
  m2 = f32[4] map(a, b), dimensions={0}, to_apply=second
  m3 = f32[4] map(a), dimensions={0}, to_apply=seven
  ROOT t = (f32[4], f32[4], f32[4]) tuple(m1, m2, m3))",
                    R"(
sub {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] subtract(y, x)
}
second {
  x.1 = f32[] parameter(0)
  ROOT y.1 = f32[] parameter(1)
}
seven {
  x.2 = f32[] parameter(0)
  ROOT c = f32[] constant(7)
})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after->entry(), Opcode::kMap), 0);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kSubtract);
  EXPECT_EQ(Root(r)->operand(0)->operand(0)->name(), "b");
  EXPECT_EQ(Root(r)->operand(1)->name(), "b");
  EXPECT_EQ(Root(r)->operand(2)->opcode(), Opcode::kBroadcast);
}

TEST(MapInlinerTest, KeepsMapsOfLargerComputations) {
  Rewrite r = RunOn("map-inline", R"(
  a = f32[4] parameter(0)
  ROOT m = f32[4] map(a), dimensions={0}, to_apply=twice)",
                    R"(
twice {
  x = f32[] parameter(0)
  n = f32[] negate(x)
  ROOT s = f32[] add(n, x)
})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

// --- dynamic-index-splitter ---

TEST(DynamicIndexSplitterTest, SplitsIndexVectors) {
  Rewrite r = RunOn("dynamic-index-splitter", R"(
  p = f32[8,6] parameter(0)
  u = f32[2,2] parameter(1)
  i = s32[2] parameter(2)
  ds = f32[3,2] dynamic-slice(p, i), dynamic_slice_sizes={3,2}
  dus = f32[8,6] dynamic-update-slice(p, u, i)
  ROOT t = (f32[3,2], f32[8,6]) tuple(ds, dus))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->operand(0)->operand_count(), 3);
  EXPECT_EQ(Root(r)->operand(1)->operand_count(), 4);
  EXPECT_TRUE(Root(r)->operand(0)->operand(1)->shape().IsScalar());
}

TEST(DynamicIndexSplitterTest, RankZeroOperands) {
  Rewrite r = RunOn("dynamic-index-splitter", R"(
  p = f32[] parameter(0)
  u = f32[] parameter(1)
  ds = f32[] dynamic-slice(p), dynamic_slice_sizes={}
  dus = f32[] dynamic-update-slice(p, u)
  ROOT t = (f32[], f32[]) tuple(ds, dus))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->operand(0)->name(), "p");
  EXPECT_EQ(Root(r)->operand(1)->name(), "u");
}

TEST(DynamicIndexSplitterTest, ScalarIndicesAreLeftAlone) {
  Rewrite r = RunOn("dynamic-index-splitter", R"(
  p = f32[8] parameter(0)
  i = s32[] parameter(1)
  ROOT ds = f32[3] dynamic-slice(p, i), dynamic_slice_sizes={3})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

// --- stable-sort-expander ---

const char kLessThan[] = R"(
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  ROOT c = pred[] compare(a, b), direction=LT
}
lt1 {
  a.1 = f32[] parameter(0)
  b.1 = f32[] parameter(1)
  ROOT c.1 = pred[] compare(a.1, b.1), direction=LT
})";

TEST(StableSortExpanderTest, ReusesAnIotaOperandToBreakTies) {
  // Keys with many ties (floor of inputs), so the order of equal keys matters.
  Rewrite r = RunOn("stable-sort-expander", R"(
  p = f32[32] parameter(0)
  four = f32[] constant(4)
  b4 = f32[32] broadcast(four), dimensions={}
  m = f32[32] multiply(p, b4)
  keys = f32[32] floor(m)
  iota = s32[32] iota(), iota_dimension=0
  ROOT s = (f32[32], s32[32]) sort(keys, iota), dimensions={0}, is_stable=true, to_apply=lt)",
                    kLessThan);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_FALSE(Root(r)->is_stable);
  EXPECT_EQ(Root(r)->operand_count(), 2);
  ExpectReparses(*r.after);
}

TEST(StableSortExpanderTest, AddsAnIotaOperandWhenThereIsNone) {
  Rewrite r = RunOn("stable-sort-expander", R"(
  p = f32[4,8] parameter(0)
  q = s32[4,8] parameter(1)
  ROOT s = (f32[4,8], s32[4,8]) sort(p, q), dimensions={1}, is_stable=true, to_apply=lt)",
                    kLessThan);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kTuple);
  const ir::Instruction* sort = Root(r)->operand(0)->operand(0);
  ASSERT_EQ(sort->opcode(), Opcode::kSort);
  EXPECT_EQ(sort->operand_count(), 3);
  EXPECT_EQ(sort->operand(2)->opcode(), Opcode::kIota);
  EXPECT_EQ(sort->operand(2)->iota_dimension, 1);

  Rewrite single = RunOn("stable-sort-expander", R"(
  p = f32[16] parameter(0)
  ROOT s = f32[16] sort(p), dimensions={0}, is_stable=true, to_apply=lt1)",
                         kLessThan);
  ASSERT_NE(single.after, nullptr);
  EXPECT_EQ(Root(single)->opcode(), Opcode::kGetTupleElement);
  ExpectReparses(*single.after);
}

// --- batchnorm_expander ---

TEST(BatchNormExpanderTest, ExpandsTrainingInferenceAndGrad) {
  Rewrite r = RunOn("batchnorm_expander", R"(
  x = f32[4,3,2] parameter(0)
  scale = f32[3] parameter(1)
  offset = f32[3] parameter(2)
  dy = f32[4,3,2] parameter(3)
  train = (f32[4,3,2], f32[3], f32[3]) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1
  mean = f32[3] get-tuple-element(train), index=1
  var = f32[3] get-tuple-element(train), index=2
  y = f32[4,3,2] get-tuple-element(train), index=0
  inf = f32[4,3,2] batch-norm-inference(x, scale, offset, mean, var), epsilon=0.001, feature_index=1
  grad = (f32[4,3,2], f32[3], f32[3]) batch-norm-grad(x, scale, mean, var, dy), epsilon=0.001, feature_index=1
  ROOT t = (f32[4,3,2], f32[4,3,2], (f32[4,3,2], f32[3], f32[3])) tuple(y, inf, grad))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kBatchNormTraining), 0);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kBatchNormInference), 0);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kBatchNormGrad), 0);
  EXPECT_GT(CountOpcode(*r.after, Opcode::kReduce), 0);
  ExpectReparses(*r.after);
}

TEST(BatchNormExpanderTest, Bf16ResultsRoundOnce) {
  Rewrite r = RunOn("batchnorm_expander", R"(
  x = bf16[8,4] parameter(0)
  scale = bf16[4] parameter(1)
  offset = bf16[4] parameter(2)
  ROOT train = (bf16[8,4], bf16[4], bf16[4]) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
}

// --- bitcast_dtypes_expander ---

TEST(BitcastDtypesExpanderTest, ExpandsWideningAndNarrowingBitcasts) {
  Rewrite r = RunOn("bitcast_dtypes_expander", R"(
  p = f32[3] parameter(0)
  q = u8[3,2] parameter(1)
  n = u8[3,4] bitcast-convert(p)
  w = s16[3] bitcast-convert(q)
  same = s32[3] bitcast-convert(p)
  ROOT t = (u8[3,4], s16[3], s32[3]) tuple(n, w, same))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kCall);
  EXPECT_EQ(Root(r)->operand(1)->opcode(), Opcode::kCall);
  EXPECT_EQ(Root(r)->operand(2)->opcode(), Opcode::kBitcastConvert);
  ExpectReparses(*r.after);
}

// --- corpus ---

class ExpandersCorpusTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ExpandersCorpusTest, VerifiesAndPreservesResults) {
  if (testing::LoadCorpus().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Passes, ExpandersCorpusTest,
                         ::testing::Values("operand_upcaster", "comparison-expander",
                                           "logistic-expander", "real_imag_expander", "map-inline",
                                           "dynamic-index-splitter", "stable-sort-expander",
                                           "batchnorm_expander", "bitcast_dtypes_expander"));

}  // namespace
}  // namespace mltune::passes
