// Deep RL agents for pass ordering in LibTorch: PPO (actor-critic, GAE, clipping, entropy bonus),
// DQN (replay buffer, target network, double-Q) and Max-Q (PerfDojo: the Bellman target is the
// max of the reached state's value and the discounted future, so the agent seeks the best single
// sequence rather than the best average). Observations go through an MLP over opcode-histogram
// and Autophase-style features, or a GraphSAGE encoder over the instruction graph. Actions the
// environment masks out are never taken. Training and inference are seeded and reproducible.
// Below them, GO: one graph policy for device placement, scheduling and fusion, trained across
// graphs and served zero-shot, warm-started or fine-tuned (docs/placement.md).
// LibTorch stays inside optimizers/rl/*.cc: this header has plain types only.
// docs/rl.md describes the algorithms, encoders and checkpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
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

namespace mltune::opt::partition {
struct PartitionGraph;
enum class Objective;
}  // namespace mltune::opt::partition
namespace mltune::opt::constraints {
class ConstrainedProblem;
}
namespace mltune::opt::mcm {
class McmChipProblem;
}
namespace mltune::costmodels {
struct OpGraph;
struct FusionPlan;
}  // namespace mltune::costmodels
namespace mltune::backends::cluster {
class ClusterSimulator;
}
namespace mltune::backends::tpu {
class TpuSimulator;
}
namespace mltune::backends::mcm {
class McmSimulator;
}

namespace mltune::opt::rl {

// ---- GO: one graph policy for placement, scheduling and fusion (Zhou et al., NeurIPS 2020) ----
// GraphSAGE over the graph, segmented recurrent attention over the units in topological order,
// feature modulation by the graph's embedding, one head per decision, every unit decided at
// once, refined over a few iterations that see the previous decision; trained with PPO across
// graphs. docs/rl.md#go describes it.

// A graph as GO sees it: decision units (ops, or colocation classes) in topological order.
// Feature 0 of each unit is its compute time and feature 1 its memory, each as a fraction of the
// graph's total: the refinement step sums them per device of the previous decision.
struct GoGraph {
  std::string name;
  int32_t units = 0;
  int32_t feature_size = 0;
  std::vector<float> features;  // units x feature_size
  std::vector<int32_t> edge_src, edge_dst;
  int32_t devices = 1;      // choices of the device head; 1: no placement decision
  bool priorities = false;  // the scheduling head decides
  bool fusion = false;      // the fusion head decides
};

// The number of feature values per unit of every environment (GoGraph::feature_size).
int GoFeatureSize();
inline constexpr int kGoMaxDevices = 64;  // an MCM's 36 chips fit
inline constexpr int kGoPriorityLevels = 8;

struct GoDecision {
  std::vector<int32_t> device;    // per unit, in [0, devices)
  std::vector<int32_t> priority;  // per unit, in [0, kGoPriorityLevels): higher runs first
  std::vector<int32_t> fusion;    // per unit, in [0, kGoPriorityLevels): higher fuses first
};

// One graph and one task: scores decisions (lower is better).
class GoEnvironment {
 public:
  virtual ~GoEnvironment() = default;
  virtual const GoGraph& graph() const = 0;
  struct Outcome {
    double score = 0;     // the objective; meaningful only when valid
    bool valid = true;    // false: out of memory (or otherwise infeasible)
    double overflow = 0;  // how far out of memory, as a fraction of the limit
  };
  virtual Outcome Evaluate(const GoDecision& decision) = 0;
  // The reward's scale: a baseline's score on this graph (m-ETF, the defaults).
  virtual double reference_score() const = 0;
  // The baselines' decisions on this graph (m-ETF, METIS, ...): imitation's teachers.
  virtual std::vector<GoDecision> Baselines() { return {}; }
  // Environments whose valid decisions are sparse turn the policy's proposal into the decision
  // they evaluate (a constraint solver's FIX or SAMPLE, MakeConstrainedEnvironment); the policy
  // then learns from what was evaluated. `device_probabilities` holds the policy's device
  // distribution, units x kGoMaxDevices.
  virtual bool realizes() const { return false; }
  virtual GoDecision Realize(const GoDecision& proposal,
                             const std::vector<float>& /*device_probabilities*/) {
    return proposal;
  }
};

// A split of a dnn-partitioning graph: units are colocation classes, the device head picks the
// accelerator (action a = accelerator a + 1, as PartitionProblem's candidates); infeasible
// splits are invalid. Keeps a reference to `graph`.
std::unique_ptr<GoEnvironment> MakePartitionEnvironment(const partition::PartitionGraph& graph,
                                                        partition::Objective objective);
// Placement and scheduling priority of an op graph on cluster-sim: the simulated makespan (the
// priority queue policy when `schedule`, else FIFO). Keeps references to `graph` and `sim`.
std::unique_ptr<GoEnvironment> MakeClusterEnvironment(
    const costmodels::OpGraph& graph, const backends::cluster::ClusterSimulator& sim,
    bool schedule);

// Fusion priorities on tpu-sim: the fusion head's level per op orders the greedy priority fusion
// pass (level 0 keeps a producer apart); the plan's simulated seconds. Keeps a reference to
// `graph`.
std::unique_ptr<GoEnvironment> MakeFusionEnvironment(const costmodels::OpGraph& graph,
                                                     backends::tpu::TpuSimulator sim);

// A fusion plan's measured seconds (e.g. the CPU worker compiling and running the fused module).
using FusionPlanMeasure = std::function<absl::StatusOr<double>(const costmodels::FusionPlan&)>;
// Fusion priorities as above, each distinct plan measured once by `measure`; a plan whose
// measurement fails is invalid. Units' features come from the ops' roofline costs. Keeps a
// reference to `graph`.
std::unique_ptr<GoEnvironment> MakeMeasuredFusionEnvironment(const costmodels::OpGraph& graph,
                                                             FusionPlanMeasure measure);

// Placement, scheduling and fusion at once on cluster-sim: the fusion head orders the priority
// fusion pass, each kernel runs on its root op's device at its highest priority; the fused
// graph's simulated makespan. Baselines: XLA fusion with everything on device 0 and FIFO (the
// default), and XLA fusion with m-ETF. Keeps references to `graph` and `sim`.
std::unique_ptr<GoEnvironment> MakeJointEnvironment(const costmodels::OpGraph& graph,
                                                    const backends::cluster::ClusterSimulator& sim);

// How a constraint solver turns GO's device decision into a valid one (Xie et al. 2022): FIX
// repairs the proposal with as few changes as it finds (variables in order, each at its proposed
// value when allowed, else the nearest); SAMPLE walks the variables and draws each from the
// policy's distribution restricted to what the constraints still allow.
enum class GoSolverMode { kFix, kSample };
// "fix", "sample"
absl::StatusOr<GoSolverMode> ParseGoSolverMode(std::string_view name);

// `inner` (whose device decision is `problem`'s candidate) with its decisions realized through
// `problem`'s solver in `mode`; a proposal the solver cannot complete is evaluated as it is.
// Keeps a reference to `problem`.
std::unique_ptr<GoEnvironment> MakeConstrainedEnvironment(
    std::unique_ptr<GoEnvironment> inner, const constraints::ConstrainedProblem& problem,
    GoSolverMode mode, uint64_t seed);
// An op graph partitioned onto a multi-chip module's chips (mcm::McmChipProblem), realized in
// `mode`: units are ops, the device head picks the chip, the score is the pipeline's stage
// seconds. Baselines: the balanced partition, the solver's first-fit fill and its local search.
// Keeps a reference to `problem`.
std::unique_ptr<GoEnvironment> MakeMcmEnvironment(const mcm::McmChipProblem& problem,
                                                  GoSolverMode mode, uint64_t seed);

struct GoConfig {
  int hidden = 64;
  int sage_layers = 2;
  int attention_layers = 1;
  int attention_heads = 4;
  int segment = 128;    // units per attention segment
  int refinements = 3;  // decisions per episode: the first, then this many - 1 refinements
  double learning_rate = 1e-3;
  double clip = 0.2;
  double entropy_coef = 0.003;
  int ppo_epochs = 3;
  uint64_t seed = 0;
};

struct GoTrainProgress {
  int iteration = 0;
  int64_t samples = 0;  // decisions evaluated so far
  double seconds = 0;
  double mean_reward = 0;
  // Mean over the evaluation environments of best-greedy score / reference score (lower is
  // better); set at evaluations only.
  std::optional<double> eval_ratio;
};

struct GoTrainOptions {
  // First, this many iterations of imitation: the device head learns the best baseline's
  // decision on each graph (devices renumbered in order of first use), from scratch and from a
  // perturbed copy (the refinement step). Then `iterations` of PPO.
  int imitation_iterations = 0;
  int iterations = 100;
  int graphs_per_iteration = 4;
  int samples_per_graph = 8;  // sampled decisions per graph per iteration (the PPO batch)
  int eval_every = 10;        // iterations; 0 = never
  std::vector<GoEnvironment*> eval_envs;
  std::function<void(const GoTrainProgress&)> on_progress;
  std::function<bool()> stop;
};

struct GoSolveOptions {
  int64_t max_samples = 16;  // decisions evaluated, over every step below
  int sampled = 8;           // sampled decisions after the greedy refinement chain
  bool fine_tune = false;    // then train on this graph alone with what is left
  uint64_t seed = 0;
  // Checked before each sample (a deadline, a cancellation). When it already holds, the first
  // start is still evaluated, and the first greedy decision made when no start is valid, so a
  // result always holds one.
  std::function<bool()> stop;
  // A wall-clock budget (<= 0: none): no decision starts that the slowest one so far (forward
  // pass, realization, evaluation: seconds each at 100k nodes) says would end past it, nor
  // before the first one, that `decision_seconds` (the caller's estimate) says would.
  double seconds = 0;
  double decision_seconds = 0;
  // Warm start: decisions evaluated first (each a sample), the best of them refined by the chain
  // instead of a decision from nothing (the compiler's default, a baseline's placement).
  std::vector<GoDecision> starts;
};

struct GoSolveResult {
  GoDecision best;
  double best_score = std::numeric_limits<double>::infinity();  // +inf: nothing valid found
  int64_t samples = 0;
  double seconds = 0;
  double first_decision_seconds = 0;              // the greedy forward pass alone
  std::vector<std::pair<int64_t, double>> trace;  // (samples, best score) at each improvement
};

class GoPolicy {
 public:
  static absl::StatusOr<std::unique_ptr<GoPolicy>> Create(const GoConfig& config);
  // InvalidArgument for bytes that are not a GO checkpoint.
  static absl::StatusOr<std::unique_ptr<GoPolicy>> Load(std::string_view checkpoint);
  virtual ~GoPolicy() = default;

  virtual const GoConfig& config() const = 0;
  virtual std::string Save() const = 0;
  virtual absl::StatusOr<std::vector<GoTrainProgress>> Train(
      const std::vector<GoEnvironment*>& envs, const GoTrainOptions& options) = 0;
  // Zero-shot: the greedy decision refined `refinements` times, then sampled decisions; with
  // fine_tune, PPO on this graph with the samples left, then greedy again.
  virtual absl::StatusOr<GoSolveResult> Solve(GoEnvironment& env,
                                              const GoSolveOptions& options) = 0;
};

}  // namespace mltune::opt::rl

namespace mltune::opt::rl {

// The graphs GO trains and is evaluated on, each with its family (the model it comes from, for
// held-out splits): dnn-partitioning graph files, and HLO modules as partition graphs (on a
// cluster's accelerators, with a memory limit that binds) or as op graphs placed on cluster-sim.
enum class GoTask {
  kPartition,  // the throughput and latency objectives of dnn-partitioning graphs
  kPlacement,  // device placement and scheduling priorities on cluster-sim (makespan)
  kFusion,     // fusion priorities on tpu-sim (simulated seconds)
  kJoint,      // placement, scheduling and fusion on cluster-sim (makespan)
  kMcm,        // ops onto a multi-chip module's chips through its solver (stage seconds)
};
// "partition", "placement", "fusion", "joint", "mcm"
absl::StatusOr<GoTask> ParseGoTask(std::string_view name);
std::string_view GoTaskName(GoTask task);

// The model family of a graph's name: its leading letters ("bert_l-3_inference" -> "bert",
// "resnet50.infer.b1" -> "resnet", "inception_v3..." -> "inception").
std::string GraphFamily(std::string_view name);

class GoCorpus {
 public:
  // `sim` (a cluster-sim target) gives HLO ops their times, links and memory; kept by reference.
  // The fusion task simulates on `tpu`, the mcm task on `mcm` (required for them).
  GoCorpus(GoTask task, const backends::cluster::ClusterSimulator& sim, uint64_t seed,
           const backends::tpu::TpuSimulator* tpu = nullptr,
           const backends::mcm::McmSimulator* mcm = nullptr);
  ~GoCorpus();
  GoCorpus(const GoCorpus&) = delete;
  GoCorpus& operator=(const GoCorpus&) = delete;

  // kPartition only: a dnn-partitioning graph under `objective`.
  absl::Status AddPartitionGraph(const std::string& path, partition::Objective objective);
  // An HLO module: for kPartition, twice (throughput and latency) on 2..8 accelerators chosen by
  // the seed and the name; for kPlacement and kJoint, once on the simulator's cluster; for
  // kFusion, once on the TPU simulator; for kMcm, once on the MCM (FIX mode). Modules with more
  // than `max_units` ops are refused (FailedPrecondition) to bound training time.
  absl::Status AddHlo(const std::string& path, int32_t max_units);

  struct Entry {
    std::string name;    // file stem, plus the objective for partition graphs
    std::string family;  // GraphFamily of the file stem
    GoEnvironment* env = nullptr;
  };
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  struct Storage;
  GoTask task_;
  const backends::cluster::ClusterSimulator& sim_;
  uint64_t seed_;
  const backends::tpu::TpuSimulator* tpu_;
  const backends::mcm::McmSimulator* mcm_;
  std::unique_ptr<Storage> storage_;
  std::vector<Entry> entries_;
};

}  // namespace mltune::opt::rl
