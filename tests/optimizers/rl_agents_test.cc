// The RL agents on problems whose optimal sequence is known. A combination lock: three positions,
// four actions; only the code (2, 0, 3) reaches the full improvement, a wrong action locks the
// episode at what it had, and action 1 first is a trap worth 0.4 at once (a correct first digit
// is worth 1/3) and nothing after. Every
// algorithm and encoder must learn to open it. Then the pass-ordering environment on a small HLO
// module: an agent trained on it must reach the best op count a full search reaches.
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "optimizers/core/search.h"
#include "optimizers/pass_order/pass_order.h"
#include "optimizers/rl/rl.h"

namespace mltune::opt::rl {
namespace {

class LockEnvironment : public Environment {
 public:
  static constexpr int kLength = 3;
  static constexpr int kActions = 4;
  static constexpr int kCode[kLength] = {2, 0, 3};
  static constexpr double kTrap = 0.4;  // more at once than a correct first digit, less in total

  int action_count() const override { return kActions; }
  int feature_size() const override { return kLength + 2 + kActions; }
  int node_feature_size() const override { return 1; }
  int episode_length() const override { return kLength; }
  int instance_count() const override { return 1; }

  absl::StatusOr<std::shared_ptr<const Observation>> Reset(int) override {
    t_ = 0;
    open_ = true;
    trapped_ = false;
    taken_.clear();
    value_ = 0;
    return Observe();
  }

  absl::StatusOr<StepResult> Step(int action) override {
    double value = value_;
    if (t_ == 0 && action == 1) {
      value = kTrap;
      trapped_ = true;
      open_ = false;
    } else if (open_ && action == kCode[t_]) {
      value = (t_ + 1) / static_cast<double>(kLength);
    } else {
      open_ = false;
    }
    StepResult result;
    result.reward = value - value_;
    result.improvement = value;
    value_ = value;
    taken_.push_back(action);
    ++t_;
    result.done = t_ == kLength;
    result.observation = Observe();
    return result;
  }

 private:
  std::shared_ptr<const Observation> Observe() const {
    auto o = std::make_shared<Observation>();
    o->features.assign(feature_size(), 0.0f);
    if (t_ < kLength) o->features[t_] = 1;
    o->features[kLength] = open_ ? 1 : 0;
    o->features[kLength + 1] = trapped_ ? 1 : 0;
    if (!taken_.empty()) o->features[kLength + 2 + taken_.back()] = 1;
    for (size_t i = 0; i < taken_.size(); ++i) {
      o->node_opcodes.push_back(taken_[i]);
      o->node_features.push_back(static_cast<float>(i) / kLength);
      if (i > 0) {
        o->edge_src.push_back(static_cast<int32_t>(i - 1));
        o->edge_dst.push_back(static_cast<int32_t>(i));
      }
    }
    o->mask.assign(kActions, true);
    return o;
  }

  int t_ = 0;
  bool open_ = true, trapped_ = false;
  double value_ = 0;
  std::vector<int> taken_;
};

std::unique_ptr<Agent> MustCreate(Algo algo, EncoderKind encoder, uint64_t seed = 1) {
  AgentConfig config;
  config.algo = algo;
  config.encoder = encoder;
  config.seed = seed;
  config.hidden = 32;
  config.learning_rate = algo == Algo::kPpo ? 1e-3 : 3e-3;
  config.episode_length = LockEnvironment::kLength;
  config.epsilon_decay_steps = 600;
  config.batch_size = 32;
  config.target_sync_steps = 50;
  // The trap pays at once: on-policy PPO needs a stronger entropy bonus to keep exploring past it.
  config.entropy_coef = 0.05;
  LockEnvironment env;
  absl::StatusOr<std::unique_ptr<Agent>> agent =
      Agent::Create(config, env.action_count(), env.feature_size(), env.node_feature_size());
  EXPECT_TRUE(agent.ok()) << agent.status();
  return agent.ok() ? *std::move(agent) : nullptr;
}

class LockTest : public ::testing::TestWithParam<std::pair<Algo, EncoderKind>> {};

TEST_P(LockTest, LearnsTheCodeAndAvoidsTheTrap) {
  const auto [algo, encoder] = GetParam();
  std::unique_ptr<Agent> agent = MustCreate(algo, encoder);
  ASSERT_NE(agent, nullptr);
  LockEnvironment env;
  TrainOptions options;
  options.episodes = algo == Algo::kPpo ? 1200 : 500;
  options.eval_every = 100;
  absl::StatusOr<std::vector<TrainProgress>> history = agent->Train(env, options);
  ASSERT_TRUE(history.ok()) << history.status();
  ASSERT_EQ(history->size(), static_cast<size_t>(options.episodes));
  EXPECT_TRUE(history->back().eval_improvement.has_value());
  absl::StatusOr<Rollout> rollout = agent->Run(env, 0, /*greedy=*/true, 0, 0);
  ASSERT_TRUE(rollout.ok()) << rollout.status();
  EXPECT_EQ(rollout->actions, (std::vector<int>{2, 0, 3}))
      << AlgoName(algo) << "/" << EncoderName(encoder);
  EXPECT_DOUBLE_EQ(rollout->best_improvement, 1.0);
  EXPECT_EQ(rollout->best_length, 3);
}

INSTANTIATE_TEST_SUITE_P(Agents, LockTest,
                         ::testing::Values(std::pair{Algo::kPpo, EncoderKind::kMlp},
                                           std::pair{Algo::kDqn, EncoderKind::kMlp},
                                           std::pair{Algo::kMaxQ, EncoderKind::kMlp},
                                           std::pair{Algo::kPpo, EncoderKind::kGnn},
                                           std::pair{Algo::kMaxQ, EncoderKind::kGnn}),
                         [](const auto& info) {
                           return std::string(AlgoName(info.param.first)) + "_" +
                                  std::string(EncoderName(info.param.second));
                         });

TEST(AgentTest, TrainingIsReproducibleForASeed) {
  for (Algo algo : {Algo::kPpo, Algo::kDqn}) {
    std::vector<double> returns[2];
    for (int run = 0; run < 2; ++run) {
      std::unique_ptr<Agent> agent = MustCreate(algo, EncoderKind::kMlp, 7);
      LockEnvironment env;
      TrainOptions options;
      options.episodes = 40;
      options.eval_every = 0;
      absl::StatusOr<std::vector<TrainProgress>> history = agent->Train(env, options);
      ASSERT_TRUE(history.ok());
      for (const TrainProgress& p : *history) returns[run].push_back(p.mean_return);
    }
    EXPECT_EQ(returns[0], returns[1]) << AlgoName(algo);
  }
}

TEST(AgentTest, TrainingStopsWhenAskedBetweenEpisodes) {
  for (Algo algo : {Algo::kPpo, Algo::kMaxQ}) {
    std::unique_ptr<Agent> agent = MustCreate(algo, EncoderKind::kMlp);
    LockEnvironment env;
    TrainOptions options;
    options.episodes = 500;
    options.eval_every = 0;
    int progress_reports = 0;
    options.on_progress = [&](const TrainProgress&) { ++progress_reports; };
    options.stop = [&] { return progress_reports >= 16; };
    absl::StatusOr<std::vector<TrainProgress>> history = agent->Train(env, options);
    ASSERT_TRUE(history.ok());
    EXPECT_EQ(history->size(), 16u) << AlgoName(algo);
  }
}

TEST(AgentTest, ACheckpointRoundTripsAndBadBytesAreRefused) {
  std::unique_ptr<Agent> agent = MustCreate(Algo::kMaxQ, EncoderKind::kGnn);
  LockEnvironment env;
  TrainOptions options;
  options.episodes = 300;
  options.eval_every = 0;
  ASSERT_TRUE(agent->Train(env, options).ok());
  const std::string bytes = agent->Save();
  absl::StatusOr<std::unique_ptr<Agent>> loaded = Agent::Load(bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->config().algo, Algo::kMaxQ);
  EXPECT_EQ((*loaded)->config().encoder, EncoderKind::kGnn);
  EXPECT_EQ((*loaded)->Run(env, 0, true, 0, 0)->actions, agent->Run(env, 0, true, 0, 0)->actions);

  EXPECT_EQ(Agent::Load("garbage").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Agent::Load(bytes.substr(0, bytes.size() / 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAlgo("a3c").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AgentTest, AnEnvironmentOfAnotherShapeIsRefused) {
  AgentConfig config;
  absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(config, 5, 9, 1);
  ASSERT_TRUE(agent.ok());
  LockEnvironment env;  // 4 actions
  EXPECT_EQ((*agent)->Run(env, 0, true, 0, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Agent::Create(config, 0, 9, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

constexpr char kSmallHlo[] = R"(HloModule small
ENTRY e {
  p = f32[8,8] parameter(0)
  zero = f32[] constant(0)
  one = f32[] constant(1)
  z = f32[8,8] broadcast(zero), dimensions={}
  o = f32[8,8] broadcast(one), dimensions={}
  a = f32[8,8] multiply(p, o)
  b = f32[8,8] add(a, z)
  c = f32[8,8] add(a, z)
  t = f32[8,8] transpose(b), dimensions={1,0}
  u = f32[8,8] transpose(t), dimensions={1,0}
  m = f32[8,8] maximum(u, c)
  n = f32[8,8] negate(m)
  ROOT r = f32[8,8] negate(n)
}
)";

TEST(PassOrderAgentTest, LearnsToReachTheBestOpCountASearchFinds) {
  absl::StatusOr<std::unique_ptr<ir::Module>> parsed = ir::ParseHloText(kSmallHlo);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::shared_ptr<const ir::Module> module(*std::move(parsed));
  const std::vector<std::string> passes = {"algsimp", "cse", "dce", "reshape-mover",
                                           "transpose-folding"};

  // The best a thorough search finds on the same action space.
  pass_order::PassOrderOptions search_options;
  search_options.passes = passes;
  search_options.episode_length = 4;
  absl::StatusOr<std::unique_ptr<pass_order::PassOrderProblem>> problem =
      pass_order::PassOrderProblem::Create(*module, search_options);
  ASSERT_TRUE(problem.ok());
  absl::StatusOr<Result> best =
      (*StrategyRegistry::Global().Create("beam"))->Search(**problem, Budget(5000, 0), 1);
  ASSERT_TRUE(best.ok());
  const double best_improvement = 1.0 - best->best_score / best->initial_score;
  ASSERT_GT(best_improvement, 0.5);

  PassOrderEnvOptions env_options;
  env_options.passes = passes;
  env_options.episode_length = 4;
  absl::StatusOr<std::unique_ptr<Environment>> env =
      MakePassOrderEnvironment({module}, env_options);
  ASSERT_TRUE(env.ok()) << env.status();
  EXPECT_EQ(PassOrderActionNames(**env), passes);
  for (Algo algo : {Algo::kPpo, Algo::kMaxQ}) {
    AgentConfig config;
    config.algo = algo;
    config.action_names = passes;
    config.episode_length = 4;
    config.hidden = 32;
    config.learning_rate = 3e-3;
    config.epsilon_decay_steps = 300;
    config.batch_size = 32;
    config.seed = 3;
    absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(
        config, (*env)->action_count(), (*env)->feature_size(), (*env)->node_feature_size());
    ASSERT_TRUE(agent.ok()) << agent.status();
    TrainOptions options;
    options.episodes = 150;
    options.eval_every = 0;
    ASSERT_TRUE((*agent)->Train(**env, options).ok());

    InferenceOptions inference;
    inference.max_steps = 4;
    inference.sampled_rollouts = 0;
    absl::StatusOr<InferenceResult> result = InferPassOrder(**agent, module, inference);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_NEAR(result->best_improvement, best_improvement, 1e-9) << AlgoName(algo);
    EXPECT_LE(result->steps, 4);
    EXPECT_GT(result->pass_runs, 0);
    // The sequence it names reproduces the improvement it reports.
    absl::StatusOr<Candidate> candidate = (*problem)->ParseCandidate(result->best_sequence);
    ASSERT_TRUE(candidate.ok());
    const double reached = (*problem)->Observe(*candidate).score;
    EXPECT_NEAR(1.0 - reached / best->initial_score, result->best_improvement, 1e-9);
  }
}

}  // namespace
}  // namespace mltune::opt::rl
