// Every strategy on real modules through PassOrderProblem: within a 200-step budget the best
// module never has more ops than the input, verifies, computes what the input computes, and
// replays to the same op count in a fresh environment; searches are seeded-deterministic and
// the transition cache does not change their results.
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "optimizers/pass_order/pass_order.h"
#include "passes/default_pipelines.h"
#include "passes/pipeline.h"
#include "tests/support/corpus.h"
#include "tests/support/equivalence.h"

namespace mltune::opt::pass_order {
namespace {

constexpr char kRedundant[] = R"(
HloModule redundant
ENTRY e {
  x = f32[4] parameter(0)
  a = f32[4] negate(x)
  b = f32[4] negate(x)
  dead = f32[4] exponential(x)
  s = f32[4] add(a, b)
  one = f32[] constant(1)
  ones = f32[4] broadcast(one), dimensions={}
  ROOT m = f32[4] multiply(s, ones)
}
)";

struct NamedModule {
  std::string name;
  std::unique_ptr<ir::Module> module;
};

// The example, a hand-written module with redundancy and, when the corpus is present, two small
// corpus modules that XLA's pipeline shrinks.
std::vector<NamedModule> Modules() {
  std::vector<NamedModule> out;
  absl::StatusOr<std::unique_ptr<ir::Module>> example =
      ir::ParseHloFile(mltune::testing::SourcePath("examples/mlp_train_step.hlo"));
  EXPECT_TRUE(example.ok()) << example.status();
  if (example.ok()) out.push_back({"example", *std::move(example)});
  absl::StatusOr<std::unique_ptr<ir::Module>> redundant = ir::ParseHloText(kRedundant);
  EXPECT_TRUE(redundant.ok()) << redundant.status();
  if (redundant.ok()) out.push_back({"redundant", *std::move(redundant)});
  for (const std::string& path : mltune::testing::CorpusFiles()) {
    if (path.find("jaxlie__module_0025") == std::string::npos &&
        path.find("maml_flax__module_0067") == std::string::npos) {
      continue;
    }
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(path);
    EXPECT_TRUE(m.ok()) << path;
    if (m.ok()) out.push_back({path, *std::move(m)});
  }
  return out;
}

std::unique_ptr<PassOrderProblem> MakeProblem(const ir::Module& module) {
  absl::StatusOr<std::unique_ptr<PassOrderProblem>> p = PassOrderProblem::Create(module);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : nullptr;
}

Result MustSearch(const std::string& strategy, Problem& problem, int64_t steps, uint64_t seed) {
  absl::StatusOr<std::unique_ptr<Strategy>> s = StrategyRegistry::Global().Create(strategy);
  EXPECT_TRUE(s.ok()) << s.status();
  absl::StatusOr<Result> r = (*s)->Search(problem, Budget{steps, 0}, seed);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : Result{};
}

TEST(PassOrderSearchTest, EveryStrategyImprovesOrKeepsTheModuleAndStaysCorrect) {
  for (const NamedModule& nm : Modules()) {
    for (const std::string& name : StrategyRegistry::Global().Names()) {
      SCOPED_TRACE(nm.name + " / " + name);
      std::unique_ptr<PassOrderProblem> problem = MakeProblem(*nm.module);
      ASSERT_NE(problem, nullptr);
      const Result r = MustSearch(name, *problem, 200, 1);
      EXPECT_EQ(r.initial_score, static_cast<double>(OpCount(*nm.module)));
      EXPECT_LE(r.best_score, r.initial_score);
      EXPECT_LE(r.steps, 200);
      EXPECT_LE(static_cast<int64_t>(r.best.size()), problem->space().max_length);
      for (size_t i = 1; i < r.trace.size(); ++i) {
        ASSERT_LE(r.trace[i].best_score, r.trace[i - 1].best_score);
      }
      std::unique_ptr<ir::Module> best = problem->Apply(r.best);
      absl::Status verified = ir::VerifyModule(*best);
      EXPECT_TRUE(verified.ok()) << verified;
      EXPECT_EQ(static_cast<double>(OpCount(*best)), r.best_score);
      absl::Status same = mltune::testing::CheckEquivalent(*nm.module, *best, /*seeds=*/2);
      if (!absl::IsUnimplemented(same)) {
        EXPECT_TRUE(same.ok()) << same;
      }

      // Replaying the pass names in a fresh environment gives the same module.
      absl::StatusOr<std::unique_ptr<PassOrderEnv>> env = PassOrderEnv::Create();
      ASSERT_TRUE(env.ok());
      ASSERT_TRUE((*env)->Reset(*nm.module).ok());
      for (const std::string& pass : problem->PassNames(r.best)) {
        ASSERT_TRUE((*env)->Step(pass).ok()) << pass;
      }
      EXPECT_EQ((*env)->score(), r.best_score);
      EXPECT_EQ((*env)->observation().fingerprint, ir::Fingerprint(*best));
    }
  }
}

TEST(PassOrderSearchTest, TheRedundantModuleIsFullyCleaned) {
  std::unique_ptr<ir::Module> m = *ir::ParseHloText(kRedundant);
  for (const std::string& name : StrategyRegistry::Global().Names()) {
    std::unique_ptr<PassOrderProblem> problem = MakeProblem(*m);
    const Result r = MustSearch(name, *problem, 400, 1);
    // cse + dce + algsimp leave negate, add (or multiply by 2) and the root: at most 3 ops.
    EXPECT_LE(r.best_score, 3) << name << ": "
                               << ::testing::PrintToString(problem->PassNames(r.best));
  }
}

TEST(PassOrderSearchTest, SearchesAreDeterministicAndCacheIndependent) {
  for (const NamedModule& nm : Modules()) {
    for (const std::string& name : StrategyRegistry::Global().Names()) {
      SCOPED_TRACE(nm.name + " / " + name);
      std::unique_ptr<PassOrderProblem> p1 = MakeProblem(*nm.module);
      std::unique_ptr<PassOrderProblem> p2 = MakeProblem(*nm.module);
      const Result a = MustSearch(name, *p1, 150, 11);
      const Result b = MustSearch(name, *p2, 150, 11);
      // The same problem again, its transition cache now warm.
      const Result c = MustSearch(name, *p1, 150, 11);
      for (const Result* other : {&b, &c}) {
        EXPECT_EQ(a.best, other->best);
        EXPECT_EQ(a.best_score, other->best_score);
        EXPECT_EQ(a.steps, other->steps);
        ASSERT_EQ(a.trace.size(), other->trace.size());
        for (size_t i = 0; i < a.trace.size(); ++i) {
          EXPECT_EQ(a.trace[i].best_score, other->trace[i].best_score);
        }
      }
      // A warm cache answers from memory instead of running passes.
      const PassOrderStats warm = p1->stats();
      EXPECT_GT(warm.cache_hits, p2->stats().cache_hits);
    }
  }
}

TEST(PassOrderSearchTest, ProblemReportsNamesAndCounters) {
  std::unique_ptr<ir::Module> m = *ir::ParseHloText(kRedundant);
  std::unique_ptr<PassOrderProblem> problem = MakeProblem(*m);
  EXPECT_EQ(problem->name(), "pass-order");
  EXPECT_EQ(problem->space().max_length, 40);
  EXPECT_EQ(problem->space().ChoicesAt(0), static_cast<int32_t>(problem->action_names().size()));
  absl::StatusOr<Candidate> c = problem->ParseCandidate({"cse", "dce"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(problem->PassNames(*c), (std::vector<std::string>{"cse", "dce"}));
  EXPECT_FALSE(problem->ParseCandidate({"nope"}).ok());
  EXPECT_EQ(problem->Observe(*c).op_count, 5);  // b merged into a, `dead` gone
  EXPECT_EQ(problem->initial_op_count(), 7);
  const Result r = MustSearch("greedy", *problem, 100, 1);
  bool has_runs = false;
  for (const auto& [name, value] : r.stats) {
    if (name == "pass_runs") has_runs = value > 0;
  }
  EXPECT_TRUE(has_runs);
}

// Warm-started from XLA's CPU order, no strategy ends worse than the default pipeline, and the
// seed alone (replayed) reproduces the default pipeline's module.
TEST(PassOrderSearchTest, WarmStartIsNeverWorseThanTheDefaultOrder) {
  for (const NamedModule& nm : Modules()) {
    std::unique_ptr<ir::Module> by_default = nm.module->Clone();
    ASSERT_TRUE(passes::MakeDefaultPipeline("cpu")->Run(*by_default).ok());
    const double default_ops = static_cast<double>(OpCount(*by_default));
    PassOrderOptions options;
    options.seed_pipeline = "cpu";
    absl::StatusOr<std::unique_ptr<PassOrderProblem>> problem =
        PassOrderProblem::Create(*nm.module, options);
    ASSERT_TRUE(problem.ok()) << problem.status();
    // No seed when the default order changes nothing.
    const std::vector<Candidate> seeds = (*problem)->SeedCandidates();
    ASSERT_LE(seeds.size(), 1u);
    std::unique_ptr<ir::Module> replayed =
        (*problem)->Apply(seeds.empty() ? Candidate{} : seeds[0]);
    EXPECT_EQ(ir::Fingerprint(*replayed), ir::Fingerprint(*by_default)) << nm.name;
    for (const std::string& name : StrategyRegistry::Global().Names()) {
      SCOPED_TRACE(nm.name + " / " + name);
      const Result r = MustSearch(name, **problem, 100, 2);
      EXPECT_LE(r.best_score, default_ops);
    }
  }
  PassOrderOptions bad;
  bad.seed_pipeline = "tpu";
  EXPECT_FALSE(PassOrderProblem::Create(*Modules().front().module, bad).ok());
}

// Every strategy on every corpus module of modest size, with a small budget: no crash, the best
// module verifies and has at most the input's op count. Catches passes that fail or misbehave on
// real inputs as they land (failures must be recorded no-ops, never errors).
TEST(PassOrderSearchTest, CorpusSweep) {
  const std::vector<std::string> files = mltune::testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  int searched = 0;
  for (const std::string& path : files) {
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(path);
    if (!m.ok() || (*m)->instruction_count() > 700 || !ir::VerifyModule(**m).ok()) continue;
    for (const std::string& name : StrategyRegistry::Global().Names()) {
      SCOPED_TRACE(path + " / " + name);
      std::unique_ptr<PassOrderProblem> problem = MakeProblem(**m);
      ASSERT_NE(problem, nullptr);
      const Result r = MustSearch(name, *problem, 60, 3);
      EXPECT_LE(r.best_score, r.initial_score);
      std::unique_ptr<ir::Module> best = problem->Apply(r.best);
      absl::Status verified = ir::VerifyModule(*best);
      EXPECT_TRUE(verified.ok()) << verified;
      EXPECT_EQ(static_cast<double>(OpCount(*best)), r.best_score);
      ++searched;
    }
  }
  EXPECT_GT(searched, 0);
}

}  // namespace
}  // namespace mltune::opt::pass_order
