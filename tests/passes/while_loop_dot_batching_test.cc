// while-loop-dot-batching: a scan's per-step products with an invariant matrix move before the
// loop as one product over all steps; the module computes the same values (checked by the
// evaluator), and loops that do not qualify are left alone.
#include <string>

#include "gtest/gtest.h"
#include "ir/hlo_printer.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;
using testing::RunAndCheck;

// A scan over `steps` rows of xs [6,1,4]: h = tanh(<step product> + h), `n` iterations. `product`
// defines `d` (f32[1,3]) from the step row `row` (f32[1,4]) and the matrix `w`; `xs_next` is what
// the body passes on as xs.
std::string Scan(int n, const std::string& product, const std::string& xs_next = "xs") {
  return R"(
HloModule m
cond {
  p.c = (s32[], f32[1,3], f32[6,1,4], f32[4,3], f32[3,4]) parameter(0)
  i.c = s32[] get-tuple-element(p.c), index=0
  n.c = s32[] constant()" +
         std::to_string(n) + R"()
  ROOT lt.c = pred[] compare(i.c, n.c), direction=LT
}
body {
  p = (s32[], f32[1,3], f32[6,1,4], f32[4,3], f32[3,4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  h = f32[1,3] get-tuple-element(p), index=1
  xs = f32[6,1,4] get-tuple-element(p), index=2
  w = f32[4,3] get-tuple-element(p), index=3
  wt = f32[3,4] get-tuple-element(p), index=4
  zero = s32[] constant(0)
  slice = f32[1,1,4] dynamic-slice(xs, i, zero, zero), dynamic_slice_sizes={1,1,4}
  row = f32[1,4] reshape(slice)
)" + product +
         R"(
  sum = f32[1,3] add(d, h)
  h1 = f32[1,3] tanh(sum)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT t = (s32[], f32[1,3], f32[6,1,4], f32[4,3], f32[3,4]) tuple(i1, h1, )" +
         xs_next + R"(, w, wt)
}
ENTRY e {
  xs.e = f32[6,1,4] parameter(0)
  w.e = f32[4,3] parameter(1)
  wt.e = f32[3,4] parameter(2)
  h0 = f32[1,3] parameter(3)
  zero.e = s32[] constant(0)
  init = (s32[], f32[1,3], f32[6,1,4], f32[4,3], f32[3,4]) tuple(zero.e, h0, xs.e, w.e, wt.e)
  loop = (s32[], f32[1,3], f32[6,1,4], f32[4,3], f32[3,4]) while(init), condition=cond, body=body
  ROOT out = f32[1,3] get-tuple-element(loop), index=1
}
)";
}

const ir::Computation* Body(const ir::Module& m) {
  for (const ir::Computation* c : m.computations()) {
    for (const ir::Instruction* i : c->instructions()) {
      if (i->opcode() == Opcode::kWhile) return i->while_body();
    }
  }
  return nullptr;
}

TEST(WhileLoopDotBatchingTest, StepProductOnTheLeftMovesBeforeTheLoop) {
  Rewrite r = RunAndCheck(
      "while-loop-dot-batching",
      Scan(6, "  d = f32[1,3] dot(row, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}"));
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Computation* body = Body(*r.after);
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(CountOpcode(*body, Opcode::kDot), 0) << ir::PrintModule(*r.after);
  EXPECT_EQ(CountOpcode(*r.after->entry(), Opcode::kDot), 1) << ir::PrintModule(*r.after);
}

TEST(WhileLoopDotBatchingTest, StepProductOnTheRightMovesBeforeTheLoop) {
  // d = (wt . row^T)^T written as dot(wt, row) contracting wt's 4 with row's 4: f32[3,1].
  Rewrite r = RunAndCheck("while-loop-dot-batching", Scan(5, R"(
  dt = f32[3,1] dot(wt, row), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  d = f32[1,3] reshape(dt))"));
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*Body(*r.after), Opcode::kDot), 0) << ir::PrintModule(*r.after);
}

TEST(WhileLoopDotBatchingTest, LeavesLoopsThatDoNotQualify) {
  const std::string dot =
      "  d = f32[1,3] dot(row, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}";
  // The steps array changes inside the loop: the rows are not known before it.
  Rewrite changed_xs = RunAndCheck("while-loop-dot-batching", Scan(6, dot + R"(
  xs2 = f32[6,1,4] negate(xs))",
                                                                   "xs2"));
  ASSERT_NE(changed_xs.after, nullptr);
  EXPECT_FALSE(changed_xs.changed);
  // Two iterations of six rows: the product over all rows would be mostly wasted.
  Rewrite short_loop = RunAndCheck("while-loop-dot-batching", Scan(2, dot));
  ASSERT_NE(short_loop.after, nullptr);
  EXPECT_FALSE(short_loop.changed);
}

}  // namespace
}  // namespace mltune::passes
