// Tests of gather_simplifier, scatter_simplifier and simplify-sorts: the exact rewrite, that the
// module still verifies and computes the same values (indices are random small integers, so
// clamped and out-of-bounds cases are exercised), idempotence, and a corpus sweep per pass.
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

const ir::Instruction* Find(const ir::Module& m, Opcode op) {
  for (const ir::Instruction* i : m.entry()->instructions()) {
    if (i->opcode() == op) return i;
  }
  return nullptr;
}

std::vector<int64_t> Dims(const ir::Instruction* i) { return i->shape().dimensions(); }

// ---------------------------------------------------------------------------------------------
// gather_simplifier

TEST(GatherSimplifierTest, CanonicalizesRowGather) {
  Rewrite r = RunAndCheck("gather_simplifier", R"(
HloModule m
ENTRY e {
  op = f32[34,5] parameter(0)
  idx = s32[19,1] parameter(1)
  ROOT g = f32[19,5] gather(op, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* g = Find(*r.after, Opcode::kGather);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Dims(g), (std::vector<int64_t>{19, 1, 5}));
  EXPECT_TRUE(g->gather_dnums->collapsed_slice_dims.empty());
  EXPECT_EQ(g->gather_dnums->offset_dims, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kReshape);
}

TEST(GatherSimplifierTest, HandlesScalarIndexAndOffsetOrder) {
  Rewrite r = RunAndCheck("gather_simplifier", R"(
HloModule m
ENTRY e {
  op = f32[4,6,3] parameter(0)
  idx = s32[1] parameter(1)
  ROOT g = f32[4,6,2] gather(op, idx), offset_dims={0,1,2}, collapsed_slice_dims={}, start_index_map={2}, index_vector_dim=0, slice_sizes={4,6,2}, indices_are_sorted=true
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* g = Find(*r.after, Opcode::kGather);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Dims(g->operand(1)), (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(g->indices_are_sorted);
}

TEST(GatherSimplifierTest, TransposesOffsetDimensionsIntoPlace) {
  Rewrite r = RunAndCheck("gather_simplifier", R"(
HloModule m
ENTRY e {
  op = s32[5,10] parameter(0)
  idx = s32[3,2] parameter(1)
  ROOT g = s32[5,3,2] gather(op, idx), offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=2, slice_sizes={5,1}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* g = Find(*r.after, Opcode::kGather);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(Dims(g), (std::vector<int64_t>{6, 5, 1}));
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kTranspose);
}

TEST(GatherSimplifierTest, GatherOfScalarBecomesBroadcast) {
  Rewrite r = RunAndCheck("gather_simplifier", R"(
HloModule m
ENTRY e {
  op = f32[] parameter(0)
  idx = s32[7,0] parameter(1)
  ROOT g = f32[7] gather(op, idx), offset_dims={}, collapsed_slice_dims={}, start_index_map={}, index_vector_dim=1, slice_sizes={}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kBroadcast);
}

TEST(GatherSimplifierTest, LeavesSimplifiedGather) {
  Rewrite r = RunAndCheck("gather_simplifier", R"(
HloModule m
ENTRY e {
  op = f32[34,5] parameter(0)
  idx = s32[19,1] parameter(1)
  ROOT g = f32[19,1,5] gather(op, idx), offset_dims={1,2}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(GatherSimplifierTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("gather_simplifier");
}

// ---------------------------------------------------------------------------------------------
// scatter_simplifier

TEST(ScatterSimplifierTest, AddsWindowDimensionForInsertedDimension) {
  Rewrite r = RunAndCheck("scatter_simplifier", R"(
HloModule m
add_s32 {
  lhs = s32[] parameter(0)
  rhs = s32[] parameter(1)
  ROOT sum = s32[] add(lhs, rhs)
}
ENTRY e {
  op = s32[34] parameter(0)
  idx = s32[12,1] parameter(1)
  upd = s32[12] parameter(2)
  ROOT s = s32[34] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_s32
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* s = r.after->entry()->root();
  ASSERT_EQ(s->opcode(), Opcode::kScatter);
  EXPECT_EQ(Dims(s->operand(2)), (std::vector<int64_t>{12, 1}));
  EXPECT_EQ(s->scatter_dnums->update_window_dims, std::vector<int64_t>{1});
  EXPECT_TRUE(s->scatter_dnums->inserted_window_dims.empty());
}

TEST(ScatterSimplifierTest, FlattensScatterDimensions) {
  Rewrite r = RunAndCheck("scatter_simplifier", R"(
HloModule m
add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}
ENTRY e {
  op = f32[10,4] parameter(0)
  idx = s32[2,3,1] parameter(1)
  upd = f32[4,2,3] parameter(2)
  ROOT s = f32[10,4] scatter(op, idx, upd), update_window_dims={0}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=2, to_apply=add_f32
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* s = r.after->entry()->root();
  ASSERT_EQ(s->opcode(), Opcode::kScatter);
  EXPECT_EQ(Dims(s->operand(1)), (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(Dims(s->operand(2)), (std::vector<int64_t>{6, 1, 4}));
  EXPECT_EQ(s->scatter_dnums->update_window_dims, (std::vector<int64_t>{1, 2}));
}

TEST(ScatterSimplifierTest, HandlesVariadicScatterWithoutScatterDimensions) {
  Rewrite r = RunAndCheck("scatter_simplifier", R"(
HloModule m
pick {
  a0 = s32[] parameter(0)
  a1 = f32[] parameter(1)
  b0 = s32[] parameter(2)
  b1 = f32[] parameter(3)
  m0 = s32[] maximum(a0, b0)
  m1 = f32[] add(a1, b1)
  ROOT t = (s32[], f32[]) tuple(m0, m1)
}
ENTRY e {
  op0 = s32[6,3] parameter(0)
  op1 = f32[6,3] parameter(1)
  idx = s32[2] parameter(2)
  u0 = s32[3,3] parameter(3)
  u1 = f32[3,3] parameter(4)
  ROOT s = (s32[6,3], f32[6,3]) scatter(op0, op1, idx, u0, u1), update_window_dims={0,1}, inserted_window_dims={}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=0, to_apply=pick
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* s = Find(*r.after, Opcode::kScatter);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(Dims(s->operand(2)), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(Dims(s->operand(3)), (std::vector<int64_t>{1, 3, 3}));
}

TEST(ScatterSimplifierTest, ScalarScatterBecomesCombiner) {
  Rewrite r = RunAndCheck("scatter_simplifier", R"(
HloModule m
mul_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT prod = f32[] multiply(lhs, rhs)
}
ENTRY e {
  op = f32[] parameter(0)
  idx = s32[0] constant({})
  upd = f32[] parameter(1)
  ROOT s = f32[] scatter(op, idx, upd), update_window_dims={}, inserted_window_dims={}, scatter_dims_to_operand_dims={}, index_vector_dim=0, to_apply=mul_f32
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kMultiply);
}

TEST(ScatterSimplifierTest, LeavesSimplifiedScatter) {
  Rewrite r = RunAndCheck("scatter_simplifier", R"(
HloModule m
add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}
ENTRY e {
  op = f32[10,4] parameter(0)
  idx = s32[6,1] parameter(1)
  upd = f32[6,1,4] parameter(2)
  ROOT s = f32[10,4] scatter(op, idx, upd), update_window_dims={1,2}, inserted_window_dims={}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add_f32
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(ScatterSimplifierTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("scatter_simplifier");
}

// ---------------------------------------------------------------------------------------------
// simplify-sorts

TEST(SortSimplifierTest, RemovesUnusedOperand) {
  Rewrite r = RunAndCheck("simplify-sorts", R"(
HloModule m
less {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  p2 = s32[] parameter(2)
  p3 = s32[] parameter(3)
  ROOT lt = pred[] compare(p0, p1), direction=LT
}
ENTRY e {
  keys = f32[8] parameter(0)
  values = s32[8] parameter(1)
  s = (f32[8], s32[8]) sort(keys, values), dimensions={0}, to_apply=less
  ROOT k = f32[8] get-tuple-element(s), index=0
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* root = r.after->entry()->root();
  ASSERT_EQ(root->opcode(), Opcode::kSort);
  EXPECT_EQ(root->operand_count(), 1);
  EXPECT_EQ(root->to_apply()->parameter_count(), 2);
  EXPECT_EQ(r.after->computation_count(), 2);  // the old comparator is gone
}

TEST(SortSimplifierTest, KeepsOperandsReadByComparatorOrUsers) {
  Rewrite r = RunAndCheck("simplify-sorts", R"(
HloModule m
less {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  p2 = s32[] parameter(2)
  p3 = s32[] parameter(3)
  p4 = u32[] parameter(4)
  p5 = u32[] parameter(5)
  lt0 = pred[] compare(p0, p1), direction=LT
  eq0 = pred[] compare(p0, p1), direction=EQ
  lt1 = pred[] compare(p4, p5), direction=LT
  tie = pred[] and(eq0, lt1)
  ROOT r = pred[] or(lt0, tie)
}
ENTRY e {
  keys = f32[4,8] parameter(0)
  values = s32[4,8] parameter(1)
  ties = u32[4,8] parameter(2)
  s = (f32[4,8], s32[4,8], u32[4,8]) sort(keys, values, ties), dimensions={1}, is_stable=true, to_apply=less
  ROOT v = s32[4,8] get-tuple-element(s), index=1
}
)");
  ASSERT_NE(r.after, nullptr);
  // keys and ties order the sort, values are read: nothing to remove.
  EXPECT_FALSE(r.changed);
}

TEST(SortSimplifierTest, RemovesMiddleOperand) {
  Rewrite r = RunAndCheck("simplify-sorts", R"(
HloModule m
less {
  p0 = s32[] parameter(0)
  p1 = s32[] parameter(1)
  p2 = f32[] parameter(2)
  p3 = f32[] parameter(3)
  p4 = u32[] parameter(4)
  p5 = u32[] parameter(5)
  ROOT lt = pred[] compare(p0, p1), direction=LT
}
ENTRY e {
  keys = s32[8] parameter(0)
  a = f32[8] parameter(1)
  b = u32[8] parameter(2)
  s = (s32[8], f32[8], u32[8]) sort(keys, a, b), dimensions={0}, is_stable=true, to_apply=less
  k = s32[8] get-tuple-element(s), index=0
  bb = u32[8] get-tuple-element(s), index=2
  ROOT t = (s32[8], u32[8]) tuple(k, bb)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* sort = Find(*r.after, Opcode::kSort);
  ASSERT_NE(sort, nullptr);
  EXPECT_EQ(sort->operand_count(), 2);
  EXPECT_TRUE(sort->is_stable);
  EXPECT_EQ(sort->to_apply()->parameter(2)->shape().element_type(), ir::PrimitiveType::kU32);
}

TEST(SortSimplifierTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("simplify-sorts");
}

// ---------------------------------------------------------------------------------------------
// batched_gather_scatter_normalizer

TEST(BatchedGatherScatterNormalizerTest, TurnsGatherBatchingDimsIntoIotaIndices) {
  Rewrite r = RunAndCheck("batched_gather_scatter_normalizer", R"(
HloModule m
ENTRY e {
  op = f32[3,10,4] parameter(0)
  idx = s32[3,5] parameter(1)
  ROOT g = f32[3,5,4] gather(op, idx), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=2, operand_batching_dims={0}, start_indices_batching_dims={0}, slice_sizes={1,1,4}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* g = r.after->entry()->root();
  ASSERT_EQ(g->opcode(), Opcode::kGather);
  EXPECT_TRUE(g->gather_dnums->operand_batching_dims.empty());
  EXPECT_EQ(g->gather_dnums->collapsed_slice_dims, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(g->gather_dnums->start_index_map, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Dims(g->operand(1)), (std::vector<int64_t>{3, 5, 2}));
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kIota), 1);
}

TEST(BatchedGatherScatterNormalizerTest, TurnsScatterBatchingDimsIntoIotaIndices) {
  Rewrite r = RunAndCheck("batched_gather_scatter_normalizer", R"(
HloModule m
add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}
ENTRY e {
  op = f32[2,8,3] parameter(0)
  idx = s8[5,2,1] parameter(1)
  upd = f32[5,2,3] parameter(2)
  ROOT s = f32[2,8,3] scatter(op, idx, upd), update_window_dims={2}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=2, input_batching_dims={0}, scatter_indices_batching_dims={1}, to_apply=add_f32
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* s = r.after->entry()->root();
  ASSERT_EQ(s->opcode(), Opcode::kScatter);
  EXPECT_TRUE(s->scatter_dnums->input_batching_dims.empty());
  EXPECT_EQ(s->scatter_dnums->inserted_window_dims, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s->scatter_dnums->scatter_dims_to_operand_dims, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(Dims(s->operand(1)), (std::vector<int64_t>{5, 2, 2}));
}

TEST(BatchedGatherScatterNormalizerTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("batched_gather_scatter_normalizer");
}

}  // namespace
}  // namespace mltune::passes
