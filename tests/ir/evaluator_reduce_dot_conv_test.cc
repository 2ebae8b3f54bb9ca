// Reductions, dot, convolution and batch norm in the reference evaluator, against hand-computed
// results.
#include "gtest/gtest.h"
#include "tests/ir/evaluator_test_util.h"

namespace mltune::ir {
namespace {

using eval_test::Eval;
using eval_test::kReducers;

constexpr char kM23[] = "m = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n z = f32[] constant(0)\n";

std::string Reduce(const std::string& root, const std::string& extra = "") {
  return Eval(absl::StrCat(kM23, root), absl::StrCat(kReducers, extra));
}

TEST(EvaluatorReduceTest, Reduce) {
  EXPECT_EQ(Reduce("ROOT r = f32[3] reduce(m, z), dimensions={0}, to_apply=add_f32"), "{5, 7, 9}");
  EXPECT_EQ(Reduce("ROOT r = f32[2] reduce(m, z), dimensions={1}, to_apply=add_f32"), "{6, 15}");
  EXPECT_EQ(Reduce("ROOT r = f32[] reduce(m, z), dimensions={0,1}, to_apply=add_f32"), "21");
  // The init value is folded in once per output element.
  EXPECT_EQ(Reduce("ten = f32[] constant(10)\n"
                   " ROOT r = f32[2] reduce(m, ten), dimensions={1}, to_apply=add_f32"),
            "{16, 25}");
  EXPECT_EQ(Reduce("inf = f32[] constant(-inf)\n"
                   " ROOT r = f32[3] reduce(m, inf), dimensions={0}, to_apply=max_f32"),
            "{4, 5, 6}");
  EXPECT_EQ(Reduce("ROOT r = f32[2,3] reduce(m, z), dimensions={}, to_apply=add_f32"),
            "{ {1, 2, 3}, {4, 5, 6} }");
}

TEST(EvaluatorReduceTest, HalfReductionRoundsEveryStep) {
  // 2048 + 1 rounds back to 2048 in f16 each time; the exact sum 2050 is never reached.
  EXPECT_EQ(Eval("a = f16[3] constant({2048, 1, 1})\n z = f16[] constant(0)\n"
                 " ROOT r = f16[] reduce(a, z), dimensions={0}, to_apply=add_f16",
                 kReducers),
            "2048");
}

TEST(EvaluatorReduceTest, InterpretedReducer) {
  // acc * 2 + x is not a single op: the reducer runs interpreted, folding in row-major order.
  constexpr char kTwiceAdd[] = R"(
twice_add {
  twice_add.a = f32[] parameter(0)
  twice_add.b = f32[] parameter(1)
  twice_add.two = f32[] constant(2)
  twice_add.t = f32[] multiply(twice_add.a, twice_add.two)
  ROOT twice_add.r = f32[] add(twice_add.t, twice_add.b)
}
)";
  EXPECT_EQ(Reduce("ROOT r = f32[2] reduce(m, z), dimensions={1}, to_apply=twice_add", kTwiceAdd),
            "{11, 32}");
}

TEST(EvaluatorReduceTest, VariadicArgmax) {
  constexpr char kArgmax[] = R"(
argmax {
  argmax.av = f32[] parameter(0)
  argmax.ai = s32[] parameter(1)
  argmax.bv = f32[] parameter(2)
  argmax.bi = s32[] parameter(3)
  argmax.gt = pred[] compare(argmax.bv, argmax.av), direction=GT
  argmax.v = f32[] select(argmax.gt, argmax.bv, argmax.av)
  argmax.i = s32[] select(argmax.gt, argmax.bi, argmax.ai)
  ROOT argmax.t = (f32[], s32[]) tuple(argmax.v, argmax.i)
}
)";
  EXPECT_EQ(Eval("a = f32[2,4] constant({{1, 7, 3, 7}, {-1, -5, -2, -9}})\n"
                 " idx = s32[2,4] iota(), iota_dimension=1\n"
                 " lo = f32[] constant(-inf)\n zero = s32[] constant(0)\n"
                 " ROOT r = (f32[2], s32[2]) reduce(a, idx, lo, zero), dimensions={1},"
                 " to_apply=argmax",
                 kArgmax),
            "({7, -1}, {1, 0})");
}

std::string Window1D(const std::string& window, const std::string& out_shape,
                     const std::string& reducer = "add_f32") {
  return Eval(
      absl::StrCat("a = f32[5] constant({1, 2, 3, 4, 5})\n z = f32[] constant(0)\n"
                   " ROOT r = ",
                   out_shape, " reduce-window(a, z), window={", window, "}, to_apply=", reducer),
      kReducers);
}

TEST(EvaluatorReduceTest, ReduceWindow) {
  EXPECT_EQ(Window1D("size=2", "f32[4]"), "{3, 5, 7, 9}");
  // Windows over padding positions [-1, 0], [1, 2], [3, 4].
  EXPECT_EQ(Window1D("size=2 stride=2 pad=1_1", "f32[3]"), "{1, 5, 9}");
  // Base dilation: the input is {1, _, 2, _, 3, _, 4, _, 5} with holes skipped.
  EXPECT_EQ(Window1D("size=2 lhs_dilate=2", "f32[8]"), "{1, 2, 2, 3, 3, 4, 4, 5}");
  // Window dilation: pairs (x0, x2), (x1, x3), (x2, x4).
  EXPECT_EQ(Window1D("size=2 rhs_dilate=2", "f32[3]"), "{4, 6, 8}");
  EXPECT_EQ(Eval("a = f32[3,3] constant({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})\n"
                 " lo = f32[] constant(-inf)\n"
                 " ROOT r = f32[2,2] reduce-window(a, lo), window={size=2x2 stride=1x1},"
                 " to_apply=max_f32",
                 kReducers),
            "{ {5, 6}, {8, 9} }");
}

TEST(EvaluatorReduceTest, SelectAndScatter) {
  EXPECT_EQ(Eval("a = f32[4] constant({1, 5, 2, 4})\n s = f32[2] constant({10, 20})\n"
                 " z = f32[] constant(0)\n"
                 " ROOT r = f32[4] select-and-scatter(a, s, z), window={size=2 stride=2},"
                 " select=ge_f32, scatter=add_f32",
                 kReducers),
            "{0, 10, 0, 20}");
  // Overlapping windows that select the same element add up there.
  EXPECT_EQ(Eval("a = f32[3] constant({1, 3, 2})\n s = f32[2] constant({5, 7})\n"
                 " z = f32[] constant(0)\n"
                 " ROOT r = f32[3] select-and-scatter(a, s, z), window={size=2 stride=1},"
                 " select=ge_f32, scatter=add_f32",
                 kReducers),
            "{0, 12, 0}");
  // Ties: GE keeps the first element seen; LT-based selection picks minima.
  EXPECT_EQ(Eval("a = f32[4] constant({3, 3, 2, 1})\n s = f32[2] constant({1, 2})\n"
                 " z = f32[] constant(0)\n"
                 " ROOT r = f32[4] select-and-scatter(a, s, z), window={size=2 stride=2},"
                 " select=ge_f32, scatter=add_f32",
                 kReducers),
            "{1, 0, 2, 0}");
  EXPECT_EQ(Eval("a = f32[4] constant({3, 3, 2, 1})\n s = f32[2] constant({1, 2})\n"
                 " z = f32[] constant(0)\n"
                 " ROOT r = f32[4] select-and-scatter(a, s, z), window={size=2 stride=2},"
                 " select=lt_f32, scatter=add_f32",
                 kReducers),
            "{0, 1, 0, 2}");
}

TEST(EvaluatorReduceTest, MapAppliesComputationPerElement) {
  EXPECT_EQ(Eval("a = f32[3] constant({1, 2, 3})\n b = f32[3] constant({10, 20, 30})\n"
                 " ROOT r = f32[3] map(a, b), dimensions={0}, to_apply=add_f32",
                 kReducers),
            "{11, 22, 33}");
  constexpr char kSquare[] = R"(
square {
  square.x = f32[] parameter(0)
  ROOT square.y = f32[] multiply(square.x, square.x)
}
)";
  EXPECT_EQ(Eval("a = f32[3] constant({1, -2, 3})\n"
                 " ROOT r = f32[3] map(a), dimensions={0}, to_apply=square",
                 kSquare),
            "{1, 4, 9}");
}

TEST(EvaluatorDotTest, MatrixProducts) {
  const char* ab =
      "a = f32[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n"
      " b = f32[3,2] constant({{1, 0}, {0, 1}, {2, -1}})\n";
  EXPECT_EQ(Eval(absl::StrCat(ab,
                              "ROOT r = f32[2,2] dot(a, b), lhs_contracting_dims={1},"
                              " rhs_contracting_dims={0}")),
            "{ {7, -1}, {16, -1} }");
  // Contracting lhs dimension 0: a^T b.
  EXPECT_EQ(Eval(absl::StrCat(ab,
                              "c = f32[2,2] constant({{1, 1}, {0, 2}})\n"
                              " ROOT r = f32[3,2] dot(a, c), lhs_contracting_dims={0},"
                              " rhs_contracting_dims={0}")),
            "{ {1, 9}, {2, 12}, {3, 15} }");
  EXPECT_EQ(Eval("a = f32[3] constant({1, 2, 3})\n b = f32[3] constant({4, 5, 6})\n"
                 " ROOT r = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
            "32");
  // No contracting dimensions: an outer product.
  EXPECT_EQ(Eval("a = f32[2] constant({1, 2})\n b = f32[3] constant({1, 10, 100})\n"
                 " ROOT r = f32[2,3] dot(a, b)"),
            "{ {1, 10, 100}, {2, 20, 200} }");
}

TEST(EvaluatorDotTest, BatchDimensions) {
  EXPECT_EQ(Eval("a = s32[2,2,2] constant({{{1, 2}, {3, 4}}, {{1, 0}, {0, 1}}})\n"
                 " b = s32[2,2,2] constant({{{1, 0}, {0, 1}}, {{5, 6}, {7, 8}}})\n"
                 " ROOT r = s32[2,2,2] dot(a, b), lhs_batch_dims={0}, rhs_batch_dims={0},"
                 " lhs_contracting_dims={2}, rhs_contracting_dims={1}"),
            "{ { {1, 2}, {3, 4} }, { {5, 6}, {7, 8} } }");
}

TEST(EvaluatorDotTest, MixedAndIntegerTypes) {
  // s8 operands with an s32 result: products do not wrap at 8 bits.
  EXPECT_EQ(Eval("a = s8[2] constant({100, 100})\n b = s8[2] constant({100, 27})\n"
                 " ROOT r = s32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
            "12700");
  EXPECT_EQ(Eval("a = s8[2] constant({100, 100})\n b = s8[2] constant({1, 2})\n"
                 " ROOT r = s8[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
            "44");
  EXPECT_EQ(Eval("a = f16[2] constant({2048, 1})\n b = f16[2] constant({1, 1})\n"
                 " ROOT r = f32[] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
            "2049");
}

std::string Conv1D(const std::string& window, const std::string& out_shape,
                   const std::string& kernel = "{1, 0, -1}") {
  return Eval(
      absl::StrCat("x = f32[1,5,1] constant({{{1}, {2}, {3}, {4}, {5}}})\n"
                   " kk = f32[3] constant(",
                   kernel, ")\n k = f32[3,1,1] reshape(kk)\n ROOT r = ", out_shape,
                   " convolution(x, k), window={", window, "}, dim_labels=b0f_0io->b0f"));
}

TEST(EvaluatorConvolutionTest, WindowVariants) {
  // out[i] = x[i] - x[i+2].
  EXPECT_EQ(Conv1D("size=3", "f32[1,3,1]"), "{ { {-2}, {-2}, {-2} } }");
  EXPECT_EQ(Conv1D("size=3 pad=1_1", "f32[1,5,1]"), "{ { {-2}, {-2}, {-2}, {-2}, {4} } }");
  EXPECT_EQ(Conv1D("size=3 stride=2 pad=1_1", "f32[1,3,1]"), "{ { {-2}, {-2}, {4} } }");
  // Window dilation 2: taps x[i], x[i+2], x[i+4].
  EXPECT_EQ(Conv1D("size=3 rhs_dilate=2", "f32[1,1,1]"), "{ { {-4} } }");
  // Base dilation 2: the input is {1, 0, 2, 0, 3, 0, 4, 0, 5}.
  EXPECT_EQ(Conv1D("size=3 lhs_dilate=2", "f32[1,7,1]"),
            "{ { {-1}, {0}, {-1}, {0}, {-1}, {0}, {-1} } }");
  // Reversal flips the kernel: out[i] = x[i+2] - x[i].
  EXPECT_EQ(Conv1D("size=3 rhs_reversal=1", "f32[1,3,1]"), "{ { {2}, {2}, {2} } }");
  EXPECT_EQ(Conv1D("size=3 pad=-1_0", "f32[1,2,1]"), "{ { {-2}, {-2} } }");
}

TEST(EvaluatorConvolutionTest, TwoDimensional) {
  EXPECT_EQ(Eval("v = f32[9] constant({1, 2, 3, 4, 5, 6, 7, 8, 9})\n"
                 " x = f32[1,3,3,1] reshape(v)\n"
                 " k = f32[2,2,1,1] constant({{{{1}}, {{1}}}, {{{1}}, {{1}}}})\n"
                 " ROOT r = f32[1,2,2,1] convolution(x, k), window={size=2x2},"
                 " dim_labels=b01f_01io->b01f"),
            "{ { { {12}, {16} }, { {24}, {28} } } }");
  // NCHW with two output features and stride 2.
  EXPECT_EQ(Eval("v = f32[9] constant({1, 2, 3, 4, 5, 6, 7, 8, 9})\n"
                 " x = f32[1,1,3,3] reshape(v)\n"
                 " k = f32[2,1,1,1] constant({{{{1}}}, {{{-1}}}})\n"
                 " ROOT r = f32[1,2,2,2] convolution(x, k), window={size=1x1 stride=2x2},"
                 " dim_labels=bf01_oi01->bf01"),
            "{ { { {1, 3}, {7, 9} }, { {-1, -3}, {-7, -9} } } }");
}

TEST(EvaluatorConvolutionTest, FeatureGroups) {
  // Group 0 maps input features {0, 1} to outputs {0, 1}, group 1 maps {2, 3} to {2, 3}.
  EXPECT_EQ(Eval("x = f32[1,1,4] constant({{{1, 2, 3, 4}}})\n"
                 " k = f32[1,2,4] constant({{{1, 2, 3, 4}, {5, 6, 7, 8}}})\n"
                 " ROOT r = f32[1,1,4] convolution(x, k), window={size=1},"
                 " dim_labels=b0f_0io->b0f, feature_group_count=2"),
            "{ { {11, 14, 37, 44} } }");
}

TEST(EvaluatorConvolutionTest, BatchGroups) {
  // Output feature 0 reads batch 0, output feature 1 reads batch 1.
  EXPECT_EQ(Eval("x = f32[2,1,1] constant({{{1}}, {{2}}})\n"
                 " k = f32[1,1,2] constant({{{3, 5}}})\n"
                 " ROOT r = f32[1,1,2] convolution(x, k), window={size=1},"
                 " dim_labels=b0f_0io->b0f, batch_group_count=2"),
            "{ { {3, 10} } }");
}

TEST(EvaluatorConvolutionTest, IntegerConvolution) {
  EXPECT_EQ(Eval("x = s32[1,4,1] constant({{{1}, {2}, {3}, {4}}})\n"
                 " k = s32[2,1,1] constant({{{10}}, {{1}}})\n"
                 " ROOT r = s32[1,3,1] convolution(x, k), window={size=2},"
                 " dim_labels=b0f_0io->b0f"),
            "{ { {12}, {23}, {34} } }");
}

TEST(EvaluatorBatchNormTest, TrainingInferenceGrad) {
  const char* inputs =
      "x = f32[2,2] constant({{1, 2}, {3, 6}})\n"
      " scale = f32[2] constant({1, 2})\n offset = f32[2] constant({0, 10})\n";
  // Feature 0: values {1, 3}, mean 2, variance 1. Feature 1: {2, 6}, mean 4, variance 4.
  EXPECT_EQ(Eval(absl::StrCat(inputs,
                              "ROOT r = (f32[2,2], f32[2], f32[2]) batch-norm-training(x, scale,"
                              " offset), epsilon=0, feature_index=1")),
            "({ {-1, 8}, {1, 12} }, {2, 4}, {1, 4})");
  EXPECT_EQ(Eval(absl::StrCat(inputs,
                              "mean = f32[2] constant({2, 4})\n var = f32[2] constant({1, 4})\n"
                              " ROOT r = f32[2,2] batch-norm-inference(x, scale, offset, mean,"
                              " var), epsilon=0, feature_index=1")),
            "{ {-1, 8}, {1, 12} }");
  EXPECT_EQ(Eval(absl::StrCat(inputs,
                              "mean = f32[2] constant({2, 4})\n var = f32[2] constant({1, 4})\n"
                              " dy = f32[2,2] constant({{1, 0}, {0, 0}})\n"
                              " ROOT r = (f32[2,2], f32[2], f32[2]) batch-norm-grad(x, scale, mean,"
                              " var, dy), epsilon=0, feature_index=1")),
            "({ {0, 0}, {0, 0} }, {-1, 0}, {1, 0})");
}

}  // namespace
}  // namespace mltune::ir
