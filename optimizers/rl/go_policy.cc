// GO's training and serving: imitation of the best baseline, PPO across graphs with each graph's
// sampled decisions as the baseline, and serving by a refined greedy chain, samples and optional
// fine-tuning; checkpoints. The network is go_network.h.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "optimizers/rl/checkpoint_format.h"
#include "optimizers/rl/go_network.h"
#include "optimizers/rl/rl.h"

namespace mltune::opt::rl {
namespace {

using internal::Actions;
using internal::DecisionAt;
using internal::Entropy;
using internal::GoNet;
using internal::GraphTensors;
using internal::Heads;
using internal::HeadsOf;
using internal::Logits;
using internal::LogProb;
using internal::MakeTensors;
using internal::RefineInputs;

constexpr char kMagic[] = "mltune-go-policy-v1\n";

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Reward(const GoEnvironment::Outcome& o, double reference) {
  if (!o.valid || !std::isfinite(o.score)) return -3 - std::min(o.overflow, 5.0);
  return -std::sqrt(std::max(0.0, o.score) / reference);
}

// One PPO sample batch: a graph, the inputs it was decided from, S decisions and their
// advantages.
struct Batch {
  const GraphTensors* tensors;
  Heads heads;
  torch::Tensor refine;
  Actions actions;
  torch::Tensor old_logp;   // [n, S]
  torch::Tensor advantage;  // [S]
};

class TorchGoPolicy : public GoPolicy {
 public:
  explicit TorchGoPolicy(const GoConfig& config)
      : config_(config), generator_(at::detail::createCPUGenerator(config.seed)) {
    torch::manual_seed(config_.seed);
    net_ = GoNet(config_);
    optimizer_ = std::make_unique<torch::optim::Adam>(
        net_->parameters(), torch::optim::AdamOptions(config_.learning_rate));
  }

  const GoConfig& config() const override { return config_; }

  std::string Save() const override {
    nlohmann::json j;
    j["hidden"] = config_.hidden;
    j["sage_layers"] = config_.sage_layers;
    j["attention_layers"] = config_.attention_layers;
    j["attention_heads"] = config_.attention_heads;
    j["segment"] = config_.segment;
    j["refinements"] = config_.refinements;
    j["learning_rate"] = config_.learning_rate;
    j["clip"] = config_.clip;
    j["entropy_coef"] = config_.entropy_coef;
    j["ppo_epochs"] = config_.ppo_epochs;
    j["seed"] = config_.seed;
    j["features"] = GoFeatureSize();
    return internal::JoinCheckpoint(kMagic, j.dump(), internal::ModuleBytes(*net_));
  }

  void LoadWeights(const std::string& bytes) { internal::LoadModuleBytes(*net_, bytes); }

  absl::StatusOr<std::vector<GoTrainProgress>> Train(const std::vector<GoEnvironment*>& envs,
                                                     const GoTrainOptions& options) override {
    if (envs.empty()) return absl::InvalidArgumentError("GO training needs at least one graph");
    for (GoEnvironment* env : envs) {
      if (absl::Status s = Check(*env); !s.ok()) return s;
    }
    const auto start = Clock::now();
    std::vector<GoTrainProgress> history;
    std::mt19937_64 rng(config_.seed + 17);
    std::vector<size_t> order(envs.size());
    std::iota(order.begin(), order.end(), 0);
    size_t next = order.size();
    int64_t samples = 0;
    for (int it = 0; it < options.imitation_iterations; ++it) {
      if (options.stop && options.stop()) break;
      std::vector<GoEnvironment*> picked;
      for (int b = 0; b < std::max(1, options.graphs_per_iteration); ++b) {
        if (next >= order.size()) {
          std::shuffle(order.begin(), order.end(), rng);
          next = 0;
        }
        picked.push_back(envs[order[next++]]);
      }
      GoTrainProgress p;
      p.iteration = it + 1;
      p.mean_reward = Imitate(picked, rng);  // the imitation loss, while imitating
      p.seconds = Since(start);
      if (options.on_progress) options.on_progress(p);
    }
    for (int it = 0; it < options.iterations; ++it) {
      if (options.stop && options.stop()) break;
      std::vector<Batch> batches;
      double reward_sum = 0;
      int64_t reward_count = 0;
      for (int b = 0; b < std::max(1, options.graphs_per_iteration); ++b) {
        if (next >= order.size()) {
          std::shuffle(order.begin(), order.end(), rng);
          next = 0;
        }
        GoEnvironment& env = *envs[order[next++]];
        const int64_t spent = Collect(env, std::max(2, options.samples_per_graph), &batches,
                                      &reward_sum, &reward_count);
        samples += spent;
      }
      Update(batches);
      GoTrainProgress p;
      p.iteration = it + 1;
      p.samples = samples;
      p.mean_reward = reward_count > 0 ? reward_sum / static_cast<double>(reward_count) : 0;
      if (options.eval_every > 0 && (it + 1) % options.eval_every == 0 &&
          !options.eval_envs.empty()) {
        p.eval_ratio = EvaluateGreedy(options.eval_envs);
      }
      p.seconds = Since(start);
      history.push_back(p);
      if (options.on_progress) options.on_progress(p);
    }
    return history;
  }

  absl::StatusOr<GoSolveResult> Solve(GoEnvironment& env, const GoSolveOptions& options) override {
    if (absl::Status s = Check(env); !s.ok()) return s;
    const auto start = Clock::now();
    generator_ = at::detail::createCPUGenerator(options.seed);
    const GoGraph& g = env.graph();
    const GraphTensors tensors = MakeTensors(g);
    const Heads heads = HeadsOf(g);
    GoSolveResult result;
    auto left = [&] { return options.max_samples - result.samples; };
    // The slowest decision so far, from its start to its evaluation (at first the estimate).
    double slowest = std::max(0.0, options.decision_seconds);
    // Whether work taking `seconds` more would end past the budget.
    auto late = [&](double seconds) {
      return options.seconds > 0 && Since(start) + seconds > options.seconds;
    };
    auto stopped = [&] { return (options.stop && options.stop()) || late(slowest); };
    auto consider = [&](const GoDecision& d) {
      const GoEnvironment::Outcome o = env.Evaluate(d);
      ++result.samples;
      if (o.valid && std::isfinite(o.score) && o.score < result.best_score) {
        result.best_score = o.score;
        result.best = d;
        result.trace.emplace_back(result.samples, o.score);
      }
      return o;
    };
    // A deadline already spent still gets one answer: the first start's when it is valid, else
    // the policy's first decision (a decision costs a forward pass and its realization, seconds
    // at 100k nodes, so it is not made past the deadline when a start holds).
    for (size_t i = 0; i < options.starts.size(); ++i) {
      if (left() <= 0 || (i > 0 && stopped())) break;
      const auto begin = Clock::now();
      // A realizing environment reads a start as it reads a decision (an invalid one made valid),
      // while time is left: a reading costs DPs, a second each at 100k nodes.
      const bool read = env.realizes() && !stopped();
      consider(read ? env.Realize(options.starts[i], {}) : options.starts[i]);
      slowest = std::max(slowest, Since(begin));
    }
    // The greedy chain: each decision sees the best one so far.
    for (int t = 0; t < std::max(1, config_.refinements) && left() > 0 &&
                    (!stopped() || (t == 0 && result.best.device.empty()));
         ++t) {
      const auto pass = Clock::now();
      GoDecision d =
          Greedy(g, tensors, heads, result.best.device.empty() ? nullptr : &result.best, &env);
      if (t == 0) result.first_decision_seconds = Since(pass);
      consider(d);
      slowest = std::max(slowest, Since(pass));
      if (result.best.device.empty()) result.best = d;  // nothing valid yet: refine from it
    }
    // Samples around the best.
    const int64_t sampled = std::min<int64_t>(options.sampled, left());
    if (sampled > 0 && !stopped()) {
      torch::NoGradGuard no_grad;
      const GoDecision prev = result.best;
      const Logits logits = net_->forward(tensors, RefineInputs(g, &prev));
      const Actions a = Sample(logits, heads, sampled);
      const std::vector<float> probabilities = DeviceProbabilities(env, logits);
      for (int64_t s = 0; s < sampled && !stopped(); ++s) {
        const auto begin = Clock::now();
        const GoDecision d = DecisionAt(g, a, s);
        consider(env.realizes() ? env.Realize(d, probabilities) : d);
        slowest = std::max(slowest, Since(begin));
      }
    }
    if (options.fine_tune) {
      // PPO on this graph alone, keeping enough for the last greedy chain.
      const int64_t per_round = static_cast<int64_t>(std::max(1, config_.refinements)) * 8;
      double slowest_round = 0;
      while (left() >= per_round + config_.refinements && !stopped() && !late(slowest_round)) {
        const auto begin = Clock::now();
        std::vector<Batch> batches;
        double reward_sum = 0;
        int64_t count = 0;
        result.samples += Collect(env, 8, &batches, &reward_sum, &count, &result);
        Update(batches);
        slowest_round = std::max(slowest_round, Since(begin));
      }
      for (int t = 0; t < std::max(1, config_.refinements) && left() > 0 && !stopped(); ++t) {
        consider(Greedy(g, tensors, heads, &result.best, &env));
      }
    }
    if (!std::isfinite(result.best_score))
      result.best_score = std::numeric_limits<double>::infinity();
    result.seconds = Since(start);
    return result;
  }

 private:
  absl::Status Check(GoEnvironment& env) const {
    const GoGraph& g = env.graph();
    if (g.feature_size != GoFeatureSize() ||
        g.features.size() != static_cast<size_t>(g.units) * static_cast<size_t>(g.feature_size)) {
      return absl::InvalidArgumentError(
          absl::StrCat("GO: graph ", g.name, " has features of the wrong size"));
    }
    if (g.units < 1)
      return absl::InvalidArgumentError(absl::StrCat("GO: graph ", g.name, " is empty"));
    if (g.devices > kGoMaxDevices) {
      return absl::InvalidArgumentError(absl::StrCat("GO: graph ", g.name, " has ", g.devices,
                                                     " devices; the policy decides among at most ",
                                                     kGoMaxDevices));
    }
    return absl::OkStatus();
  }

  const GraphTensors& TensorsOf(GoEnvironment& env) {
    auto it = tensors_.find(&env);
    if (it == tensors_.end()) it = tensors_.emplace(&env, MakeTensors(env.graph())).first;
    return it->second;
  }

  Actions Sample(const Logits& logits, Heads heads, int64_t count) {
    Actions a;
    auto draw = [&](const torch::Tensor& l) {
      return torch::multinomial(torch::softmax(l, 1), count, true, generator_);
    };
    if (heads.device) a.device = draw(logits.device);
    if (heads.priority) a.priority = draw(logits.priority);
    if (heads.fusion) a.fusion = draw(logits.fusion);
    return a;
  }

  // The most likely decision; realized by `env` when it realizes decisions.
  GoDecision Greedy(const GoGraph& g, const GraphTensors& tensors, Heads heads,
                    const GoDecision* prev, GoEnvironment* env = nullptr) {
    torch::NoGradGuard no_grad;
    const Logits logits = net_->forward(tensors, RefineInputs(g, prev));
    Actions a;
    if (heads.device) a.device = logits.device.argmax(1, true);
    if (heads.priority) a.priority = logits.priority.argmax(1, true);
    if (heads.fusion) a.fusion = logits.fusion.argmax(1, true);
    const GoDecision d = DecisionAt(g, a, 0);
    if (env == nullptr || !env->realizes()) return d;
    return env->Realize(d, DeviceProbabilities(*env, logits));
  }

  // units x kGoMaxDevices, row-major; empty unless `env` realizes decisions.
  static std::vector<float> DeviceProbabilities(const GoEnvironment& env, const Logits& logits) {
    if (!env.realizes() || !logits.device.defined()) return {};
    const torch::Tensor p = torch::softmax(logits.device, 1).contiguous();
    const float* data = p.data_ptr<float>();
    return std::vector<float>(data, data + p.numel());
  }

  // Samples `count` decisions per refinement step on `env`, each step refining the best of the
  // previous one, into `batches`; returns the decisions evaluated.
  int64_t Collect(GoEnvironment& env, int count, std::vector<Batch>* batches, double* reward_sum,
                  int64_t* reward_count, GoSolveResult* track = nullptr) {
    const GoGraph& g = env.graph();
    const GraphTensors& tensors = TensorsOf(env);
    const Heads heads = HeadsOf(g);
    const double reference = env.reference_score();
    GoDecision best;
    bool have_best = false;
    int64_t spent = 0;
    for (int t = 0; t < std::max(1, config_.refinements); ++t) {
      torch::NoGradGuard no_grad;
      Batch batch;
      batch.tensors = &tensors;
      batch.heads = heads;
      batch.refine = RefineInputs(g, have_best ? &best : nullptr);
      const Logits logits = net_->forward(tensors, batch.refine);
      batch.actions = Sample(logits, heads, count);
      // A realizing environment evaluates its own decision: the policy learns from that one.
      std::vector<GoDecision> decisions(static_cast<size_t>(count));
      const std::vector<float> probabilities = DeviceProbabilities(env, logits);
      for (int64_t s = 0; s < count; ++s) {
        decisions[static_cast<size_t>(s)] = DecisionAt(g, batch.actions, s);
        if (!env.realizes()) continue;
        GoDecision& d = decisions[static_cast<size_t>(s)];
        d = env.Realize(d, probabilities);
        if (batch.actions.device.defined() && d.device.size() == static_cast<size_t>(g.units)) {
          batch.actions.device.select(1, s).copy_(
              torch::tensor(std::vector<int64_t>(d.device.begin(), d.device.end()), torch::kLong));
        }
      }
      batch.old_logp = LogProb(logits, batch.actions, heads);
      std::vector<double> rewards(static_cast<size_t>(count));
      double best_reward = -1e300;
      int64_t best_column = 0;
      for (int64_t s = 0; s < count; ++s) {
        const GoDecision& d = decisions[static_cast<size_t>(s)];
        const GoEnvironment::Outcome o = env.Evaluate(d);
        ++spent;
        if (track != nullptr && o.valid && o.score < track->best_score) {
          track->best_score = o.score;
          track->best = d;
          track->trace.emplace_back(track->samples + spent, o.score);
        }
        rewards[static_cast<size_t>(s)] = Reward(o, reference);
        if (rewards[static_cast<size_t>(s)] > best_reward) {
          best_reward = rewards[static_cast<size_t>(s)];
          best_column = s;
        }
        *reward_sum += rewards[static_cast<size_t>(s)];
        ++*reward_count;
      }
      best = decisions[static_cast<size_t>(best_column)];
      have_best = true;
      // The graph's own samples are the baseline: rewards are comparable only within a graph.
      const double mean = std::accumulate(rewards.begin(), rewards.end(), 0.0) / count;
      double var = 0;
      for (double r : rewards) var += (r - mean) * (r - mean);
      const double sd = std::sqrt(var / count);
      std::vector<float> advantage(rewards.size(), 0);
      if (sd > 1e-9) {
        for (size_t s = 0; s < rewards.size(); ++s) {
          advantage[s] = static_cast<float>((rewards[s] - mean) / sd);
        }
      }
      batch.advantage = torch::tensor(advantage).unsqueeze(0);
      if (sd > 1e-9) batches->push_back(std::move(batch));
    }
    return spent;
  }

  void Update(const std::vector<Batch>& batches) {
    if (batches.empty()) return;
    for (int epoch = 0; epoch < std::max(1, config_.ppo_epochs); ++epoch) {
      optimizer_->zero_grad();
      for (const Batch& b : batches) {
        const Logits logits = net_->forward(*b.tensors, b.refine);
        const torch::Tensor ratio = (LogProb(logits, b.actions, b.heads) - b.old_logp).exp();
        // Each unit's decision is clipped on its own, sharing the decision's advantage.
        const torch::Tensor surrogate = torch::min(
            ratio * b.advantage, ratio.clamp(1 - config_.clip, 1 + config_.clip) * b.advantage);
        const torch::Tensor loss =
            -surrogate.mean() - config_.entropy_coef * Entropy(logits, b.heads);
        (loss / static_cast<double>(batches.size())).backward();
      }
      torch::nn::utils::clip_grad_norm_(net_->parameters(), 1.0);
      optimizer_->step();
    }
  }

  // The best baseline's decision on `env`, devices renumbered in order of first use (a
  // placement's device names are arbitrary; this makes the target unique). Cached per graph.
  const GoDecision& Teacher(GoEnvironment& env) {
    auto it = teachers_.find(&env);
    if (it != teachers_.end()) return it->second;
    GoDecision best;
    double best_reward = -1e300;
    for (const GoDecision& d : env.Baselines()) {
      const double r = Reward(env.Evaluate(d), env.reference_score());
      if (r > best_reward) {
        best_reward = r;
        best = d;
      }
    }
    std::vector<int32_t> rename(kGoMaxDevices, -1);
    int32_t next = 0;
    for (int32_t& d : best.device) {
      const size_t slot = static_cast<size_t>(std::clamp(d, 0, kGoMaxDevices - 1));
      if (rename[slot] < 0) rename[slot] = next++;
      d = rename[slot];
    }
    return teachers_.emplace(&env, std::move(best)).first->second;
  }

  // One step of imitation on `envs`; returns the mean cross-entropy.
  double Imitate(const std::vector<GoEnvironment*>& envs, std::mt19937_64& rng) {
    optimizer_->zero_grad();
    double total = 0;
    int terms = 0;
    for (GoEnvironment* env : envs) {
      const GoGraph& g = env->graph();
      const Heads heads = HeadsOf(g);
      const GoDecision& teacher = Teacher(*env);
      const size_t n = static_cast<size_t>(g.units);
      // The heads whose teacher decision is known: devices, and the fusion levels and priorities
      // of the baselines that set them (XLA's fusion is level 1 everywhere).
      auto labels = [](const std::vector<int32_t>& v) {
        return torch::tensor(std::vector<int64_t>(v.begin(), v.end()), torch::kLong);
      };
      const bool device = heads.device && teacher.device.size() == n;
      const bool fusion = heads.fusion && teacher.fusion.size() == n;
      const bool priority = heads.priority && teacher.priority.size() == n;
      if (!device && !fusion && !priority) continue;
      const GraphTensors& tensors = TensorsOf(*env);
      const torch::Tensor device_target = device ? labels(teacher.device) : torch::Tensor();
      const torch::Tensor fusion_target = fusion ? labels(teacher.fusion) : torch::Tensor();
      const torch::Tensor priority_target = priority ? labels(teacher.priority) : torch::Tensor();
      // From nothing, and from the teacher with a tenth of its units moved (refinement).
      GoDecision perturbed = teacher;
      std::uniform_int_distribution<int32_t> any_device(0, std::max(1, g.devices) - 1);
      std::bernoulli_distribution moved(0.1);
      for (int32_t& d : perturbed.device) {
        if (moved(rng)) d = any_device(rng);
      }
      // And from its own greedy decision (as DAgger): the refinement its greedy chain runs.
      const GoDecision own = Greedy(g, tensors, heads, nullptr);
      for (const GoDecision* prev : {static_cast<const GoDecision*>(nullptr),
                                     static_cast<const GoDecision*>(&perturbed), &own}) {
        const Logits logits = net_->forward(tensors, RefineInputs(g, prev));
        torch::Tensor loss = torch::zeros({});
        if (device)
          loss = loss + torch::nll_loss(torch::log_softmax(logits.device, 1), device_target);
        if (fusion)
          loss = loss + torch::nll_loss(torch::log_softmax(logits.fusion, 1), fusion_target);
        if (priority) {
          loss = loss + torch::nll_loss(torch::log_softmax(logits.priority, 1), priority_target);
        }
        (loss / static_cast<double>(3 * envs.size())).backward();
        total += loss.item<double>();
        ++terms;
      }
    }
    if (terms > 0) {
      torch::nn::utils::clip_grad_norm_(net_->parameters(), 1.0);
      optimizer_->step();
    }
    return terms > 0 ? total / terms : 0;
  }

  double EvaluateGreedy(const std::vector<GoEnvironment*>& envs) {
    double sum = 0;
    for (GoEnvironment* env : envs) {
      const GoGraph& g = env->graph();
      const GraphTensors& tensors = TensorsOf(*env);
      GoDecision best;
      double best_score = std::numeric_limits<double>::infinity();
      for (int t = 0; t < std::max(1, config_.refinements); ++t) {
        const GoDecision d = Greedy(g, tensors, HeadsOf(g), best.device.empty() ? nullptr : &best);
        const GoEnvironment::Outcome o = env->Evaluate(d);
        if (o.valid && o.score < best_score) {
          best_score = o.score;
          best = d;
        }
        if (best.device.empty()) best = d;
      }
      sum += std::isfinite(best_score) ? best_score / env->reference_score() : 10;
    }
    return sum / static_cast<double>(envs.size());
  }

  GoConfig config_;
  GoNet net_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  at::Generator generator_;
  std::map<const GoEnvironment*, GraphTensors> tensors_;
  std::map<const GoEnvironment*, GoDecision> teachers_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<GoPolicy>> GoPolicy::Create(const GoConfig& config) {
  if (config.hidden < 4 || config.attention_heads < 1 ||
      config.hidden % config.attention_heads != 0 || config.segment < 1 || config.sage_layers < 0 ||
      config.attention_layers < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GoPolicy::Create: needs hidden >= 4 divisible by attention_heads, segment >= 1 (got "
        "hidden ",
        config.hidden, ", heads ", config.attention_heads, ", segment ", config.segment, ")"));
  }
  // One intra-op thread, as the pass-order agents: reproducible, and no OpenMP pool per job.
  torch::set_num_threads(1);
  return std::make_unique<TorchGoPolicy>(config);
}

absl::StatusOr<std::unique_ptr<GoPolicy>> GoPolicy::Load(std::string_view checkpoint) {
  absl::StatusOr<internal::CheckpointParts> parts =
      internal::SplitCheckpoint(checkpoint, kMagic, "GO policy");
  if (!parts.ok()) return parts.status();
  GoConfig config;
  try {
    const nlohmann::json j = nlohmann::json::parse(parts->header);
    if (j.at("features").get<int>() != GoFeatureSize()) {
      return absl::FailedPreconditionError(
          absl::StrCat("GO policy checkpoint: trained on ", j.at("features").get<int>(),
                       " features per unit, this build has ", GoFeatureSize()));
    }
    config.hidden = j.at("hidden").get<int>();
    config.sage_layers = j.at("sage_layers").get<int>();
    config.attention_layers = j.at("attention_layers").get<int>();
    config.attention_heads = j.at("attention_heads").get<int>();
    config.segment = j.at("segment").get<int>();
    config.refinements = j.at("refinements").get<int>();
    config.learning_rate = j.at("learning_rate").get<double>();
    config.clip = j.at("clip").get<double>();
    config.entropy_coef = j.at("entropy_coef").get<double>();
    config.ppo_epochs = j.at("ppo_epochs").get<int>();
    config.seed = j.at("seed").get<uint64_t>();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("GO policy checkpoint: bad header: ", e.what()));
  }
  absl::StatusOr<std::unique_ptr<GoPolicy>> policy = Create(config);
  if (!policy.ok()) return policy.status();
  try {
    static_cast<TorchGoPolicy&>(**policy).LoadWeights(std::string(parts->weights));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("GO policy checkpoint: bad weights: ", e.what()));
  }
  return policy;
}

}  // namespace mltune::opt::rl
