// Shapes, literals, narrow floats and the graph mutators of the core IR.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/float_types.h"
#include "ir/ir.h"

namespace mltune::ir {
namespace {

TEST(ShapeTest, PrintsLikeXla) {
  Shape s(PrimitiveType::kF32, {2, 3});
  EXPECT_EQ(s.ToString(), "f32[2,3]{1,0}");
  EXPECT_EQ(s.ToString(false), "f32[2,3]");
  Shape dyn(PrimitiveType::kS32, {4, kUnboundedDim});
  dyn.set_dynamic_dimension(0, true);
  dyn.set_layout(std::nullopt);
  EXPECT_EQ(dyn.ToString(), "s32[<=4,?]");
  Shape t = Shape::Tuple({Shape::Scalar(PrimitiveType::kPred), Shape::Token()});
  EXPECT_EQ(t.ToString(), "(pred[], token[])");
  Layout tiled = DefaultLayout(2);
  tiled.tiles = {Tile{{8, 128}}, Tile{{2, 1}}};
  tiled.memory_space = 1;
  EXPECT_EQ(LayoutToString(tiled), "{1,0:T(8,128)(2,1)S(1)}");
}

TEST(ShapeTest, SizesSaturateInsteadOfOverflowing) {
  Shape big(PrimitiveType::kF64, {int64_t{1} << 40, int64_t{1} << 40});
  EXPECT_EQ(big.ElementCount(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(big.ByteSize(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Shape(PrimitiveType::kBF16, {3, 5}).ByteSize(), 30);
  EXPECT_EQ(Shape(PrimitiveType::kS4, {7}).ByteSize(), 7);  // one byte per element in literals
}

TEST(ShapeTest, EqualityIgnoresLayoutOnlyWhenAsked) {
  Shape a(PrimitiveType::kF32, {2, 3});
  Shape b = a;
  b.mutable_layout()->minor_to_major = {0, 1};
  EXPECT_FALSE(a == b);
  EXPECT_TRUE(a.Compatible(b));
}

// Reshapes that only add or drop unit dimensions keep the others in order; any other reshape
// (a split, a merge, a reorder of extents) does not.
TEST(ShapeTest, ReshapeMovesOnlyUnitDims) {
  EXPECT_TRUE(ReshapeMovesOnlyUnitDims({8, 1, 16}, {8, 16}));
  EXPECT_TRUE(ReshapeMovesOnlyUnitDims({1, 8, 16, 1}, {8, 1, 16}));
  EXPECT_TRUE(ReshapeMovesOnlyUnitDims({1}, {}));
  EXPECT_FALSE(ReshapeMovesOnlyUnitDims({8, 16}, {16, 8}));
  EXPECT_FALSE(ReshapeMovesOnlyUnitDims({128}, {8, 16}));
  EXPECT_FALSE(ReshapeMovesOnlyUnitDims({2, 1, 4}, {8}));
}

TEST(LiteralTest, RefusesHugeShapes) {
  auto l = Literal::Create(Shape(PrimitiveType::kF32, {99999999999}));
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(LiteralTest, IntegerSettersWrapAndFloatSettersSaturate) {
  auto l = *Literal::Create(Shape(PrimitiveType::kS8, {3}));
  l.SetFromInt64(0, 130);  // wraps like a two's complement truncation
  EXPECT_EQ(l.GetAsInt64(0), -126);
  l.SetFromDouble(1, 1e9);  // float -> int converts saturate
  EXPECT_EQ(l.GetAsInt64(1), 127);
  l.SetFromDouble(2, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(l.GetAsInt64(2), 0);
  auto s4 = *Literal::Create(Shape(PrimitiveType::kS4, {2}));
  s4.SetFromInt64(0, 9);
  EXPECT_EQ(s4.GetAsInt64(0), -7);
  auto u64 = *Literal::Create(Shape::Scalar(PrimitiveType::kU64));
  u64.SetFromUint64(0, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(u64.GetAsUint64(0), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(u64.ToString(), "18446744073709551615");
}

TEST(LiteralTest, PrintsLikeXla) {
  auto m = *Literal::Create(Shape(PrimitiveType::kF32, {2, 2}));
  m.SetFromDouble(0, 1);
  m.SetFromDouble(1, 0.5);
  m.SetFromDouble(2, -std::numeric_limits<double>::infinity());
  m.SetFromDouble(3, std::numeric_limits<double>::quiet_NaN());
  EXPECT_EQ(m.ToString(), "{ {1, 0.5}, {-inf, nan} }");
  EXPECT_EQ(Literal::Scalar(PrimitiveType::kF32, 1e-5).ToString(), "1e-05");
  EXPECT_EQ(Literal::Scalar(PrimitiveType::kPred, true).ToString(), "true");
  auto c = *Literal::Create(Shape::Scalar(PrimitiveType::kC64));
  c.SetFromComplex(0, {1.5, -2});
  EXPECT_EQ(c.ToString(), "(1.5, -2)");
  Literal t = Literal::MakeTuple({Literal::Scalar(PrimitiveType::kS32, 3),
                                  Literal::Scalar(PrimitiveType::kF64, 0.25)});
  EXPECT_EQ(t.ToString(), "(3, 0.25)");
}

TEST(FloatTypesTest, HalfRoundsToNearestEven) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3c00);  // tie goes to even
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3c02);  // tie goes to even (up)
  EXPECT_EQ(FloatToHalf(5.9604645e-08f), 0x0001);      // smallest subnormal
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite half survives the round trip
    ASSERT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << h;
  }
}

TEST(FloatTypesTest, BF16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBF16(1.0f), 0x3f80);
  EXPECT_EQ(BF16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(FloatToBF16(1.0f + 1.0f / 256), 0x3f80);  // tie to even
  EXPECT_EQ(FloatToBF16(1.0f + 3.0f / 256), 0x3f82);
}

TEST(FloatTypesTest, F8FormatsRoundTripAndSaturate) {
  EXPECT_EQ(F8ToDouble(PrimitiveType::kF8E4M3FN, 0x7e), 448.0);  // largest e4m3fn
  EXPECT_TRUE(std::isnan(F8ToDouble(PrimitiveType::kF8E4M3FN, 0x7f)));
  EXPECT_EQ(F8ToDouble(PrimitiveType::kF8E5M2, 0x7b), 57344.0);
  EXPECT_TRUE(std::isinf(F8ToDouble(PrimitiveType::kF8E5M2, 0x7c)));
  EXPECT_TRUE(std::isnan(F8ToDouble(PrimitiveType::kF8E4M3FNUZ, 0x80)));
  for (PrimitiveType t : {PrimitiveType::kF8E5M2, PrimitiveType::kF8E4M3FN,
                          PrimitiveType::kF8E4M3B11FNUZ, PrimitiveType::kF8E5M2FNUZ,
                          PrimitiveType::kF8E4M3FNUZ}) {
    for (int code = 0; code < 256; ++code) {
      const double v = F8ToDouble(t, static_cast<uint8_t>(code));
      if (!std::isfinite(v) || (v == 0 && code != 0)) continue;  // skip NaN/inf and -0
      EXPECT_EQ(DoubleToF8(t, v), code) << PrimitiveTypeName(t) << " " << v;
    }
  }
  EXPECT_EQ(DoubleToF8(PrimitiveType::kF8E4M3FN, 1e6), 0x7f);  // no inf: overflow is NaN
}

std::unique_ptr<Module> SmallModule() {
  auto m = std::make_unique<Module>("m");
  auto c = std::make_unique<Computation>("entry");
  auto p = std::make_unique<Instruction>(Opcode::kParameter, Shape(PrimitiveType::kF32, {2}), "p");
  Instruction* param = c->AddInstruction(std::move(p));
  auto neg = std::make_unique<Instruction>(Opcode::kNegate, param->shape(), "neg");
  neg->AppendOperand(param);
  Instruction* n = c->AddInstruction(std::move(neg));
  auto dead = std::make_unique<Instruction>(Opcode::kAbs, param->shape(), "dead");
  dead->AppendOperand(param);
  c->AddInstruction(std::move(dead));
  auto add = std::make_unique<Instruction>(Opcode::kAdd, param->shape(), "add");
  add->AppendOperand(n);
  add->AppendOperand(n);
  c->set_root(c->AddInstruction(std::move(add)));
  m->set_entry(m->AddComputation(std::move(c)));
  return m;
}

TEST(GraphTest, UsersStayConsistentUnderReplacement) {
  auto m = SmallModule();
  Computation* c = m->entry();
  Instruction* p = c->parameter(0);
  Instruction* neg = c->FindInstruction("neg");
  Instruction* add = c->root();
  ASSERT_EQ(neg->users().size(), 1u);  // add uses it twice but is listed once
  neg->ReplaceAllUsesWith(p);
  EXPECT_EQ(add->operand(0), p);
  EXPECT_EQ(add->operand(1), p);
  EXPECT_TRUE(neg->users().empty());
  EXPECT_EQ(c->RemoveDeadInstructions(), 2);  // neg and dead
  EXPECT_EQ(c->instruction_count(), 2);
  EXPECT_FALSE(c->RemoveInstruction(add).ok());  // the root cannot go
}

TEST(GraphTest, PostOrderPutsOperandsFirst) {
  auto m = SmallModule();
  std::vector<Instruction*> order = m->entry()->MakePostOrder();
  ASSERT_EQ(order.size(), 4u);
  auto pos = [&](std::string_view name) {
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i]->name() == name) return i;
    }
    return order.size();
  };
  EXPECT_LT(pos("p"), pos("neg"));
  EXPECT_LT(pos("neg"), pos("add"));
}

TEST(GraphTest, CloneIsStructurallyEqualAndIndependent) {
  auto m = SmallModule();
  auto copy = m->Clone();
  std::string why;
  EXPECT_TRUE(StructurallyEqual(*m, *copy, &why)) << why;
  EXPECT_EQ(Fingerprint(*m), Fingerprint(*copy));
  copy->entry()->FindInstruction("neg")->metadata = "{op_name=\"x\"}";
  EXPECT_EQ(Fingerprint(*m), Fingerprint(*copy));
  copy->entry()->root()->ReplaceOperand(1, copy->entry()->parameter(0));
  EXPECT_FALSE(StructurallyEqual(*m, *copy));
  EXPECT_EQ(m->entry()->root()->operand(1)->name(), "neg");  // the original is untouched
}

}  // namespace
}  // namespace mltune::ir

namespace mltune::ir {
namespace {

TEST(LiteralTest, NanPayloadsSurvivePrintAndParse) {
  auto l = *Literal::Create(Shape(PrimitiveType::kF32, {3}));
  l.Set<uint32_t>(0, 0x7fc00000u);  // the plain quiet NaN
  l.Set<uint32_t>(1, 0x7fc00001u);  // quiet NaN with a payload
  l.Set<uint32_t>(2, 0xff800001u);  // negative signalling NaN
  EXPECT_EQ(l.ToString(), "{nan, nan(0x400001), -nan(0x1)}");
  auto m = ParseHloText("HloModule m\nENTRY e {\n  ROOT c = f32[3] constant(" + l.ToString() +
                        ")\n}\n");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE((*m)->entry()->root()->literal->BitwiseEqual(l));
}

}  // namespace
}  // namespace mltune::ir
