// Deep RL agents for pass ordering in LibTorch: PPO (actor-critic, GAE, clipping, entropy bonus),
// DQN (replay buffer, target network, double-Q) and Max-Q (PerfDojo: the Bellman target is the
// max of the reached state's value and the discounted future, so the agent seeks the best single
// sequence rather than the best average). Observations go through an MLP over opcode-histogram
// and Autophase-style features, or a GraphSAGE encoder over the instruction graph. Actions the
// environment masks out are never taken. Training and inference are seeded and reproducible.
// LibTorch stays inside optimizers/rl/*.cc: this header has plain types only.
// docs/rl.md describes the algorithms, encoders and checkpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/module.h"

namespace mltune::opt::rl {

enum class Algo { kPpo, kDqn, kMaxQ };
std::string_view AlgoName(Algo algo);  // "ppo", "dqn", "maxq"
absl::StatusOr<Algo> ParseAlgo(std::string_view name);

enum class EncoderKind { kMlp, kGnn };
std::string_view EncoderName(EncoderKind kind);  // "mlp", "gnn"
absl::StatusOr<EncoderKind> ParseEncoder(std::string_view name);

// What an agent sees of one state. `features` is fixed-length; the graph (for the GNN encoder) is
// the instruction graph: one node per instruction with its opcode, edges operand -> user.
struct Observation {
  std::vector<float> features;
  std::vector<int32_t> node_opcodes;
  std::vector<float> node_features;  // node_feature_size values per node
  std::vector<int32_t> edge_src, edge_dst;
  std::vector<bool> mask;  // mask[a]: action a may change the state
};

// The environment an agent learns in: episodic, discrete actions with masks. Rewards sum over an
// episode to the relative improvement of the score from the start (pass ordering: op count).
class Environment {
 public:
  virtual ~Environment() = default;
  virtual int action_count() const = 0;
  virtual int feature_size() const = 0;
  virtual int node_feature_size() const = 0;
  virtual int episode_length() const = 0;
  // Starts an episode on instance `index` in [0, instance_count()).
  virtual int instance_count() const = 0;
  // Observations are immutable and may be shared (equal states give the same object), so replay
  // buffers hold pointers, not copies.
  virtual absl::StatusOr<std::shared_ptr<const Observation>> Reset(int index) = 0;
  struct StepResult {
    std::shared_ptr<const Observation> observation;
    double reward = 0;       // score decrease relative to the start
    double improvement = 0;  // (start - now) / start: the reached state's value
    bool done = false;
  };
  virtual absl::StatusOr<StepResult> Step(int action) = 0;
  // Work done beyond the steps taken, for fair comparisons with search strategies: pass
  // ordering computes each state's action mask by trying every pass once (cached per state).
  virtual int64_t pass_runs() const { return 0; }
};

struct AgentConfig {
  // The environment's action names (pass names), saved with the checkpoint so an agent is only
  // ever used with the action space it learned.
  std::vector<std::string> action_names;
  Algo algo = Algo::kPpo;
  EncoderKind encoder = EncoderKind::kMlp;
  int episode_length = 20;  // of the environment it trained in; serving rolls out as long
  int hidden = 128;
  double learning_rate = 1e-3;
  double gamma = 0.99;
  uint64_t seed = 0;
  // PPO
  double gae_lambda = 0.95;
  double clip = 0.2;
  double entropy_coef = 0.01;
  int ppo_epochs = 4;
  int episodes_per_update = 8;
  // DQN / Max-Q
  int replay_capacity = 20000;
  int batch_size = 64;
  int target_sync_steps = 200;
  double epsilon_start = 1.0, epsilon_end = 0.05;
  int epsilon_decay_steps = 2000;
};

struct TrainProgress {
  int episode = 0;
  int64_t env_steps = 0;
  double seconds = 0;
  double mean_return = 0;  // over the last episodes_per_update episodes
  double loss = 0;
  // Mean improvement of greedy rollouts over the evaluation instances; set at evaluations only.
  std::optional<double> eval_improvement;
};

struct TrainOptions {
  int episodes = 200;
  int eval_every = 50;              // episodes; 0 = never
  std::vector<int> eval_instances;  // empty: every instance
  // Evaluate on this environment's instances (e.g. held-out graphs) instead of the training one.
  Environment* eval_env = nullptr;
  std::function<void(const TrainProgress&)> on_progress;  // after each episode
  // Checked between episodes (PPO: between updates): training ends early once it returns true.
  std::function<bool()> stop;
};

struct Rollout {
  std::vector<int> actions;     // as taken
  double best_improvement = 0;  // the best state reached along the rollout
  int best_length = 0;          // its prefix length
  int64_t steps = 0;
};

class Agent {
 public:
  // `feature_size` and `node_feature_size` come from the environment the agent will see.
  static absl::StatusOr<std::unique_ptr<Agent>> Create(const AgentConfig& config, int action_count,
                                                       int feature_size, int node_feature_size);
  // From Save()'s bytes; InvalidArgument for bytes that are not a checkpoint.
  static absl::StatusOr<std::unique_ptr<Agent>> Load(std::string_view checkpoint);
  virtual ~Agent() = default;

  virtual const AgentConfig& config() const = 0;
  virtual int action_count() const = 0;
  virtual std::string Save() const = 0;

  virtual absl::StatusOr<std::vector<TrainProgress>> Train(Environment& env,
                                                           const TrainOptions& options) = 0;
  // One episode on instance `index`: greedy (argmax) or sampled from the policy (softmax over Q
  // values for DQN and Max-Q), within `max_steps` (<= 0: the episode length).
  virtual absl::StatusOr<Rollout> Run(Environment& env, int index, bool greedy, uint64_t seed,
                                      int max_steps = 0) = 0;
};

// Serving: the best pass sequence an agent finds for a new module within `max_steps` environment
// steps: a greedy rollout, then sampled rollouts, then (with `fine_tune`) training on this module
// alone with what is left of the budget, followed by another greedy rollout. `stop` is checked
// between rollouts and episodes.
struct InferenceOptions {
  int64_t max_steps = 200;
  int sampled_rollouts = 4;
  bool fine_tune = false;
  uint64_t seed = 0;
  std::function<bool()> stop;
};
struct InferenceResult {
  std::vector<std::string> best_sequence;  // the best prefix found, as pass names
  double best_improvement = 0;             // relative op-count reduction it reaches
  int64_t steps = 0;                       // environment steps spent
  int64_t pass_runs = 0;                   // passes run, action masks included
  int rollouts = 0;
  double seconds = 0;
};
absl::StatusOr<InferenceResult> InferPassOrder(Agent& agent,
                                               std::shared_ptr<const ir::Module> module,
                                               const InferenceOptions& options);

// The pass-ordering environment over a set of modules (optimizers/pass_order): actions are the
// passes, observations the module's features, graph and action mask.
struct PassOrderEnvOptions {
  std::vector<std::string> passes;  // empty: every registered pass
  int episode_length = 20;
};
absl::StatusOr<std::unique_ptr<Environment>> MakePassOrderEnvironment(
    std::vector<std::shared_ptr<const ir::Module>> modules, const PassOrderEnvOptions& options);
// The pass names of the environment's actions, in order.
std::vector<std::string> PassOrderActionNames(const Environment& env);

}  // namespace mltune::opt::rl
