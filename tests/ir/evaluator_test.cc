// The reference evaluator's computation walk: control flow (while, conditional, call, fusion),
// tuples, parameters, refusals with clear errors, resource limits, and seeded random arguments.
#include <cmath>
#include <set>

#include "gtest/gtest.h"
#include "tests/ir/evaluator_test_util.h"

namespace mltune::ir {
namespace {

using eval_test::Eval;
using eval_test::EvalText;
using eval_test::MakeLiteral;
using eval_test::ModuleText;

constexpr char kSumLoop[] = R"(
HloModule sum_loop

cond {
  cond.s = (s32[], s32[]) parameter(0)
  cond.i = s32[] get-tuple-element(cond.s), index=0
  cond.ten = s32[] constant(10)
  ROOT cond.c = pred[] compare(cond.i, cond.ten), direction=LE
}

body {
  body.s = (s32[], s32[]) parameter(0)
  body.i = s32[] get-tuple-element(body.s), index=0
  body.acc = s32[] get-tuple-element(body.s), index=1
  body.one = s32[] constant(1)
  body.next = s32[] add(body.i, body.one)
  body.sum = s32[] add(body.acc, body.i)
  ROOT body.t = (s32[], s32[]) tuple(body.next, body.sum)
}

ENTRY main {
  one = s32[] constant(1)
  zero = s32[] constant(0)
  init = (s32[], s32[]) tuple(one, zero)
  w = (s32[], s32[]) while(init), condition=cond, body=body
  ROOT r = s32[] get-tuple-element(w), index=1
}
)";

TEST(EvaluatorTest, WhileLoopSumsOneToTen) {
  absl::StatusOr<Literal> r = EvalText(kSumLoop);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ToString(), "55");
}

TEST(EvaluatorTest, WhileLoopStopsAtIterationLimit) {
  EvalOptions options;
  options.max_loop_iterations = 5;
  absl::StatusOr<Literal> r = EvalText(kSumLoop, {}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(r.status().message()).find("max_loop_iterations"), std::string::npos);
}

TEST(EvaluatorTest, WhileLoopUpdatesBufferInPlaceCorrectly) {
  // Writes i * i into slot i of a carried buffer: exercises moving loop state between
  // iterations and updating it in place.
  constexpr char kText[] = R"(
HloModule squares

cond {
  cond.s = (s32[], s32[5]) parameter(0)
  cond.i = s32[] get-tuple-element(cond.s), index=0
  cond.n = s32[] constant(5)
  ROOT cond.c = pred[] compare(cond.i, cond.n), direction=LT
}

body {
  body.s = (s32[], s32[5]) parameter(0)
  body.i = s32[] get-tuple-element(body.s), index=0
  body.buf = s32[5] get-tuple-element(body.s), index=1
  body.sq = s32[] multiply(body.i, body.i)
  body.u = s32[1] reshape(body.sq)
  body.upd = s32[5] dynamic-update-slice(body.buf, body.u, body.i)
  body.one = s32[] constant(1)
  body.next = s32[] add(body.i, body.one)
  ROOT body.t = (s32[], s32[5]) tuple(body.next, body.upd)
}

ENTRY main {
  zero = s32[] constant(0)
  buf = s32[5] broadcast(zero), dimensions={}
  init = (s32[], s32[5]) tuple(zero, buf)
  w = (s32[], s32[5]) while(init), condition=cond, body=body
  ROOT r = s32[5] get-tuple-element(w), index=1
}
)";
  absl::StatusOr<Literal> r = EvalText(kText);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ToString(), "{0, 1, 4, 9, 16}");
}

constexpr char kBranches[] = R"(
double {
  double.x = f32[] parameter(0)
  ROOT double.y = f32[] add(double.x, double.x)
}
negate {
  negate.x = f32[] parameter(0)
  ROOT negate.y = f32[] negate(negate.x)
}
square {
  square.x = f32[] parameter(0)
  ROOT square.y = f32[] multiply(square.x, square.x)
}
)";

std::string PredConditional(bool p) {
  return Eval(absl::StrCat("p = pred[] constant(", p ? "true" : "false",
                           ")\n x = f32[] constant(3)\n"
                           " ROOT r = f32[] conditional(p, x, x), true_computation=double,"
                           " false_computation=negate"),
              kBranches);
}

std::string IndexConditional(int index) {
  return Eval(absl::StrCat("i = s32[] constant(", index,
                           ")\n x = f32[] constant(3)\n"
                           " ROOT r = f32[] conditional(i, x, x, x),"
                           " branch_computations={double, negate, square}"),
              kBranches);
}

TEST(EvaluatorTest, ConditionalPredicateForm) {
  EXPECT_EQ(PredConditional(true), "6");
  EXPECT_EQ(PredConditional(false), "-3");
}

TEST(EvaluatorTest, ConditionalIndexFormRunsLastBranchWhenOutOfRange) {
  EXPECT_EQ(IndexConditional(0), "6");
  EXPECT_EQ(IndexConditional(1), "-3");
  EXPECT_EQ(IndexConditional(2), "9");
  EXPECT_EQ(IndexConditional(7), "9");
  EXPECT_EQ(IndexConditional(-1), "9");
}

TEST(EvaluatorTest, CallAndFusion) {
  constexpr char kComputations[] = R"(
axpy {
  axpy.a = f32[] parameter(0)
  axpy.x = f32[2] parameter(1)
  axpy.y = f32[2] parameter(2)
  axpy.ab = f32[2] broadcast(axpy.a), dimensions={}
  axpy.ax = f32[2] multiply(axpy.ab, axpy.x)
  ROOT axpy.r = f32[2] add(axpy.ax, axpy.y)
}
)";
  const char* inputs =
      "a = f32[] constant(2)\n x = f32[2] constant({1, 2})\n"
      " y = f32[2] constant({10, 20})\n";
  EXPECT_EQ(
      Eval(absl::StrCat(inputs, "ROOT r = f32[2] call(a, x, y), to_apply=axpy"), kComputations),
      "{12, 24}");
  EXPECT_EQ(Eval(absl::StrCat(inputs, "ROOT r = f32[2] fusion(a, x, y), kind=kLoop, calls=axpy"),
                 kComputations),
            "{12, 24}");
}

TEST(EvaluatorTest, TuplesAndPassThroughOps) {
  EXPECT_EQ(Eval("a = s32[2] constant({1, 2})\n b = f32[] constant(0.5)\n"
                 " t = (s32[2], f32[]) tuple(a, b)\n n = ((s32[2], f32[]), s32[2]) tuple(t, a)\n"
                 " g = (s32[2], f32[]) get-tuple-element(n), index=0\n"
                 " ROOT r = f32[] get-tuple-element(g), index=1"),
            "0.5");
  // The same value twice in a tuple, then both elements read: neither may be moved away.
  EXPECT_EQ(Eval("a = s32[2] constant({1, 2})\n c = s32[2] add(a, a)\n"
                 " t = (s32[2], s32[2]) tuple(c, c)\n x = s32[2] get-tuple-element(t), index=0\n"
                 " y = s32[2] get-tuple-element(t), index=1\n"
                 " ROOT r = s32[2] multiply(x, y)"),
            "{4, 16}");
  EXPECT_EQ(Eval("a = s32[2] constant({1, 2})\n t = (s32[2]) tuple(a)\n"
                 " b = (s32[2]) opt-barrier(t)\n ROOT r = s32[2] get-tuple-element(b), index=0"),
            "{1, 2}");
  EXPECT_EQ(Eval("a = s32[2] constant({1, 2})\n tok = token[] after-all()\n"
                 " ROOT r = s32[2] add-dependency(a, tok)"),
            "{1, 2}");
  EXPECT_EQ(Eval("ROOT r = u32[] replica-id()"), "0");
  EXPECT_EQ(Eval("ROOT r = u32[] partition-id()"), "0");
}

TEST(EvaluatorTest, ParametersAndArgumentChecks) {
  const std::string text =
      ModuleText("p = f32[2] parameter(0)\n q = f32[2] parameter(1)\n ROOT r = f32[2] add(p, q)");
  std::vector<Literal> args;
  args.push_back(MakeLiteral("f32[2]", {1, 2}));
  args.push_back(MakeLiteral("f32[2]", {0.5, 0.25}));
  absl::StatusOr<Literal> r = EvalText(text, std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->ToString(), "{1.5, 2.25}");

  std::vector<Literal> one;
  one.push_back(MakeLiteral("f32[2]", {1, 2}));
  EXPECT_EQ(EvalText(text, std::move(one)).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<Literal> wrong;
  wrong.push_back(MakeLiteral("f32[2]", {1, 2}));
  wrong.push_back(MakeLiteral("s32[2]", {1, 2}));
  EXPECT_EQ(EvalText(text, std::move(wrong)).status().code(), absl::StatusCode::kInvalidArgument);
}

void ExpectRefused(const std::string& text, const std::string& words) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloText(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const absl::Status check = CheckEvaluable(**module);
  EXPECT_EQ(check.code(), absl::StatusCode::kUnimplemented) << check;
  EXPECT_NE(std::string(check.message()).find(std::string(words)), std::string::npos) << check;
  absl::StatusOr<Literal> r = Evaluate(**module, {});
  EXPECT_EQ(r.status(), check);
}

TEST(EvaluatorTest, RefusesCollectivesNamingTheInstruction) {
  ExpectRefused(ModuleText("a = f32[2] constant({1, 2})\n"
                           " ROOT ar = f32[2] all-reduce(a), replica_groups={}, to_apply=add_f32",
                           eval_test::kReducers),
                "ar (all-reduce)");
  ExpectRefused(ModuleText("a = f32[2] constant({1, 2})\n"
                           " ROOT ag = f32[4] all-gather(a), dimensions={0}, replica_groups={}"),
                "collective all-gather");
}

TEST(EvaluatorTest, RefusesUnknownCustomCallsAndTransfers) {
  ExpectRefused(ModuleText("a = f32[2] constant({1, 2})\n"
                           " ROOT c = f32[2] custom-call(a), custom_call_target=\"MyKernel\""),
                "\"MyKernel\"");
  ExpectRefused(ModuleText("t = token[] after-all()\n"
                           " ROOT i = (f32[2], token[]) infeed(t)"),
                "infeed");
}

TEST(EvaluatorTest, RefusesDynamicShapesAndUndefinedRngBitGenerators) {
  ExpectRefused(ModuleText("ROOT p = f32[<=4] parameter(0)"), "dynamic shape");
  // Threefry takes a u64[2] state (evaluator_rng_bits_test runs the defined ones).
  ExpectRefused(ModuleText("s = u64[3] constant({1, 2, 3})\n"
                           " ROOT r = (u64[3], u32[4]) rng-bit-generator(s),"
                           " algorithm=rng_three_fry"),
                "rng-bit-generator");
}

TEST(EvaluatorTest, RefusesElidedConstants) {
  ExpectRefused(ModuleText("ROOT c = f32[4] constant({...})"), "elided");
}

TEST(EvaluatorTest, RefusesArraysOverTheByteLimit) {
  EvalOptions options;
  options.max_array_bytes = 1000;
  absl::StatusOr<Literal> r =
      EvalText(ModuleText("z = f32[] constant(0)\n ROOT b = f32[1000] broadcast(z), dimensions={}"),
               {}, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(EvalText(ModuleText("z = f32[] constant(0)\n ROOT b = f32[250] broadcast(z),"
                                  " dimensions={}"),
                       {}, options)
                  .ok());
}

TEST(EvaluatorTest, ErrorsNameTheFailingInstruction) {
  // A bad operand count is caught at run time with the instruction named.
  absl::StatusOr<Literal> r = EvalText(
      ModuleText("a = f32[3] constant({1, 2, 3})\n ROOT s = f32[2] slice(a), slice={[0:3]}"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("s:"), std::string::npos) << r.status();
}

TEST(EvaluatorTest, RandomArgumentsAreSeededAndInRange) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloText(ModuleText(
      "f = f32[1000] parameter(0)\n i = s32[1000] parameter(1)\n p = pred[1000] parameter(2)\n"
      " h = bf16[100] parameter(3)\n c = c64[10] parameter(4)\n u = u8[100] parameter(5)\n"
      " ROOT t = (f32[1000], s32[1000], pred[1000], bf16[100], c64[10], u8[100])"
      " tuple(f, i, p, h, c, u)"));
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::vector<Literal>> a = MakeRandomArguments(**module, 42);
  absl::StatusOr<std::vector<Literal>> b = MakeRandomArguments(**module, 42);
  absl::StatusOr<std::vector<Literal>> c = MakeRandomArguments(**module, 43);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_EQ(a->size(), 6u);
  for (size_t k = 0; k < a->size(); ++k) EXPECT_TRUE((*a)[k].BitwiseEqual((*b)[k])) << k;
  EXPECT_FALSE((*a)[0].BitwiseEqual((*c)[0]));
  double lo = 1, hi = -1;
  for (int64_t i = 0; i < 1000; ++i) {
    const double f = (*a)[0].GetAsDouble(i);
    lo = std::min(lo, f);
    hi = std::max(hi, f);
    EXPECT_GE(f, -1.0);
    EXPECT_LT(f, 1.0);
  }
  EXPECT_LT(lo, -0.9);
  EXPECT_GT(hi, 0.9);
  std::set<int64_t> ints;
  int64_t trues = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    ints.insert((*a)[1].GetAsInt64(i));
    trues += (*a)[2].GetAsBool(i);
  }
  EXPECT_EQ(ints, (std::set<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_GT(trues, 400);
  EXPECT_LT(trues, 600);
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_GE((*a)[3].GetAsDouble(i), -1.0);
    EXPECT_LT((*a)[3].GetAsDouble(i), 1.0);
    EXPECT_LT((*a)[5].GetAsInt64(i), 8);
  }
  for (int64_t i = 0; i < 10; ++i) EXPECT_LT(std::abs((*a)[4].GetAsComplex(i).imag()), 1.0);
  // Evaluating the module on its random arguments returns them unchanged.
  absl::StatusOr<Literal> r = Evaluate(**module, *a);
  ASSERT_TRUE(r.ok()) << r.status();
  for (size_t k = 0; k < a->size(); ++k) EXPECT_TRUE(r->elements()[k].BitwiseEqual((*a)[k]));
}

TEST(EvaluatorTest, RngIsDeterministicPerSeedAndInRange) {
  const std::string text = ModuleText(
      "lo = f32[] constant(2)\n hi = f32[] constant(3)\n"
      " u = f32[1000] rng(lo, hi), distribution=rng_uniform\n"
      " z = f32[] constant(0)\n one = f32[] constant(1)\n"
      " n = f32[1000] rng(z, one), distribution=rng_normal\n"
      " a = s32[] constant(-2)\n b = s32[] constant(2)\n"
      " k = s32[1000] rng(a, b), distribution=rng_uniform\n"
      " ROOT t = (f32[1000], f32[1000], s32[1000]) tuple(u, n, k)");
  EvalOptions seed1, seed2;
  seed2.rng_seed = 99;
  absl::StatusOr<Literal> a = EvalText(text, {}, seed1);
  absl::StatusOr<Literal> b = EvalText(text, {}, seed1);
  absl::StatusOr<Literal> c = EvalText(text, {}, seed2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status();
  EXPECT_TRUE(a->BitwiseEqual(*b));
  EXPECT_FALSE(a->BitwiseEqual(*c));
  double mean = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    const double u = a->elements()[0].GetAsDouble(i);
    EXPECT_GE(u, 2.0);
    EXPECT_LT(u, 3.0);
    mean += a->elements()[1].GetAsDouble(i) / 1000;
    const int64_t k = a->elements()[2].GetAsInt64(i);
    EXPECT_GE(k, -2);
    EXPECT_LT(k, 2);
  }
  EXPECT_LT(std::abs(mean), 0.15);
}

TEST(EvaluatorTest, CheckEvaluableAcceptsSupportedModules) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloText(kSumLoop);
  ASSERT_TRUE(module.ok());
  EXPECT_TRUE(CheckEvaluable(**module).ok());
}

}  // namespace
}  // namespace mltune::ir
