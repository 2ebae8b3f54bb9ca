// Element-wise ops of the reference evaluator: exact expected values, integer edge cases (XLA's
// division by zero, INT_MIN / -1, shifts past the width), narrow-float rounding, compare with
// total order, convert, bitcast-convert and reduce-precision.
#include <cmath>

#include "gtest/gtest.h"
#include "tests/ir/evaluator_test_util.h"

namespace mltune::ir {
namespace {

using eval_test::Eval;
using eval_test::EvalText;
using eval_test::ModuleText;
using eval_test::Values;

// Evaluates `op` on two constant operands of `type`[n].
std::string Binary(const std::string& op, const std::string& type, const std::string& a,
                   const std::string& b, const std::string& out_type = "",
                   const std::string& attrs = "") {
  const std::string in = std::string(type);
  const std::string out = out_type.empty() ? in : std::string(out_type);
  return Eval(absl::StrCat("a = ", in, " constant(", a, ")\n b = ", in, " constant(", b,
                           ")\n ROOT r = ", out, " ", op, "(a, b)", attrs));
}

std::string Unary(const std::string& op, const std::string& type, const std::string& a,
                  const std::string& out_type = "", const std::string& attrs = "") {
  const std::string in = std::string(type);
  const std::string out = out_type.empty() ? in : std::string(out_type);
  return Eval(
      absl::StrCat("a = ", in, " constant(", a, ")\n ROOT r = ", out, " ", op, "(a)", attrs));
}

TEST(EvaluatorElementwiseTest, FloatArithmetic) {
  const char* a = "{1.5, -2, 0.25}";
  const char* b = "{0.5, 4, -0.125}";
  EXPECT_EQ(Binary("add", "f32[3]", a, b), "{2, 2, 0.125}");
  EXPECT_EQ(Binary("subtract", "f32[3]", a, b), "{1, -6, 0.375}");
  EXPECT_EQ(Binary("multiply", "f32[3]", a, b), "{0.75, -8, -0.03125}");
  EXPECT_EQ(Binary("divide", "f32[3]", a, b), "{3, -0.5, -2}");
  EXPECT_EQ(Binary("maximum", "f32[3]", a, b), "{1.5, 4, 0.25}");
  EXPECT_EQ(Binary("minimum", "f32[3]", a, b), "{0.5, -2, -0.125}");
  EXPECT_EQ(Binary("power", "f32[3]", "{3, -2, 4}", "{2, 3, 0.5}"), "{9, -8, 2}");
  EXPECT_EQ(Binary("remainder", "f32[3]", "{5.5, -5.5, 5.5}", "{2, 2, -2}"), "{1.5, -1.5, 1.5}");
  EXPECT_EQ(Binary("atan2", "f32[2]", "{1, 0}", "{0, 1}"), "{1.5707964, 0}");
  EXPECT_EQ(Binary("divide", "f32[2]", "{1, -1}", "{0, 0}"), "{inf, -inf}");
  EXPECT_EQ(Binary("add", "f64[1]", "{0.1}", "{0.2}"), "{0.30000000000000004}");
}

TEST(EvaluatorElementwiseTest, MaxMinPropagateNanAndOrderSignedZeros) {
  EXPECT_EQ(Binary("maximum", "f32[3]", "{nan, 1, -0}", "{1, nan, 0}"), "{nan, nan, 0}");
  EXPECT_EQ(Binary("minimum", "f32[3]", "{nan, 1, -0}", "{1, nan, 0}"), "{nan, nan, -0}");
}

TEST(EvaluatorElementwiseTest, IntegerDivisionEdgeCases) {
  EXPECT_EQ(Binary("divide", "s32[4]", "{7, -7, 5, -2147483648}", "{2, 2, 0, -1}"),
            "{3, -3, -1, -2147483648}");
  EXPECT_EQ(Binary("remainder", "s32[4]", "{7, -7, 5, -2147483648}", "{2, 2, 0, -1}"),
            "{1, -1, 5, 0}");
  EXPECT_EQ(Binary("divide", "u32[2]", "{5, 9}", "{0, 2}"), "{4294967295, 4}");
  EXPECT_EQ(Binary("remainder", "u32[2]", "{5, 9}", "{0, 2}"), "{5, 1}");
  EXPECT_EQ(Binary("divide", "s8[2]", "{-128, 100}", "{-1, 0}"), "{-128, -1}");
}

TEST(EvaluatorElementwiseTest, IntegerArithmeticWraps) {
  EXPECT_EQ(Binary("add", "s32[1]", "{2147483647}", "{1}"), "{-2147483648}");
  EXPECT_EQ(Binary("multiply", "s8[1]", "{100}", "{3}"), "{44}");
  EXPECT_EQ(Binary("subtract", "u8[1]", "{0}", "{1}"), "{255}");
  EXPECT_EQ(Binary("multiply", "u16[1]", "{65535}", "{65535}"), "{1}");
  EXPECT_EQ(Binary("add", "s4[2]", "{7, -8}", "{1, -1}"), "{-8, 7}");
  EXPECT_EQ(Binary("add", "u4[1]", "{15}", "{2}"), "{1}");
  EXPECT_EQ(Unary("negate", "s32[2]", "{-2147483648, 5}"), "{-2147483648, -5}");
  EXPECT_EQ(Unary("abs", "s8[2]", "{-128, -3}"), "{-128, 3}");
  EXPECT_EQ(Binary("maximum", "u32[1]", "{4294967295}", "{1}"), "{4294967295}");
}

TEST(EvaluatorElementwiseTest, Shifts) {
  EXPECT_EQ(Binary("shift-left", "s32[5]", "{1, 1, 1, -1, 3}", "{1, 31, 32, 40, -1}"),
            "{2, -2147483648, 0, 0, 0}");
  EXPECT_EQ(Binary("shift-right-logical", "s32[3]", "{-1, 8, 8}", "{28, 1, 33}"), "{15, 4, 0}");
  EXPECT_EQ(Binary("shift-right-arithmetic", "s32[4]", "{-8, -8, 8, -1}", "{1, 40, 40, 31}"),
            "{-4, -1, 0, -1}");
  EXPECT_EQ(Binary("shift-left", "u8[1]", "{129}", "{1}"), "{2}");
  EXPECT_EQ(Binary("shift-right-logical", "s8[1]", "{-128}", "{7}"), "{1}");
  EXPECT_EQ(Binary("shift-right-arithmetic", "u8[2]", "{128, 128}", "{1, 8}"), "{192, 255}");
  EXPECT_EQ(Binary("shift-right-logical", "s4[1]", "{-1}", "{1}"), "{7}");
  EXPECT_EQ(Binary("shift-left", "s4[2]", "{7, 1}", "{1, 4}"), "{-2, 0}");
  EXPECT_EQ(Binary("shift-right-arithmetic", "s4[2]", "{-8, -8}", "{1, 4}"), "{-4, -1}");
}

TEST(EvaluatorElementwiseTest, IntegerPower) {
  EXPECT_EQ(Binary("power", "s32[7]", "{2, 3, -2, 2, 1, 5, 2}", "{10, 0, 3, -1, -5, 1, 32}"),
            "{1024, 1, -8, 0, 1, 5, 0}");
  EXPECT_EQ(Binary("power", "u8[1]", "{3}", "{5}"), "{243}");
}

TEST(EvaluatorElementwiseTest, BitwiseAndPred) {
  EXPECT_EQ(Binary("and", "s32[2]", "{12, -1}", "{10, 5}"), "{8, 5}");
  EXPECT_EQ(Binary("or", "s32[2]", "{12, 0}", "{10, 0}"), "{14, 0}");
  EXPECT_EQ(Binary("xor", "u8[1]", "{255}", "{15}"), "{240}");
  EXPECT_EQ(Binary("and", "pred[4]", "{true, true, false, false}", "{true, false, true, false}"),
            "{true, false, false, false}");
  EXPECT_EQ(Binary("or", "pred[4]", "{true, true, false, false}", "{true, false, true, false}"),
            "{true, true, true, false}");
  EXPECT_EQ(Binary("xor", "pred[4]", "{true, true, false, false}", "{true, false, true, false}"),
            "{false, true, true, false}");
  EXPECT_EQ(Binary("add", "pred[2]", "{true, false}", "{true, false}"), "{true, false}");
  EXPECT_EQ(Unary("not", "pred[2]", "{true, false}"), "{false, true}");
  EXPECT_EQ(Unary("not", "s32[2]", "{0, 5}"), "{-1, -6}");
  EXPECT_EQ(Unary("not", "u4[1]", "{5}"), "{10}");
}

TEST(EvaluatorElementwiseTest, IntegerUnary) {
  EXPECT_EQ(Unary("popcnt", "s32[3]", "{0, 7, -1}"), "{0, 3, 32}");
  EXPECT_EQ(Unary("count-leading-zeros", "s32[3]", "{0, 1, -1}"), "{32, 31, 0}");
  EXPECT_EQ(Unary("count-leading-zeros", "u8[2]", "{1, 0}"), "{7, 8}");
  EXPECT_EQ(Unary("count-leading-zeros", "s4[2]", "{1, -1}"), "{3, 0}");
  EXPECT_EQ(Unary("popcnt", "s4[1]", "{-1}"), "{4}");
  EXPECT_EQ(Unary("sign", "s32[3]", "{-5, 0, 7}"), "{-1, 0, 1}");
  EXPECT_EQ(Unary("abs", "s32[2]", "{-5, 7}"), "{5, 7}");
}

TEST(EvaluatorElementwiseTest, FloatUnary) {
  EXPECT_EQ(Unary("negate", "f32[2]", "{1.5, -0}"), "{-1.5, 0}");
  EXPECT_EQ(Unary("abs", "f32[2]", "{-1.5, -0}"), "{1.5, 0}");
  EXPECT_EQ(Unary("sign", "f32[5]", "{-2.5, 0, -0, 3, nan}"), "{-1, 0, -0, 1, nan}");
  EXPECT_EQ(Unary("floor", "f32[3]", "{1.5, -1.5, 2}"), "{1, -2, 2}");
  EXPECT_EQ(Unary("ceil", "f32[3]", "{1.5, -1.5, 2}"), "{2, -1, 2}");
  EXPECT_EQ(Unary("round-nearest-afz", "f32[4]", "{2.5, -2.5, 0.5, 1.4}"), "{3, -3, 1, 1}");
  EXPECT_EQ(Unary("round-nearest-even", "f32[4]", "{2.5, -2.5, 0.5, 3.5}"), "{2, -2, 0, 4}");
  EXPECT_EQ(Unary("exponential", "f32[2]", "{0, 1}"), "{1, 2.7182817}");
  EXPECT_EQ(Unary("log", "f32[2]", "{1, 2}"), "{0, 0.6931472}");
  EXPECT_EQ(Unary("sqrt", "f32[2]", "{4, 9}"), "{2, 3}");
  EXPECT_EQ(Unary("rsqrt", "f32[2]", "{4, 0}"), "{0.5, inf}");
  EXPECT_EQ(Unary("cbrt", "f32[2]", "{27, -8}"), "{3, -2}");
  EXPECT_EQ(Unary("tanh", "f32[1]", "{0}"), "{0}");
  EXPECT_EQ(Unary("logistic", "f32[1]", "{0}"), "{0.5}");
  EXPECT_EQ(Unary("log-plus-one", "f32[1]", "{0}"), "{0}");
  EXPECT_EQ(Unary("exponential-minus-one", "f32[1]", "{0}"), "{0}");
  EXPECT_EQ(Unary("erf", "f32[2]", "{0, inf}"), "{0, 1}");
  EXPECT_EQ(Unary("sine", "f32[1]", "{0}"), "{0}");
  EXPECT_EQ(Unary("cosine", "f32[1]", "{0}"), "{1}");
  EXPECT_EQ(Unary("tan", "f32[1]", "{0}"), "{0}");
  EXPECT_EQ(Unary("copy", "f32[2]", "{1, 2}"), "{1, 2}");
  EXPECT_EQ(Unary("is-finite", "f32[4]", "{1, inf, -inf, nan}", "pred[4]"),
            "{true, false, false, false}");
  EXPECT_EQ(Unary("exponential", "f64[1]", "{1}"), "{2.718281828459045}");
}

TEST(EvaluatorElementwiseTest, CompareDirectionsAndTotalOrder) {
  const char* a = "{1, nan, -0, 2}";
  const char* b = "{1, nan, 0, 1}";
  EXPECT_EQ(Binary("compare", "f32[4]", a, b, "pred[4]", ", direction=EQ"),
            "{true, false, true, false}");
  EXPECT_EQ(Binary("compare", "f32[4]", a, b, "pred[4]", ", direction=NE"),
            "{false, true, false, true}");
  EXPECT_EQ(Binary("compare", "f32[4]", a, b, "pred[4]", ", direction=LT"),
            "{false, false, false, false}");
  EXPECT_EQ(Binary("compare", "f32[4]", a, b, "pred[4]", ", direction=GE"),
            "{true, false, true, true}");
  EXPECT_EQ(Binary("compare", "f32[4]", a, b, "pred[4]", ", direction=EQ, type=TOTALORDER"),
            "{true, true, false, false}");
  EXPECT_EQ(Binary("compare", "f32[4]", a, b, "pred[4]", ", direction=LT, type=TOTALORDER"),
            "{false, false, true, false}");
  EXPECT_EQ(Binary("compare", "f32[2]", "{-nan, inf}", "{-inf, nan}", "pred[2]",
                   ", direction=LT, type=TOTALORDER"),
            "{true, true}");
  EXPECT_EQ(Binary("compare", "u32[1]", "{4294967295}", "{1}", "pred[1]", ", direction=GT"),
            "{true}");
  EXPECT_EQ(Binary("compare", "s32[1]", "{-1}", "{0}", "pred[1]", ", direction=LT"), "{true}");
  EXPECT_EQ(Binary("compare", "c64[2]", "{(1, 2), (1, 2)}", "{(1, 2), (1, 3)}", "pred[2]",
                   ", direction=EQ"),
            "{true, false}");
}

TEST(EvaluatorElementwiseTest, ConvertSaturatesAndRounds) {
  EXPECT_EQ(Unary("convert", "f32[5]", "{1.9, -1.9, 3e9, -3e9, nan}", "s32[5]"),
            "{1, -1, 2147483647, -2147483648, 0}");
  EXPECT_EQ(Unary("convert", "f32[3]", "{-5, 300, 7.5}", "u8[3]"), "{0, 255, 7}");
  EXPECT_EQ(Unary("convert", "s32[2]", "{300, -129}", "s8[2]"), "{44, 127}");
  EXPECT_EQ(Unary("convert", "s32[1]", "{2049}", "f16[1]"), "{2048}");
  EXPECT_EQ(Unary("convert", "f32[4]", "{0, -0, 2, nan}", "pred[4]"), "{false, false, true, true}");
  EXPECT_EQ(Unary("convert", "pred[2]", "{true, false}", "f32[2]"), "{1, 0}");
  EXPECT_EQ(Unary("convert", "f32[2]", "{1.00390625, 1.01171875}", "bf16[2]"), "{1, 1.015625}");
  EXPECT_EQ(Unary("convert", "s64[1]", "{16777217}", "f32[1]"), "{16777216}");
  EXPECT_EQ(Unary("convert", "u32[1]", "{4294967295}", "s32[1]"), "{-1}");
  EXPECT_EQ(Unary("convert", "s32[2]", "{-1, 20}", "s4[2]"), "{-1, 4}");
  EXPECT_EQ(Unary("convert", "f32[2]", "{100, -100}", "s4[2]"), "{7, -8}");
  EXPECT_EQ(Unary("convert", "f32[1]", "{1.5}", "c64[1]"), "{(1.5, 0)}");
  EXPECT_EQ(Unary("convert", "f64[1]", "{0.1}", "f32[1]"), "{0.1}");
  EXPECT_EQ(Unary("convert", "f32[2]", "{1.75, 1000}", "f8e5m2[2]"), "{1.75, 1024}");
}

TEST(EvaluatorElementwiseTest, HalfAndBfloat16RoundEveryOp) {
  // 2048 + 1 = 2049 is a tie between f16 neighbours 2048 and 2050: round to even.
  EXPECT_EQ(Binary("add", "f16[1]", "{2048}", "{1}"), "{2048}");
  EXPECT_EQ(Binary("add", "f16[1]", "{2048}", "{3}"), "{2052}");
  // f16(0.1) * 3 = 0.2999267578125, a tie rounded to even: 0.2998046875.
  absl::StatusOr<Literal> r = EvalText(ModuleText(
      "a = f16[1] constant({0.1})\n b = f16[1] constant({3})\n ROOT r = f16[1] multiply(a, b)"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->GetAsDouble(0), 0.2998046875);
  EXPECT_EQ(Binary("add", "bf16[2]", "{1, 1}", "{0.00390625, 0.01171875}"), "{1, 1.015625}");
  EXPECT_EQ(Binary("multiply", "f16[1]", "{300}", "{300}"), "{inf}");
  EXPECT_EQ(Unary("sqrt", "bf16[1]", "{2}"), "{1.4140625}");
  EXPECT_EQ(Binary("add", "f8e5m2[1]", "{1.5}", "{0.25}"), "{1.75}");
}

TEST(EvaluatorElementwiseTest, Complex) {
  EXPECT_EQ(Binary("multiply", "c64[1]", "{(1, 2)}", "{(3, -4)}"), "{(11, 2)}");
  EXPECT_EQ(Binary("add", "c128[1]", "{(1, 2)}", "{(3, -4)}"), "{(4, -2)}");
  EXPECT_EQ(Binary("divide", "c64[1]", "{(11, 2)}", "{(3, -4)}"), "{(1, 2)}");
  EXPECT_EQ(Unary("abs", "c64[1]", "{(3, 4)}", "f32[1]"), "{5}");
  EXPECT_EQ(Unary("real", "c64[1]", "{(3, 4)}", "f32[1]"), "{3}");
  EXPECT_EQ(Unary("imag", "c128[1]", "{(3, 4)}", "f64[1]"), "{4}");
  EXPECT_EQ(Unary("negate", "c64[1]", "{(3, 4)}"), "{(-3, -4)}");
  EXPECT_EQ(Unary("sign", "c64[1]", "{(3, 4)}"), "{(0.6, 0.8)}");
  EXPECT_EQ(Binary("complex", "f32[1]", "{1}", "{2}", "c64[1]"), "{(1, 2)}");
  EXPECT_EQ(Unary("exponential", "c64[1]", "{(0, 0)}"), "{(1, 0)}");
}

TEST(EvaluatorElementwiseTest, BitcastConvert) {
  EXPECT_EQ(Unary("bitcast-convert", "f32[1]", "{1}", "s32[1]"), "{1065353216}");
  EXPECT_EQ(Unary("bitcast-convert", "s32[1]", "{-1082130432}", "f32[1]"), "{-1}");
  EXPECT_EQ(Unary("bitcast-convert", "f16[1]", "{1}", "u16[1]"), "{15360}");
  // Narrowing adds a minor dimension of the pieces in memory (little-endian) order.
  EXPECT_EQ(Unary("bitcast-convert", "f32[]", "1", "u8[4]"), "{0, 0, 128, 63}");
  EXPECT_EQ(Unary("bitcast-convert", "u8[2]", "{52, 18}", "u16[]"), "4660");
  EXPECT_EQ(Unary("bitcast-convert", "u32[2]", "{1, 2}", "u64[]"), "8589934593");
  EXPECT_EQ(Unary("bitcast-convert", "f64[]", "-2", "u32[2]"), "{0, 3221225472}");
}

TEST(EvaluatorElementwiseTest, ReducePrecisionToHalfRange) {
  // 1 + 2^-11 ties to even (1); 70000 overflows f16's range; 1e-10 underflows to zero.
  EXPECT_EQ(Unary("reduce-precision", "f32[4]", "{1.00048828125, 70000, 1e-10, -3}", "",
                  ", exponent_bits=5, mantissa_bits=10"),
            "{1, inf, 0, -3}");
  EXPECT_EQ(Unary("reduce-precision", "f32[2]", "{1.00048828125, nan}", "",
                  ", exponent_bits=8, mantissa_bits=7"),
            "{1, nan}");
  EXPECT_EQ(Unary("reduce-precision", "f64[1]", "{1.5}", "", ", exponent_bits=11, mantissa_bits=0"),
            "{2}");
}

TEST(EvaluatorElementwiseTest, SelectAndClamp) {
  EXPECT_EQ(Eval("p = pred[3] constant({true, false, true})\n"
                 " a = s32[3] constant({1, 2, 3})\n b = s32[3] constant({10, 20, 30})\n"
                 " ROOT r = s32[3] select(p, a, b)"),
            "{1, 20, 3}");
  EXPECT_EQ(Eval("p = pred[] constant(false)\n"
                 " a = f32[2] constant({1, 2})\n b = f32[2] constant({10, 20})\n"
                 " ROOT r = f32[2] select(p, a, b)"),
            "{10, 20}");
  EXPECT_EQ(Eval("lo = f32[] constant(0)\n x = f32[4] constant({-1, 0.5, 2, nan})\n"
                 " hi = f32[] constant(1)\n ROOT r = f32[4] clamp(lo, x, hi)"),
            "{0, 0.5, 1, nan}");
  EXPECT_EQ(Eval("lo = s32[3] constant({0, 5, -3})\n x = s32[3] constant({-1, 7, 2})\n"
                 " hi = s32[3] constant({1, 6, 4})\n ROOT r = s32[3] clamp(lo, x, hi)"),
            "{0, 6, 2}");
}

TEST(EvaluatorElementwiseTest, ScalarOperandsAndRankZero) {
  EXPECT_EQ(Eval("a = f32[] constant(2)\n b = f32[] constant(3)\n ROOT r = f32[] multiply(a, b)"),
            "6");
  EXPECT_EQ(Binary("add", "f32[0]", "{}", "{}"), "{}");
}

TEST(EvaluatorElementwiseTest, InPlaceReuseKeepsOtherReadersIntact) {
  // `a` feeds two ops; the first must not overwrite it in place.
  EXPECT_EQ(Eval("c = f32[2] constant({1, 2})\n a = f32[2] add(c, c)\n"
                 " n = f32[2] negate(a)\n m = f32[2] multiply(a, a)\n"
                 " ROOT t = (f32[2], f32[2]) tuple(n, m)"),
            "({-2, -4}, {4, 16})");
}

}  // namespace
}  // namespace mltune::ir
