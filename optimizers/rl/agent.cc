// The LibTorch side of the RL agents: networks (MLP and GraphSAGE encoders, policy/value and Q
// heads), PPO and DQN/Max-Q training, rollouts, checkpoints. The only file that includes torch.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <numeric>
#include <random>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/opcode.h"
#include "nlohmann/json.hpp"
#include "optimizers/rl/checkpoint_format.h"
#include "optimizers/rl/rl.h"

namespace mltune::opt::rl {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kMagic[] = "MLTUNE-RL-AGENT-1\n";
constexpr int kOpcodeEmbedding = 32;
constexpr float kMaskedOut = -1e9f;

// Encoder + heads. The MLP encoder sees the feature vector; the GNN encoder adds two GraphSAGE
// layers (mean aggregation over operands) over the instruction graph, mean-pooled per graph and
// joined with the feature MLP, so it never knows less than the MLP.
struct NetImpl : torch::nn::Module {
  NetImpl(const AgentConfig& c, int actions, int features, int node_features)
      : gnn(c.encoder == EncoderKind::kGnn), ppo(c.algo == Algo::kPpo), hidden(c.hidden) {
    feat1 = register_module("feat1", torch::nn::Linear(features, hidden));
    feat2 = register_module("feat2", torch::nn::Linear(hidden, hidden));
    if (gnn) {
      embed = register_module("embed", torch::nn::Embedding(ir::OpcodeCount(), kOpcodeEmbedding));
      node_in =
          register_module("node_in", torch::nn::Linear(kOpcodeEmbedding + node_features, hidden));
      for (int l = 0; l < 2; ++l) {
        self_layers.push_back(
            register_module(absl::StrCat("self", l), torch::nn::Linear(hidden, hidden)));
        neigh_layers.push_back(
            register_module(absl::StrCat("neigh", l), torch::nn::Linear(hidden, hidden)));
      }
      combine = register_module("combine", torch::nn::Linear(2 * hidden, hidden));
    }
    head = register_module("head", torch::nn::Linear(hidden, actions));
    if (ppo) value = register_module("value", torch::nn::Linear(hidden, 1));
  }

  torch::Tensor Encode(const std::vector<const Observation*>& batch) {
    const int64_t b = static_cast<int64_t>(batch.size());
    const int64_t f = static_cast<int64_t>(batch.front()->features.size());
    std::vector<float> flat;
    flat.reserve(b * f);
    for (const Observation* o : batch)
      flat.insert(flat.end(), o->features.begin(), o->features.end());
    torch::Tensor x = torch::from_blob(flat.data(), {b, f}, torch::kFloat32).clone();
    x = torch::relu(feat2(torch::relu(feat1(x))));
    if (!gnn) return x;

    std::vector<int64_t> opcodes, src, dst, graph_of_node;
    std::vector<float> node_features;
    std::vector<float> nodes_per_graph;
    for (int64_t g = 0; g < b; ++g) {
      const Observation& o = *batch[g];
      const int64_t offset = static_cast<int64_t>(opcodes.size());
      for (int32_t op : o.node_opcodes) {
        opcodes.push_back(op);
        graph_of_node.push_back(g);
      }
      node_features.insert(node_features.end(), o.node_features.begin(), o.node_features.end());
      for (size_t e = 0; e < o.edge_src.size(); ++e) {
        src.push_back(offset + o.edge_src[e]);
        dst.push_back(offset + o.edge_dst[e]);
      }
      nodes_per_graph.push_back(std::max<float>(1.0f, static_cast<float>(o.node_opcodes.size())));
    }
    const int64_t n = static_cast<int64_t>(opcodes.size());
    if (n == 0) return torch::relu(combine(torch::cat({x, torch::zeros_like(x)}, 1)));
    const int64_t nf = static_cast<int64_t>(node_features.size()) / n;
    auto as_long = [](std::vector<int64_t>& v) {
      return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())}, torch::kInt64).clone();
    };
    torch::Tensor op_t = as_long(opcodes);
    torch::Tensor nf_t = torch::from_blob(node_features.data(), {n, nf}, torch::kFloat32).clone();
    torch::Tensor h = torch::relu(node_in(torch::cat({embed(op_t), nf_t}, 1)));
    torch::Tensor src_t = as_long(src), dst_t = as_long(dst);
    torch::Tensor degree =
        torch::zeros({n}).index_add_(0, dst_t, torch::ones({static_cast<int64_t>(dst.size())}));
    degree = degree.clamp_min(1.0).unsqueeze(1);
    for (size_t l = 0; l < self_layers.size(); ++l) {
      torch::Tensor aggregated =
          torch::zeros({n, hidden}).index_add_(0, dst_t, h.index_select(0, src_t)) / degree;
      h = torch::relu(self_layers[l](h) + neigh_layers[l](aggregated));
    }
    torch::Tensor pooled = torch::zeros({b, hidden}).index_add_(0, as_long(graph_of_node), h);
    pooled = pooled / torch::from_blob(nodes_per_graph.data(), {b, 1}, torch::kFloat32).clone();
    return torch::relu(combine(torch::cat({x, pooled}, 1)));
  }

  // Logits (PPO) or Q values, [B, A]; and values [B] for PPO.
  std::pair<torch::Tensor, torch::Tensor> forward(const std::vector<const Observation*>& batch) {
    torch::Tensor z = Encode(batch);
    torch::Tensor v = ppo ? value(z).squeeze(1) : torch::Tensor();
    return {head(z), v};
  }

  bool gnn, ppo;
  int hidden;
  torch::nn::Linear feat1{nullptr}, feat2{nullptr}, node_in{nullptr}, combine{nullptr},
      head{nullptr}, value{nullptr};
  torch::nn::Embedding embed{nullptr};
  std::vector<torch::nn::Linear> self_layers, neigh_layers;
};
TORCH_MODULE(Net);

torch::Tensor MaskTensor(const std::vector<const Observation*>& batch, int actions) {
  std::vector<uint8_t> flat;
  flat.reserve(batch.size() * actions);
  for (const Observation* o : batch) {
    for (int a = 0; a < actions; ++a)
      flat.push_back(a < static_cast<int>(o->mask.size()) && o->mask[a]);
  }
  return torch::from_blob(flat.data(), {static_cast<int64_t>(batch.size()), actions}, torch::kUInt8)
      .clone()
      .to(torch::kBool);
}

bool AnyAllowed(const Observation& o) {
  return std::any_of(o.mask.begin(), o.mask.end(), [](bool m) { return m; });
}

// Samples an index from unnormalised log-probabilities with our generator (reproducible).
int SampleFromLogits(const torch::Tensor& logits, std::mt19937_64& rng) {
  torch::Tensor probs = torch::softmax(logits, 0).contiguous();
  const float* p = probs.data_ptr<float>();
  std::discrete_distribution<int> pick(p, p + probs.numel());
  return pick(rng);
}

struct PpoStep {
  std::shared_ptr<const Observation> obs;
  int action = 0;
  float logp = 0, value = 0, reward = 0;
  float advantage = 0, ret = 0;
};

struct Transition {
  std::shared_ptr<const Observation> obs, next;
  int action = 0;
  float reward = 0, improvement = 0;
  bool done = false;
};

class TorchAgent : public Agent {
 public:
  TorchAgent(AgentConfig config, int actions, int features, int node_features)
      : config_(std::move(config)),
        actions_(actions),
        features_(features),
        node_features_(node_features),
        rng_(config_.seed) {
    torch::manual_seed(config_.seed);
    net_ = Net(config_, actions_, features_, node_features_);
    if (config_.algo != Algo::kPpo) {
      target_ = Net(config_, actions_, features_, node_features_);
      SyncTarget();
    }
    optimizer_ = std::make_unique<torch::optim::Adam>(
        net_->parameters(), torch::optim::AdamOptions(config_.learning_rate));
  }

  const AgentConfig& config() const override { return config_; }
  int action_count() const override { return actions_; }

  std::string Save() const override {
    nlohmann::json j;
    j["action_names"] = config_.action_names;
    j["algo"] = std::string(AlgoName(config_.algo));
    j["encoder"] = std::string(EncoderName(config_.encoder));
    j["episode_length"] = config_.episode_length;
    j["hidden"] = config_.hidden;
    j["learning_rate"] = config_.learning_rate;
    j["gamma"] = config_.gamma;
    j["seed"] = config_.seed;
    j["actions"] = actions_;
    j["features"] = features_;
    j["node_features"] = node_features_;
    return internal::JoinCheckpoint(kMagic, j.dump(), internal::ModuleBytes(*net_));
  }

  void LoadWeights(const std::string& bytes) {
    internal::LoadModuleBytes(*net_, bytes);
    if (target_) SyncTarget();
  }

  absl::StatusOr<std::vector<TrainProgress>> Train(Environment& env,
                                                   const TrainOptions& options) override {
    if (absl::Status s = CheckEnv(env); !s.ok()) return s;
    if (options.eval_env != nullptr) {
      if (absl::Status s = CheckEnv(*options.eval_env); !s.ok()) return s;
    }
    start_ = Clock::now();
    history_.clear();
    return config_.algo == Algo::kPpo ? TrainPpo(env, options) : TrainQ(env, options);
  }

  absl::StatusOr<Rollout> Run(Environment& env, int index, bool greedy, uint64_t seed,
                              int max_steps) override {
    if (absl::Status s = CheckEnv(env); !s.ok()) return s;
    torch::NoGradGuard no_grad;
    std::mt19937_64 rng(seed);
    absl::StatusOr<std::shared_ptr<const Observation>> obs = env.Reset(index);
    if (!obs.ok()) return obs.status();
    Rollout rollout;
    const int limit = max_steps > 0 ? max_steps : env.episode_length();
    std::shared_ptr<const Observation> current = *obs;
    for (int t = 0; t < limit && AnyAllowed(*current); ++t) {
      const int action = Choose(*current, greedy, rng);
      absl::StatusOr<Environment::StepResult> step = env.Step(action);
      if (!step.ok()) return step.status();
      rollout.actions.push_back(action);
      ++rollout.steps;
      if (step->improvement > rollout.best_improvement) {
        rollout.best_improvement = step->improvement;
        rollout.best_length = t + 1;
      }
      current = step->observation;
      if (step->done) break;
    }
    return rollout;
  }

 private:
  absl::Status CheckEnv(const Environment& env) const {
    if (env.action_count() != actions_ || env.feature_size() != features_ ||
        env.node_feature_size() != node_features_) {
      return absl::InvalidArgumentError(
          absl::StrCat("the environment (", env.action_count(), " actions, ", env.feature_size(),
                       " features) does not match the agent (", actions_, " actions, ", features_,
                       " features)"));
    }
    return absl::OkStatus();
  }

  // The action the current network picks: argmax, or a sample (policy softmax for PPO; a sharp
  // softmax over Q values, which are in units of relative improvement, for DQN and Max-Q).
  int Choose(const Observation& obs, bool greedy, std::mt19937_64& rng) {
    std::vector<const Observation*> batch = {&obs};
    torch::Tensor scores = net_->forward(batch).first[0];
    scores = scores.masked_fill(MaskTensor(batch, actions_)[0].logical_not(), kMaskedOut);
    if (greedy) return static_cast<int>(scores.argmax().item<int64_t>());
    if (config_.algo != Algo::kPpo) scores = scores / 0.02;
    return SampleFromLogits(scores, rng);
  }

  std::optional<double> Evaluate(Environment& env, const TrainOptions& options) {
    Environment& e = options.eval_env != nullptr ? *options.eval_env : env;
    std::vector<int> instances =
        options.eval_env == nullptr ? options.eval_instances : std::vector<int>{};
    if (instances.empty()) {
      instances.resize(e.instance_count());
      std::iota(instances.begin(), instances.end(), 0);
    }
    double sum = 0;
    for (int i : instances) {
      absl::StatusOr<Rollout> r = Run(e, i, /*greedy=*/true, config_.seed, 0);
      if (!r.ok()) return std::nullopt;
      sum += r->best_improvement;
    }
    return instances.empty() ? 0.0 : sum / static_cast<double>(instances.size());
  }

  void Report(const TrainOptions& options, Environment& env, int episode, double mean_return,
              double loss) {
    TrainProgress p;
    p.episode = episode;
    p.env_steps = env_steps_;
    p.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    p.mean_return = mean_return;
    p.loss = loss;
    if (options.eval_every > 0 &&
        (episode % options.eval_every == 0 || episode == options.episodes)) {
      p.eval_improvement = Evaluate(env, options);
    }
    history_.push_back(p);
    if (options.on_progress) options.on_progress(p);
  }

  absl::StatusOr<std::vector<TrainProgress>> TrainPpo(Environment& env,
                                                      const TrainOptions& options) {
    std::deque<double> recent_returns;
    int episode = 0;
    double loss_value = 0;
    while (episode < options.episodes && !(options.stop && options.stop())) {
      std::vector<std::vector<PpoStep>> episodes;
      std::vector<int> finished;
      for (int k = 0; k < config_.episodes_per_update && episode < options.episodes; ++k) {
        std::vector<PpoStep> steps;
        const int index = static_cast<int>(rng_() % env.instance_count());
        absl::StatusOr<std::shared_ptr<const Observation>> obs = env.Reset(index);
        if (!obs.ok()) return obs.status();
        std::shared_ptr<const Observation> current = *obs;
        double episode_return = 0;
        for (int t = 0; t < env.episode_length() && AnyAllowed(*current); ++t) {
          PpoStep step;
          step.obs = current;
          {
            torch::NoGradGuard no_grad;
            std::vector<const Observation*> batch = {current.get()};
            auto [logits, values] = net_->forward(batch);
            torch::Tensor masked =
                logits[0].masked_fill(MaskTensor(batch, actions_)[0].logical_not(), kMaskedOut);
            step.action = SampleFromLogits(masked, rng_);
            step.logp = torch::log_softmax(masked, 0)[step.action].item<float>();
            step.value = values[0].item<float>();
          }
          absl::StatusOr<Environment::StepResult> result = env.Step(step.action);
          if (!result.ok()) return result.status();
          ++env_steps_;
          step.reward = static_cast<float>(result->reward);
          episode_return += result->reward;
          steps.push_back(std::move(step));
          current = result->observation;
          if (result->done) break;
        }
        // Generalised advantage estimation; an episode's end is terminal (finite horizon).
        float next_value = 0, gae = 0;
        for (int t = static_cast<int>(steps.size()) - 1; t >= 0; --t) {
          const float delta =
              steps[t].reward + static_cast<float>(config_.gamma) * next_value - steps[t].value;
          gae = delta + static_cast<float>(config_.gamma * config_.gae_lambda) * gae;
          steps[t].advantage = gae;
          steps[t].ret = gae + steps[t].value;
          next_value = steps[t].value;
        }
        episodes.push_back(std::move(steps));
        recent_returns.push_back(episode_return);
        if (static_cast<int>(recent_returns.size()) > config_.episodes_per_update) {
          recent_returns.pop_front();
        }
        ++episode;
        finished.push_back(episode);
      }
      loss_value = UpdatePpo(episodes);
      const double mean_return =
          std::accumulate(recent_returns.begin(), recent_returns.end(), 0.0) /
          std::max<size_t>(1, recent_returns.size());
      for (int e : finished) Report(options, env, e, mean_return, loss_value);
    }
    return history_;
  }

  double UpdatePpo(const std::vector<std::vector<PpoStep>>& episodes) {
    std::vector<const PpoStep*> all;
    for (const auto& e : episodes) {
      for (const PpoStep& s : e) all.push_back(&s);
    }
    if (all.empty()) return 0;
    // Normalised advantages.
    double mean = 0, sq = 0;
    for (const PpoStep* s : all) mean += s->advantage;
    mean /= static_cast<double>(all.size());
    for (const PpoStep* s : all) sq += (s->advantage - mean) * (s->advantage - mean);
    const double stddev = std::sqrt(sq / static_cast<double>(all.size())) + 1e-8;
    double last_loss = 0;
    constexpr size_t kMinibatch = 64;
    for (int epoch = 0; epoch < config_.ppo_epochs; ++epoch) {
      std::shuffle(all.begin(), all.end(), rng_);
      for (size_t begin = 0; begin < all.size(); begin += kMinibatch) {
        const size_t end = std::min(all.size(), begin + kMinibatch);
        std::vector<const Observation*> batch;
        std::vector<int64_t> actions;
        std::vector<float> old_logp, advantages, returns;
        for (size_t i = begin; i < end; ++i) {
          batch.push_back(all[i]->obs.get());
          actions.push_back(all[i]->action);
          old_logp.push_back(all[i]->logp);
          advantages.push_back(static_cast<float>((all[i]->advantage - mean) / stddev));
          returns.push_back(all[i]->ret);
        }
        const int64_t n = static_cast<int64_t>(batch.size());
        auto [logits, values] = net_->forward(batch);
        torch::Tensor masked =
            logits.masked_fill(MaskTensor(batch, actions_).logical_not(), kMaskedOut);
        torch::Tensor log_probs = torch::log_softmax(masked, 1);
        torch::Tensor a_t = torch::from_blob(actions.data(), {n, 1}, torch::kInt64).clone();
        torch::Tensor logp = log_probs.gather(1, a_t).squeeze(1);
        torch::Tensor old_t = torch::from_blob(old_logp.data(), {n}, torch::kFloat32).clone();
        torch::Tensor adv_t = torch::from_blob(advantages.data(), {n}, torch::kFloat32).clone();
        torch::Tensor ret_t = torch::from_blob(returns.data(), {n}, torch::kFloat32).clone();
        torch::Tensor ratio = torch::exp(logp - old_t);
        torch::Tensor policy_loss =
            -torch::min(ratio * adv_t,
                        torch::clamp(ratio, 1 - config_.clip, 1 + config_.clip) * adv_t)
                 .mean();
        torch::Tensor value_loss = torch::mse_loss(values, ret_t);
        // Entropy over the allowed actions only (masked ones have probability ~0).
        torch::Tensor probs = torch::softmax(masked, 1);
        torch::Tensor entropy = -(probs * log_probs.clamp_min(-30.0)).sum(1).mean();
        torch::Tensor loss = policy_loss + 0.5 * value_loss - config_.entropy_coef * entropy;
        optimizer_->zero_grad();
        loss.backward();
        torch::nn::utils::clip_grad_norm_(net_->parameters(), 0.5);
        optimizer_->step();
        last_loss = loss.item<double>();
      }
    }
    return last_loss;
  }

  absl::StatusOr<std::vector<TrainProgress>> TrainQ(Environment& env, const TrainOptions& options) {
    std::deque<double> recent_returns;
    double loss_value = 0;
    for (int episode = 1; episode <= options.episodes && !(options.stop && options.stop());
         ++episode) {
      const int index = static_cast<int>(rng_() % env.instance_count());
      absl::StatusOr<std::shared_ptr<const Observation>> obs = env.Reset(index);
      if (!obs.ok()) return obs.status();
      std::shared_ptr<const Observation> current = *obs;
      double episode_return = 0;
      for (int t = 0; t < env.episode_length() && AnyAllowed(*current); ++t) {
        const double progress =
            std::min(1.0, static_cast<double>(q_steps_) / std::max(1, config_.epsilon_decay_steps));
        const double epsilon =
            config_.epsilon_start + (config_.epsilon_end - config_.epsilon_start) * progress;
        int action;
        if (std::uniform_real_distribution<double>(0, 1)(rng_) < epsilon) {
          std::vector<int> allowed;
          for (int a = 0; a < actions_; ++a) {
            if (current->mask[a]) allowed.push_back(a);
          }
          action = allowed[rng_() % allowed.size()];
        } else {
          torch::NoGradGuard no_grad;
          action = Choose(*current, /*greedy=*/true, rng_);
        }
        absl::StatusOr<Environment::StepResult> result = env.Step(action);
        if (!result.ok()) return result.status();
        ++env_steps_;
        ++q_steps_;
        episode_return += result->reward;
        Transition tr{current,
                      result->observation,
                      action,
                      static_cast<float>(result->reward),
                      static_cast<float>(result->improvement),
                      result->done || !AnyAllowed(*result->observation)};
        if (static_cast<int>(replay_.size()) < config_.replay_capacity) {
          replay_.push_back(std::move(tr));
        } else {
          replay_[replay_next_] = std::move(tr);
          replay_next_ = (replay_next_ + 1) % config_.replay_capacity;
        }
        if (static_cast<int>(replay_.size()) >= config_.batch_size) loss_value = UpdateQ();
        if (q_steps_ % config_.target_sync_steps == 0) SyncTarget();
        current = result->observation;
        if (result->done) break;
      }
      recent_returns.push_back(episode_return);
      if (recent_returns.size() > 8) recent_returns.pop_front();
      Report(options, env, episode,
             std::accumulate(recent_returns.begin(), recent_returns.end(), 0.0) /
                 static_cast<double>(recent_returns.size()),
             loss_value);
    }
    return history_;
  }

  double UpdateQ() {
    std::vector<const Transition*> batch;
    for (int i = 0; i < config_.batch_size; ++i) batch.push_back(&replay_[rng_() % replay_.size()]);
    const int64_t n = static_cast<int64_t>(batch.size());
    std::vector<const Observation*> obs, next;
    std::vector<int64_t> actions;
    std::vector<float> rewards, improvements, not_done;
    for (const Transition* t : batch) {
      obs.push_back(t->obs.get());
      next.push_back(t->next.get());
      actions.push_back(t->action);
      rewards.push_back(t->reward);
      improvements.push_back(t->improvement);
      not_done.push_back(t->done ? 0.0f : 1.0f);
    }
    torch::Tensor target;
    {
      // Double-Q: the online network picks the next action, the target network values it.
      torch::NoGradGuard no_grad;
      torch::Tensor next_mask = MaskTensor(next, actions_);
      torch::Tensor online_next =
          net_->forward(next).first.masked_fill(next_mask.logical_not(), kMaskedOut);
      torch::Tensor best_next = online_next.argmax(1, /*keepdim=*/true);
      torch::Tensor next_q = target_->forward(next).first.gather(1, best_next).squeeze(1);
      torch::Tensor nd = torch::from_blob(not_done.data(), {n}, torch::kFloat32).clone();
      torch::Tensor future = static_cast<float>(config_.gamma) * nd * next_q;
      if (config_.algo == Algo::kMaxQ) {
        // Max-Q: the value of an action is the best state reachable through it, not the sum of
        // rewards: max(value of the state it reaches, discounted best future).
        torch::Tensor reached = torch::from_blob(improvements.data(), {n}, torch::kFloat32).clone();
        target = torch::max(reached, future);
      } else {
        target = torch::from_blob(rewards.data(), {n}, torch::kFloat32).clone() + future;
      }
    }
    torch::Tensor a_t = torch::from_blob(actions.data(), {n, 1}, torch::kInt64).clone();
    torch::Tensor q = net_->forward(obs).first.gather(1, a_t).squeeze(1);
    torch::Tensor loss = torch::smooth_l1_loss(q, target);
    optimizer_->zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(net_->parameters(), 1.0);
    optimizer_->step();
    return loss.item<double>();
  }

  void SyncTarget() {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> from = net_->parameters();
    std::vector<torch::Tensor> to = target_->parameters();
    for (size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
  }

  AgentConfig config_;
  int actions_, features_, node_features_;
  std::mt19937_64 rng_;
  Net net_{nullptr}, target_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  std::vector<Transition> replay_;
  size_t replay_next_ = 0;
  int64_t env_steps_ = 0, q_steps_ = 0;
  Clock::time_point start_;
  std::vector<TrainProgress> history_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Agent>> Agent::Create(const AgentConfig& config, int action_count,
                                                     int feature_size, int node_feature_size) {
  if (action_count < 1 || feature_size < 1 || node_feature_size < 0 || config.hidden < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Agent::Create: need actions >= 1 (got ", action_count, "), features >= 1 (got ",
        feature_size, ") and hidden >= 1 (got ", config.hidden, ")"));
  }
  if (!config.action_names.empty() &&
      static_cast<int>(config.action_names.size()) != action_count) {
    return absl::InvalidArgumentError("Agent::Create: action_names does not match action_count");
  }
  // One intra-op thread: results are reproducible, and the daemon's job threads do not each
  // start an OpenMP pool on 2 cores.
  torch::set_num_threads(1);
  return std::make_unique<TorchAgent>(config, action_count, feature_size, node_feature_size);
}

absl::StatusOr<std::unique_ptr<Agent>> Agent::Load(std::string_view checkpoint) {
  absl::StatusOr<internal::CheckpointParts> parts =
      internal::SplitCheckpoint(checkpoint, kMagic, "RL agent");
  if (!parts.ok()) return parts.status();
  AgentConfig config;
  int actions = 0, features = 0, node_features = 0;
  try {
    nlohmann::json j = nlohmann::json::parse(parts->header);
    config.action_names = j.at("action_names").get<std::vector<std::string>>();
    absl::StatusOr<Algo> algo = ParseAlgo(j.at("algo").get<std::string>());
    absl::StatusOr<EncoderKind> encoder = ParseEncoder(j.at("encoder").get<std::string>());
    if (!algo.ok()) return algo.status();
    if (!encoder.ok()) return encoder.status();
    config.algo = *algo;
    config.encoder = *encoder;
    config.episode_length = j.at("episode_length").get<int>();
    config.hidden = j.at("hidden").get<int>();
    config.learning_rate = j.at("learning_rate").get<double>();
    config.gamma = j.at("gamma").get<double>();
    config.seed = j.at("seed").get<uint64_t>();
    actions = j.at("actions").get<int>();
    features = j.at("features").get<int>();
    node_features = j.at("node_features").get<int>();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("RL agent checkpoint: bad header: ", e.what()));
  }
  absl::StatusOr<std::unique_ptr<Agent>> agent = Create(config, actions, features, node_features);
  if (!agent.ok()) return agent.status();
  try {
    static_cast<TorchAgent&>(**agent).LoadWeights(std::string(parts->weights));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("RL agent checkpoint: bad weights: ", e.what()));
  }
  return agent;
}

}  // namespace mltune::opt::rl
