// Filling elided constants (constant({...})): seeded, per constant, in the runner's input ranges;
// without it the evaluator refuses such a module and names the option that fills them.
#include "ir/evaluator/fill_elided.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "tests/ir/evaluator_test_util.h"

namespace mltune::ir {
namespace {

constexpr char kModule[] = R"(HloModule elided

ENTRY main {
  w = f32[64] constant({...})
  b = bf16[16] constant({...})
  i = s32[32] constant({...})
  k = f32[2] constant({1, 2})
  x = f32[64] parameter(0)
  ROOT y = f32[64] add(x, w)
}
)";

std::unique_ptr<Module> Parse() {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(kModule);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

const Instruction* Named(const Module& m, const std::string& name) {
  for (const Instruction* i : m.entry()->instructions()) {
    if (i->name() == name) return i;
  }
  return nullptr;
}

TEST(FillElidedTest, RefusedWithoutNamingTheOption) {
  std::unique_ptr<Module> m = Parse();
  ASSERT_NE(m, nullptr);
  const absl::Status s = CheckEvaluable(*m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("--fill-elided"), std::string::npos) << s;
  EXPECT_NE(std::string(s.message()).find("MLTUNE_FILL_ELIDED"), std::string::npos) << s;
}

TEST(FillElidedTest, FillsEachElidedConstantFromTheSeedAndItsName) {
  std::unique_ptr<Module> a = Parse(), b = Parse(), c = Parse();
  ASSERT_TRUE(a && b && c);
  absl::StatusOr<int64_t> n = FillElidedConstants(*a, 5);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, 3);  // w, b, i; k has its value
  ASSERT_TRUE(FillElidedConstants(*b, 5).ok());
  ASSERT_TRUE(FillElidedConstants(*c, 6).ok());
  const Literal& wa = *Named(*a, "w")->literal;
  EXPECT_TRUE(wa.BitwiseEqual(*Named(*b, "w")->literal)) << "same seed, same values";
  EXPECT_FALSE(wa.BitwiseEqual(*Named(*c, "w")->literal)) << "another seed, other values";
  EXPECT_FALSE(Named(*a, "w")->literal_elided);
  // Floats in [-1, 1), integers in [0, 8), as the runner's inputs; not all equal.
  bool differ = false;
  for (int64_t e = 0; e < wa.element_count(); ++e) {
    EXPECT_GE(wa.GetAsDouble(e), -1.0);
    EXPECT_LT(wa.GetAsDouble(e), 1.0);
    differ |= wa.GetAsDouble(e) != wa.GetAsDouble(0);
  }
  EXPECT_TRUE(differ);
  const Literal& ia = *Named(*a, "i")->literal;
  for (int64_t e = 0; e < ia.element_count(); ++e) {
    EXPECT_GE(ia.GetAsInt64(e), 0);
    EXPECT_LT(ia.GetAsInt64(e), 8);
  }
  // The kept constant is untouched; the module now evaluates.
  EXPECT_EQ(Named(*a, "k")->literal->GetAsDouble(1), 2.0);
  EXPECT_TRUE(CheckEvaluable(*a).ok());
  absl::StatusOr<std::vector<Literal>> args = MakeRandomArguments(*a, 1);
  ASSERT_TRUE(args.ok());
  EXPECT_TRUE(Evaluate(*a, *args).ok());
  // Filling again finds nothing left to fill.
  absl::StatusOr<int64_t> again = FillElidedConstants(*a, 5);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
}

}  // namespace
}  // namespace mltune::ir
