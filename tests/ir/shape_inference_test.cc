// Shape inference per opcode, on instructions built through the IR API.
#include "ir/shape_inference.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/computation.h"
#include "ir/instruction.h"
#include "ir/literal.h"

namespace mltune::ir {
namespace {

// Test shapes written as XLA prints them: "f32[2,<=3]{1,0}", "(s32[], pred[])", "token[]".
Shape ParseTestShape(std::string_view& s) {
  while (!s.empty() && s[0] == ' ') s.remove_prefix(1);
  if (s[0] == '(') {
    s.remove_prefix(1);
    std::vector<Shape> elems;
    while (s[0] != ')') {
      elems.push_back(ParseTestShape(s));
      while (s[0] == ',' || s[0] == ' ') s.remove_prefix(1);
    }
    s.remove_prefix(1);
    return Shape::Tuple(std::move(elems));
  }
  const size_t open = s.find('[');
  const std::string type_name(s.substr(0, open));
  s.remove_prefix(open + 1);
  if (type_name == "token") {
    s.remove_prefix(1);
    return Shape::Token();
  }
  std::vector<int64_t> dims;
  std::vector<bool> dynamic;
  while (s[0] != ']') {
    bool dyn = false;
    if (s.substr(0, 2) == "<=") {
      dyn = true;
      s.remove_prefix(2);
    }
    int64_t v = 0;
    while (s[0] >= '0' && s[0] <= '9') {
      v = v * 10 + (s[0] - '0');
      s.remove_prefix(1);
    }
    dims.push_back(v);
    dynamic.push_back(dyn);
    if (s[0] == ',') s.remove_prefix(1);
  }
  s.remove_prefix(1);
  Shape shape(*ParsePrimitiveType(type_name), dims);
  for (size_t i = 0; i < dynamic.size(); ++i) {
    if (dynamic[i]) shape.set_dynamic_dimension(static_cast<int64_t>(i), true);
  }
  if (!s.empty() && s[0] == '{') {
    Layout layout;
    s.remove_prefix(1);
    while (s[0] != '}') {
      int64_t v = 0;
      while (s[0] >= '0' && s[0] <= '9') {
        v = v * 10 + (s[0] - '0');
        s.remove_prefix(1);
      }
      layout.minor_to_major.push_back(v);
      if (s[0] == ',') s.remove_prefix(1);
    }
    s.remove_prefix(1);
    shape.set_layout(layout);
  }
  return shape;
}

Shape S(std::string_view text) { return ParseTestShape(text); }

class ShapeInferenceTest : public ::testing::Test {
 protected:
  Instruction* Make(Opcode op, std::string_view shape, std::vector<Instruction*> operands = {},
                    std::string name = "") {
    if (name.empty()) name = absl::StrCat(std::string(OpcodeName(op)), ".", pool_.size());
    pool_.push_back(std::make_unique<Instruction>(op, S(shape), std::move(name)));
    Instruction* instr = pool_.back().get();
    for (Instruction* o : operands) instr->AppendOperand(o);
    return instr;
  }
  Instruction* P(std::string_view shape) { return Make(Opcode::kParameter, shape); }

  // A computation with the given parameter shapes whose root is `root_op` over the parameters
  // (or, with kConstant, a constant of `root_shape`: only its signature matters).
  Computation* Comp(std::vector<std::string_view> params, std::string_view root_shape,
                    Opcode root_op = Opcode::kConstant) {
    comps_.push_back(std::make_unique<Computation>(absl::StrCat("comp.", comps_.size())));
    Computation* c = comps_.back().get();
    std::vector<Instruction*> ps;
    for (size_t i = 0; i < params.size(); ++i) {
      auto p = std::make_unique<Instruction>(Opcode::kParameter, S(params[i]),
                                             absl::StrCat(c->name(), ".p", i));
      p->parameter_number = static_cast<int64_t>(i);
      ps.push_back(c->AddInstruction(std::move(p)));
    }
    auto root = std::make_unique<Instruction>(root_op, S(root_shape), c->name() + ".root");
    if (root_op != Opcode::kConstant) {
      for (Instruction* p : ps) root->AppendOperand(p);
    }
    if (root_op == Opcode::kCompare) root->comparison_direction = ComparisonDirection::kLt;
    c->set_root(c->AddInstruction(std::move(root)));
    return c;
  }
  Computation* Adder(std::string_view scalar = "f32[]") {
    return Comp({scalar, scalar}, scalar, Opcode::kAdd);
  }

  static std::string Infer(const Instruction& instr) {
    absl::StatusOr<std::optional<Shape>> r = InferShape(instr);
    if (!r.ok()) return absl::StrCat("error: ", std::string(r.status().message()));
    if (!r->has_value()) return "nullopt";
    return (*r)->ToString(/*print_layout=*/false);
  }

  std::vector<std::unique_ptr<Instruction>> pool_;
  std::vector<std::unique_ptr<Computation>> comps_;
};

// The inference must fail with a message that starts with the instruction's name.
#define EXPECT_INFER_ERROR(instr, substring)                                                     \
  do {                                                                                           \
    const Instruction* instr_ = (instr);                                                         \
    const std::string got_ = Infer(*instr_);                                                     \
    EXPECT_EQ(got_.rfind("error: " + instr_->name() + ": ", 0), 0u) << got_;                     \
    EXPECT_NE(got_.find(substring), std::string::npos) << got_ << "\nexpected: " << (substring); \
  } while (0)

TEST_F(ShapeInferenceTest, ElementwiseUnary) {
  Instruction* f = P("f32[2,3]");
  Instruction* s = P("s32[4]");
  Instruction* c = P("c64[2]");
  EXPECT_EQ(Infer(*Make(Opcode::kExp, "f32[2,3]", {f})), "f32[2,3]");
  EXPECT_EQ(Infer(*Make(Opcode::kAbs, "f32[2]", {c})), "f32[2]");
  EXPECT_EQ(Infer(*Make(Opcode::kAbs, "s32[4]", {s})), "s32[4]");
  EXPECT_EQ(Infer(*Make(Opcode::kReal, "f32[2]", {c})), "f32[2]");
  EXPECT_EQ(Infer(*Make(Opcode::kImag, "f64[2]", {P("c128[2]")})), "f64[2]");
  EXPECT_EQ(Infer(*Make(Opcode::kIsFinite, "pred[2,3]", {f})), "pred[2,3]");
  EXPECT_EQ(Infer(*Make(Opcode::kNot, "pred[3]", {P("pred[3]")})), "pred[3]");
  EXPECT_EQ(Infer(*Make(Opcode::kNot, "s32[4]", {s})), "s32[4]");
  EXPECT_EQ(Infer(*Make(Opcode::kPopulationCount, "s32[4]", {s})), "s32[4]");
  EXPECT_EQ(Infer(*Make(Opcode::kClz, "s32[4]", {s})), "s32[4]");
  EXPECT_EQ(Infer(*Make(Opcode::kRoundNearestEven, "f32[2,3]", {f})), "f32[2,3]");
  EXPECT_EQ(Infer(*Make(Opcode::kCopy, "(f32[2,3], s32[4])",
                        {Make(Opcode::kTuple, "(f32[2,3], s32[4])", {f, s})})),
            "(f32[2,3], s32[4])");
  EXPECT_INFER_ERROR(Make(Opcode::kExp, "s32[4]", {s}), "floating-point or complex");
  EXPECT_INFER_ERROR(Make(Opcode::kFloor, "s32[4]", {s}), "floating-point");
  EXPECT_INFER_ERROR(Make(Opcode::kNot, "f32[2,3]", {f}), "pred or integer");
  EXPECT_INFER_ERROR(Make(Opcode::kPopulationCount, "f32[2,3]", {f}), "integer");
  EXPECT_INFER_ERROR(Make(Opcode::kSign, "u32[2]", {P("u32[2]")}), "signed or complex");
  EXPECT_INFER_ERROR(Make(Opcode::kIsFinite, "pred[4]", {s}), "floating-point");
  EXPECT_INFER_ERROR(Make(Opcode::kNegate, "f32[2,3]", {}), "expects 1 operand but has 0");
  EXPECT_INFER_ERROR(Make(Opcode::kNegate, "f32[2,3]", {f, f}), "expects 1 operand but has 2");
  EXPECT_INFER_ERROR(
      Make(Opcode::kNegate, "(f32[])", {Make(Opcode::kTuple, "(f32[])", {P("f32[]")})}),
      "must be an array");
}

TEST_F(ShapeInferenceTest, ReducePrecision) {
  Instruction* rp = Make(Opcode::kReducePrecision, "f32[4]", {P("f32[4]")});
  rp->exponent_bits = 5;
  rp->mantissa_bits = 10;
  EXPECT_EQ(Infer(*rp), "f32[4]");
  rp->exponent_bits = 0;
  EXPECT_INFER_ERROR(rp, "exponent_bits");
}

TEST_F(ShapeInferenceTest, ConvertTakesTheDeclaredType) {
  Instruction* f = P("f32[2,<=3]");
  EXPECT_EQ(Infer(*Make(Opcode::kConvert, "s8[2,<=3]", {f})), "s8[2,<=3]");
  EXPECT_EQ(Infer(*Make(Opcode::kConvert, "c64[2,<=3]", {f})), "c64[2,<=3]");
  EXPECT_INFER_ERROR(Make(Opcode::kConvert, "f32[2]", {P("c64[2]")}), "complex");
}

TEST_F(ShapeInferenceTest, BitcastConvert) {
  EXPECT_EQ(Infer(*Make(Opcode::kBitcastConvert, "u32[2,3]", {P("f32[2,3]")})), "u32[2,3]");
  // Narrower result: a new minor dimension holds the pieces of each element.
  EXPECT_EQ(Infer(*Make(Opcode::kBitcastConvert, "u8[2,4]", {P("f32[2]")})), "u8[2,4]");
  EXPECT_EQ(Infer(*Make(Opcode::kBitcastConvert, "bf16[3,2]", {P("s32[3]")})), "bf16[3,2]");
  // Wider result: the operand's minor dimension must hold exactly one result element.
  EXPECT_EQ(Infer(*Make(Opcode::kBitcastConvert, "f32[2]", {P("u8[2,4]")})), "f32[2]");
  EXPECT_EQ(Infer(*Make(Opcode::kBitcastConvert, "u64[]", {P("u32[2]")})), "u64[]");
  EXPECT_INFER_ERROR(Make(Opcode::kBitcastConvert, "f32[2]", {P("u8[2,3]")}),
                     "needs a minor dimension of size 4");
  EXPECT_INFER_ERROR(Make(Opcode::kBitcastConvert, "c64[2]", {P("f64[2]")}), "complex and real");
}

TEST_F(ShapeInferenceTest, ElementwiseBinary) {
  Instruction* a = P("f32[2,3]");
  Instruction* b = P("f32[3,2]");
  Instruction* add = Make(Opcode::kAdd, "f32[2,3]", {a, a}, "add.3");
  EXPECT_EQ(Infer(*add), "f32[2,3]");
  Instruction* bad = Make(Opcode::kAdd, "f32[2,3]", {a, b}, "add.3");
  EXPECT_EQ(Infer(*bad), "error: add.3: operand shapes f32[2,3] and f32[3,2] differ");
  EXPECT_INFER_ERROR(Make(Opcode::kMultiply, "f32[2,3]", {a, P("f16[2,3]")}), "differ");
  EXPECT_INFER_ERROR(Make(Opcode::kAdd, "f32[2,3]", {a}), "expects 2 operands but has 1");

  Instruction* cmp = Make(Opcode::kCompare, "pred[2,3]", {a, a});
  EXPECT_INFER_ERROR(cmp, "direction");
  cmp->comparison_direction = ComparisonDirection::kGe;
  EXPECT_EQ(Infer(*cmp), "pred[2,3]");
  cmp->comparison_type = ComparisonType::kFloatTotalOrder;
  EXPECT_EQ(Infer(*cmp), "pred[2,3]");
  cmp->comparison_type = ComparisonType::kSigned;
  EXPECT_INFER_ERROR(cmp, "comparison type");

  Instruction* i = P("s32[4]");
  EXPECT_EQ(Infer(*Make(Opcode::kShiftLeft, "s32[4]", {i, i})), "s32[4]");
  EXPECT_EQ(Infer(*Make(Opcode::kShiftRightLogical, "s32[4]", {i, i})), "s32[4]");
  EXPECT_INFER_ERROR(Make(Opcode::kShiftRightArithmetic, "f32[2,3]", {a, a}), "integer");
  EXPECT_EQ(Infer(*Make(Opcode::kAnd, "s32[4]", {i, i})), "s32[4]");
  Instruction* p = P("pred[4]");
  EXPECT_EQ(Infer(*Make(Opcode::kOr, "pred[4]", {p, p})), "pred[4]");
  EXPECT_INFER_ERROR(Make(Opcode::kXor, "f32[2,3]", {a, a}), "pred or integer");
  EXPECT_INFER_ERROR(Make(Opcode::kSubtract, "pred[4]", {p, p}), "pred");
  EXPECT_EQ(Infer(*Make(Opcode::kComplex, "c64[2,3]", {a, a})), "c64[2,3]");
  EXPECT_INFER_ERROR(Make(Opcode::kComplex, "c64[4]", {i, i}), "f32 or f64");
  EXPECT_EQ(Infer(*Make(Opcode::kAtan2, "f32[2,3]", {a, a})), "f32[2,3]");
  EXPECT_INFER_ERROR(Make(Opcode::kAtan2, "s32[4]", {i, i}), "floating-point");
  EXPECT_EQ(Infer(*Make(Opcode::kRemainder, "s32[4]", {i, i})), "s32[4]");
  EXPECT_EQ(Infer(*Make(Opcode::kPower, "f32[2,3]", {a, a})), "f32[2,3]");
}

TEST_F(ShapeInferenceTest, DynamicDimensionsPropagate) {
  Instruction* a = P("f32[<=4,3]");
  Instruction* b = P("f32[4,3]");
  EXPECT_EQ(Infer(*Make(Opcode::kAdd, "f32[<=4,3]", {b, a})), "f32[<=4,3]");
  Instruction* t = Make(Opcode::kTranspose, "f32[3,<=4]", {a});
  t->dimensions = {1, 0};
  EXPECT_EQ(Infer(*t), "f32[3,<=4]");
  Instruction* sds = Make(Opcode::kSetDimensionSize, "f32[4,<=3]", {b, P("s32[]")});
  sds->dimensions = {1};
  EXPECT_EQ(Infer(*sds), "f32[4,<=3]");
  Instruction* gds = Make(Opcode::kGetDimensionSize, "s32[]", {a});
  gds->dimensions = {0};
  EXPECT_EQ(Infer(*gds), "s32[]");
  gds->dimensions = {2};
  EXPECT_INFER_ERROR(gds, "out of range");
}

TEST_F(ShapeInferenceTest, SelectAndClamp) {
  Instruction* a = P("f32[2,3]");
  EXPECT_EQ(Infer(*Make(Opcode::kSelect, "f32[2,3]", {P("pred[2,3]"), a, a})), "f32[2,3]");
  EXPECT_EQ(Infer(*Make(Opcode::kSelect, "f32[2,3]", {P("pred[]"), a, a})), "f32[2,3]");
  EXPECT_INFER_ERROR(Make(Opcode::kSelect, "f32[2,3]", {P("pred[3,2]"), a, a}), "predicate shape");
  EXPECT_INFER_ERROR(Make(Opcode::kSelect, "f32[2,3]", {P("s32[2,3]"), a, a}), "must be pred");
  EXPECT_INFER_ERROR(Make(Opcode::kSelect, "f32[2,3]", {P("pred[]"), a, P("f32[2]")}),
                     "different shapes");
  Instruction* lo = P("f32[]");
  EXPECT_EQ(Infer(*Make(Opcode::kClamp, "f32[2,3]", {lo, a, lo})), "f32[2,3]");
  EXPECT_EQ(Infer(*Make(Opcode::kClamp, "f32[2,3]", {a, a, lo})), "f32[2,3]");
  EXPECT_INFER_ERROR(Make(Opcode::kClamp, "f32[2,3]", {P("f32[3]"), a, lo}), "clamp min");
  EXPECT_INFER_ERROR(Make(Opcode::kClamp, "f32[2,3]", {lo, a, P("s32[]")}), "clamp max");
}

TEST_F(ShapeInferenceTest, Broadcast) {
  Instruction* v = P("f32[3]");
  Instruction* b = Make(Opcode::kBroadcast, "f32[2,3,4]", {v}, "broadcast.1");
  b->dimensions = {1};
  EXPECT_EQ(Infer(*b), "f32[2,3,4]");
  b->dimensions = {2};
  EXPECT_INFER_ERROR(b, "operand dimension 0 of size 3 to result dimension 2 of size 4");
  b->dimensions = {3};
  EXPECT_INFER_ERROR(b, "out of range");
  b->dimensions = {};
  EXPECT_INFER_ERROR(b, "one entry per operand dimension");
  Instruction* m = Make(Opcode::kBroadcast, "f32[3,3]", {P("f32[3,3]")});
  m->dimensions = {0, 0};
  EXPECT_INFER_ERROR(m, "repeat");
  Instruction* s = Make(Opcode::kBroadcast, "f32[5,7]", {P("f32[]")});
  EXPECT_EQ(Infer(*s), "f32[5,7]");
  Instruction* t = Make(Opcode::kBroadcast, "s32[5,7]", {P("f32[]")});
  EXPECT_EQ(Infer(*t), "f32[5,7]");  // element type comes from the operand
}

TEST_F(ShapeInferenceTest, ReshapeTransposeReverse) {
  Instruction* a = P("f32[2,3,4]");
  EXPECT_EQ(Infer(*Make(Opcode::kReshape, "f32[6,4]", {a})), "f32[6,4]");
  EXPECT_EQ(Infer(*Make(Opcode::kReshape, "f32[24]", {a})), "f32[24]");
  EXPECT_INFER_ERROR(Make(Opcode::kReshape, "f32[5,4]", {a}), "element count");
  Instruction* t = Make(Opcode::kTranspose, "f32[4,2,3]", {a});
  t->dimensions = {2, 0, 1};
  EXPECT_EQ(Infer(*t), "f32[4,2,3]");
  t->dimensions = {2, 0, 0};
  EXPECT_INFER_ERROR(t, "not a permutation");
  Instruction* r = Make(Opcode::kReverse, "f32[2,3,4]", {a});
  r->dimensions = {0, 2};
  EXPECT_EQ(Infer(*r), "f32[2,3,4]");
  r->dimensions = {3};
  EXPECT_INFER_ERROR(r, "reverse dimensions");
}

TEST_F(ShapeInferenceTest, Slice) {
  Instruction* s = Make(Opcode::kSlice, "f32[3,2]", {P("f32[10,4]")});
  s->slice = {{1, 10, 3}, {0, 4, 2}};
  EXPECT_EQ(Infer(*s), "f32[3,2]");
  s->slice = {{0, 11, 1}, {0, 4, 1}};
  EXPECT_INFER_ERROR(s, "out of bounds");
  s->slice = {{5, 4, 1}, {0, 4, 1}};
  EXPECT_INFER_ERROR(s, "out of bounds");
  s->slice = {{0, 4, 0}, {0, 4, 1}};
  EXPECT_INFER_ERROR(s, "stride");
  s->slice = {{0, 4, 1}};
  EXPECT_INFER_ERROR(s, "rank 2");
}

TEST_F(ShapeInferenceTest, DynamicSliceAndUpdate) {
  Instruction* a = P("f32[8,6]");
  Instruction* i = P("s32[]");
  Instruction* ds = Make(Opcode::kDynamicSlice, "f32[2,6]", {a, i, i});
  ds->dynamic_slice_sizes = {2, 6};
  EXPECT_EQ(Infer(*ds), "f32[2,6]");
  ds->dynamic_slice_sizes = {2, 7};
  EXPECT_INFER_ERROR(ds, "out of range");
  ds->dynamic_slice_sizes = {2, 6};
  Instruction* bad_index = Make(Opcode::kDynamicSlice, "f32[2,6]", {a, i, P("f32[]")});
  bad_index->dynamic_slice_sizes = {2, 6};
  EXPECT_INFER_ERROR(bad_index, "integer scalar");
  Instruction* mixed = Make(Opcode::kDynamicSlice, "f32[2,6]", {a, i, P("s64[]")});
  mixed->dynamic_slice_sizes = {2, 6};
  EXPECT_INFER_ERROR(mixed, "different types");
  Instruction* few = Make(Opcode::kDynamicSlice, "f32[2,6]", {a, i});
  few->dynamic_slice_sizes = {2, 6};
  EXPECT_INFER_ERROR(few, "needs 2 index operands");
  // Legacy form: one rank-1 index vector.
  Instruction* legacy = Make(Opcode::kDynamicSlice, "f32[2,6]", {a, P("s32[2]")});
  legacy->dynamic_slice_sizes = {2, 6};
  EXPECT_EQ(Infer(*legacy), "f32[2,6]");

  Instruction* u = P("f32[2,6]");
  EXPECT_EQ(Infer(*Make(Opcode::kDynamicUpdateSlice, "f32[8,6]", {a, u, i, i})), "f32[8,6]");
  EXPECT_INFER_ERROR(Make(Opcode::kDynamicUpdateSlice, "f32[8,6]", {a, P("f32[2,7]"), i, i}),
                     "larger than operand");
  EXPECT_INFER_ERROR(Make(Opcode::kDynamicUpdateSlice, "f32[8,6]", {a, P("s32[2,6]"), i, i}),
                     "does not match operand");
}

TEST_F(ShapeInferenceTest, Concatenate) {
  Instruction* c = Make(Opcode::kConcatenate, "f32[2,7]", {P("f32[2,3]"), P("f32[2,4]")});
  c->dimensions = {1};
  EXPECT_EQ(Infer(*c), "f32[2,7]");
  Instruction* bad = Make(Opcode::kConcatenate, "f32[5,3]", {P("f32[2,3]"), P("f32[3,4]")});
  bad->dimensions = {0};
  EXPECT_INFER_ERROR(bad, "in dimension 1");
  bad->dimensions = {2};
  EXPECT_INFER_ERROR(bad, "out of range");
}

TEST_F(ShapeInferenceTest, PadWithNegativeAndInteriorPadding) {
  Instruction* p = Make(Opcode::kPad, "f32[8,2]", {P("f32[4,3]"), P("f32[]")});
  // 4 + (-1) + 2 + 3*1 = 8 and 3 + 0 + (-1) + 0 = 2.
  p->padding = {{-1, 2, 1}, {0, -1, 0}};
  EXPECT_EQ(Infer(*p), "f32[8,2]");
  p->padding = {{-5, 0, 0}, {0, 0, 0}};
  EXPECT_INFER_ERROR(p, "negative result size");
  p->padding = {{0, 0, -1}, {0, 0, 0}};
  EXPECT_INFER_ERROR(p, "negative interior");
  Instruction* v = Make(Opcode::kPad, "f32[4,3]", {P("f32[4,3]"), P("f32[1]")});
  v->padding = {{0, 0, 0}, {0, 0, 0}};
  EXPECT_INFER_ERROR(v, "scalar");
}

TEST_F(ShapeInferenceTest, Iota) {
  Instruction* i = Make(Opcode::kIota, "s32[4,5]");
  i->iota_dimension = 1;
  EXPECT_EQ(Infer(*i), "s32[4,5]");
  i->iota_dimension = 2;
  EXPECT_INFER_ERROR(i, "iota_dimension");
  EXPECT_INFER_ERROR(Make(Opcode::kIota, "s32[]"), "rank >= 1");
}

TEST_F(ShapeInferenceTest, Reduce) {
  Instruction* r = Make(Opcode::kReduce, "f32[2]", {P("f32[2,3]"), P("f32[]")});
  r->dimensions = {1};
  r->mutable_called_computations().push_back(Adder());
  EXPECT_EQ(Infer(*r), "f32[2]");
  r->dimensions = {1, 1};
  EXPECT_INFER_ERROR(r, "reduce dimensions");
  r->dimensions = {2};
  EXPECT_INFER_ERROR(r, "reduce dimensions");
  r->dimensions = {0, 1};
  EXPECT_EQ(Infer(*r), "f32[]");

  // Variadic: (f32, s32) argmax-style reducer.
  Instruction* v = Make(Opcode::kReduce, "(f32[4], s32[4])",
                        {P("f32[4,5]"), P("s32[4,5]"), P("f32[]"), P("s32[]")});
  v->dimensions = {1};
  v->mutable_called_computations().push_back(
      Comp({"f32[]", "s32[]", "f32[]", "s32[]"}, "(f32[], s32[])"));
  EXPECT_EQ(Infer(*v), "(f32[4], s32[4])");

  Instruction* wrong = Make(Opcode::kReduce, "f32[2]", {P("f32[2,3]"), P("f32[]")});
  wrong->dimensions = {1};
  wrong->mutable_called_computations().push_back(Comp({"f32[]", "f32[]", "f32[]"}, "f32[]"));
  EXPECT_INFER_ERROR(wrong, "must take 2 parameters but takes 3");
  wrong->mutable_called_computations()[0] = Comp({"s32[]", "s32[]"}, "s32[]");
  EXPECT_INFER_ERROR(wrong, "init value 0");
  wrong->mutable_called_computations()[0] = Comp({"f32[]", "f32[]"}, "f32[2]");
  EXPECT_INFER_ERROR(wrong, "scalars");
  wrong->mutable_called_computations().clear();
  EXPECT_INFER_ERROR(wrong, "expects 1 called computation but has 0");
  EXPECT_INFER_ERROR(Make(Opcode::kReduce, "f32[2]", {P("f32[2,3]")}), "even number");
}

TEST_F(ShapeInferenceTest, ReduceWindow) {
  Instruction* r = Make(Opcode::kReduceWindow, "f32[2,2]", {P("f32[4,6]"), P("f32[]")});
  r->mutable_called_computations().push_back(Adder());
  Window w;
  w.dims = {{2, 2, 0, 0, 1, 1, false}, {3, 3, 0, 0, 1, 1, false}};
  r->window = w;
  EXPECT_EQ(Infer(*r), "f32[2,2]");
  // Padding, base and window dilation: dim 0: padded (4-1)*2+1 + 1 + 1 = 9, window (2-1)*2+1 = 3,
  // stride 1 -> 7. Dim 1: 6 + 2 = 8, window 3, stride 2 -> 3.
  w.dims = {{2, 1, 1, 1, 2, 2, false}, {3, 2, 1, 1, 1, 1, false}};
  r->window = w;
  EXPECT_EQ(Infer(*r), "f32[7,3]");
  w.dims.pop_back();
  r->window = w;
  EXPECT_INFER_ERROR(r, "window has 1 dimensions but the input has rank 2");
}

TEST_F(ShapeInferenceTest, SelectAndScatter) {
  Instruction* s =
      Make(Opcode::kSelectAndScatter, "f32[4,4]", {P("f32[4,4]"), P("f32[2,2]"), P("f32[]")});
  s->mutable_called_computations().push_back(Comp({"f32[]", "f32[]"}, "pred[]", Opcode::kCompare));
  s->mutable_called_computations().push_back(Adder());
  Window w;
  w.dims = {{2, 2, 0, 0, 1, 1, false}, {2, 2, 0, 0, 1, 1, false}};
  s->window = w;
  EXPECT_EQ(Infer(*s), "f32[4,4]");
  s->ReplaceOperand(1, P("f32[3,2]"));
  EXPECT_INFER_ERROR(s, "source f32[3,2] does not match");
}

TEST_F(ShapeInferenceTest, Dot) {
  Instruction* d = Make(Opcode::kDot, "f32[2,5]", {P("f32[2,4]"), P("f32[4,5]")}, "dot.5");
  DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {1};
  dn.rhs_contracting_dimensions = {0};
  d->dot_dnums = dn;
  EXPECT_EQ(Infer(*d), "f32[2,5]");

  Instruction* bad = Make(Opcode::kDot, "f32[2,5]", {P("f32[2,4]"), P("f32[5,5]")}, "dot.5");
  bad->dot_dnums = dn;
  EXPECT_EQ(Infer(*bad),
            "error: dot.5: lhs contracting dimension 1 has size 4 but rhs contracting dimension 0 "
            "has size 5");

  // Batch dimensions come first, then lhs free, then rhs free dimensions.
  Instruction* b = Make(Opcode::kDot, "f32[7,3,2,5]", {P("f32[3,4,7,2]"), P("f32[7,5,4]")});
  DotDimensionNumbers bn;
  bn.lhs_batch_dimensions = {2};
  bn.rhs_batch_dimensions = {0};
  bn.lhs_contracting_dimensions = {1};
  bn.rhs_contracting_dimensions = {2};
  b->dot_dnums = bn;
  EXPECT_EQ(Infer(*b), "f32[7,3,2,5]");
  bn.rhs_batch_dimensions = {1};
  b->dot_dnums = bn;
  EXPECT_INFER_ERROR(b, "batch dimension");
  bn.rhs_batch_dimensions = {2};
  b->dot_dnums = bn;
  EXPECT_INFER_ERROR(b, "repeat");

  // The declared type acts as preferred_element_type.
  Instruction* mixed = Make(Opcode::kDot, "f32[2,5]", {P("bf16[2,4]"), P("bf16[4,5]")});
  mixed->dot_dnums = dn;
  EXPECT_EQ(Infer(*mixed), "f32[2,5]");
  Instruction* i8 = Make(Opcode::kDot, "s32[2,5]", {P("s8[2,4]"), P("s8[4,5]")});
  i8->dot_dnums = dn;
  EXPECT_EQ(Infer(*i8), "s32[2,5]");
  Instruction* narrow = Make(Opcode::kDot, "s8[2,5]", {P("s32[2,4]"), P("s32[4,5]")});
  narrow->dot_dnums = dn;
  EXPECT_INFER_ERROR(narrow, "narrower");
  // Outer product: no dimension numbers at all.
  Instruction* outer = Make(Opcode::kDot, "f32[3,4]", {P("f32[3]"), P("f32[4]")});
  EXPECT_EQ(Infer(*outer), "f32[3,4]");
}

TEST_F(ShapeInferenceTest, Convolution) {
  auto conv = [&](std::string_view lhs, std::string_view rhs, std::string_view labels,
                  std::vector<WindowDim> window) {
    Instruction* c = Make(Opcode::kConvolution, "f32[1,1,1,1]", {P(lhs), P(rhs)}, "conv.1");
    c->conv_dnums = *ParseConvolutionDimLabels(labels);
    c->window = Window{std::move(window)};
    return c;
  };
  // NHWC, 3x3 same padding.
  Instruction* c = conv("f32[1,5,5,3]", "f32[3,3,3,8]", "b01f_01io->b01f",
                        {{3, 1, 1, 1, 1, 1, false}, {3, 1, 1, 1, 1, 1, false}});
  EXPECT_EQ(Infer(*c), "f32[1,5,5,8]");
  // Stride 2 with window dilation 2: (7 - 5) / 2 + 1 = 2; lhs dilation 2: 13 - 3 + 1 = 11.
  c = conv("f32[2,3,7,7]", "f32[8,3,3,3]", "bf01_oi01->bf01",
           {{3, 2, 0, 0, 2, 1, false}, {3, 1, 0, 0, 1, 2, false}});
  EXPECT_EQ(Infer(*c), "f32[2,8,2,11]");
  // Depthwise: feature_group_count = input features.
  c = conv("f32[1,5,5,8]", "f32[3,3,1,8]", "b01f_01io->b01f",
           {{3, 1, 0, 0, 1, 1, false}, {3, 1, 0, 0, 1, 1, false}});
  c->feature_group_count = 8;
  EXPECT_EQ(Infer(*c), "f32[1,3,3,8]");
  c->feature_group_count = 3;
  EXPECT_INFER_ERROR(c, "input feature count 8 / feature_group_count 3");
  // Wrong feature count.
  c = conv("f32[1,5,5,4]", "f32[3,3,3,8]", "b01f_01io->b01f",
           {{3, 1, 0, 0, 1, 1, false}, {3, 1, 0, 0, 1, 1, false}});
  EXPECT_INFER_ERROR(c, "must equal the kernel input feature count 3");
  // batch_group_count splits the batch.
  c = conv("f32[4,5,5,3]", "f32[3,3,3,6]", "b01f_01io->b01f",
           {{3, 1, 0, 0, 1, 1, false}, {3, 1, 0, 0, 1, 1, false}});
  c->batch_group_count = 2;
  EXPECT_EQ(Infer(*c), "f32[2,3,3,6]");
  c->feature_group_count = 3;
  EXPECT_INFER_ERROR(c, "cannot both exceed 1");
  // Window size must match the kernel.
  c = conv("f32[1,5,5,3]", "f32[3,3,3,8]", "b01f_01io->b01f",
           {{2, 1, 0, 0, 1, 1, false}, {3, 1, 0, 0, 1, 1, false}});
  EXPECT_INFER_ERROR(c, "does not match kernel size 3");
  c = conv("f32[1,5,5,3]", "f32[3,3,3,8]", "b01f_01io->b01f", {{3, 1, 0, 0, 1, 1, false}});
  EXPECT_INFER_ERROR(c, "window has 1 dimensions");
}

TEST_F(ShapeInferenceTest, Gather) {
  // Embedding lookup with an explicit index vector dimension.
  Instruction* g = Make(Opcode::kGather, "f32[5,8]", {P("f32[10,8]"), P("s32[5,1]")});
  GatherDimensionNumbers dn;
  dn.offset_dims = {1};
  dn.collapsed_slice_dims = {0};
  dn.start_index_map = {0};
  dn.index_vector_dim = 1;
  g->gather_dnums = dn;
  g->gather_slice_sizes = {1, 8};
  EXPECT_EQ(Infer(*g), "f32[5,8]");
  // Implicit trailing index vector dimension.
  Instruction* gi = Make(Opcode::kGather, "f32[5,8]", {P("f32[10,8]"), P("s32[5]")});
  gi->gather_dnums = dn;
  gi->gather_slice_sizes = {1, 8};
  EXPECT_EQ(Infer(*gi), "f32[5,8]");
  // Offset dims placed first.
  Instruction* go = Make(Opcode::kGather, "f32[4,5]", {P("f32[10,8]"), P("s32[5,1]")});
  GatherDimensionNumbers on = dn;
  on.offset_dims = {0};
  go->gather_dnums = on;
  go->gather_slice_sizes = {1, 4};
  EXPECT_EQ(Infer(*go), "f32[4,5]");
  g->gather_slice_sizes = {1, 9};
  EXPECT_INFER_ERROR(g, "slice size 9");
  g->gather_slice_sizes = {2, 8};
  EXPECT_INFER_ERROR(g, "collapsed dimension 0 has slice size > 1");
  g->gather_slice_sizes = {1, 8};
  dn.start_index_map = {0, 1};
  g->gather_dnums = dn;
  EXPECT_INFER_ERROR(g, "start_index_map");

  // Batching dimensions: operand dim 0 and indices dim 0 are matched batches.
  Instruction* gb = Make(Opcode::kGather, "f32[2,5,8]", {P("f32[2,10,8]"), P("s32[2,5,1]")});
  GatherDimensionNumbers bn;
  bn.offset_dims = {2};
  bn.collapsed_slice_dims = {1};
  bn.operand_batching_dims = {0};
  bn.start_indices_batching_dims = {0};
  bn.start_index_map = {1};
  bn.index_vector_dim = 2;
  gb->gather_dnums = bn;
  gb->gather_slice_sizes = {1, 1, 8};
  EXPECT_EQ(Infer(*gb), "f32[2,5,8]");
  bn.start_indices_batching_dims = {1};
  gb->gather_dnums = bn;
  EXPECT_INFER_ERROR(gb, "differ in size");
  Instruction* fi = Make(Opcode::kGather, "f32[5,8]", {P("f32[10,8]"), P("f32[5,1]")});
  fi->gather_dnums = GatherDimensionNumbers{{1}, {0}, {0}, 1, {}, {}};
  fi->gather_slice_sizes = {1, 8};
  EXPECT_INFER_ERROR(fi, "integral");
}

TEST_F(ShapeInferenceTest, Scatter) {
  Instruction* s =
      Make(Opcode::kScatter, "f32[10,8]", {P("f32[10,8]"), P("s32[5,1]"), P("f32[5,8]")});
  ScatterDimensionNumbers dn;
  dn.update_window_dims = {1};
  dn.inserted_window_dims = {0};
  dn.scatter_dims_to_operand_dims = {0};
  dn.index_vector_dim = 1;
  s->scatter_dnums = dn;
  s->mutable_called_computations().push_back(Adder());
  EXPECT_EQ(Infer(*s), "f32[10,8]");
  s->ReplaceOperand(2, P("f32[4,8]"));
  EXPECT_INFER_ERROR(s, "updates dimension 0 has size 4");
  s->ReplaceOperand(2, P("f32[5,9]"));
  EXPECT_INFER_ERROR(s, "exceeds the operand bound 8");
  s->ReplaceOperand(2, P("f32[5,8]"));
  s->mutable_called_computations()[0] = Adder("s32[]");
  EXPECT_INFER_ERROR(s, "to_apply");

  // Two operands scattered together give a tuple.
  Instruction* v = Make(Opcode::kScatter, "(f32[10], s32[10])",
                        {P("f32[10]"), P("s32[10]"), P("s32[3,1]"), P("f32[3]"), P("s32[3]")});
  ScatterDimensionNumbers vn;
  vn.inserted_window_dims = {0};
  vn.scatter_dims_to_operand_dims = {0};
  vn.index_vector_dim = 1;
  v->scatter_dnums = vn;
  v->mutable_called_computations().push_back(
      Comp({"f32[]", "s32[]", "f32[]", "s32[]"}, "(f32[], s32[])"));
  EXPECT_EQ(Infer(*v), "(f32[10], s32[10])");

  // Batching dims.
  Instruction* b =
      Make(Opcode::kScatter, "f32[2,10,8]", {P("f32[2,10,8]"), P("s32[2,5,1]"), P("f32[2,5,8]")});
  ScatterDimensionNumbers bn;
  bn.update_window_dims = {2};
  bn.inserted_window_dims = {1};
  bn.input_batching_dims = {0};
  bn.scatter_indices_batching_dims = {0};
  bn.scatter_dims_to_operand_dims = {1};
  bn.index_vector_dim = 2;
  b->scatter_dnums = bn;
  b->mutable_called_computations().push_back(Adder());
  EXPECT_EQ(Infer(*b), "f32[2,10,8]");
}

TEST_F(ShapeInferenceTest, Sort) {
  Instruction* s = Make(Opcode::kSort, "f32[10]", {P("f32[10]")});
  s->dimensions = {0};
  s->mutable_called_computations().push_back(Comp({"f32[]", "f32[]"}, "pred[]", Opcode::kCompare));
  EXPECT_EQ(Infer(*s), "f32[10]");
  s->dimensions = {1};
  EXPECT_INFER_ERROR(s, "out of range");
  Instruction* kv = Make(Opcode::kSort, "(f32[3,10], s32[3,10])", {P("f32[3,10]"), P("s32[3,10]")});
  kv->dimensions = {1};
  kv->mutable_called_computations().push_back(Comp({"f32[]", "f32[]", "s32[]", "s32[]"}, "pred[]"));
  EXPECT_EQ(Infer(*kv), "(f32[3,10], s32[3,10])");
  kv->mutable_called_computations()[0] = Comp({"f32[]", "f32[]"}, "pred[]");
  EXPECT_INFER_ERROR(kv, "comparator must take 4 parameters");
  kv->mutable_called_computations()[0] = Comp({"f32[]", "f32[]", "f32[]", "f32[]"}, "pred[]");
  EXPECT_INFER_ERROR(kv, "comparator parameter 2");
  kv->mutable_called_computations()[0] = Comp({"f32[]", "f32[]", "s32[]", "s32[]"}, "s32[]");
  EXPECT_INFER_ERROR(kv, "pred[]");
  EXPECT_INFER_ERROR(Make(Opcode::kSort, "(f32[3], s32[4])", {P("f32[3]"), P("s32[4]")}),
                     "different dimensions");
}

TEST_F(ShapeInferenceTest, Map) {
  Instruction* m = Make(Opcode::kMap, "f32[4]", {P("f32[4]"), P("f32[4]")});
  m->dimensions = {0};
  m->mutable_called_computations().push_back(Adder());
  EXPECT_EQ(Infer(*m), "f32[4]");
  m->mutable_called_computations()[0] = Comp({"f32[]"}, "f32[]");
  EXPECT_INFER_ERROR(m, "takes 1 parameters but map has 2 operands");
}

TEST_F(ShapeInferenceTest, TupleAndGetTupleElement) {
  Instruction* t = Make(Opcode::kTuple, "(f32[2], s32[])", {P("f32[2]{0}"), P("s32[]")});
  EXPECT_EQ(Infer(*t), "(f32[2], s32[])");
  Instruction* g = Make(Opcode::kGetTupleElement, "s32[]", {t});
  g->tuple_index = 1;
  EXPECT_EQ(Infer(*g), "s32[]");
  g->tuple_index = 2;
  EXPECT_INFER_ERROR(g, "out of range");
  Instruction* ng = Make(Opcode::kGetTupleElement, "f32[2]", {P("f32[2]")});
  EXPECT_INFER_ERROR(ng, "not a tuple");
  EXPECT_EQ(Infer(*Make(Opcode::kTuple, "()")), "()");
}

TEST_F(ShapeInferenceTest, While) {
  Instruction* init = P("(s32[], f32[4])");
  Instruction* w = Make(Opcode::kWhile, "(s32[], f32[4])", {init});
  Computation* cond = Comp({"(s32[], f32[4])"}, "pred[]");
  Computation* body = Comp({"(s32[], f32[4])"}, "(s32[], f32[4])");
  w->mutable_called_computations() = {cond, body};
  EXPECT_EQ(Infer(*w), "(s32[], f32[4])");
  w->mutable_called_computations()[1] = Comp({"(s32[], f32[4])"}, "(s32[], f32[5])");
  EXPECT_INFER_ERROR(w, "body result (s32[], f32[5]) does not match init (s32[], f32[4])");
  w->mutable_called_computations()[1] = body;
  w->mutable_called_computations()[0] = Comp({"(s32[], f32[4])"}, "s32[]");
  EXPECT_INFER_ERROR(w, "condition must return pred[]");
  w->mutable_called_computations().pop_back();
  EXPECT_INFER_ERROR(w, "expects 2 called computations");
}

TEST_F(ShapeInferenceTest, Conditional) {
  Instruction* c = Make(Opcode::kConditional, "f32[3]", {P("pred[]"), P("f32[3]"), P("s32[]")});
  c->mutable_called_computations() = {Comp({"f32[3]"}, "f32[3]"), Comp({"s32[]"}, "f32[3]")};
  EXPECT_EQ(Infer(*c), "f32[3]");
  c->mutable_called_computations()[1] = Comp({"s32[]"}, "f32[4]");
  EXPECT_INFER_ERROR(c, "returns f32[4] but branch 0 returns f32[3]");
  c->mutable_called_computations()[1] = Comp({"f32[]"}, "f32[3]");
  EXPECT_INFER_ERROR(c, "takes f32[] but operand 2 is s32[]");
  Instruction* idx =
      Make(Opcode::kConditional, "f32[3]", {P("s32[]"), P("f32[3]"), P("f32[3]"), P("f32[3]")});
  idx->mutable_called_computations() = {Comp({"f32[3]"}, "f32[3]"), Comp({"f32[3]"}, "f32[3]"),
                                        Comp({"f32[3]"}, "f32[3]")};
  EXPECT_EQ(Infer(*idx), "f32[3]");
  idx->ReplaceOperand(0, P("s64[]"));
  EXPECT_INFER_ERROR(idx, "branch index must be pred[] or s32[]");
}

TEST_F(ShapeInferenceTest, CallAndFusion) {
  Instruction* call = Make(Opcode::kCall, "f32[2]", {P("f32[2]"), P("s32[]")});
  call->mutable_called_computations().push_back(Comp({"f32[2]", "s32[]"}, "f32[2]"));
  EXPECT_EQ(Infer(*call), "f32[2]");
  call->mutable_called_computations()[0] = Comp({"f32[2]", "f32[]"}, "f32[2]");
  EXPECT_INFER_ERROR(call, "parameter 1 is f32[] but operand 1 is s32[]");
  call->mutable_called_computations()[0] = Comp({"f32[2]"}, "f32[2]");
  EXPECT_INFER_ERROR(call, "takes 1 parameters but call has 2 operands");
  Instruction* fusion = Make(Opcode::kFusion, "(f32[2], f32[2])", {P("f32[2]")});
  fusion->mutable_called_computations().push_back(Comp({"f32[2]"}, "(f32[2], f32[2])"));
  EXPECT_EQ(Infer(*fusion), "(f32[2], f32[2])");
}

TEST_F(ShapeInferenceTest, LinearAlgebra) {
  Instruction* ts =
      Make(Opcode::kTriangularSolve, "f32[2,3,5]", {P("f32[2,3,3]"), P("f32[2,3,5]")});
  ts->triangular_solve =
      TriangularSolveOptions{/*left_side=*/true, true, false, TriangularTranspose::kNoTranspose};
  EXPECT_EQ(Infer(*ts), "f32[2,3,5]");
  ts->triangular_solve->left_side = false;
  EXPECT_INFER_ERROR(ts, "solved dimension");
  EXPECT_EQ(Infer(*Make(Opcode::kCholesky, "f64[4,4]", {P("f64[4,4]")})), "f64[4,4]");
  EXPECT_INFER_ERROR(Make(Opcode::kCholesky, "f64[4,3]", {P("f64[4,3]")}), "square");
  EXPECT_INFER_ERROR(Make(Opcode::kCholesky, "s32[4,4]", {P("s32[4,4]")}), "floating-point");
}

TEST_F(ShapeInferenceTest, BatchNorm) {
  Instruction* x = P("f32[2,4,4,3]");
  Instruction* v = P("f32[3]");
  Instruction* t = Make(Opcode::kBatchNormTraining, "(f32[2,4,4,3], f32[3], f32[3])", {x, v, v});
  t->feature_index = 3;
  EXPECT_EQ(Infer(*t), "(f32[2,4,4,3], f32[3], f32[3])");
  t->feature_index = 1;
  EXPECT_INFER_ERROR(t, "vector of 4");
  Instruction* inf = Make(Opcode::kBatchNormInference, "f32[2,4,4,3]", {x, v, v, v, v});
  inf->feature_index = 3;
  EXPECT_EQ(Infer(*inf), "f32[2,4,4,3]");
  Instruction* g = Make(Opcode::kBatchNormGrad, "(f32[2,4,4,3], f32[3], f32[3])", {x, v, v, v, x});
  g->feature_index = 3;
  EXPECT_EQ(Infer(*g), "(f32[2,4,4,3], f32[3], f32[3])");
  g->ReplaceOperand(4, P("f32[2,4,4,2]"));
  EXPECT_INFER_ERROR(g, "grad_output");
}

TEST_F(ShapeInferenceTest, Fft) {
  Instruction* r = Make(Opcode::kFft, "c64[4,5]", {P("f32[4,8]")});
  r->fft_type = FftType::kRfft;
  r->fft_length = {8};
  EXPECT_EQ(Infer(*r), "c64[4,5]");
  Instruction* ir = Make(Opcode::kFft, "f32[4,8]", {P("c64[4,5]")});
  ir->fft_type = FftType::kIrfft;
  ir->fft_length = {8};
  EXPECT_EQ(Infer(*ir), "f32[4,8]");
  Instruction* f = Make(Opcode::kFft, "c64[4,8]", {P("c64[4,8]")});
  f->fft_length = {4, 8};
  EXPECT_EQ(Infer(*f), "c64[4,8]");
  Instruction* bad = Make(Opcode::kFft, "c64[4,8]", {P("f32[4,8]")});
  bad->fft_length = {8};
  EXPECT_INFER_ERROR(bad, "complex");
}

TEST_F(ShapeInferenceTest, RngAndTokens) {
  Instruction* rng = Make(Opcode::kRng, "f32[3,4]", {P("f32[]"), P("f32[]")});
  rng->distribution = RandomDistribution::kNormal;
  EXPECT_EQ(Infer(*rng), "f32[3,4]");
  EXPECT_INFER_ERROR(Make(Opcode::kRng, "f32[3]", {P("f32[]"), P("s32[]")}), "one type");
  Instruction* tok = Make(Opcode::kAfterAll, "token[]");
  EXPECT_EQ(Infer(*tok), "token[]");
  EXPECT_EQ(Infer(*Make(Opcode::kAfterAll, "token[]", {tok, tok})), "token[]");
  EXPECT_INFER_ERROR(Make(Opcode::kAfterAll, "token[]", {P("f32[]")}), "must be a token");
  EXPECT_EQ(Infer(*Make(Opcode::kAddDependency, "f32[2]", {P("f32[2]"), tok})), "f32[2]");
  EXPECT_INFER_ERROR(Make(Opcode::kAddDependency, "f32[2]", {P("f32[2]"), P("f32[2]")}), "token");
  EXPECT_EQ(Infer(*Make(Opcode::kOptimizationBarrier, "(f32[2], s32[])", {P("(f32[2], s32[])")})),
            "(f32[2], s32[])");
  EXPECT_EQ(Infer(*Make(Opcode::kDomain, "f32[2]", {P("f32[2]")})), "f32[2]");
  EXPECT_EQ(Infer(*Make(Opcode::kInfeed, "((f32[2]), token[])", {tok})), "nullopt");
  EXPECT_INFER_ERROR(Make(Opcode::kInfeed, "((f32[2]), token[])", {P("f32[]")}), "token");
  EXPECT_EQ(Infer(*Make(Opcode::kOutfeed, "token[]", {P("f32[2]"), tok})), "nullopt");
}

TEST_F(ShapeInferenceTest, BitcastKeepsByteSize) {
  EXPECT_EQ(Infer(*Make(Opcode::kBitcast, "f32[6]", {P("f32[2,3]")})), "nullopt");
  EXPECT_EQ(Infer(*Make(Opcode::kBitcast, "u8[24]", {P("f32[2,3]")})), "nullopt");
  EXPECT_INFER_ERROR(Make(Opcode::kBitcast, "f32[7]", {P("f32[2,3]")}), "byte size");
}

TEST_F(ShapeInferenceTest, TopK) {
  Instruction* t = Make(Opcode::kTopK, "(f32[4,3], s32[4,3])", {P("f32[4,10]")});
  t->topk_k = 3;
  EXPECT_EQ(Infer(*t), "(f32[4,3], s32[4,3])");
  t->topk_k = 11;
  EXPECT_INFER_ERROR(t, "out of range");
}

TEST_F(ShapeInferenceTest, Collectives) {
  Instruction* ar = Make(Opcode::kAllReduce, "f32[4]", {P("f32[4]")});
  ar->mutable_called_computations().push_back(Adder());
  EXPECT_EQ(Infer(*ar), "f32[4]");
  Instruction* art = Make(Opcode::kAllReduce, "(f32[4], f32[])", {P("f32[4]"), P("f32[]")});
  art->mutable_called_computations().push_back(Adder());
  EXPECT_EQ(Infer(*art), "(f32[4], f32[])");
  ar->mutable_called_computations()[0] = Adder("s32[]");
  EXPECT_INFER_ERROR(ar, "reduction type");

  Instruction* ag = Make(Opcode::kAllGather, "f32[6,10]", {P("f32[3,10]")});
  ag->dimensions = {0};
  ag->extra_attributes.push_back({"replica_groups", "{{0,1},{2,3}}"});
  EXPECT_EQ(Infer(*ag), "f32[6,10]");
  ag->extra_attributes[0].value = "[2,4]<=[8]";
  EXPECT_EQ(Infer(*ag), "f32[12,10]");
  // {} means all replicas: the count is not known here, so the declaration is checked instead.
  ag->extra_attributes[0].value = "{}";
  EXPECT_EQ(Infer(*ag), "f32[6,10]");
  ag->set_shape(S("f32[7,10]"));
  EXPECT_INFER_ERROR(ag, "not a multiple");

  Instruction* rs = Make(Opcode::kReduceScatter, "f32[4]", {P("f32[8]")});
  rs->dimensions = {0};
  rs->extra_attributes.push_back({"replica_groups", "{{0,1}}"});
  rs->mutable_called_computations().push_back(Adder());
  EXPECT_EQ(Infer(*rs), "f32[4]");
  rs->extra_attributes[0].value = "{{0,1,2}}";
  EXPECT_INFER_ERROR(rs, "not divisible");

  Instruction* a2a = Make(Opcode::kAllToAll, "f32[4,6]", {P("f32[4,6]")});
  a2a->dimensions = {1};
  a2a->extra_attributes.push_back({"replica_groups", "{{0,1}}"});
  EXPECT_EQ(Infer(*a2a), "f32[4,6]");
  Instruction* a2t = Make(Opcode::kAllToAll, "(f32[2], f32[2])", {P("f32[2]"), P("f32[2]")});
  EXPECT_EQ(Infer(*a2t), "(f32[2], f32[2])");
  EXPECT_EQ(Infer(*Make(Opcode::kCollectivePermute, "f32[2]", {P("f32[2]")})), "f32[2]");
}

TEST_F(ShapeInferenceTest, DeclaredShapes) {
  EXPECT_EQ(Infer(*P("f32[2]")), "nullopt");
  Instruction* c = Make(Opcode::kConstant, "f32[]");
  c->literal = Literal::Scalar(PrimitiveType::kF32, 1.5f);
  EXPECT_EQ(Infer(*c), "nullopt");
  c->set_shape(S("f32[2]"));
  EXPECT_INFER_ERROR(c, "literal of shape f32[] does not match the declared shape f32[2]");
  c->literal_elided = true;
  EXPECT_EQ(Infer(*c), "nullopt");
  EXPECT_EQ(Infer(*Make(Opcode::kCustomCall, "(f32[2], s8[4])", {P("f32[2]")})), "nullopt");
  EXPECT_EQ(Infer(*Make(Opcode::kRngBitGenerator, "(u64[2], u32[8])", {P("u64[2]")})), "nullopt");
  EXPECT_INFER_ERROR(Make(Opcode::kRngBitGenerator, "(u64[3], u32[8])", {P("u64[2]")}), "state");
  EXPECT_EQ(Infer(*Make(Opcode::kAsyncStart, "((f32[2]), f32[2], s32[])", {P("f32[2]")})),
            "nullopt");
  EXPECT_EQ(Infer(*Make(Opcode::kPartitionId, "u32[]")), "nullopt");
  EXPECT_INFER_ERROR(Make(Opcode::kReplicaId, "s32[]"), "u32[]");
}

// No opcode may crash on malformed input: every opcode with every small operand list and no
// attributes or called computations must give a shape, nullopt or an error naming it.
TEST_F(ShapeInferenceTest, EveryOpcodeSurvivesMalformedInput) {
  const std::vector<std::vector<std::string_view>> operand_lists = {
      {},
      {"f32[2]"},
      {"f32[]", "f32[]"},
      {"(f32[2], s32[])"},
      {"pred[]", "f32[2]", "f32[2]"},
      {"token[]"},
      {"s32[2,3]", "s32[]", "s32[]", "s32[]"},
  };
  for (int op = 0; op < OpcodeCount(); ++op) {
    for (const auto& list : operand_lists) {
      for (std::string_view declared : {"f32[2]", "(f32[2], s32[])", "token[]", "s32[]"}) {
        std::vector<Instruction*> operands;
        for (std::string_view s : list) operands.push_back(P(s));
        Instruction* i = Make(static_cast<Opcode>(op), declared, operands, "victim");
        absl::StatusOr<std::optional<Shape>> r = InferShape(*i);
        if (!r.ok()) {
          EXPECT_EQ(std::string(r.status().message()).rfind("victim: ", 0), 0u)
              << r.status().message();
          EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
        }
      }
    }
  }
}

}  // namespace
}  // namespace mltune::ir
