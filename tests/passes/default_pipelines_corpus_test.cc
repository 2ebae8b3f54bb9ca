// Runs the default cpu and gpu pipelines over every corpus module: the result must verify (after
// every pass), compute what the original does where the original can be evaluated, and end with
// no more ops than the original plus what lowering passes (expanders grow modules by design)
// added on the way.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "passes/default_pipelines.h"
#include "passes/registry.h"
#include "tests/support/corpus.h"
#include "tests/support/equivalence.h"

namespace mltune::passes {
namespace {

// Instructions of the computations the entry reaches, each computation counted once per call
// site, so that flattening (one clone per site) and inlining (no call, no parameters) do not
// count as growth. Stand-in until the project defines its op count.
int64_t OpCount(const ir::Module& m) {
  std::unordered_map<const ir::Computation*, int64_t> weight;
  const std::vector<ir::Computation*> order = m.MakeComputationPostOrder();
  weight[m.entry()] = 1;
  int64_t total = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const ir::Computation* c = *it;
    const int64_t w = weight[c];
    total += w * c->instruction_count();
    for (const ir::Instruction* i : c->instructions()) {
      for (const ir::Computation* callee : i->called_computations()) weight[callee] += w;
    }
  }
  return total;
}

// Lowering and canonicalizing passes (expanders, decomposers, up-casters, gather/scatter
// canonicalizers, reduction rewriters, ...) trade one instruction for several by design.
bool IsLowering(const std::string& name) {
  for (const char* part :
       {"expander", "decomposer", "caster", "splitter", "rewriter", "converter", "normalizer",
        "padder", "gather_simplifier", "scatter_simplifier", "scatter-slice-simplifier"}) {
    if (name.find(part) != std::string::npos) return true;
  }
  return false;
}

// Op-count changes seen while running a pipeline step by step.
struct Growth {
  int64_t by_lowering = 0;          // added by lowering passes
  std::vector<std::string> others;  // other passes that added some (allowed if repaid later)
};

// Runs `steps` as MakeDefaultPipeline would, recording op-count growth per pass.
bool RunSteps(const std::vector<PipelineStep>& steps, ir::Module& m, Growth& growth) {
  bool changed = false;
  for (const PipelineStep& step : steps) {
    if (step.kind == PipelineStep::Kind::kPipeline) {
      changed |= RunSteps(step.steps, m, growth);
    } else if (step.kind == PipelineStep::Kind::kFixedPoint) {
      for (int round = 0; round < FixedPoint::kDefaultMaxIterations; ++round) {
        if (!RunSteps(step.steps, m, growth)) break;
        changed = true;
      }
    } else if (Registry::Global().Find(step.name) != nullptr) {
      const int64_t before = OpCount(m);
      absl::StatusOr<bool> c = (*Registry::Global().Create(step.name))->Run(m);
      EXPECT_TRUE(c.ok()) << step.name << ": " << c.status();
      changed |= c.ok() && *c;
      const int64_t after = OpCount(m);
      if (after <= before) continue;
      if (IsLowering(step.name)) {
        growth.by_lowering += after - before;
      } else {
        growth.others.push_back(absl::StrCat(step.name, " (", before, " -> ", after, ")"));
      }
    }
  }
  return changed;
}

void RunCorpus(const std::string& target) {
  const std::vector<std::string> files = mltune::testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  ASSERT_NE(MakeDefaultPipeline(target), nullptr);
  const std::vector<std::string> missing = MissingDefaultPipelinePasses(target);
  std::printf("%s pipeline: %zu of its passes are not registered yet and are skipped: %s\n",
              target.c_str(), missing.size(), absl::StrJoin(missing, ", ").c_str());
  const auto start = std::chrono::steady_clock::now();
  int evaluated = 0, changed = 0;
  int64_t ops_before = 0, ops_after = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    absl::StatusOr<std::unique_ptr<ir::Module>> original = ir::ParseHloFile(path);
    ASSERT_TRUE(original.ok()) << original.status();
    ASSERT_TRUE(ir::VerifyModule(**original).ok());
    std::unique_ptr<ir::Module> module = (*original)->Clone();
    std::unique_ptr<Pipeline> pipeline = MakeDefaultPipeline(target);
    pipeline->set_verify_each(true);
    absl::StatusOr<bool> ran = pipeline->Run(*module);
    ASSERT_TRUE(ran.ok()) << ran.status();
    changed += *ran;
    EXPECT_TRUE(ir::VerifyModule(*module).ok()) << ir::VerifyModule(*module);
    absl::Status same = mltune::testing::CheckEquivalent(**original, *module, /*seeds=*/2);
    if (same.code() != absl::StatusCode::kUnimplemented) {
      EXPECT_TRUE(same.ok()) << same;
      ++evaluated;
    }
    // Again step by step, recording op counts; the result must be the same module.
    std::unique_ptr<ir::Module> stepped = (*original)->Clone();
    Growth growth;
    RunSteps(DefaultPipelineSteps(target), *stepped, growth);
    EXPECT_EQ(ir::Fingerprint(*stepped), ir::Fingerprint(*module));
    const int64_t before = OpCount(**original), after = OpCount(*module);
    EXPECT_LE(after, before + growth.by_lowering)
        << "op count grew: " << before << " -> " << after << ", lowering passes added "
        << growth.by_lowering
        << "; other passes that added some: " << absl::StrJoin(growth.others, ", ");
    ops_before += before;
    ops_after += after;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%s pipeline: %zu modules (%d changed, %d checked by evaluation), ops %lld -> "
      "%lld, %.1fs\n",
      target.c_str(), files.size(), changed, evaluated, static_cast<long long>(ops_before),
      static_cast<long long>(ops_after), seconds);
}

TEST(DefaultPipelinesCorpusTest, Cpu) { RunCorpus("cpu"); }
TEST(DefaultPipelinesCorpusTest, Gpu) { RunCorpus("gpu"); }

}  // namespace
}  // namespace mltune::passes
