// The verifier against HLO text: every real corpus module must verify, and hand-written broken
// snippets must fail with an error naming the offending instruction.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/computation.h"
#include "ir/hlo_parser.h"
#include "ir/module.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "tests/support/corpus.h"

namespace mltune::ir {
namespace {

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status() << "\n" << text;
  return m.ok() ? *std::move(m) : nullptr;
}

std::string VerifyText(const std::string& text, bool check_layouts = false) {
  std::unique_ptr<Module> m = Parse(text);
  if (m == nullptr) return "parse error";
  VerifyOptions options;
  options.check_layouts = check_layouts;
  absl::Status st = VerifyModule(*m, options);
  return st.ok() ? "OK" : std::string(st.message());
}

TEST(CorpusVerifyTest, EveryCorpusModuleVerifies) {
  const std::vector<std::string> files = mltune::testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  int verified = 0;
  for (const std::string& path : files) {
    absl::StatusOr<std::unique_ptr<Module>> m = ParseHloFile(path);
    ASSERT_TRUE(m.ok()) << path << ": " << m.status();
    absl::Status st = VerifyModule(**m);
    EXPECT_TRUE(st.ok()) << path << ": " << st;
    VerifyOptions with_layouts;
    with_layouts.check_layouts = true;
    absl::Status layouts = VerifyModule(**m, with_layouts);
    EXPECT_TRUE(layouts.ok()) << path << " (check_layouts): " << layouts;
    if (st.ok() && layouts.ok()) ++verified;
  }
  std::printf("%d of %zu corpus modules verify\n", verified, files.size());
}

// The rules must bite on real modules too: growing the declared shape of an instruction whose
// shape is derived (by a minor dimension of 7) must be caught at it or at one of its users.
TEST(CorpusVerifyTest, MutatedCorpusShapesAreRejected) {
  const std::vector<std::string> files = mltune::testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  int64_t derived = 0, declared = 0, mutated = 0;
  for (const std::string& path : files) {
    absl::StatusOr<std::unique_ptr<Module>> m = ParseHloFile(path);
    ASSERT_TRUE(m.ok()) << path << ": " << m.status();
    int64_t budget = 40;  // mutations per module, spread over the module
    for (Computation* c : (*m)->computations()) {
      const std::vector<Instruction*> instrs = c->instructions();
      const size_t step = std::max<size_t>(1, instrs.size() / 20);
      for (size_t k = 0; k < instrs.size(); ++k) {
        Instruction* i = instrs[k];
        absl::StatusOr<std::optional<Shape>> inferred = InferShape(*i);
        ASSERT_TRUE(inferred.ok()) << path << ": " << inferred.status();
        if (!inferred->has_value()) {
          ++declared;
          continue;
        }
        ++derived;
        if (k % step != 0 || budget <= 0 || !i->shape().IsArray()) continue;
        const Shape original = i->shape();
        std::vector<int64_t> dims = original.dimensions();
        dims.push_back(7);
        i->set_shape(Shape(original.element_type(), dims));
        absl::StatusOr<std::optional<Shape>> again = InferShape(*i);
        if (again.ok() && again->has_value() && (*again)->Compatible(i->shape())) {
          i->set_shape(original);  // the result dims come from the declaration (broadcast, ...)
          continue;
        }
        --budget;
        ++mutated;
        absl::Status st = VerifyModule(**m);
        std::vector<std::string> accepted = {absl::StrCat("instruction ", i->name(), " (line ")};
        for (const Instruction* u : i->users()) {
          accepted.push_back(absl::StrCat("instruction ", u->name(), " (line "));
        }
        if (c->root() == i) accepted.push_back("instruction ");  // callers see a new signature
        const std::string msg(st.message());
        EXPECT_TRUE(
            std::any_of(accepted.begin(), accepted.end(),
                        [&](const std::string& a) { return msg.find(a) != std::string::npos; }))
            << path << ": mutating " << i->name() << " gave: " << (st.ok() ? "OK" : msg);
        i->set_shape(original);
      }
    }
    ASSERT_TRUE(VerifyModule(**m).ok()) << path;
  }
  std::printf("corpus instructions: %lld with derived shapes, %lld declared; %lld mutations\n",
              static_cast<long long>(derived), static_cast<long long>(declared),
              static_cast<long long>(mutated));
}

TEST(CorpusVerifyTest, LargestModuleVerifiesQuickly) {
  const std::vector<std::string> files = mltune::testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  std::string largest;
  size_t largest_size = 0;
  for (const std::string& path : files) {
    const size_t size = mltune::testing::ReadFile(path).size();
    if (size > largest_size) {
      largest_size = size;
      largest = path;
    }
  }
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloFile(largest);
  ASSERT_TRUE(m.ok()) << m.status();
  double best_ms = 1e9;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    absl::Status st = VerifyModule(**m);
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(st.ok()) << st;
    best_ms = std::min(best_ms, ms);
  }
  std::printf("%s: %lld instructions, %zu bytes, verified in %.2f ms\n", largest.c_str(),
              static_cast<long long>((*m)->instruction_count()), largest_size, best_ms);
  // The budget is 100 ms in Release; unoptimized and sanitizer builds get more room.
  EXPECT_LT(best_ms, 1000.0);
}

TEST(CorpusVerifyTest, ValidSnippets) {
  EXPECT_EQ(VerifyText(R"(
HloModule m, input_output_alias={ {1, 0}: (0, {}, may-alias) }

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

less {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  li = s32[] parameter(2)
  ri = s32[] parameter(3)
  ROOT lt = pred[] compare(lhs, rhs), direction=LT
}

ENTRY main {
  x = f32[4,8]{1,0} parameter(0)
  w = f32[8,16]{1,0} parameter(1)
  idx = s32[4,8] iota(), iota_dimension=1
  d = f32[4,16]{1,0} dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  r = f32[4]{0} reduce(d, zero), dimensions={1}, to_apply=add_f32
  bc = f32[4,16] broadcast(r), dimensions={0}
  sub = f32[4,16] subtract(d, bc)
  sorted = (f32[4,8], s32[4,8]) sort(x, idx), dimensions={1}, to_apply=less
  p = f32[6,10] pad(d, zero), padding=1_1x-2_-4
  sl = f32[2,8] slice(x), slice={[0:4:2], [0:8]}
  ROOT t = (f32[4,16], (f32[4,8], s32[4,8]), f32[6,10], f32[2,8]) tuple(sub, sorted, p, sl)
}
)"),
            "OK");
}

TEST(CorpusVerifyTest, BrokenSnippetsNameTheInstruction) {
  // Operands of an add differ.
  EXPECT_EQ(
      VerifyText(R"(
HloModule m
ENTRY main {
  a = f32[2,3] parameter(0)
  b = f32[3,2] parameter(1)
  ROOT add.3 = f32[2,3] add(a, b)
}
)"),
      "computation main, instruction add.3 (line 6): operand shapes f32[2,3] and f32[3,2] differ");

  // Contracting dimensions of different sizes.
  EXPECT_EQ(VerifyText(R"(
HloModule m
ENTRY main {
  a = f32[2,4] parameter(0)
  b = f32[5,3] parameter(1)
  ROOT dot.5 = f32[2,3] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)"),
            "computation main, instruction dot.5 (line 6): lhs contracting dimension 1 has size 4 "
            "but rhs "
            "contracting dimension 0 has size 5");

  // A declared result that is not what the operands give.
  std::string err = VerifyText(R"(
HloModule m
ENTRY main {
  a = f32[2,3] parameter(0)
  ROOT t = f32[2,3] transpose(a), dimensions={1,0}
}
)");
  EXPECT_EQ(err,
            "computation main, instruction t (line 5): declared shape f32[2,3] does not match the "
            "inferred shape f32[3,2]");

  // Broadcast into the wrong output dimension.
  err = VerifyText(R"(
HloModule m
ENTRY main {
  v = f32[3] parameter(0)
  ROOT broadcast.1 = f32[3,2] broadcast(v), dimensions={1}
}
)");
  EXPECT_EQ(err.rfind("computation main, instruction broadcast.1 (line ", 0), 0u) << err;

  // Convolution whose kernel expects a different input feature count.
  err = VerifyText(R"(
HloModule m
ENTRY main {
  img = f32[1,8,8,4] parameter(0)
  k = f32[3,3,3,16] parameter(1)
  ROOT conv = f32[1,6,6,16] convolution(img, k), window={size=3x3}, dim_labels=b01f_01io->b01f
}
)");
  EXPECT_EQ(err.rfind("computation main, instruction conv (line ", 0), 0u) << err;
  EXPECT_NE(err.find("feature"), std::string::npos) << err;

  // A while body that changes the loop state.
  err = VerifyText(R"(
HloModule m
cond {
  cp = (s32[], f32[2]) parameter(0)
  ROOT t = pred[] constant(true)
}
body {
  bp = (s32[], f32[2]) parameter(0)
  i = s32[] get-tuple-element(bp), index=0
  ROOT out = (s32[]) tuple(i)
}
ENTRY main {
  z = s32[] constant(0)
  x = f32[2] parameter(0)
  init = (s32[], f32[2]) tuple(z, x)
  ROOT w = (s32[], f32[2]) while(init), condition=cond, body=body
}
)");
  EXPECT_EQ(err.rfind("computation main, instruction w (line ", 0), 0u) << err;
  EXPECT_NE(err.find("body result"), std::string::npos) << err;

  // A reducer with the wrong signature.
  err = VerifyText(R"(
HloModule m
max_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT m = s32[] maximum(a, b)
}
ENTRY main {
  x = f32[4,8] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(x, z), dimensions={1}, to_apply=max_s32
}
)");
  EXPECT_EQ(err.rfind("computation main, instruction r (line ", 0), 0u) << err;

  // Wrong operand count.
  err = VerifyText(R"(
HloModule m
ENTRY main {
  a = f32[2] parameter(0)
  ROOT n = f32[2] negate(a, a)
}
)");
  EXPECT_EQ(err, "computation main, instruction n (line 5): negate expects 1 operand but has 2");

  // Layouts are only compared when asked.
  const std::string gte = R"(
HloModule m
ENTRY main {
  a = f32[2,3]{1,0} parameter(0)
  t = (f32[2,3]{1,0}) tuple(a)
  ROOT g = f32[2,3]{0,1} get-tuple-element(t), index=0
}
)";
  EXPECT_EQ(VerifyText(gte), "OK");
  err = VerifyText(gte, /*check_layouts=*/true);
  EXPECT_EQ(err.rfind("computation main, instruction g (line 6): layout", 0), 0u) << err;
}

}  // namespace
}  // namespace mltune::ir
