// Constants as data: a program names each constant over ConstantPool::kInlineConstantBytes by its
// offset in a constants segment, which the compiler stores beside the object (once per content)
// and the runner maps and binds. Checked against the evaluator on constants of several element
// types (a dot's weights, a bf16 scale, a pred mask, an s8 table returned as it is), and: values
// are not in the source, one object serves other values, a missing segment is a clear error.
#include <cstdlib>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace mltune::backends::cpu {
namespace {

class CpuConstantsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

// A literal of `rows` x `cols` (cols only when rows is 0) with values from `next`.
template <typename Next>
std::string LiteralText(int rows, int cols, Next next) {
  auto row = [&] {
    std::string r = "{";
    for (int c = 0; c < cols; ++c) absl::StrAppend(&r, c == 0 ? "" : ",", next());
    return r + "}";
  };
  if (rows == 0) return row();
  std::string text = "{";
  for (int r = 0; r < rows; ++r) absl::StrAppend(&text, r == 0 ? "" : ",", row());
  return text + "}";
}

// The module, its constants drawn from `seed`. The bias (24 floats, 96 bytes) stays inline.
std::string ModuleText(uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> digits(1000, 9999);
  auto value = [&] { return absl::StrCat("0.", digits(rng)); };
  auto bit = [&] { return (rng() & 1) != 0 ? "true" : "false"; };
  auto small = [&] { return absl::StrCat(static_cast<int>(rng() % 200) - 100); };
  return absl::StrCat(R"(
HloModule constants
ENTRY e {
  p = f32[8,80] parameter(0)
  w = f32[80,24] constant()",
                      LiteralText(80, 24, value), R"()
  d = f32[8,24] dot(p, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b = f32[24] constant()",
                      LiteralText(0, 24, value), R"()
  bb = f32[8,24] broadcast(b), dimensions={1}
  s = f32[8,24] add(d, bb)
  h = bf16[8,80] constant()",
                      LiteralText(8, 80, value), R"()
  hc = f32[8,80] convert(h)
  m = f32[8,80] multiply(p, hc)
  q = pred[8,80] constant()",
                      LiteralText(8, 80, bit), R"()
  sel = f32[8,80] select(q, m, p)
  i = s8[400] constant()",
                      LiteralText(0, 400, small), R"()
  ROOT t = (f32[8,24], f32[8,80], s8[400]) tuple(s, sel, i)
})");
}

std::unique_ptr<ir::Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

TEST_F(CpuConstantsTest, LargeConstantsLiveInTheSegmentAndMatchTheEvaluator) {
  const std::string text = ModuleText(1);
  std::unique_ptr<ir::Module> module = Parse(text);
  ASSERT_NE(module, nullptr);
  absl::StatusOr<CompiledModule> compiled = CompileModule(*module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const Program& program = compiled->program;
  ASSERT_NE(program.constants, nullptr);
  // Weights 7680 bytes, the bf16 scale 1280, the mask 640 and the table 400, each 64-aligned.
  EXPECT_GE(program.constants->size(), 7680u + 1280u + 640u + 400u);
  EXPECT_FALSE(compiled->object.constants_path.empty());
  // The 1920 weights are not spelled out; the 24 biases are (literals the compiler can fold).
  int64_t float_literals = 0;
  for (size_t at = program.source.find("(float)0."); at != std::string::npos;
       at = program.source.find("(float)0.", at + 1)) {
    ++float_literals;
  }
  EXPECT_GE(float_literals, 24);
  EXPECT_LT(float_literals, 200);
  EXPECT_TRUE(CheckAgainstEvaluator(*module, *compiled, 3).ok());
}

TEST_F(CpuConstantsTest, OneObjectServesOtherValues) {
  std::unique_ptr<ir::Module> first = Parse(ModuleText(2));
  std::unique_ptr<ir::Module> second = Parse(ModuleText(3));
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  absl::StatusOr<CompiledModule> a = CompileModule(*first);
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<CompiledModule> b = CompileModule(*second);
  ASSERT_TRUE(b.ok()) << b.status();
  // The inline bias differs, so compare the large constants' effect: same kernels, same offsets.
  EXPECT_NE(a->object.constants_path, b->object.constants_path);
  EXPECT_TRUE(CheckAgainstEvaluator(*first, *a, 4).ok());
  EXPECT_TRUE(CheckAgainstEvaluator(*second, *b, 4).ok());
  // Kernels compiled alone (what the tile search measures) carry their own constants.
  for (int32_t k = 0; k < static_cast<int32_t>(a->lowered.kernels.size()); ++k) {
    absl::StatusOr<Timing> t = MeasureKernel(a->lowered, k, {}, {}, {});
    EXPECT_TRUE(t.ok()) << "kernel " << k << ": " << t.status();
  }
}

TEST_F(CpuConstantsTest, SameStructureWithOtherLargeValuesIsACacheHit) {
  // Only the large constants change: the source, and so the object, are the same.
  const std::string base = ModuleText(5);
  std::string other = base;
  const size_t w = other.find("constant({{") + 11;
  other[w + 2] = other[w + 2] == '9' ? '1' : static_cast<char>(other[w + 2] + 1);
  std::unique_ptr<ir::Module> m1 = Parse(base);
  std::unique_ptr<ir::Module> m2 = Parse(other);
  ASSERT_NE(m1, nullptr);
  ASSERT_NE(m2, nullptr);
  absl::StatusOr<CompiledModule> a = CompileModule(*m1);
  ASSERT_TRUE(a.ok()) << a.status();
  absl::StatusOr<CompiledModule> b = CompileModule(*m2);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->program.source, b->program.source);
  EXPECT_EQ(a->object.path, b->object.path);
  EXPECT_TRUE(b->object.cache_hit);
  EXPECT_NE(a->object.constants_path, b->object.constants_path);
  EXPECT_TRUE(CheckAgainstEvaluator(*m2, *b, 6).ok());
}

TEST_F(CpuConstantsTest, AMissingSegmentIsAClearError) {
  std::unique_ptr<ir::Module> module = Parse(ModuleText(7));
  ASSERT_NE(module, nullptr);
  absl::StatusOr<CompiledModule> compiled = CompileModule(*module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  CompiledObject object = compiled->object;
  object.constants_path.clear();
  absl::StatusOr<Timing> t = Measure(object, compiled->program, 0);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("constants segment"), std::string::npos) << t.status();
}

}  // namespace
}  // namespace mltune::backends::cpu
