// algsimp: each rewrite on a small module (exact result asserted, equivalence by evaluation and
// idempotence checked by RunAndCheck), the rewrites it must not make, and a corpus sweep.
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

// Runs algsimp on `body` (an entry computation's instructions) and returns the rewrite.
Rewrite Simplify(const std::string& body, const std::string& extra_computations = "") {
  return RunAndCheck("algsimp",
                     "HloModule m\n" + extra_computations + "\nENTRY e {\n" + body + "\n}\n");
}

const ir::Instruction* Root(const Rewrite& r) { return r.after->entry()->root(); }

int64_t Count(const Rewrite& r) { return r.after->entry()->instruction_count(); }

// --- Arithmetic identities ---

TEST(AlgsimpTest, AddZeroIsOperand) {
  Rewrite r = Simplify(R"(
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  b = f32[4] broadcast(z), dimensions={}
  ROOT a = f32[4] add(b, p))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kParameter);
  EXPECT_EQ(Count(r), 1);
}

TEST(AlgsimpTest, SubtractZeroMultiplyOneDivideOne) {
  Rewrite r = Simplify(R"(
  p = f32[2,3] parameter(0)
  z = f32[] constant(0)
  one = f32[] constant(1)
  zb = f32[2,3] broadcast(z), dimensions={}
  ob = f32[2,3] broadcast(one), dimensions={}
  s = f32[2,3] subtract(p, zb)
  m = f32[2,3] multiply(ob, s)
  ROOT d = f32[2,3] divide(m, ob))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kParameter);
}

TEST(AlgsimpTest, MultiplyByZeroFoldsForIntegersOnly) {
  Rewrite ints = Simplify(R"(
  p = s32[4] parameter(0)
  z = s32[] constant(0)
  b = s32[4] broadcast(z), dimensions={}
  ROOT m = s32[4] multiply(p, b))");
  ASSERT_NE(ints.after, nullptr);
  EXPECT_EQ(Root(ints)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(CountOpcode(*ints.after, Opcode::kMultiply), 0);

  // NaN * 0 is NaN: kept for floats.
  Rewrite floats = Simplify(R"(
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  b = f32[4] broadcast(z), dimensions={}
  ROOT m = f32[4] multiply(p, b))");
  ASSERT_NE(floats.after, nullptr);
  EXPECT_FALSE(floats.changed);
}

TEST(AlgsimpTest, DivideByPowerOfTwoBecomesMultiply) {
  Rewrite r = Simplify(R"(
  p = f32[4] parameter(0)
  c = f32[] constant(4)
  b = f32[4] broadcast(c), dimensions={}
  ROOT d = f32[4] divide(p, b))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kMultiply);
  EXPECT_DOUBLE_EQ(Root(r)->operand(1)->operand(0)->literal->GetAsDouble(0), 0.25);

  // 1/3 is not exact: left alone.
  Rewrite three = Simplify(R"(
  p = f32[4] parameter(0)
  c = f32[] constant(3)
  b = f32[4] broadcast(c), dimensions={}
  ROOT d = f32[4] divide(p, b))");
  ASSERT_NE(three.after, nullptr);
  EXPECT_FALSE(three.changed);
}

TEST(AlgsimpTest, MaxMinOfSameOperandAndOfExtremes) {
  Rewrite r = Simplify(R"(
  p = f32[4] parameter(0)
  q = s32[4] parameter(1)
  ninf = f32[] constant(-inf)
  nb = f32[4] broadcast(ninf), dimensions={}
  mx = f32[4] maximum(nb, p)
  mn = f32[4] minimum(mx, mx)
  big = s32[] constant(2147483647)
  bb = s32[4] broadcast(big), dimensions={}
  mi = s32[4] minimum(q, bb)
  ROOT t = (f32[4], s32[4]) tuple(mn, mi))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kParameter);
  EXPECT_EQ(Root(r)->operand(1)->opcode(), Opcode::kParameter);
}

TEST(AlgsimpTest, LogicalIdentities) {
  Rewrite r = Simplify(R"(
  p = pred[4] parameter(0)
  q = u8[4] parameter(1)
  t = pred[] constant(true)
  f = pred[] constant(false)
  tb = pred[4] broadcast(t), dimensions={}
  fb = pred[4] broadcast(f), dimensions={}
  a1 = pred[4] and(p, tb)
  o1 = pred[4] or(fb, a1)
  x1 = pred[4] xor(o1, fb)
  a2 = pred[4] and(x1, fb)
  ones = u8[] constant(255)
  ob = u8[4] broadcast(ones), dimensions={}
  qa = u8[4] and(q, ob)
  qo = u8[4] or(qa, qa)
  ROOT r = (pred[4], pred[4], u8[4]) tuple(x1, a2, qo))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kParameter);
  EXPECT_EQ(Root(r)->operand(1)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(Root(r)->operand(2)->opcode(), Opcode::kParameter);
}

TEST(AlgsimpTest, DoubleNegationNotAndAbs) {
  Rewrite r = Simplify(R"(
  p = s32[4] parameter(0)
  q = pred[4] parameter(1)
  n1 = s32[4] negate(p)
  n2 = s32[4] negate(n1)
  a1 = s32[4] abs(n2)
  a2 = s32[4] abs(a1)
  t1 = pred[4] not(q)
  t2 = pred[4] not(t1)
  ROOT r = (s32[4], pred[4]) tuple(a2, t2))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kNegate), 0);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kAbs), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kNot), 0);
  EXPECT_EQ(Root(r)->operand(0)->operand(0)->opcode(), Opcode::kParameter);
}

TEST(AlgsimpTest, PowerByZeroOneTwo) {
  Rewrite r = Simplify(R"(
  p = f32[4] parameter(0)
  c0 = f32[] constant(0)
  c1 = f32[] constant(1)
  c2 = f32[] constant(2)
  b0 = f32[4] broadcast(c0), dimensions={}
  b1 = f32[4] broadcast(c1), dimensions={}
  b2 = f32[4] broadcast(c2), dimensions={}
  e0 = f32[4] power(p, b0)
  e1 = f32[4] power(p, b1)
  e2 = f32[4] power(p, b2)
  ROOT t = (f32[4], f32[4], f32[4]) tuple(e0, e1, e2))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kPower), 0);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(Root(r)->operand(1)->opcode(), Opcode::kParameter);
  EXPECT_EQ(Root(r)->operand(2)->opcode(), Opcode::kMultiply);
}

TEST(AlgsimpTest, CompareSameOperandIntegersOnly) {
  Rewrite r = Simplify(R"(
  p = s32[4] parameter(0)
  eq = pred[4] compare(p, p), direction=GE
  ne = pred[4] compare(p, p), direction=LT
  ROOT t = (pred[4], pred[4]) tuple(eq, ne))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kCompare), 0);
  EXPECT_TRUE(Root(r)->operand(0)->operand(0)->literal->GetAsBool(0));
  EXPECT_FALSE(Root(r)->operand(1)->operand(0)->literal->GetAsBool(0));

  // x == x is false for NaN.
  Rewrite f = Simplify(R"(
  p = f32[4] parameter(0)
  ROOT eq = pred[4] compare(p, p), direction=EQ)");
  ASSERT_NE(f.after, nullptr);
  EXPECT_FALSE(f.changed);
}

TEST(AlgsimpTest, SelectRewrites) {
  Rewrite r = Simplify(R"(
  p = pred[4] parameter(0)
  a = f32[4] parameter(1)
  b = f32[4] parameter(2)
  t = pred[] constant(true)
  tb = pred[4] broadcast(t), dimensions={}
  s1 = f32[4] select(tb, a, b)
  s2 = f32[4] select(p, b, b)
  np = pred[4] not(p)
  s3 = f32[4] select(np, a, b)
  f = pred[] constant(false)
  fb = pred[4] broadcast(f), dimensions={}
  s4 = pred[4] select(p, tb, fb)
  ROOT r = (f32[4], f32[4], f32[4], pred[4]) tuple(s1, s2, s3, s4))");
  ASSERT_NE(r.after, nullptr);
  const ir::Instruction* root = Root(r);
  EXPECT_EQ(root->operand(0)->name(), "a");
  EXPECT_EQ(root->operand(1)->name(), "b");
  EXPECT_EQ(root->operand(2)->opcode(), Opcode::kSelect);
  EXPECT_EQ(root->operand(2)->operand(0)->name(), "p");
  EXPECT_EQ(root->operand(2)->operand(1)->name(), "b");
  EXPECT_EQ(root->operand(3)->name(), "p");
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kNot), 0);
}

TEST(AlgsimpTest, ConstantsGoRightAndSubtractingAConstantAdds) {
  Rewrite r = Simplify(R"(
  p = f32[3] parameter(0)
  c = f32[3] constant({1, 2, 3})
  a = f32[3] add(c, p)
  s = f32[3] subtract(p, c)
  ROOT t = (f32[3], f32[3]) tuple(a, s))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->operand(0)->operand(0)->name(), "p");
  EXPECT_EQ(Root(r)->operand(1)->opcode(), Opcode::kAdd);
  EXPECT_EQ(Root(r)->operand(1)->operand(1)->literal->GetAsDouble(2), -3);
}

TEST(AlgsimpTest, ReassociatesIntegerConstants) {
  Rewrite r = Simplify(R"(
  p = s32[4] parameter(0)
  c1 = s32[] constant(3)
  c2 = s32[] constant(5)
  b1 = s32[4] broadcast(c1), dimensions={}
  b2 = s32[4] broadcast(c2), dimensions={}
  s = s32[4] subtract(p, b1)
  ROOT a = s32[4] add(s, b2))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kAdd);
  EXPECT_EQ(Root(r)->operand(0)->name(), "p");
  EXPECT_EQ(Root(r)->operand(1)->operand(0)->literal->GetAsInt64(0), 2);

  // Float addition is not associative: left alone.
  Rewrite f = Simplify(R"(
  p = f32[4] parameter(0)
  c1 = f32[] constant(3)
  c2 = f32[] constant(5)
  b1 = f32[4] broadcast(c1), dimensions={}
  b2 = f32[4] broadcast(c2), dimensions={}
  s = f32[4] add(p, b1)
  ROOT a = f32[4] add(s, b2))");
  ASSERT_NE(f.after, nullptr);
  EXPECT_FALSE(f.changed);
}

// --- Constants and converts ---

TEST(AlgsimpTest, SplatConstantBecomesBroadcastAndIotaConstantBecomesIota) {
  Rewrite r = Simplify(R"(
  c = f32[2,3] constant({{7, 7, 7}, {7, 7, 7}})
  i = s32[5] constant({0, 1, 2, 3, 4})
  ROOT t = (f32[2,3], s32[5]) tuple(c, i))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kBroadcast);
  EXPECT_TRUE(Root(r)->operand(0)->operand(0)->shape().IsScalar());
  EXPECT_EQ(Root(r)->operand(1)->opcode(), Opcode::kIota);
}

TEST(AlgsimpTest, ConvertRewrites) {
  Rewrite r = Simplify(R"(
  p = bf16[4] parameter(0)
  q = s8[4] parameter(1)
  same = bf16[4] convert(p)
  up = f32[4] convert(same)
  back = bf16[4] convert(up)
  w = s32[4] convert(q)
  f = f32[4] convert(w)
  ROOT t = (bf16[4], f32[4]) tuple(back, f))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kParameter);
  // s8 -> s32 is exact, so s8 -> s32 -> f32 is s8 -> f32.
  EXPECT_EQ(Root(r)->operand(1)->opcode(), Opcode::kConvert);
  EXPECT_EQ(Root(r)->operand(1)->operand(0)->name(), "q");

  // f32 -> bf16 rounds: the pair is not a no-op.
  Rewrite lossy = Simplify(R"(
  p = f32[4] parameter(0)
  down = bf16[4] convert(p)
  ROOT up = f32[4] convert(down))");
  ASSERT_NE(lossy.after, nullptr);
  EXPECT_FALSE(lossy.changed);
}

TEST(AlgsimpTest, BitcastConvertPairs) {
  Rewrite r = Simplify(R"(
  p = f32[4] parameter(0)
  b = s32[4] bitcast-convert(p)
  c = u32[4] bitcast-convert(b)
  ROOT d = f32[4] bitcast-convert(c))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kParameter);
}

// --- Broadcast sinking ---

TEST(AlgsimpTest, SinksBroadcastsBelowElementwiseOps) {
  Rewrite r = Simplify(R"(
  p = f32[3] parameter(0)
  q = f32[3] parameter(1)
  s = f32[] parameter(2)
  bp = f32[4,3] broadcast(p), dimensions={1}
  bq = f32[4,3] broadcast(q), dimensions={1}
  bs = f32[4,3] broadcast(s), dimensions={}
  a = f32[4,3] add(bp, bq)
  ROOT m = f32[4,3] multiply(a, bs))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kMultiply);
  EXPECT_EQ(Root(r)->operand(0)->shape().dimensions(), std::vector<int64_t>({3}));
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kBroadcast), 2);  // the result and s to [3]
}

TEST(AlgsimpTest, ScalarBroadcastsCombineIntoOneScalarOp) {
  Rewrite r = Simplify(R"(
  s = f32[] parameter(0)
  t = f32[] parameter(1)
  bs = f32[8] broadcast(s), dimensions={}
  bt = f32[8] broadcast(t), dimensions={}
  ROOT c = pred[8] compare(bs, bt), direction=LT)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kBroadcast);
  EXPECT_TRUE(Root(r)->operand(0)->shape().IsScalar());
  EXPECT_EQ(Root(r)->operand(0)->opcode(), Opcode::kCompare);
}

TEST(AlgsimpTest, DifferentBroadcastsAreNotSunk) {
  Rewrite r = Simplify(R"(
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  bp = f32[4,4] broadcast(p), dimensions={0}
  bq = f32[4,4] broadcast(q), dimensions={1}
  ROOT a = f32[4,4] add(bp, bq))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

// --- Broadcast, reshape, transpose ---

TEST(AlgsimpTest, BroadcastFolding) {
  Rewrite r = Simplify(R"(
  p = f32[3] parameter(0)
  same = f32[3] broadcast(p), dimensions={0}
  b1 = f32[2,3] broadcast(same), dimensions={1}
  b2 = f32[5,2,3] broadcast(b1), dimensions={1,2}
  r1 = f32[1,3] reshape(p)
  b3 = f32[4,1,3] broadcast(r1), dimensions={1,2}
  b4 = f32[3,1] broadcast(p), dimensions={0}
  ROOT t = (f32[5,2,3], f32[4,1,3], f32[3,1]) tuple(b2, b3, b4))");
  ASSERT_NE(r.after, nullptr);
  const ir::Instruction* root = Root(r);
  EXPECT_EQ(root->operand(0)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(root->operand(0)->operand(0)->name(), "p");
  EXPECT_EQ(root->operand(0)->dimensions, std::vector<int64_t>({2}));
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(root->operand(1)->operand(0)->name(), "p");
  EXPECT_EQ(root->operand(1)->dimensions, std::vector<int64_t>({2}));
  // Adding a 1-sized dimension is a reshape.
  EXPECT_EQ(root->operand(2)->opcode(), Opcode::kReshape);
}

TEST(AlgsimpTest, ReshapeFolding) {
  Rewrite r = Simplify(R"(
  p = f32[2,3] parameter(0)
  s = f32[] parameter(1)
  nop = f32[2,3] reshape(p)
  r1 = f32[6] reshape(nop)
  r2 = f32[3,2] reshape(r1)
  back = f32[2,3] reshape(r1)
  bs = f32[2,3] broadcast(s), dimensions={}
  rs = f32[6,1] reshape(bs)
  q = f32[5] parameter(2)
  bq = f32[5,6] broadcast(q), dimensions={0}
  rq = f32[5,2,3] reshape(bq)
  ROOT t = (f32[3,2], f32[2,3], f32[6,1], f32[5,2,3]) tuple(r2, back, rs, rq))");
  ASSERT_NE(r.after, nullptr);
  const ir::Instruction* root = Root(r);
  EXPECT_EQ(root->operand(0)->opcode(), Opcode::kReshape);
  EXPECT_EQ(root->operand(0)->operand(0)->name(), "p");
  EXPECT_EQ(root->operand(1)->name(), "p");
  EXPECT_EQ(root->operand(2)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(root->operand(2)->operand(0)->name(), "s");
  EXPECT_EQ(root->operand(3)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(root->operand(3)->operand(0)->name(), "q");
  EXPECT_EQ(root->operand(3)->dimensions, std::vector<int64_t>({0}));
}

TEST(AlgsimpTest, ReshapeThatSplitsABroadcastDimensionIsKept) {
  Rewrite r = Simplify(R"(
  q = f32[6] parameter(0)
  bq = f32[6,5] broadcast(q), dimensions={0}
  ROOT rq = f32[2,3,5] reshape(bq))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(AlgsimpTest, TransposeFolding) {
  Rewrite r = Simplify(R"(
  p = f32[2,3,4] parameter(0)
  id = f32[2,3,4] transpose(p), dimensions={0,1,2}
  t1 = f32[3,4,2] transpose(id), dimensions={1,2,0}
  t2 = f32[2,3,4] transpose(t1), dimensions={2,0,1}
  t3 = f32[4,3,2] transpose(t1), dimensions={1,0,2}
  q = f32[3,1] parameter(1)
  deg = f32[1,3] transpose(q), dimensions={1,0}
  s = f32[5] parameter(2)
  bs = f32[5,7] broadcast(s), dimensions={0}
  tb = f32[7,5] transpose(bs), dimensions={1,0}
  io = s32[3,4] iota(), iota_dimension=1
  ti = s32[4,3] transpose(io), dimensions={1,0}
  ROOT t = (f32[2,3,4], f32[4,3,2], f32[1,3], f32[7,5], s32[4,3]) tuple(t2, t3, deg, tb, ti))");
  ASSERT_NE(r.after, nullptr);
  const ir::Instruction* root = Root(r);
  EXPECT_EQ(root->operand(0)->name(), "p");
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kTranspose);
  EXPECT_EQ(root->operand(1)->operand(0)->name(), "p");
  EXPECT_EQ(root->operand(1)->dimensions, std::vector<int64_t>({2, 1, 0}));
  EXPECT_EQ(root->operand(2)->opcode(), Opcode::kReshape);
  EXPECT_EQ(root->operand(3)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(root->operand(3)->dimensions, std::vector<int64_t>({1}));
  EXPECT_EQ(root->operand(4)->opcode(), Opcode::kIota);
  EXPECT_EQ(root->operand(4)->iota_dimension, 0);
}

// --- Slice, concatenate, pad ---

TEST(AlgsimpTest, SliceFolding) {
  Rewrite r = Simplify(R"(
  p = f32[10,4] parameter(0)
  full = f32[10,4] slice(p), slice={[0:10], [0:4]}
  s1 = f32[8,4] slice(full), slice={[1:9], [0:4]}
  s2 = f32[3,2] slice(s1), slice={[2:8:2], [1:3]}
  q = f32[3] parameter(1)
  r = f32[5] parameter(2)
  c = f32[8] concatenate(q, r), dimensions={0}
  sc = f32[2] slice(c), slice={[4:8:2]}
  x = f32[] parameter(3)
  bx = f32[6,6] broadcast(x), dimensions={}
  sb = f32[2,3] slice(bx), slice={[0:2], [1:4]}
  ROOT t = (f32[3,2], f32[2], f32[2,3]) tuple(s2, sc, sb))");
  ASSERT_NE(r.after, nullptr);
  const ir::Instruction* root = Root(r);
  EXPECT_EQ(root->operand(0)->opcode(), Opcode::kSlice);
  EXPECT_EQ(root->operand(0)->operand(0)->name(), "p");
  EXPECT_EQ(root->operand(0)->slice[0], (ir::SliceDim{3, 8, 2}));
  EXPECT_EQ(root->operand(0)->slice[1], (ir::SliceDim{1, 3, 1}));
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kSlice);
  EXPECT_EQ(root->operand(1)->operand(0)->name(), "r");
  EXPECT_EQ(root->operand(1)->slice[0], (ir::SliceDim{1, 4, 2}));
  EXPECT_EQ(root->operand(2)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(root->operand(2)->operand(0)->name(), "x");
}

TEST(AlgsimpTest, SliceOfPadAndOfBroadcast) {
  Rewrite r = Simplify(R"(
  p = f32[4,3] parameter(0)
  z = f32[] constant(0)
  pad = f32[8,5] pad(p, z), padding=2_2x1_1
  inner = f32[2,3] slice(pad), slice={[3:5], [1:4]}
  edge = f32[2,5] slice(pad), slice={[0:2], [0:5]}
  q = f32[3] parameter(1)
  bq = f32[4,3] broadcast(q), dimensions={1}
  sq = f32[2,2] slice(bq), slice={[1:3], [0:2]}
  ROOT t = (f32[2,3], f32[2,5], f32[2,2]) tuple(inner, edge, sq))");
  ASSERT_NE(r.after, nullptr);
  const ir::Instruction* root = Root(r);
  EXPECT_EQ(root->operand(0)->opcode(), Opcode::kSlice);
  EXPECT_EQ(root->operand(0)->operand(0)->name(), "p");
  EXPECT_EQ(root->operand(0)->slice[0], (ir::SliceDim{1, 3, 1}));
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(root->operand(1)->operand(0)->name(), "z");
  EXPECT_EQ(root->operand(2)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(root->operand(2)->operand(0)->opcode(), Opcode::kSlice);
  EXPECT_EQ(root->operand(2)->operand(0)->operand(0)->name(), "q");
}

TEST(AlgsimpTest, ConcatenateRewrites) {
  Rewrite r = Simplify(R"(
  p = f32[6,2] parameter(0)
  q = f32[0,2] parameter(1)
  a = f32[2,2] slice(p), slice={[0:2], [0:2]}
  b = f32[3,2] slice(p), slice={[2:5], [0:2]}
  c = f32[5,2] concatenate(a, q, b), dimensions={0}
  one = f32[5,2] concatenate(c), dimensions={0}
  ROOT n = f32[5,2] negate(one))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConcatenate), 0);
  const ir::Instruction* s = Root(r)->operand(0);
  EXPECT_EQ(s->opcode(), Opcode::kSlice);
  EXPECT_EQ(s->operand(0)->name(), "p");
  EXPECT_EQ(s->slice[0], (ir::SliceDim{0, 5, 1}));
}

TEST(AlgsimpTest, ConcatenateWithBroadcastEndsIsPad) {
  Rewrite r = Simplify(R"(
  p = f32[3,2] parameter(0)
  z = f32[] constant(0)
  lo = f32[3,1] broadcast(z), dimensions={}
  hi = f32[3,4] broadcast(z), dimensions={}
  ROOT c = f32[3,7] concatenate(lo, p, hi), dimensions={1})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kPad);
  EXPECT_EQ(Root(r)->padding[1].low, 1);
  EXPECT_EQ(Root(r)->padding[1].high, 4);
  EXPECT_EQ(Count(r), 3);
}

TEST(AlgsimpTest, PadRewrites) {
  Rewrite r = Simplify(R"(
  p = f32[4,5] parameter(0)
  z = f32[] constant(0)
  nop = f32[4,5] pad(p, z), padding=0_0x0_0
  neg = f32[3,6] pad(nop, z), padding=-1_0x2_-1
  bz = f32[2,2] broadcast(z), dimensions={}
  grow = f32[4,6] pad(bz, z), padding=1_1x2_2
  ROOT t = (f32[3,6], f32[4,6]) tuple(neg, grow))");
  ASSERT_NE(r.after, nullptr);
  const ir::Instruction* root = Root(r);
  EXPECT_EQ(root->operand(0)->opcode(), Opcode::kSlice);
  EXPECT_EQ(root->operand(0)->operand(0)->opcode(), Opcode::kPad);
  EXPECT_EQ(root->operand(0)->operand(0)->operand(0)->name(), "p");
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kBroadcast);
}

// --- Dynamic slices, reverse, iota ---

TEST(AlgsimpTest, DynamicSliceWithConstantIndicesIsClampedSlice) {
  Rewrite r = Simplify(R"(
  p = f32[8,4] parameter(0)
  i = s32[] constant(7)
  j = s32[] constant(-3)
  ROOT d = f32[3,2] dynamic-slice(p, i, j), dynamic_slice_sizes={3,2})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kSlice);
  EXPECT_EQ(Root(r)->slice[0], (ir::SliceDim{5, 8, 1}));
  EXPECT_EQ(Root(r)->slice[1], (ir::SliceDim{0, 2, 1}));
}

TEST(AlgsimpTest, DynamicSliceAndUpdateIdentities) {
  Rewrite r = Simplify(R"(
  p = f32[8] parameter(0)
  u = f32[3] parameter(1)
  i = s32[] parameter(2)
  all = f32[8] dynamic-slice(p, i), dynamic_slice_sizes={8}
  dus = f32[8] dynamic-update-slice(all, u, i)
  back = f32[3] dynamic-slice(dus, i), dynamic_slice_sizes={3}
  w = f32[8] parameter(3)
  whole = f32[8] dynamic-update-slice(p, w, i)
  ds = f32[3] dynamic-slice(p, i), dynamic_slice_sizes={3}
  same = f32[8] dynamic-update-slice(p, ds, i)
  ROOT t = (f32[3], f32[8], f32[8]) tuple(back, whole, same))");
  ASSERT_NE(r.after, nullptr);
  const ir::Instruction* root = Root(r);
  EXPECT_EQ(root->operand(0)->name(), "u");
  EXPECT_EQ(root->operand(1)->name(), "w");
  EXPECT_EQ(root->operand(2)->name(), "p");
}

TEST(AlgsimpTest, ReverseAndIota) {
  Rewrite r = Simplify(R"(
  p = f32[1,4] parameter(0)
  deg = f32[1,4] reverse(p), dimensions={0}
  r1 = f32[1,4] reverse(deg), dimensions={1}
  r2 = f32[1,4] reverse(r1), dimensions={1}
  io = s32[1,4] iota(), iota_dimension=0
  ROOT t = (f32[1,4], s32[1,4]) tuple(r2, io))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->operand(0)->name(), "p");
  EXPECT_EQ(Root(r)->operand(1)->opcode(), Opcode::kBroadcast);
}

// --- Reduce, dot, tuples, copies ---

TEST(AlgsimpTest, ReduceOfDegenerateDimensionsWithIdentityInitIsReshape) {
  const std::string add = R"(
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
})";
  Rewrite r = Simplify(R"(
  p = f32[4,1,3] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4,3] reduce(p, z), dimensions={1}, to_apply=add)",
                       add);
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kReshape);

  // An init value that is not the reducer's identity is added in: kept.
  Rewrite kept = Simplify(R"(
  p = f32[4,1,3] parameter(0)
  five = f32[] constant(5)
  ROOT r = f32[4,3] reduce(p, five), dimensions={1}, to_apply=add)",
                          add);
  ASSERT_NE(kept.after, nullptr);
  EXPECT_FALSE(kept.changed);

  // Reducing nothing gives the init value.
  Rewrite empty = Simplify(R"(
  p = f32[4,0] parameter(0)
  five = f32[] constant(5)
  ROOT r = f32[4] reduce(p, five), dimensions={1}, to_apply=add)",
                           add);
  ASSERT_NE(empty.after, nullptr);
  EXPECT_EQ(Root(empty)->opcode(), Opcode::kBroadcast);
}

TEST(AlgsimpTest, DotWithEmptyContractionIsZeros) {
  Rewrite r = Simplify(R"(
  p = f32[3,0] parameter(0)
  q = f32[0,4] parameter(1)
  ROOT d = f32[3,4] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(Root(r)->opcode(), Opcode::kBroadcast);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kDot), 0);
}

TEST(AlgsimpTest, TupleElementAndCopies) {
  Rewrite r = Simplify(R"(
  p = f32[2,3]{1,0} parameter(0)
  q = s32[] parameter(1)
  t = (f32[2,3]{1,0}, s32[]) tuple(p, q)
  g = f32[2,3]{1,0} get-tuple-element(t), index=0
  c1 = f32[2,3]{0,1} copy(g)
  c2 = f32[2,3]{1,0} copy(c1)
  ROOT n = f32[2,3]{1,0} negate(c2))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kGetTupleElement), 0);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kCopy), 0);
  EXPECT_EQ(Root(r)->operand(0)->name(), "p");
}

// --- Whole module behaviour ---

TEST(AlgsimpTest, NothingToDoReportsNoChange) {
  Rewrite r = Simplify(R"(
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  ROOT a = f32[4] add(p, q))");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(AlgsimpTest, SimplifiesCalledComputationsToo) {
  Rewrite r = Simplify(R"(
  p = f32[4] parameter(0)
  ROOT c = f32[4] call(p), to_apply=callee)",
                       R"(
callee {
  x = f32[4] parameter(0)
  n = f32[4] negate(x)
  ROOT nn = f32[4] negate(n)
})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kNegate), 0);
}

TEST(AlgsimpTest, SideEffectsAndControlEdgesAreLeftAlone) {
  Rewrite r = Simplify(R"(
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  bz = f32[4] broadcast(z), dimensions={}
  a = f32[4] add(p, bz)
  ROOT n = f32[4] negate(p), control-predecessors={a})");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(AlgsimpCorpusTest, VerifiesAndPreservesResults) {
  if (testing::LoadCorpus().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  const testing::SweepResult r = testing::SweepCorpus("algsimp");
  EXPECT_GT(r.changed, 0);
  EXPECT_LT(r.instructions_after, r.instructions_before);
}

}  // namespace
}  // namespace mltune::passes
