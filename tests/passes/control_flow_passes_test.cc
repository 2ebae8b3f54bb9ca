// Tests of the control-flow passes: simplify-while-loops, while-loop-invariant-code-motion,
// while-loop-constant-sinking, while-loop-trip-count-annotator, simplify-conditional and
// conditional-canonicalizer. Each case checks the exact rewrite, that the module still verifies
// and computes the same values, and (where XLA's pass is idempotent) that a second run is a no-op.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/hlo_printer.h"
#include "tests/passes/pass_corpus_sweep.h"
#include "tests/passes/pass_test_util.h"

namespace mltune::passes {
namespace {

using ir::Opcode;
using testing::CountOpcode;
using testing::Rewrite;

// Test modules reuse short names (p, i, x) in every computation; HLO wants them unique per module,
// so each name defined in a non-entry computation gets that computation's name as a suffix.
std::string Uniquify(std::string_view text) {
  std::vector<std::string> lines;
  for (size_t start = 0;;) {
    const size_t end = text.find('\n', start);
    lines.emplace_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  auto is_ident = [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-';
  };
  std::string block;
  std::set<std::string> defs;
  std::string out;
  for (size_t k = 0; k < lines.size(); ++k) {
    std::string line = lines[k];
    if (!line.empty() && line.back() == '{' && line.find('=') == std::string::npos &&
        line.rfind("ENTRY", 0) != 0 && line.rfind("HloModule", 0) != 0) {
      block = line.substr(0, line.find(' '));
      defs.clear();
      for (size_t j = k + 1; j < lines.size() && lines[j] != "}"; ++j) {
        std::string l = lines[j].substr(std::min(lines[j].find_first_not_of(' '), lines[j].size()));
        if (l.rfind("ROOT ", 0) == 0) l = l.substr(5);
        const size_t eq = l.find(" = ");
        if (eq != std::string::npos) defs.insert(l.substr(0, eq));
      }
    } else if (line == "}") {
      block.clear();
    } else if (!block.empty()) {
      std::string renamed;
      for (size_t i = 0; i < line.size();) {
        if (!is_ident(line[i])) {
          renamed += line[i++];
          continue;
        }
        size_t j = i;
        while (j < line.size() && is_ident(line[j])) ++j;
        std::string token = line.substr(i, j - i);
        renamed += defs.count(token) ? token + "." + block : token;
        i = j;
      }
      line = renamed;
    }
    out += line;
    if (k + 1 < lines.size()) out += "\n";
  }
  return out;
}

Rewrite RunAndCheck(std::string_view pass, std::string_view text, bool idempotent = true) {
  return testing::RunAndCheck(pass, Uniquify(text), idempotent);
}

const ir::Instruction* FindWhile(const ir::Module& m) {
  for (const ir::Computation* c : m.MakeComputationPostOrder()) {
    for (const ir::Instruction* i : c->instructions()) {
      if (i->opcode() == Opcode::kWhile) return i;
    }
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// simplify-while-loops

// A loop that squares x `trip_count` times, counting i from 0.
std::string SquaringLoop(int trip_count) {
  return absl::StrCat(R"(
HloModule m
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant()",
                      trip_count, R"()
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[4] get-tuple-element(p), index=1
  x2 = f32[4] multiply(x, x)
  ROOT t = (s32[], f32[4]) tuple(i1, x2)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
)");
}

TEST(WhileLoopSimplifierTest, RemovesLoopWithTripCountZero) {
  Rewrite r = RunAndCheck("simplify-while-loops", SquaringLoop(0));
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kWhile), 0);
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kParameter);
  EXPECT_EQ(r.after->computation_count(), 1);
}

TEST(WhileLoopSimplifierTest, InlinesLoopWithTripCountOne) {
  Rewrite r = RunAndCheck("simplify-while-loops", SquaringLoop(1));
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kWhile), 0);
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kMultiply);
  EXPECT_EQ(r.after->computation_count(), 1);
}

TEST(WhileLoopSimplifierTest, KeepsTripCountOneLoopWithSideEffect) {
  Rewrite r = RunAndCheck("simplify-while-loops", R"(
HloModule m
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(1)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  x = f32[4] rng(lo, hi), distribution=rng_uniform
  ROOT t = (s32[], f32[4]) tuple(i1, x)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  w = (s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kWhile), 1);
}

// A loop of 5 iterations whose third element is never read after the loop and feeds nothing else.
constexpr char kDeadElementLoop[] = R"(
HloModule m
cond {
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[4] get-tuple-element(p), index=1
  y = f32[4] get-tuple-element(p), index=2
  x1 = f32[4] add(x, x)
  y1 = f32[4] multiply(y, x)
  ROOT t = (s32[], f32[4], f32[4]) tuple(i1, x1, y1)
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[4], f32[4]) tuple(zero, x, y)
  w = (s32[], f32[4], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
)";

TEST(WhileLoopSimplifierTest, RemovesDeadStateElement) {
  Rewrite r = RunAndCheck("simplify-while-loops", kDeadElementLoop, /*idempotent=*/false);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape().tuple_size(), 2);
  EXPECT_EQ(CountOpcode(*w->while_body(), Opcode::kMultiply), 0);
  EXPECT_EQ(r.after->computation_count(), 3);  // no stale copies left
}

TEST(WhileLoopSimplifierTest, RemovesGroupOfPassedThroughElements) {
  // Element 1 is read after the loop but passed through unchanged; element 2 depends on it and
  // is unused: together they form a removable group.
  Rewrite r = RunAndCheck("simplify-while-loops", R"(
HloModule m
cond {
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[4] get-tuple-element(p), index=1
  y = f32[4] get-tuple-element(p), index=2
  y1 = f32[4] add(y, x)
  ROOT t = (s32[], f32[4], f32[4]) tuple(i1, x, y1)
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[4], f32[4]) tuple(zero, x, y)
  w = (s32[], f32[4], f32[4]) while(init), condition=cond, body=body
  g = f32[4] get-tuple-element(w), index=1
  c = s32[] get-tuple-element(w), index=0
  ROOT r = (f32[4], s32[]) tuple(g, c)
}
)",
                          /*idempotent=*/false);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape().tuple_size(), 1);
  // The passed-through element is read from the parameter after the loop.
  EXPECT_EQ(r.after->entry()->root()->operand(0)->opcode(), Opcode::kParameter);
}

TEST(WhileLoopSimplifierTest, KeepsElementReadByCondition) {
  Rewrite r = RunAndCheck("simplify-while-loops", R"(
HloModule m
cond {
  p = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  n = s32[] get-tuple-element(p), index=1
  ROOT t = (s32[], s32[]) tuple(i1, n)
}
ENTRY e {
  zero = s32[] constant(0)
  n = s32[] parameter(0)
  init = (s32[], s32[]) tuple(zero, n)
  w = (s32[], s32[]) while(init), condition=cond, body=body
  ROOT r = s32[] get-tuple-element(w), index=0
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(WhileLoopSimplifierTest, RemovesConstantStateElement) {
  Rewrite r = RunAndCheck("simplify-while-loops", R"(
HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
cond {
  p = (s32[], f32[4], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(4)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4], f32[2]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[4] get-tuple-element(p), index=1
  c = f32[2] get-tuple-element(p), index=2
  f0 = f32[] constant(0)
  s = f32[] reduce(c, f0), dimensions={0}, to_apply=add
  b = f32[4] broadcast(s), dimensions={}
  x1 = f32[4] add(x, b)
  k = f32[2] constant({1.5, 2.5})
  ROOT t = (s32[], f32[4], f32[2]) tuple(i1, x1, k)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  k = f32[2] constant({1.5, 2.5})
  init = (s32[], f32[4], f32[2]) tuple(zero, x, k)
  w = (s32[], f32[4], f32[2]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
}
)",
                          /*idempotent=*/false);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape().tuple_size(), 2);
  EXPECT_EQ(CountOpcode(*w->while_body(), Opcode::kConstant), 3);  // one, f0, the sunk k
}

TEST(WhileLoopSimplifierTest, MergesRepeatedPassThroughElements) {
  Rewrite r = RunAndCheck("simplify-while-loops", R"(
HloModule m
cond {
  p = (s32[], f32[4], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  a = f32[4] get-tuple-element(p), index=1
  b = f32[4] get-tuple-element(p), index=2
  acc = f32[4] get-tuple-element(p), index=3
  ab = f32[4] multiply(a, b)
  acc1 = f32[4] add(acc, ab)
  ROOT t = (s32[], f32[4], f32[4], f32[4]) tuple(i1, a, b, acc1)
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[4], f32[4], f32[4]) tuple(zero, x, x, y)
  w = (s32[], f32[4], f32[4], f32[4]) while(init), condition=cond, body=body
  g1 = f32[4] get-tuple-element(w), index=1
  g2 = f32[4] get-tuple-element(w), index=2
  g3 = f32[4] get-tuple-element(w), index=3
  ROOT r = (f32[4], f32[4], f32[4]) tuple(g1, g2, g3)
}
)",
                          /*idempotent=*/false);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape().tuple_size(), 3);
}

TEST(WhileLoopSimplifierTest, PropagatesScalarConstantThenRemovesIt) {
  constexpr char kText[] = R"(
HloModule m
cond {
  p = (s32[], s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  n = s32[] get-tuple-element(p), index=1
  x = f32[4] get-tuple-element(p), index=2
  x1 = f32[4] add(x, x)
  ROOT t = (s32[], s32[], f32[4]) tuple(i1, n, x1)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  n = s32[] constant(3)
  init = (s32[], s32[], f32[4]) tuple(zero, n, x)
  w = (s32[], s32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=2
}
)";
  Rewrite r = RunAndCheck("simplify-while-loops", kText, /*idempotent=*/false);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  // The condition compares against the constant now.
  EXPECT_EQ(w->while_condition()->root()->operand(1)->opcode(), Opcode::kConstant);
  // Run to a fixed point: the constant element goes, then nothing is left to simplify.
  std::unique_ptr<ir::Module> m = r.after->Clone();
  for (int k = 0; k < 5 && testing::RunPass("simplify-while-loops", *m); ++k) {
  }
  EXPECT_TRUE(mltune::testing::CheckEquivalent(*r.before, *m).ok());
  const ir::Instruction* w2 = FindWhile(*m);
  ASSERT_NE(w2, nullptr);
  EXPECT_EQ(w2->shape().tuple_size(), 2);
}

TEST(WhileLoopSimplifierTest, MergesInductionVariables) {
  Rewrite r = RunAndCheck("simplify-while-loops", R"(
HloModule m
cond {
  p = (s32[], s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(7)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  j = s32[] get-tuple-element(p), index=1
  three = s32[] constant(3)
  j1 = s32[] add(j, three)
  x = f32[4] get-tuple-element(p), index=2
  jf = f32[] convert(j)
  b = f32[4] broadcast(jf), dimensions={}
  x1 = f32[4] add(x, b)
  ROOT t = (s32[], s32[], f32[4]) tuple(i1, j1, x1)
}
ENTRY e {
  x = f32[4] parameter(0)
  j0 = s32[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], s32[], f32[4]) tuple(zero, j0, x)
  w = (s32[], s32[], f32[4]) while(init), condition=cond, body=body
  g1 = s32[] get-tuple-element(w), index=1
  g2 = f32[4] get-tuple-element(w), index=2
  ROOT r = (s32[], f32[4]) tuple(g1, g2)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  // j is passed through unchanged; its value is j0 + i * 3.
  const ir::Instruction* root = w->while_body()->root();
  EXPECT_EQ(root->operand(1)->opcode(), Opcode::kGetTupleElement);
  EXPECT_EQ(CountOpcode(*w->while_body(), Opcode::kMultiply), 1);
}

TEST(WhileLoopSimplifierTest, FlattensNestedTupleState) {
  Rewrite r = RunAndCheck("simplify-while-loops", R"(
HloModule m
cond {
  p = (s32[], (f32[4], f32[4])) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], (f32[4], f32[4])) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  xy = (f32[4], f32[4]) get-tuple-element(p), index=1
  x = f32[4] get-tuple-element(xy), index=0
  y = f32[4] get-tuple-element(xy), index=1
  x1 = f32[4] add(x, y)
  xy1 = (f32[4], f32[4]) tuple(x1, y)
  ROOT t = (s32[], (f32[4], f32[4])) tuple(i1, xy1)
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  zero = s32[] constant(0)
  xy = (f32[4], f32[4]) tuple(x, y)
  init = (s32[], (f32[4], f32[4])) tuple(zero, xy)
  ROOT w = (s32[], (f32[4], f32[4])) while(init), condition=cond, body=body
}
)",
                          /*idempotent=*/false);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape().tuple_size(), 3);
  for (const ir::Shape& e : w->shape().tuple_shapes()) EXPECT_FALSE(e.IsTuple());
}

TEST(WhileLoopSimplifierTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("simplify-while-loops", /*idempotent=*/false);
}

// ---------------------------------------------------------------------------------------------
// while-loop-invariant-code-motion

// A 5-iteration loop: x is passed through unchanged, y accumulates exp(x) (+ whatever `extra`).
std::string InvariantLoop(const std::string& body_ops, const std::string& y_update) {
  return R"(
HloModule m
cond {
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[4] get-tuple-element(p), index=1
  y = f32[4] get-tuple-element(p), index=2
)" + body_ops +
         R"(
  y1 = f32[4] add(y, )" +
         y_update + R"()
  ROOT t = (s32[], f32[4], f32[4]) tuple(i1, x, y1)
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[4], f32[4]) tuple(zero, x, y)
  w = (s32[], f32[4], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=2
}
)";
}

TEST(WhileLoopInvariantCodeMotionTest, HoistsInvariantComputation) {
  Rewrite r = RunAndCheck("while-loop-invariant-code-motion",
                          InvariantLoop("  e = f32[4] exponential(x)\n  s = f32[4] sine(e)", "s"));
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(CountOpcode(*w->while_body(), Opcode::kExp), 0);
  EXPECT_EQ(CountOpcode(*w->while_body(), Opcode::kSin), 0);
  EXPECT_EQ(CountOpcode(*r.after->entry(), Opcode::kSin), 1);
  // Both hoisted values are threaded through the loop, as XLA does (exp's becomes dead).
  EXPECT_EQ(w->shape().tuple_size(), 5);
}

TEST(WhileLoopInvariantCodeMotionTest, DoesNotHoistBroadcastAlone) {
  Rewrite r = RunAndCheck("while-loop-invariant-code-motion", R"(
HloModule m
cond {
  p = (s32[], f32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  x = f32[] get-tuple-element(p), index=1
  y = f32[4] get-tuple-element(p), index=2
  b = f32[4] broadcast(x), dimensions={}
  y1 = f32[4] add(y, b)
  ROOT t = (s32[], f32[], f32[4]) tuple(i1, x, y1)
}
ENTRY e {
  x = f32[] parameter(0)
  y = f32[4] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[], f32[4]) tuple(zero, x, y)
  w = (s32[], f32[], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=2
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(WhileLoopInvariantCodeMotionTest, HoistsBroadcastWithItsUser) {
  Rewrite r = RunAndCheck("while-loop-invariant-code-motion",
                          InvariantLoop("  c = f32[] constant(2)\n  b = f32[4] broadcast(c), "
                                        "dimensions={}\n  m = f32[4] multiply(x, b)",
                                        "m"));
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(CountOpcode(*w->while_body(), Opcode::kMultiply), 0);
  EXPECT_EQ(CountOpcode(*w->while_body(), Opcode::kBroadcast), 0);
  EXPECT_EQ(CountOpcode(*r.after->entry(), Opcode::kBroadcast), 1);
}

TEST(WhileLoopInvariantCodeMotionTest, KeepsSideEffectsAndVariantValues) {
  Rewrite r = RunAndCheck("while-loop-invariant-code-motion",
                          InvariantLoop("  lo = f32[] constant(0)\n  hi = f32[] constant(1)\n"
                                        "  rnd = f32[4] rng(lo, hi), distribution=rng_uniform\n"
                                        "  v = f32[4] multiply(y, rnd)",
                                        "v"));
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(WhileLoopInvariantCodeMotionTest, SkipsLoopRunningAtMostOnce) {
  std::string text = InvariantLoop("  e = f32[4] exponential(x)", "e");
  text.replace(text.find("constant(5)"), 11, "constant(1)");
  Rewrite r = RunAndCheck("while-loop-invariant-code-motion", text);
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(WhileLoopInvariantCodeMotionTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("while-loop-invariant-code-motion");
}

// ---------------------------------------------------------------------------------------------
// while-loop-constant-sinking

TEST(WhileLoopConstantSinkingTest, SinksConstantIntoBodyAndCondition) {
  Rewrite r = RunAndCheck("while-loop-constant-sinking", R"(
HloModule m
cond {
  p = (s32[], s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], s32[], f32[4], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  n = s32[] get-tuple-element(p), index=1
  c = f32[4] get-tuple-element(p), index=2
  x = f32[4] get-tuple-element(p), index=3
  x1 = f32[4] multiply(x, c)
  ROOT t = (s32[], s32[], f32[4], f32[4]) tuple(i1, n, c, x1)
}
ENTRY e {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  n = s32[] constant(4)
  c = f32[4] constant({1.5, -2, 0.5, 1})
  init = (s32[], s32[], f32[4], f32[4]) tuple(zero, n, c, x)
  w = (s32[], s32[], f32[4], f32[4]) while(init), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=3
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->while_condition()->root()->operand(1)->opcode(), Opcode::kConstant);
  const ir::Instruction* mul = w->while_body()->root()->operand(3);
  EXPECT_EQ(mul->operand(1)->opcode(), Opcode::kConstant);
  // The state still carries the elements; the body's result passes them on.
  EXPECT_EQ(w->while_body()->root()->operand(2)->opcode(), Opcode::kGetTupleElement);
}

TEST(WhileLoopConstantSinkingTest, IgnoresNonConstantInit) {
  Rewrite r =
      RunAndCheck("while-loop-constant-sinking", InvariantLoop("  e = f32[4] exponential(x)", "e"));
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(WhileLoopConstantSinkingTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("while-loop-constant-sinking");
}

// ---------------------------------------------------------------------------------------------
// while-loop-trip-count-annotator

TEST(WhileLoopTripCountAnnotatorTest, AnnotatesKnownTripCount) {
  Rewrite r = RunAndCheck("while-loop-trip-count-annotator",
                          InvariantLoop("  e = f32[4] exponential(x)", "e"));
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* w = FindWhile(*r.after);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(
      w->backend_config,
      "{\"known_trip_count\":{\"n\":\"5\"},\"known_init_step\":{\"init\":\"0\",\"step\":\"1\"},"
      "\"known_induction_variable\":{\"tuple_index\":\"0\"}}");
}

TEST(WhileLoopTripCountAnnotatorTest, BruteForcesOtherLoops) {
  // i = 1; i < 100; i *= 3 runs 5 times (1, 3, 9, 27, 81).
  Rewrite r = RunAndCheck("while-loop-trip-count-annotator", R"(
HloModule m
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(100)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  three = s32[] constant(3)
  i1 = s32[] multiply(i, three)
  x = f32[4] get-tuple-element(p), index=1
  x1 = f32[4] add(x, x)
  ROOT t = (s32[], f32[4]) tuple(i1, x1)
}
ENTRY e {
  x = f32[4] parameter(0)
  one = s32[] constant(1)
  init = (s32[], f32[4]) tuple(one, x)
  ROOT w = (s32[], f32[4]) while(init), condition=cond, body=body
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(
      r.after->entry()->root()->backend_config,
      "{\"known_trip_count\":{\"n\":\"5\"},\"known_induction_variable\":{\"tuple_index\":\"0\"}}");
}

TEST(WhileLoopTripCountAnnotatorTest, LeavesUnknownLoops) {
  Rewrite r = RunAndCheck("while-loop-trip-count-annotator", R"(
HloModule m
cond {
  p = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] get-tuple-element(p), index=1
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  p = (s32[], s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  n = s32[] get-tuple-element(p), index=1
  ROOT t = (s32[], s32[]) tuple(i1, n)
}
ENTRY e {
  n = s32[] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], s32[]) tuple(zero, n)
  ROOT w = (s32[], s32[]) while(init), condition=cond, body=body
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(WhileLoopTripCountAnnotatorTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("while-loop-trip-count-annotator");
}

// ---------------------------------------------------------------------------------------------
// simplify-conditional

// A conditional on `pred_text` (an entry instruction named `pr`) with two branches.
std::string TwoBranchConditional(const std::string& pred_text, const std::string& true_ops,
                                 const std::string& false_ops) {
  return R"(
HloModule m
on_true {
  p = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(p), index=0
  b = f32[4] get-tuple-element(p), index=1
)" + true_ops +
         R"(
}
on_false {
  p = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(p), index=0
  b = f32[4] get-tuple-element(p), index=1
)" + false_ops +
         R"(
}
ENTRY e {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  q = f32[] parameter(2)
  zq = f32[] constant(0)
)" + pred_text +
         R"(
  ops = (f32[4], f32[4]) tuple(x, y)
  c = (f32[4], f32[4]) conditional(pr, ops, ops), branch_computations={on_true, on_false}
  c0 = f32[4] get-tuple-element(c), index=0
  c1 = f32[4] get-tuple-element(c), index=1
  ROOT r = (f32[4], f32[4]) tuple(c0, c1)
}
)";
}

constexpr char kCheapTrue[] =
    "  s = f32[4] add(a, b)\n  m = f32[4] multiply(a, b)\n  ROOT t = (f32[4], f32[4]) tuple(s, m)";
constexpr char kCheapFalse[] =
    "  d = f32[4] subtract(a, b)\n  ROOT t = (f32[4], f32[4]) tuple(d, a)";
constexpr char kExpensiveTrue[] =
    "  s = f32[4] sort(a), dimensions={0}, to_apply=lt\n  m = f32[4] multiply(a, b)\n  ROOT t = "
    "(f32[4], f32[4]) tuple(s, m)";

TEST(ConditionalSimplifierTest, InlinesBranchOfConstantPredicate) {
  Rewrite r =
      RunAndCheck("simplify-conditional",
                  TwoBranchConditional("  pr = pred[] constant(false)", kCheapTrue, kCheapFalse));
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConditional), 0);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kSubtract), 1);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kAdd), 0);
  EXPECT_EQ(r.after->computation_count(), 1);
}

TEST(ConditionalSimplifierTest, TurnsCheapBranchesIntoSelect) {
  Rewrite r = RunAndCheck(
      "simplify-conditional",
      TwoBranchConditional("  pr = pred[] compare(q, zq), direction=GT", kCheapTrue, kCheapFalse));
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConditional), 0);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kSelect), 2);
}

TEST(ConditionalSimplifierTest, DropsUnusedResultAndOperandElements) {
  std::string text = TwoBranchConditional("  pr = pred[] compare(q, zq), direction=GT",
                                          kExpensiveTrue, kCheapFalse);
  text.replace(text.find("HloModule m\n"), 12,
               "HloModule m\nlt {\n  l = f32[] parameter(0)\n  rr = f32[] parameter(1)\n"
               "  ROOT c = pred[] compare(l, rr), direction=LT\n}\n");
  text.replace(text.find("  ROOT r = (f32[4], f32[4]) tuple(c0, c1)"), 41,
               "  ROOT r = f32[4] negate(c0)");
  Rewrite r = RunAndCheck("simplify-conditional", text);
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  ASSERT_EQ(CountOpcode(*r.after, Opcode::kConditional), 1);
  const ir::Instruction* c = r.after->entry()->root()->operand(0)->operand(0);
  ASSERT_EQ(c->opcode(), Opcode::kConditional);
  EXPECT_EQ(c->shape().tuple_size(), 1);
  // The true branch reads only element 0 of its operand now; the false branch both.
  EXPECT_EQ(c->operand(1)->shape().tuple_size(), 1);
  EXPECT_EQ(c->operand(2)->shape().tuple_size(), 2);
}

TEST(ConditionalSimplifierTest, MergesDuplicateResults) {
  Rewrite r = RunAndCheck(
      "simplify-conditional",
      TwoBranchConditional("  pr = pred[] compare(q, zq), direction=GT",
                           "  s = f32[4] sort(a), dimensions={0}, to_apply=lt\n  ROOT t = (f32[4], "
                           "f32[4]) tuple(s, s)",
                           "  ROOT t = (f32[4], f32[4]) tuple(b, b)")
          .replace(0, 12,
                   "HloModule m\nlt {\n  l = f32[] parameter(0)\n  rr = f32[] parameter(1)\n"
                   "  ROOT c = pred[] compare(l, rr), direction=LT\n}\n"));
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* root = r.after->entry()->root();
  EXPECT_EQ(root->operand(0)->tuple_index, 0);
  EXPECT_EQ(root->operand(1)->tuple_index, 0);
  const ir::Instruction* c = root->operand(0)->operand(0);
  ASSERT_EQ(c->opcode(), Opcode::kConditional);
  EXPECT_EQ(c->shape().tuple_size(), 1);
}

TEST(ConditionalSimplifierTest, IndexOutOfRangePicksLastBranch) {
  Rewrite r = RunAndCheck("simplify-conditional", R"(
HloModule m
b0 {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
b1 {
  p = f32[4] parameter(0)
  ROOT e = f32[4] exponential(p)
}
b2 {
  p = f32[4] parameter(0)
  ROOT s = f32[4] sine(p)
}
ENTRY e {
  x = f32[4] parameter(0)
  i = s32[] constant(7)
  ROOT c = f32[4] conditional(i, x, x, x), branch_computations={b0, b1, b2}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kSin);
}

TEST(ConditionalSimplifierTest, InlinesSingleBranch) {
  Rewrite r = RunAndCheck("simplify-conditional", R"(
HloModule m
b0 {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
ENTRY e {
  x = f32[4] parameter(0)
  i = s32[] parameter(1)
  ROOT c = f32[4] conditional(i, x), branch_computations={b0}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->entry()->root()->opcode(), Opcode::kNegate);
}

TEST(ConditionalSimplifierTest, KeepsConditionalWithSideEffect) {
  Rewrite r = RunAndCheck("simplify-conditional", R"(
HloModule m
b0 {
  p = f32[] parameter(0)
  ROOT n = f32[4] rng(p, p), distribution=rng_uniform
}
b1 {
  p = f32[] parameter(0)
  ROOT b = f32[4] broadcast(p), dimensions={}
}
ENTRY e {
  x = f32[] parameter(0)
  pr = pred[] constant(true)
  ROOT c = f32[4] conditional(pr, x, x), branch_computations={b0, b1}
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(ConditionalSimplifierTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("simplify-conditional");
}

// ---------------------------------------------------------------------------------------------
// conditional-canonicalizer

TEST(ConditionalCanonicalizerTest, WrapsArrayResultInTuple) {
  Rewrite r = RunAndCheck("conditional-canonicalizer", R"(
HloModule m
b0 {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
b1 {
  p = f32[4] parameter(0)
  ROOT e = f32[4] exponential(p)
}
ENTRY e {
  x = f32[4] parameter(0)
  i = s32[] parameter(1)
  c = f32[4] conditional(i, x, x), branch_computations={b0, b1}
  ROOT a = f32[4] add(c, x)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  const ir::Instruction* gte = r.after->entry()->root()->operand(0);
  ASSERT_EQ(gte->opcode(), Opcode::kGetTupleElement);
  EXPECT_TRUE(gte->operand(0)->shape().IsTuple());
  EXPECT_EQ(r.after->FindComputation("b0")->root()->opcode(), Opcode::kTuple);
}

TEST(ConditionalCanonicalizerTest, ClonesSharedBranch) {
  Rewrite r = RunAndCheck("conditional-canonicalizer", R"(
HloModule m
b0 {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
ENTRY e {
  x = f32[4] parameter(0)
  pr = pred[] parameter(1)
  c = f32[4] conditional(pr, x, x), true_computation=b0, false_computation=b0
  k = f32[4] call(x), to_apply=b0
  ROOT a = f32[4] add(c, k)
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(r.after->FindComputation("b0")->root()->opcode(), Opcode::kNegate);
  EXPECT_EQ(r.after->computation_count(), 3);
}

TEST(ConditionalCanonicalizerTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("conditional-canonicalizer");
}

// ---------------------------------------------------------------------------------------------
// conditional-to-select

TEST(ConditionalToSelectTest, RewritesConditionalInsideMap) {
  Rewrite r = RunAndCheck("conditional-to-select", R"(
HloModule m
neg {
  p = f32[] parameter(0)
  ROOT n = f32[] negate(p)
}
ex {
  p = f32[] parameter(0)
  ROOT e = f32[] exponential(p)
}
mapped {
  x = f32[] parameter(0)
  z = f32[] constant(0)
  pr = pred[] compare(x, z), direction=GT
  ROOT c = f32[] conditional(pr, x, x), true_computation=neg, false_computation=ex
}
ENTRY e {
  v = f32[8] parameter(0)
  ROOT m = f32[8] map(v), dimensions={0}, to_apply=mapped
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(CountOpcode(*r.after, Opcode::kConditional), 0);
  const ir::Computation* mapped = r.after->FindComputation("mapped");
  ASSERT_NE(mapped, nullptr);
  EXPECT_EQ(mapped->root()->opcode(), Opcode::kSelect);
}

TEST(ConditionalToSelectTest, LeavesSequentialConditionals) {
  Rewrite r = RunAndCheck("conditional-to-select", R"(
HloModule m
neg {
  p = f32[4] parameter(0)
  ROOT n = f32[4] negate(p)
}
ex {
  p = f32[4] parameter(0)
  ROOT e = f32[4] exponential(p)
}
ENTRY e {
  v = f32[4] parameter(0)
  pr = pred[] parameter(1)
  ROOT c = f32[4] conditional(pr, v, v), true_computation=neg, false_computation=ex
}
)");
  ASSERT_NE(r.after, nullptr);
  EXPECT_FALSE(r.changed);
}

TEST(ConditionalToSelectTest, CorpusSweep) {
  if (mltune::testing::CorpusFiles().empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  testing::SweepCorpus("conditional-to-select");
}

}  // namespace
}  // namespace mltune::passes
