// Structural fingerprint: invariant under names, ids, metadata, text style and the order of
// independent instructions; sensitive to every semantic change.
#include "ir/fingerprint.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "tests/support/corpus.h"

namespace mltune::ir {
namespace {

std::unique_ptr<Module> Parse(const std::string& text) {
  auto m = ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return m.ok() ? *std::move(m) : nullptr;
}

std::string FingerprintOf(const std::string& text) { return Fingerprint(*Parse(text)); }

constexpr char kBase[] = R"(HloModule m

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY main {
  p0 = f32[4,8]{1,0} parameter(0)
  p1 = f32[4,8]{1,0} parameter(1)
  c = f32[] constant(2)
  bc = f32[4,8]{1,0} broadcast(c), dimensions={}
  sub = f32[4,8]{1,0} subtract(p0, p1), metadata={op_name="x"}
  mul = f32[4,8]{1,0} multiply(sub, bc)
  zero = f32[] constant(0)
  ROOT r = f32[4]{0} reduce(mul, zero), dimensions={1}, to_apply=add_f32
}
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  if (pos == std::string::npos) return s;
  // Concatenation rather than std::string::replace: g++ 12 at -O3 reports a false -Wrestrict.
  return s.substr(0, pos) + to + s.substr(pos + from.size());
}

TEST(FingerprintTest, IsSha256Hex) {
  std::string fp = FingerprintOf(kBase);
  EXPECT_EQ(fp.size(), 64u);
  EXPECT_EQ(fp.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(FingerprintTest, IgnoresNamesAndMetadata) {
  std::unique_ptr<Module> m = Parse(kBase);
  const std::string before = Fingerprint(*m);
  m->set_name("renamed_module");
  int k = 0;
  for (Computation* c : m->computations()) {
    c->set_name(absl::StrCat("comp_", k++));
    for (Instruction* i : c->instructions()) {
      i->set_name(absl::StrCat("i", k++));
      i->set_unique_id(1000 + k);
      i->metadata = "{op_name=\"changed\"}";
    }
  }
  EXPECT_EQ(Fingerprint(*m), before);
}

TEST(FingerprintTest, IgnoresTextStyleAndIndependentOrder) {
  const std::string sigils = R"(HloModule other_name

%add_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (p0: f32[4,8], p1: f32[4,8]) -> f32[4] {
  %zero = f32[] constant(0)
  %p1 = f32[4,8]{1,0} parameter(1)
  %c = f32[] constant(2)
  %p0 = f32[4,8]{1,0} parameter(0)
  %sub = f32[4,8]{1,0} subtract(f32[4,8]{1,0} %p0, f32[4,8]{1,0} %p1)
  %bc = f32[4,8]{1,0} broadcast(f32[] %c), dimensions={}
  %mul = f32[4,8]{1,0} multiply(f32[4,8]{1,0} %sub, f32[4,8]{1,0} %bc)
  ROOT %r = f32[4]{0} reduce(f32[4,8]{1,0} %mul, f32[] %zero), dimensions={1}, to_apply=%add_f32
}
)";
  EXPECT_EQ(FingerprintOf(sigils), FingerprintOf(kBase));
}

TEST(FingerprintTest, ChangesWithEverySemanticEdit) {
  const std::string base = FingerprintOf(kBase);
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"constant(2)", "constant(3)"},                                // literal value
      {"subtract(p0, p1)", "subtract(p1, p0)"},                      // operand order
      {"multiply(sub, bc)", "add(sub, bc)"},                         // opcode
      {"dimensions={1}, to_apply", "dimensions={0}, to_apply"},      // attribute
      {"p0 = f32[4,8]{1,0}", "p0 = f32[4,8]{0,1}"},                  // layout
      {"ROOT s = f32[] add(a, b)", "ROOT s = f32[] maximum(a, b)"},  // called computation
  };
  for (const auto& [from, to] : edits) {
    std::string edited = Replace(kBase, from, to);
    auto m = ParseHloText(edited);
    ASSERT_TRUE(m.ok()) << from << " -> " << to << ": " << m.status().message();
    EXPECT_NE(Fingerprint(**m), base) << from << " -> " << to;
  }
}

TEST(FingerprintTest, DistinguishesSharedFromDuplicatedSubexpressions) {
  const std::string shared = R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  n = f32[2] negate(p)
  ROOT r = f32[2] add(n, n)
})";
  const std::string duplicated = R"(HloModule m
ENTRY e {
  p = f32[2] parameter(0)
  n = f32[2] negate(p)
  n2 = f32[2] negate(p)
  ROOT r = f32[2] add(n, n2)
})";
  EXPECT_NE(FingerprintOf(shared), FingerprintOf(duplicated));
}

TEST(FingerprintTest, NegativeZeroIsADifferentConstant) {
  std::string a = Replace(kBase, "constant(2)", "constant(0)");
  std::string b = Replace(kBase, "constant(2)", "constant(-0)");
  EXPECT_NE(FingerprintOf(a), FingerprintOf(b));
}

TEST(StructurallyEqualTest, ExplainsTheFirstDifference) {
  auto a = Parse(kBase);
  auto b = Parse(Replace(kBase, "multiply(sub, bc)", "add(sub, bc)"));
  std::string why;
  EXPECT_TRUE(StructurallyEqual(*a, *a, &why));
  EXPECT_FALSE(StructurallyEqual(*a, *b, &why));
  EXPECT_NE(why.find("instruction mul"), std::string::npos) << why;
}

TEST(FingerprintCorpusTest, StableUnderPrintParseRoundTrip) {
  const auto files = testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  for (const std::string& file : files) {
    auto m = ParseHloFile(file);
    ASSERT_TRUE(m.ok()) << file << ": " << m.status().message();
    auto again = ParseHloText(PrintModule(**m));
    ASSERT_TRUE(again.ok()) << file << ": " << again.status().message();
    std::string why;
    EXPECT_TRUE(StructurallyEqual(**m, **again, &why)) << file << ": " << why;
    EXPECT_EQ(Fingerprint(**m), Fingerprint(**again)) << file;
    // Without metadata the fingerprint is the same too.
    PrintOptions no_meta;
    no_meta.print_metadata = false;
    auto stripped = ParseHloText(PrintModule(**m, no_meta));
    ASSERT_TRUE(stripped.ok()) << file;
    EXPECT_EQ(Fingerprint(**m), Fingerprint(**stripped)) << file;
  }
}

// Fingerprints key the results cache and stored jobs, so they must not change between versions:
// these were computed before constants' bytes were hashed from the literals in place (they were
// hex-encoded into the canonical text by snprintf).
TEST(FingerprintTest, AConstantsFingerprintIsStableAcrossVersions) {
  EXPECT_EQ(FingerprintOf(R"(HloModule k

ENTRY e {
  p = f32[2,3] parameter(0)
  c = f32[2,3] constant({{1, -2.5, 3}, {0, -0, 7.25}})
  ROOT a = f32[2,3] add(p, c)
}
)"),
            "f40d376c64fa23e701544ec1ca6ead3f351bf0175fe9203a63542a7ceb5136f3");
  // A tuple constant and two constants in one computation (hashed from the literals in place).
  EXPECT_EQ(FingerprintOf(R"(HloModule t

ENTRY e {
  p = f32[3] parameter(0)
  t = (f32[2], s32[]) constant(({1.5, -2}, 7))
  g = f32[2] get-tuple-element(t), index=0
  c = f32[3] constant({0.25, 8, -1})
  a = f32[3] add(p, c)
  ROOT r = (f32[3], f32[2]) tuple(a, g)
}
)"),
            "c6dede8499353dcaf4f155c2a6af0047d06e41cfb805e6e05105c727628014ae");
}

}  // namespace
}  // namespace mltune::ir
