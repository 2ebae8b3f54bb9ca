// PassOrderEnv: Reset/Step/Fork semantics, rewards, determinism, the episode limit, action masks
// (checked against running each pass directly), failing passes and the cost-model hook.
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/fingerprint.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "optimizers/pass_order/pass_order.h"
#include "passes/registry.h"
#include "tests/support/corpus.h"

namespace mltune::opt::pass_order {
namespace {

// Op count 7. cse merges b into a, dce drops `dead`, algsimp drops the multiply by one.
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

std::unique_ptr<ir::Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

std::unique_ptr<ir::Module> Example() {
  absl::StatusOr<std::unique_ptr<ir::Module>> m =
      ir::ParseHloFile(mltune::testing::SourcePath("examples/mlp_train_step.hlo"));
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

// Options with the given action space (empty: every registered pass), other fields default.
PassOrderOptions WithPasses(std::vector<std::string> passes) {
  PassOrderOptions o;
  o.passes = std::move(passes);
  return o;
}
PassOrderOptions WithLength(int64_t length) {
  PassOrderOptions o;
  o.episode_length = length;
  return o;
}
PassOrderOptions WithRegistry(const passes::Registry* registry) {
  PassOrderOptions o;
  o.registry = registry;
  return o;
}

std::unique_ptr<PassOrderEnv> MakeEnv(PassOrderOptions options = {}) {
  absl::StatusOr<std::unique_ptr<PassOrderEnv>> env = PassOrderEnv::Create(std::move(options));
  EXPECT_TRUE(env.ok()) << env.status();
  return env.ok() ? *std::move(env) : nullptr;
}

TEST(PassOrderEnvTest, ActionSpaceDefaultsToEveryRegisteredPassSorted) {
  std::unique_ptr<PassOrderEnv> env = MakeEnv();
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(env->action_names(), passes::Registry::Global().Names());
  EXPECT_EQ(env->action_count(), static_cast<int>(env->action_names().size()));
  EXPECT_EQ(env->action_index("dce"), static_cast<int>(std::find(env->action_names().begin(),
                                                                 env->action_names().end(), "dce") -
                                                       env->action_names().begin()));
  EXPECT_EQ(env->action_index("no-such-pass"), -1);
  EXPECT_FALSE(PassOrderEnv::Create(WithPasses({"no-such-pass"})).ok());
  EXPECT_FALSE(PassOrderEnv::Create(WithPasses({"dce", "dce"})).ok());
  EXPECT_FALSE(PassOrderEnv::Create(WithLength(0)).ok());
}

TEST(PassOrderEnvTest, ResetAndStepReportObservationsAndRewards) {
  std::unique_ptr<PassOrderEnv> env = MakeEnv(WithPasses({"cse", "dce", "algsimp"}));
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(env->Step(0).status().code(), absl::StatusCode::kFailedPrecondition);
  std::unique_ptr<ir::Module> m = Parse(kRedundant);
  absl::StatusOr<Observation> start = env->Reset(*m);
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_EQ(start->op_count, 7);
  EXPECT_EQ(start->fingerprint, ir::Fingerprint(*m));
  EXPECT_EQ(env->initial_score(), 7);

  absl::StatusOr<StepResult> r = env->Step("dce");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->observation.op_count, 6);
  EXPECT_DOUBLE_EQ(r->reward, 1.0 / 7);
  EXPECT_FALSE(r->done);
  EXPECT_TRUE(r->error.empty());

  r = env->Step("dce");  // nothing left to remove
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->changed);
  EXPECT_EQ(r->reward, 0);
  EXPECT_EQ(r->observation.op_count, 6);

  double total = 1.0 / 7;
  for (const char* pass : {"cse", "dce", "algsimp", "dce"}) {
    r = env->Step(pass);
    ASSERT_TRUE(r.ok());
    total += r->reward;
  }
  // Rewards sum to the relative reduction from the start.
  EXPECT_DOUBLE_EQ(total, (7.0 - env->score()) / 7.0);
  EXPECT_LT(env->score(), 6);
  EXPECT_TRUE(ir::VerifyModule(env->module()).ok());
  EXPECT_EQ(env->episode_step(), 6);
  EXPECT_EQ(env->actions_taken().size(), 6u);
  EXPECT_EQ(env->Step(17).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(env->Step("no-such-pass").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PassOrderEnvTest, ResetRejectsModulesThatDoNotVerify) {
  std::unique_ptr<ir::Module> m = Parse(kRedundant);
  m->entry()->root()->set_shape(ir::Shape(ir::PrimitiveType::kF32, {5}));
  std::unique_ptr<PassOrderEnv> env = MakeEnv();
  EXPECT_EQ(env->Reset(*m).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PassOrderEnvTest, ForksAreIndependent) {
  std::unique_ptr<PassOrderEnv> env = MakeEnv(WithPasses({"cse", "dce", "algsimp"}));
  std::unique_ptr<ir::Module> m = Parse(kRedundant);
  ASSERT_TRUE(env->Reset(*m).ok());
  ASSERT_TRUE(env->Step("cse").ok());
  const std::string before = env->observation().fingerprint;
  std::unique_ptr<PassOrderEnv> fork = env->Fork();
  EXPECT_EQ(fork->observation().fingerprint, before);
  EXPECT_EQ(fork->episode_step(), 1);
  ASSERT_TRUE(fork->Step("dce").ok());
  ASSERT_TRUE(fork->Step("algsimp").ok());
  EXPECT_NE(fork->observation().fingerprint, before);
  // The original did not move, and its module is intact.
  EXPECT_EQ(env->observation().fingerprint, before);
  EXPECT_EQ(ir::Fingerprint(env->module()), before);
  EXPECT_EQ(env->episode_step(), 1);
  // Stepping the original the same way reaches the fork's module.
  ASSERT_TRUE(env->Step("dce").ok());
  ASSERT_TRUE(env->Step("algsimp").ok());
  EXPECT_EQ(env->observation().fingerprint, fork->observation().fingerprint);
  EXPECT_TRUE(ir::StructurallyEqual(env->module(), fork->module()));
}

TEST(PassOrderEnvTest, SameActionsGiveTheSameModules) {
  std::unique_ptr<ir::Module> m = Parse(kRedundant);
  std::unique_ptr<PassOrderEnv> a = MakeEnv();
  std::unique_ptr<PassOrderEnv> b = MakeEnv();
  ASSERT_TRUE(a->Reset(*m).ok());
  ASSERT_TRUE(b->Reset(*m).ok());
  for (int i = 0; i < 40; ++i) {
    const int action = (i * 7 + 3) % a->action_count();
    absl::StatusOr<StepResult> ra = a->Step(action);
    absl::StatusOr<StepResult> rb = b->Step(action);
    ASSERT_TRUE(ra.ok() && rb.ok());
    EXPECT_EQ(ra->observation.fingerprint, rb->observation.fingerprint) << i;
    EXPECT_EQ(ra->observation.features, rb->observation.features) << i;
    EXPECT_EQ(ra->reward, rb->reward) << i;
  }
}

TEST(PassOrderEnvTest, EpisodesEndAtTheLengthLimit) {
  std::unique_ptr<PassOrderEnv> env = MakeEnv(WithLength(3));
  std::unique_ptr<ir::Module> m = Parse(kRedundant);
  ASSERT_TRUE(env->Reset(*m).ok());
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<StepResult> r = env->Step("dce");
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->done, i == 2);
  }
  EXPECT_TRUE(env->done());
  EXPECT_EQ(env->Step("dce").status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(env->Reset(*m).ok());
  EXPECT_FALSE(env->done());
  EXPECT_EQ(env->episode_step(), 0);
}

// mask[a] must be exactly "running pass a on a copy changes the fingerprint".
void ExpectMaskMatchesDirectRuns(PassOrderEnv& env) {
  const std::vector<bool> mask = env.ActionMask();
  ASSERT_EQ(mask.size(), static_cast<size_t>(env.action_count()));
  const std::string fingerprint = ir::Fingerprint(env.module());
  for (int a = 0; a < env.action_count(); ++a) {
    std::unique_ptr<ir::Module> copy = env.module().Clone();
    absl::StatusOr<std::unique_ptr<passes::Pass>> pass =
        passes::Registry::Global().Create(env.action_names()[a]);
    ASSERT_TRUE(pass.ok());
    absl::StatusOr<bool> changed = (*pass)->Run(*copy);
    const bool really_changed = changed.ok() && *changed && ir::VerifyModule(*copy).ok() &&
                                ir::Fingerprint(*copy) != fingerprint;
    EXPECT_EQ(mask[a], really_changed) << env.action_names()[a];
  }
}

TEST(PassOrderEnvTest, MaskMarksExactlyThePassesThatChangeTheModule) {
  std::unique_ptr<PassOrderEnv> env = MakeEnv();
  std::unique_ptr<ir::Module> m = Parse(kRedundant);
  ASSERT_TRUE(env->Reset(*m).ok());
  ExpectMaskMatchesDirectRuns(*env);
  const std::vector<bool> mask = env->ActionMask();
  EXPECT_TRUE(mask[env->action_index("dce")]);
  EXPECT_TRUE(mask[env->action_index("cse")]);
  // Masks are cached per module: asking again runs nothing, and stepping a masked-in pass is
  // a cache hit.
  const PassOrderStats before = env->stats();
  EXPECT_EQ(env->ActionMask(), mask);
  ASSERT_TRUE(env->Step("dce").ok());
  EXPECT_EQ(env->stats().pass_runs, before.pass_runs);
  // A masked-out pass really leaves the module alone.
  for (int a = 0; a < env->action_count(); ++a) {
    if (mask[a]) continue;
    std::unique_ptr<PassOrderEnv> original = MakeEnv();
    ASSERT_TRUE(original->Reset(*m).ok());
    absl::StatusOr<StepResult> r = original->Step(a);
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->changed) << env->action_names()[a];
    EXPECT_EQ(r->observation.fingerprint, ir::Fingerprint(*m)) << env->action_names()[a];
  }
  ExpectMaskMatchesDirectRuns(*env);  // after dce
}

TEST(PassOrderEnvTest, MaskOnTheExampleAndACorpusModule) {
  std::unique_ptr<PassOrderEnv> env = MakeEnv();
  std::unique_ptr<ir::Module> example = Example();
  ASSERT_NE(example, nullptr);
  ASSERT_TRUE(env->Reset(*example).ok());
  ExpectMaskMatchesDirectRuns(*env);
  for (const std::string& path : mltune::testing::CorpusFiles()) {
    if (path.find("jaxlie__module_0025") == std::string::npos) continue;
    absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloFile(path);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE(env->Reset(**m).ok());
    ExpectMaskMatchesDirectRuns(*env);
    const std::vector<bool> mask = env->ActionMask();
    EXPECT_GT(std::count(mask.begin(), mask.end(), true), 0);
  }
}

// Test passes: one failing, one throwing, one producing an invalid module, one renaming only.
class FailingPass : public passes::Pass {
 public:
  std::string_view name() const override { return "always-fails"; }
  absl::StatusOr<bool> Run(ir::Module&) override { return absl::InternalError("boom"); }
};
class ThrowingPass : public passes::Pass {
 public:
  std::string_view name() const override { return "throws"; }
  absl::StatusOr<bool> Run(ir::Module&) override { throw std::runtime_error("kaboom"); }
};
class BreakingPass : public passes::Pass {
 public:
  std::string_view name() const override { return "breaks-module"; }
  absl::StatusOr<bool> Run(ir::Module& m) override {
    m.entry()->root()->set_shape(ir::Shape(ir::PrimitiveType::kF32, {5}));
    return true;
  }
};
class RenamingPass : public passes::Pass {
 public:
  std::string_view name() const override { return "renames"; }
  absl::StatusOr<bool> Run(ir::Module& m) override {
    m.entry()->root()->set_name(m.UniqueInstructionName("renamed"));
    return true;
  }
};

passes::Registry TestRegistry() {
  passes::Registry r;
  r.Register({"always-fails", "", [] { return std::make_unique<FailingPass>(); }});
  r.Register({"throws", "", [] { return std::make_unique<ThrowingPass>(); }});
  r.Register({"breaks-module", "", [] { return std::make_unique<BreakingPass>(); }});
  r.Register({"renames", "", [] { return std::make_unique<RenamingPass>(); }});
  for (const char* name : {"dce", "cse", "algsimp"}) {
    r.Register(*passes::Registry::Global().Find(name));
  }
  return r;
}

TEST(PassOrderEnvTest, FailingPassesAreRecordedNoOps) {
  const passes::Registry registry = TestRegistry();
  std::unique_ptr<PassOrderEnv> env = MakeEnv(WithRegistry(&registry));
  ASSERT_NE(env, nullptr);
  EXPECT_EQ(env->action_count(), 7);
  std::unique_ptr<ir::Module> m = Parse(kRedundant);
  ASSERT_TRUE(env->Reset(*m).ok());
  const std::string start = ir::Fingerprint(*m);
  for (const char* pass : {"always-fails", "throws", "breaks-module"}) {
    absl::StatusOr<StepResult> r = env->Step(pass);
    ASSERT_TRUE(r.ok()) << pass;
    EXPECT_FALSE(r->changed) << pass;
    EXPECT_FALSE(r->error.empty()) << pass;
    EXPECT_EQ(r->observation.fingerprint, start) << pass;
    EXPECT_EQ(r->reward, 0) << pass;
  }
  absl::StatusOr<StepResult> renamed = env->Step("renames");
  ASSERT_TRUE(renamed.ok());
  EXPECT_FALSE(renamed->changed);  // structurally identical
  EXPECT_TRUE(renamed->error.empty());
  ASSERT_EQ(env->episode_failures().size(), 3u);
  EXPECT_EQ(env->episode_failures()[0].pass, "always-fails");
  EXPECT_NE(env->episode_failures()[1].message.find("kaboom"), std::string::npos);
  EXPECT_NE(env->episode_failures()[2].message.find("invalid"), std::string::npos);
  EXPECT_EQ(env->stats().failures, 3);
  const std::vector<bool> mask = env->ActionMask();
  EXPECT_FALSE(mask[env->action_index("always-fails")]);
  EXPECT_FALSE(mask[env->action_index("throws")]);
  EXPECT_FALSE(mask[env->action_index("breaks-module")]);
  EXPECT_FALSE(mask[env->action_index("renames")]);
  EXPECT_TRUE(mask[env->action_index("dce")]);
  EXPECT_EQ(env->stats().failures, 3);  // cached: not run again
}

TEST(PassOrderEnvTest, SearchSurvivesFailingPasses) {
  const passes::Registry registry = TestRegistry();
  std::unique_ptr<ir::Module> m = Parse(kRedundant);
  for (const std::string& name : StrategyRegistry::Global().Names()) {
    PassOrderOptions options = WithRegistry(&registry);
    options.episode_length = 8;
    absl::StatusOr<std::unique_ptr<PassOrderProblem>> problem =
        PassOrderProblem::Create(*m, options);
    ASSERT_TRUE(problem.ok()) << problem.status();
    absl::StatusOr<Result> r =
        (*StrategyRegistry::Global().Create(name))->Search(**problem, Budget{150, 0}, 1);
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_LT(r->best_score, 7) << name;
    EXPECT_FALSE((*problem)->failures().empty()) << name;
    std::unique_ptr<ir::Module> best = (*problem)->Apply(r->best);
    EXPECT_TRUE(ir::VerifyModule(*best).ok()) << name;
  }
}

TEST(PassOrderEnvTest, CostModelReplacesTheOpCountAsScore) {
  // Counts only multiplies: dce and cse do not help it, algsimp does.
  ScoreFn multiplies = [](const ir::Module& module) {
    return static_cast<double>(OpcodeHistogram(module)[static_cast<size_t>(ir::Opcode::kMultiply)]);
  };
  PassOrderOptions options = WithPasses({"cse", "dce", "algsimp"});
  options.cost_model = multiplies;
  std::unique_ptr<PassOrderEnv> env = MakeEnv(options);
  std::unique_ptr<ir::Module> m = Parse(kRedundant);
  absl::StatusOr<Observation> o = env->Reset(*m);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->score, 1);
  EXPECT_EQ(o->op_count, 7);
  absl::StatusOr<StepResult> r = env->Step("dce");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->changed);
  EXPECT_EQ(r->reward, 0);
  r = env->Step("algsimp");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->observation.score, 0);
  EXPECT_EQ(r->reward, 1);
}

}  // namespace
}  // namespace mltune::opt::pass_order
