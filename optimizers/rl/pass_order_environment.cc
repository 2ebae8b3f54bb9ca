// rl::Environment over PassOrderEnv: one environment (and transition cache) per module, and
// observations cached by module fingerprint, so revisiting a state costs a lookup.
#include <cmath>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "ir/computation.h"
#include "ir/instruction.h"
#include "ir/opcode.h"
#include "optimizers/pass_order/pass_order.h"
#include "optimizers/rl/rl.h"

namespace mltune::opt::rl {
namespace {

// Counts and sizes span orders of magnitude: log1p keeps the inputs of the networks in a range
// where one learning rate fits all.
float Squash(double x) { return static_cast<float>(std::copysign(std::log1p(std::fabs(x)), x)); }

constexpr int kNodeFeatures = 4;

class PassOrderEnvironment : public Environment {
 public:
  PassOrderEnvironment(std::vector<std::shared_ptr<const ir::Module>> modules,
                       std::vector<std::unique_ptr<pass_order::PassOrderEnv>> envs,
                       int episode_length)
      : modules_(std::move(modules)), envs_(std::move(envs)), episode_length_(episode_length) {
    feature_size_ = ir::OpcodeCount() + static_cast<int>(pass_order::GraphFeatureNames().size()) +
                    1;  // + episode progress
  }

  int action_count() const override { return envs_.front()->action_count(); }
  int feature_size() const override { return feature_size_; }
  int node_feature_size() const override { return kNodeFeatures; }
  int episode_length() const override { return episode_length_; }
  int instance_count() const override { return static_cast<int>(envs_.size()); }
  const std::vector<std::string>& action_names() const { return envs_.front()->action_names(); }
  int64_t pass_runs() const override {
    int64_t runs = 0;
    for (const auto& env : envs_) runs += env->stats().pass_runs;
    return runs;
  }

  absl::StatusOr<std::shared_ptr<const Observation>> Reset(int index) override {
    if (index < 0 || index >= instance_count()) {
      return absl::OutOfRangeError(absl::StrCat("instance ", index, " of ", instance_count()));
    }
    current_ = index;
    absl::StatusOr<pass_order::Observation> observation = envs_[index]->Reset(*modules_[index]);
    if (!observation.ok()) return observation.status();
    return Observe();
  }

  absl::StatusOr<StepResult> Step(int action) override {
    if (current_ < 0) return absl::FailedPreconditionError("Step before Reset");
    pass_order::PassOrderEnv& env = *envs_[current_];
    absl::StatusOr<pass_order::StepResult> step = env.Step(action);
    if (!step.ok()) return step.status();
    StepResult result;
    result.reward = step->reward;
    result.improvement =
        env.initial_score() != 0 ? (env.initial_score() - env.score()) / env.initial_score() : 0;
    result.observation = Observe();
    // An episode also ends where no pass can change the module any more.
    bool any = false;
    for (bool m : result.observation->mask) any = any || m;
    result.done = step->done || !any;
    return result;
  }

 private:
  // The observation of the current state; the step counter is part of it (finite horizon), so
  // the cache key is (fingerprint, step).
  std::shared_ptr<const Observation> Observe() {
    pass_order::PassOrderEnv& env = *envs_[current_];
    const pass_order::Observation& o = env.observation();
    const std::string key = absl::StrCat(o.fingerprint, "/", env.episode_step());
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    auto observation = std::make_shared<Observation>();
    observation->features.reserve(feature_size_);
    for (int64_t count : o.opcode_histogram) observation->features.push_back(Squash(count));
    for (double f : o.features) observation->features.push_back(Squash(f));
    observation->features.push_back(static_cast<float>(env.episode_step()) /
                                    static_cast<float>(episode_length_));
    AddGraph(env.module(), *observation);
    observation->mask = env.ActionMask();
    if (cache_.size() > kCacheLimit) cache_.clear();
    cache_.emplace(key, observation);
    return observation;
  }

  // The instruction graph of the computations reachable from the entry: edges operand -> user.
  static void AddGraph(const ir::Module& module, Observation& observation) {
    std::unordered_map<const ir::Instruction*, int32_t> index;
    for (const ir::Computation* c : module.MakeComputationPostOrder()) {
      for (const ir::Instruction* instr : c->MakePostOrder()) {
        const int32_t id = static_cast<int32_t>(observation.node_opcodes.size());
        index[instr] = id;
        observation.node_opcodes.push_back(static_cast<int32_t>(instr->opcode()));
        const ir::Shape& shape = instr->shape();
        const double elements = shape.IsArray() ? static_cast<double>(shape.ElementCount()) : 0;
        observation.node_features.push_back(
            shape.IsArray() ? static_cast<float>(shape.rank()) / 4.0f : 0.0f);
        observation.node_features.push_back(Squash(elements) / 10.0f);
        observation.node_features.push_back(c->root() == instr ? 1.0f : 0.0f);
        observation.node_features.push_back(c == module.entry() ? 1.0f : 0.0f);
        for (const ir::Instruction* operand : instr->operands()) {
          auto it = index.find(operand);
          if (it == index.end()) continue;
          observation.edge_src.push_back(it->second);
          observation.edge_dst.push_back(id);
        }
      }
    }
  }

  static constexpr size_t kCacheLimit = 50'000;
  std::vector<std::shared_ptr<const ir::Module>> modules_;
  std::vector<std::unique_ptr<pass_order::PassOrderEnv>> envs_;
  int episode_length_;
  int feature_size_ = 0;
  int current_ = -1;
  std::unordered_map<std::string, std::shared_ptr<const Observation>> cache_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Environment>> MakePassOrderEnvironment(
    std::vector<std::shared_ptr<const ir::Module>> modules, const PassOrderEnvOptions& options) {
  if (modules.empty()) return absl::InvalidArgumentError("no modules to learn from");
  if (options.episode_length < 1) {
    return absl::InvalidArgumentError("episode_length must be >= 1");
  }
  std::vector<std::unique_ptr<pass_order::PassOrderEnv>> envs;
  for (size_t i = 0; i < modules.size(); ++i) {
    pass_order::PassOrderOptions env_options;
    env_options.passes = options.passes;
    env_options.episode_length = options.episode_length;
    // Several modules share the process: a smaller transition cache each.
    env_options.cache_instructions = 100'000;
    absl::StatusOr<std::unique_ptr<pass_order::PassOrderEnv>> env =
        pass_order::PassOrderEnv::Create(env_options);
    if (!env.ok()) return env.status();
    envs.push_back(*std::move(env));
  }
  return std::make_unique<PassOrderEnvironment>(std::move(modules), std::move(envs),
                                                options.episode_length);
}

std::vector<std::string> PassOrderActionNames(const Environment& env) {
  const auto* pass_order_env = dynamic_cast<const PassOrderEnvironment*>(&env);
  return pass_order_env != nullptr ? pass_order_env->action_names() : std::vector<std::string>{};
}

}  // namespace mltune::opt::rl
