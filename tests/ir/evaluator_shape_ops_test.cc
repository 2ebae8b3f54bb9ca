// Data-movement ops of the reference evaluator: broadcast, reshape, transpose, slices, pads,
// concatenate, reverse, iota, gather and scatter, with hand-computed results.
#include "gtest/gtest.h"
#include "tests/ir/evaluator_test_util.h"

namespace mltune::ir {
namespace {

using eval_test::Eval;
using eval_test::kReducers;

constexpr char kM23[] = "m = s32[2,3] constant({{1, 2, 3}, {4, 5, 6}})\n";
constexpr char kM33[] = "m = s32[3,3] constant({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}})\n";

std::string WithM23(const std::string& root) { return Eval(absl::StrCat(kM23, root)); }
std::string WithM33(const std::string& root) { return Eval(absl::StrCat(kM33, root)); }

TEST(EvaluatorShapeOpsTest, Broadcast) {
  EXPECT_EQ(Eval("a = f32[2] constant({1, 2})\n ROOT r = f32[3,2] broadcast(a), dimensions={1}"),
            "{ {1, 2}, {1, 2}, {1, 2} }");
  EXPECT_EQ(Eval("a = f32[2] constant({1, 2})\n ROOT r = f32[2,3] broadcast(a), dimensions={0}"),
            "{ {1, 1, 1}, {2, 2, 2} }");
  EXPECT_EQ(Eval("a = s8[] constant(-3)\n ROOT r = s8[2] broadcast(a), dimensions={}"), "{-3, -3}");
  EXPECT_EQ(WithM23("ROOT r = s32[3,2,2] broadcast(m), dimensions={2,0}"),
            "{ { {1, 4}, {1, 4} }, { {2, 5}, {2, 5} }, { {3, 6}, {3, 6} } }");
}

TEST(EvaluatorShapeOpsTest, ReshapeBitcastTranspose) {
  EXPECT_EQ(WithM23("ROOT r = s32[3,2] reshape(m)"), "{ {1, 2}, {3, 4}, {5, 6} }");
  EXPECT_EQ(WithM23("ROOT r = s32[6] bitcast(m)"), "{1, 2, 3, 4, 5, 6}");
  EXPECT_EQ(WithM23("ROOT r = s32[3,2] transpose(m), dimensions={1,0}"),
            "{ {1, 4}, {2, 5}, {3, 6} }");
  EXPECT_EQ(Eval("a = s32[2,2,2] constant({{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}})\n"
                 " ROOT r = s32[2,2,2] transpose(a), dimensions={2,0,1}"),
            "{ { {0, 2}, {4, 6} }, { {1, 3}, {5, 7} } }");
}

TEST(EvaluatorShapeOpsTest, Slice) {
  EXPECT_EQ(Eval("a = s32[10] iota(), iota_dimension=0\n"
                 " ROOT r = s32[3] slice(a), slice={[1:8:3]}"),
            "{1, 4, 7}");
  EXPECT_EQ(WithM33("ROOT r = s32[2,2] slice(m), slice={[1:3], [0:3:2]}"), "{ {4, 6}, {7, 9} }");
  EXPECT_EQ(WithM33("ROOT r = s32[0,3] slice(m), slice={[2:2], [0:3]}"), "{  }");
}

TEST(EvaluatorShapeOpsTest, DynamicSliceClampsStartIndices) {
  const char* a = "a = s32[5] constant({0, 1, 2, 3, 4})\n";
  EXPECT_EQ(Eval(absl::StrCat(a,
                              "i = s32[] constant(1)\n"
                              " ROOT r = s32[3] dynamic-slice(a, i), dynamic_slice_sizes={3}")),
            "{1, 2, 3}");
  EXPECT_EQ(Eval(absl::StrCat(a,
                              "i = s32[] constant(3)\n"
                              " ROOT r = s32[3] dynamic-slice(a, i), dynamic_slice_sizes={3}")),
            "{2, 3, 4}");
  EXPECT_EQ(Eval(absl::StrCat(a,
                              "i = s64[] constant(-7)\n"
                              " ROOT r = s32[3] dynamic-slice(a, i), dynamic_slice_sizes={3}")),
            "{0, 1, 2}");
  EXPECT_EQ(WithM33("i = u32[] constant(2)\n j = u32[] constant(1)\n"
                    " ROOT r = s32[2,2] dynamic-slice(m, i, j), dynamic_slice_sizes={2,2}"),
            "{ {5, 6}, {8, 9} }");
}

TEST(EvaluatorShapeOpsTest, DynamicUpdateSliceClampsStartIndices) {
  const char* a = "a = s32[5] constant({0, 0, 0, 0, 0})\n u = s32[2] constant({7, 8})\n";
  EXPECT_EQ(Eval(absl::StrCat(a,
                              "i = s32[] constant(1)\n"
                              " ROOT r = s32[5] dynamic-update-slice(a, u, i)")),
            "{0, 7, 8, 0, 0}");
  EXPECT_EQ(Eval(absl::StrCat(a,
                              "i = s32[] constant(4)\n"
                              " ROOT r = s32[5] dynamic-update-slice(a, u, i)")),
            "{0, 0, 0, 7, 8}");
  EXPECT_EQ(Eval(absl::StrCat(a,
                              "i = s32[] constant(-2)\n"
                              " ROOT r = s32[5] dynamic-update-slice(a, u, i)")),
            "{7, 8, 0, 0, 0}");
  EXPECT_EQ(WithM33("u = s32[1,2] constant({{0, -1}})\n i = s32[] constant(2)\n"
                    " j = s32[] constant(2)\n ROOT r = s32[3,3] dynamic-update-slice(m, u, i, j)"),
            "{ {1, 2, 3}, {4, 5, 6}, {7, 0, -1} }");
}

TEST(EvaluatorShapeOpsTest, Concatenate) {
  EXPECT_EQ(WithM23("n = s32[1,3] constant({{7, 8, 9}})\n"
                    " ROOT r = s32[3,3] concatenate(m, n), dimensions={0}"),
            "{ {1, 2, 3}, {4, 5, 6}, {7, 8, 9} }");
  EXPECT_EQ(WithM23("n = s32[2,1] constant({{7}, {8}})\n"
                    " ROOT r = s32[2,7] concatenate(m, n, m), dimensions={1}"),
            "{ {1, 2, 3, 7, 1, 2, 3}, {4, 5, 6, 8, 4, 5, 6} }");
}

TEST(EvaluatorShapeOpsTest, PadWithInteriorAndNegativeEdges) {
  const char* a = "a = s32[3] constant({1, 2, 3})\n z = s32[] constant(0)\n";
  EXPECT_EQ(Eval(absl::StrCat(a, "ROOT r = s32[8] pad(a, z), padding=1_2_1")),
            "{0, 1, 0, 2, 0, 3, 0, 0}");
  EXPECT_EQ(Eval(absl::StrCat(a, "ROOT r = s32[2] pad(a, z), padding=-1_0")), "{2, 3}");
  EXPECT_EQ(Eval(absl::StrCat(a, "ROOT r = s32[3] pad(a, z), padding=-1_-1_1")), "{0, 2, 0}");
  EXPECT_EQ(WithM23("z = s32[] constant(-1)\n ROOT r = s32[3,4] pad(m, z), padding=0_1x1_0"),
            "{ {-1, 1, 2, 3}, {-1, 4, 5, 6}, {-1, -1, -1, -1} }");
}

TEST(EvaluatorShapeOpsTest, Reverse) {
  EXPECT_EQ(WithM23("ROOT r = s32[2,3] reverse(m), dimensions={0}"), "{ {4, 5, 6}, {1, 2, 3} }");
  EXPECT_EQ(WithM23("ROOT r = s32[2,3] reverse(m), dimensions={0,1}"), "{ {6, 5, 4}, {3, 2, 1} }");
}

TEST(EvaluatorShapeOpsTest, Iota) {
  EXPECT_EQ(Eval("ROOT r = s32[2,3] iota(), iota_dimension=1"), "{ {0, 1, 2}, {0, 1, 2} }");
  EXPECT_EQ(Eval("ROOT r = f32[2,3] iota(), iota_dimension=0"), "{ {0, 0, 0}, {1, 1, 1} }");
  EXPECT_EQ(Eval("ROOT r = s4[3] iota(), iota_dimension=0"), "{0, 1, 2}");
}

TEST(EvaluatorShapeOpsTest, GetDimensionSize) {
  EXPECT_EQ(WithM23("ROOT r = s32[] get-dimension-size(m), dimensions={1}"), "3");
}

TEST(EvaluatorShapeOpsTest, GatherRows) {
  // The XLA operation-semantics example: gather rows 0 and 2.
  EXPECT_EQ(WithM33("i = s32[2] constant({0, 2})\n"
                    " ROOT r = s32[2,3] gather(m, i), offset_dims={1}, collapsed_slice_dims={0},"
                    " start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}"),
            "{ {1, 2, 3}, {7, 8, 9} }");
}

TEST(EvaluatorShapeOpsTest, GatherClampsStartIndices) {
  // A 2-row window starting at row 2 of 3 is moved back to start at row 1.
  EXPECT_EQ(WithM33("i = s32[1] constant({2})\n"
                    " ROOT r = s32[1,2,3] gather(m, i), offset_dims={1,2}, collapsed_slice_dims={},"
                    " start_index_map={0}, index_vector_dim=1, slice_sizes={2,3}"),
            "{ { {4, 5, 6}, {7, 8, 9} } }");
  EXPECT_EQ(WithM33("i = s32[1] constant({-5})\n"
                    " ROOT r = s32[1,3] gather(m, i), offset_dims={1}, collapsed_slice_dims={0},"
                    " start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}"),
            "{ {1, 2, 3} }");
}

TEST(EvaluatorShapeOpsTest, GatherPointsWithIndexVectors) {
  EXPECT_EQ(WithM33("i = s32[2,2] constant({{0, 1}, {2, 2}})\n"
                    " ROOT r = s32[2] gather(m, i), offset_dims={}, collapsed_slice_dims={0,1},"
                    " start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1}"),
            "{2, 9}");
  // Index vector along dimension 0, start_index_map reversed: (row, col) = (i[1], i[0]).
  EXPECT_EQ(WithM33("i = s32[2,2] constant({{0, 2}, {1, 2}})\n"
                    " ROOT r = s32[2] gather(m, i), offset_dims={}, collapsed_slice_dims={0,1},"
                    " start_index_map={1,0}, index_vector_dim=0, slice_sizes={1,1}"),
            "{4, 9}");
  // A lone index vector (index_vector_dim=0 on a rank-1 index) selects a window.
  EXPECT_EQ(WithM23("i = s32[1] constant({1})\n"
                    " ROOT r = s32[2,2] gather(m, i), offset_dims={0,1}, collapsed_slice_dims={},"
                    " start_index_map={1}, index_vector_dim=0, slice_sizes={2,2}"),
            "{ {2, 3}, {5, 6} }");
}

TEST(EvaluatorShapeOpsTest, GatherWithBatchingDims) {
  // Row b of the operand is indexed by index b.
  EXPECT_EQ(WithM23("i = s32[2,1] constant({{2}, {0}})\n"
                    " ROOT r = s32[2] gather(m, i), offset_dims={}, collapsed_slice_dims={1},"
                    " start_index_map={1}, index_vector_dim=1, operand_batching_dims={0},"
                    " start_indices_batching_dims={0}, slice_sizes={1,1}"),
            "{3, 4}");
}

std::string Scatter(const std::string& indices, const std::string& updates_shape,
                    const std::string& updates, const std::string& combiner = "add_s32") {
  return Eval(absl::StrCat(kM33, "i = ", indices, "\n u = ", updates_shape, " constant(", updates,
                           ")\n ROOT r = s32[3,3] scatter(m, i, u), update_window_dims={1},"
                           " inserted_window_dims={0}, scatter_dims_to_operand_dims={0},"
                           " index_vector_dim=1, to_apply=",
                           combiner),
              kReducers);
}

TEST(EvaluatorShapeOpsTest, ScatterAddsRows) {
  EXPECT_EQ(Scatter("s32[2] constant({0, 2})", "s32[2,3]", "{{10, 20, 30}, {70, 80, 90}}"),
            "{ {11, 22, 33}, {4, 5, 6}, {77, 88, 99} }");
  // Repeated indices combine in update order.
  EXPECT_EQ(Scatter("s32[2] constant({1, 1})", "s32[2,3]", "{{1, 1, 1}, {2, 2, 2}}"),
            "{ {1, 2, 3}, {7, 8, 9}, {7, 8, 9} }");
}

TEST(EvaluatorShapeOpsTest, ScatterSkipsOutOfBoundsUpdates) {
  EXPECT_EQ(Scatter("s32[3] constant({3, 1, -1})", "s32[3,3]",
                    "{{100, 100, 100}, {70, 80, 90}, {100, 100, 100}}"),
            "{ {1, 2, 3}, {74, 85, 96}, {7, 8, 9} }");
  // A window that would run past the end is skipped whole, not clamped.
  EXPECT_EQ(Eval("a = s32[4] constant({0, 0, 0, 0})\n i = s32[2,1] constant({{3}, {1}})\n"
                 " u = s32[2,2] constant({{1, 2}, {3, 4}})\n"
                 " ROOT r = s32[4] scatter(a, i, u), update_window_dims={1},"
                 " inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
                 " to_apply=add_s32",
                 kReducers),
            "{0, 3, 4, 0}");
}

TEST(EvaluatorShapeOpsTest, ScatterAssignsScalars) {
  EXPECT_EQ(Eval("a = f32[4] constant({0, 0, 0, 0})\n i = s32[2,1] constant({{1}, {3}})\n"
                 " u = f32[2] constant({5, 6})\n"
                 " ROOT r = f32[4] scatter(a, i, u), update_window_dims={},"
                 " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
                 " to_apply=assign_f32",
                 kReducers),
            "{0, 5, 0, 6}");
}

TEST(EvaluatorShapeOpsTest, ScatterWithBatchingDims) {
  EXPECT_EQ(Eval("a = s32[2,3] constant({{0, 0, 0}, {0, 0, 0}})\n"
                 " i = s32[2,1] constant({{2}, {0}})\n u = s32[2] constant({5, 7})\n"
                 " ROOT r = s32[2,3] scatter(a, i, u), update_window_dims={},"
                 " inserted_window_dims={1}, input_batching_dims={0},"
                 " scatter_indices_batching_dims={0}, scatter_dims_to_operand_dims={1},"
                 " index_vector_dim=1, to_apply=add_s32",
                 kReducers),
            "{ {0, 0, 5}, {7, 0, 0} }");
}

TEST(EvaluatorShapeOpsTest, VariadicScatterWithInterpretedCombiner) {
  // (sum, last) pairs: the first operand accumulates, the second keeps the newest update.
  constexpr char kCombiner[] = R"(
sum_and_last {
  sum_and_last.a0 = s32[] parameter(0)
  sum_and_last.a1 = f32[] parameter(1)
  sum_and_last.b0 = s32[] parameter(2)
  sum_and_last.b1 = f32[] parameter(3)
  sum_and_last.s = s32[] add(sum_and_last.a0, sum_and_last.b0)
  ROOT sum_and_last.t = (s32[], f32[]) tuple(sum_and_last.s, sum_and_last.b1)
}
)";
  EXPECT_EQ(Eval("a = s32[3] constant({1, 1, 1})\n b = f32[3] constant({0, 0, 0})\n"
                 " i = s32[3,1] constant({{2}, {0}, {2}})\n"
                 " u = s32[3] constant({10, 20, 30})\n v = f32[3] constant({0.5, 1.5, 2.5})\n"
                 " ROOT r = (s32[3], f32[3]) scatter(a, b, i, u, v), update_window_dims={},"
                 " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
                 " to_apply=sum_and_last",
                 kCombiner),
            "({21, 1, 41}, {1.5, 0, 2.5})");
}

}  // namespace
}  // namespace mltune::ir
