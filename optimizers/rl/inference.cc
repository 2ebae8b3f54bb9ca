// Serving an agent on a new module: rollouts (greedy, then sampled), optional fine-tuning on the
// module itself, all within the request's budget of environment steps.
#include <chrono>

#include "optimizers/rl/rl.h"

namespace mltune::opt::rl {

absl::StatusOr<InferenceResult> InferPassOrder(Agent& agent,
                                               std::shared_ptr<const ir::Module> module,
                                               const InferenceOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PassOrderEnvOptions env_options;
  env_options.passes = agent.config().action_names;
  env_options.episode_length = agent.config().episode_length;
  absl::StatusOr<std::unique_ptr<Environment>> env =
      MakePassOrderEnvironment({std::move(module)}, env_options);
  if (!env.ok()) return env.status();
  if ((*env)->action_count() != agent.action_count()) {
    return absl::FailedPreconditionError(
        "the agent was trained on a different set of passes than this build has");
  }

  InferenceResult result;
  Rollout best;
  auto budget_left = [&] { return options.max_steps - result.steps; };
  auto stopped = [&] { return options.stop && options.stop(); };
  auto roll = [&](bool greedy, uint64_t seed) -> absl::Status {
    const int64_t left = budget_left();
    if (left <= 0 || stopped()) return absl::OkStatus();
    absl::StatusOr<Rollout> r =
        agent.Run(**env, 0, greedy, seed, static_cast<int>(std::min<int64_t>(left, 1 << 30)));
    if (!r.ok()) return r.status();
    result.steps += r->steps;
    ++result.rollouts;
    if (result.rollouts == 1 || r->best_improvement > best.best_improvement) best = *r;
    return absl::OkStatus();
  };

  if (absl::Status s = roll(/*greedy=*/true, options.seed); !s.ok()) return s;
  for (int i = 0; i < options.sampled_rollouts; ++i) {
    if (absl::Status s = roll(/*greedy=*/false, options.seed + 1 + i); !s.ok()) return s;
  }
  if (options.fine_tune && !stopped()) {
    // Spend what is left on learning this module, keeping the last greedy rollout's budget.
    const int64_t episodes = (budget_left() - agent.config().episode_length) /
                             std::max(1, agent.config().episode_length);
    if (episodes > 0) {
      TrainOptions train;
      train.episodes = static_cast<int>(episodes);
      train.eval_every = 0;
      train.stop = options.stop;
      absl::StatusOr<std::vector<TrainProgress>> trained = agent.Train(**env, train);
      if (!trained.ok()) return trained.status();
      if (!trained->empty()) result.steps += trained->back().env_steps;
      if (absl::Status s = roll(/*greedy=*/true, options.seed); !s.ok()) return s;
    }
  }

  const std::vector<std::string> names = PassOrderActionNames(**env);
  for (int i = 0; i < best.best_length; ++i) result.best_sequence.push_back(names[best.actions[i]]);
  result.best_improvement = best.best_improvement;
  result.pass_runs = (*env)->pass_runs();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace mltune::opt::rl
