// Cutting a module at the ops the CPU backend cannot lower (collect --cut-unsupported): each
// becomes a parameter of its shape, tuple-shaped ones at their get-tuple-elements; the kernels
// left are the original's kernels (same structural keys); what cannot be cut is named.
#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cut_unsupported.h"
#include "backends/cpu/lowering.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/features/kernel_graph.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "tests/support/corpus.h"

namespace mltune::backends::cpu {
namespace {

std::unique_ptr<ir::Module> Parse(const char* text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

// The structural keys of the default fusion's kernels (costmodels::KernelKey).
std::set<std::string> KernelKeys(const ir::Module& module) {
  const costmodels::OpGraph graph = costmodels::BuildOpGraph(module);
  const costmodels::FusionPlan plan = costmodels::PlanFusion(graph);
  std::set<std::string> keys;
  for (const std::vector<int32_t>& nodes : plan.kernels) {
    absl::StatusOr<std::string> key = costmodels::features::KernelKey(graph, module, nodes);
    EXPECT_TRUE(key.ok()) << key.status();
    if (key.ok()) keys.insert(*key);
  }
  return keys;
}

// An unknown custom-call: opaque to fusion, so the kernels around it are the original's.
constexpr char kCallBetween[] = R"(HloModule call_between
ENTRY e {
  p = f32[64,32] parameter(0)
  x = f32[64,32] exponential(p)
  s = f32[64,32] custom-call(x), custom_call_target="my_op"
  one = f32[] constant(1)
  ob = f32[64,32] broadcast(one), dimensions={}
  y = f32[64,32] add(s, ob)
  ROOT t = (f32[64,32], f32[64,32]) tuple(x, y)
})";

TEST(CutUnsupportedTest, AnOpWithoutLoweringBecomesAParameterAndTheRestLowers) {
  auto m = Parse(kCallBetween);
  ASSERT_NE(m, nullptr);
  ASSERT_FALSE(CheckSupported(*m).ok());
  absl::StatusOr<CutModule> cut = CutUnsupported(*m);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_EQ(cut->cut, std::vector<std::string>{"s"});
  const ir::Computation& entry = *cut->module->entry();
  ASSERT_EQ(entry.parameter_count(), 2);
  EXPECT_EQ(entry.parameter(1)->shape(), m->entry()->FindInstruction("s")->shape());
  EXPECT_EQ(entry.FindInstruction("s"), nullptr);
  EXPECT_TRUE(CheckSupported(*cut->module).ok());
  absl::StatusOr<LoweredModule> lowered = Lower(*cut->module);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_EQ(lowered->kernels.size(), 2u);  // the exponential, and the add with its broadcast
  // The original is untouched, and every kernel of the cut module but the ones reading the new
  // parameter is a kernel of the original.
  EXPECT_NE(m->entry()->FindInstruction("s"), nullptr);
  const std::set<std::string> before = KernelKeys(*m), after = KernelKeys(*cut->module);
  EXPECT_TRUE(std::includes(before.begin(), before.end(), after.begin(), after.end()));
}

TEST(CutUnsupportedTest, TupleResultsAreCutAtTheirElements) {
  auto m = Parse(R"(HloModule tuple_call
ENTRY e {
  p = f32[16,16] parameter(0)
  n = f32[16,16] negate(p)
  c = (f32[16,16], s8[64]) custom-call(n), custom_call_target="solver"
  g = f32[16,16] get-tuple-element(c), index=0
  ROOT r = f32[16,16] multiply(g, g)
})");
  ASSERT_NE(m, nullptr);
  absl::StatusOr<CutModule> cut = CutUnsupported(*m);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_EQ(cut->cut, std::vector<std::string>{"g"});
  EXPECT_EQ(cut->module->entry()->FindInstruction("c"), nullptr);
  absl::StatusOr<LoweredModule> lowered = Lower(*cut->module);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  // negate fed only the custom call: with it gone, the multiply is the one kernel.
  ASSERT_EQ(lowered->kernels.size(), 1u);
  EXPECT_EQ(lowered->kernels[0].root->name(), "r");
}

TEST(CutUnsupportedTest, WhatCannotBeCutIsNamed) {
  // The whole tuple leaves the module: no array can stand in for it.
  auto whole = Parse(R"(HloModule whole
ENTRY e {
  p = f32[8] parameter(0)
  c = (f32[8], s8[4]) custom-call(p), custom_call_target="solver"
  ROOT t = ((f32[8], s8[4])) tuple(c)
})");
  ASSERT_NE(whole, nullptr);
  absl::StatusOr<CutModule> cut = CutUnsupported(*whole);
  ASSERT_FALSE(cut.ok());
  EXPECT_TRUE(absl::StrContains(cut.status().message(), "'c'")) << cut.status();
  EXPECT_TRUE(absl::StrContains(cut.status().message(), "'t' uses the whole tuple"))
      << cut.status();
  // A complex value: the backend generates no c64, so no parameter can stand in either.
  auto c64 = Parse(R"(HloModule c64
ENTRY e {
  p = f32[8] parameter(0)
  h = c64[8] complex(p, p)
  ROOT r = f32[8] real(h)
})");
  ASSERT_NE(c64, nullptr);
  cut = CutUnsupported(*c64);
  ASSERT_FALSE(cut.ok());
  EXPECT_TRUE(absl::StrContains(cut.status().message(), "cannot cut 'h'")) << cut.status();
  EXPECT_TRUE(absl::StrContains(cut.status().message(), "c64")) << cut.status();
}

TEST(CutUnsupportedTest, ASupportedModuleComesBackUnchanged) {
  auto m = Parse(R"(HloModule fine
ENTRY e {
  p = f32[8] parameter(0)
  ROOT r = f32[8] exponential(p)
})");
  ASSERT_NE(m, nullptr);
  absl::StatusOr<CutModule> cut = CutUnsupported(*m);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_TRUE(cut->cut.empty());
  EXPECT_EQ(ir::PrintModule(*cut->module), ir::PrintModule(*m));
}

// Every corpus module the backend rejects after its pipeline either cuts into one that lowers
// under the default fusion, keeping only kernels of the original, or fails with a message.
TEST(CutUnsupportedTest, CorpusModulesTheBackendRejectsCutIntoLowerableOnes) {
  const std::vector<std::string> files = testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << testing::kNoCorpusMessage;
  int rejected = 0, cut_ok = 0;
  for (const std::string& file : files) {
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(file);
    if (!m.ok()) continue;
    absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPasses(**m);
    if (!optimized.ok() || CheckSupported(**optimized).ok()) continue;
    ++rejected;
    absl::StatusOr<CutModule> cut = CutUnsupported(**optimized);
    if (!cut.ok()) {
      EXPECT_FALSE(cut.status().message().empty()) << file;
      continue;
    }
    EXPECT_FALSE(cut->cut.empty()) << file;
    absl::StatusOr<LoweredModule> lowered = Lower(*cut->module);
    ASSERT_TRUE(lowered.ok()) << file << ": " << lowered.status();
    ++cut_ok;
  }
  // 8 of the 82 modules are rejected whole (collectives, elided constants, an f64 dot).
  EXPECT_GT(rejected, 0);
  EXPECT_GT(cut_ok, rejected / 2);
}

}  // namespace
}  // namespace mltune::backends::cpu
