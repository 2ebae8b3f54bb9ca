#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "optimizers/pass_order/engine.h"
#include "optimizers/pass_order/pass_order.h"
#include "passes/default_pipelines.h"
#include "passes/pipeline.h"

namespace mltune::opt::pass_order {
namespace {

// Share of PassOrderOptions::cache_instructions the search's prefix cache may pin, and its
// bounds in states.
constexpr int64_t kPrefixCacheShare = 2;
constexpr int64_t kMinPrefixStates = 16;
constexpr int64_t kMaxPrefixStates = 4096;

class PassOrderState : public State {
 public:
  PassOrderState(std::shared_ptr<internal::Engine> engine, internal::NodePtr node)
      : State(node->score), engine_(std::move(engine)), node_(std::move(node)) {}

  std::string Key() const override { return engine_->Fingerprint(*node_); }
  std::vector<double> Features() const override { return engine_->Observe(*node_).features; }

 protected:
  std::unique_ptr<State> DoFork() const override {
    return std::make_unique<PassOrderState>(engine_, node_);
  }
  bool DoStep(Action action, double* score) override {
    // Not exact: the pass's verdict suffices here, and children that are never stepped from
    // are never fingerprinted.
    internal::Applied applied = engine_->Apply(node_, action, /*exact=*/false);
    if (!applied.changed) return false;
    node_ = std::move(applied.node);
    *score = node_->score;
    return true;
  }

 private:
  std::shared_ptr<internal::Engine> engine_;
  internal::NodePtr node_;
};

// The effective sequence of `options.seed_pipeline` on `module`, as actions of `problem`.
absl::StatusOr<Candidate> DefaultOrderSeed(const PassOrderProblem& problem,
                                           const ir::Module& module,
                                           const PassOrderOptions& options) {
  std::unique_ptr<passes::Pipeline> pipeline = passes::MakeDefaultPipeline(options.seed_pipeline);
  if (pipeline == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown seed pipeline '", options.seed_pipeline, "' (expected cpu or gpu)"));
  }
  std::unique_ptr<ir::Module> copy = module.Clone();
  passes::PassTimings record;
  {
    passes::ScopedPassTimings scope(&record);
    // A failing pipeline still leaves the passes that ran before it as a usable start.
    (void)pipeline->Run(*copy);
  }
  Candidate seed;
  for (const std::string& name : record.changed_sequence) {
    if (static_cast<int64_t>(seed.size()) >= options.episode_length) break;
    absl::StatusOr<Candidate> action = problem.ParseCandidate({name});
    if (action.ok()) seed.push_back(action->front());
  }
  return seed;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PassOrderProblem>> PassOrderProblem::Create(
    const ir::Module& module, PassOrderOptions options) {
  absl::StatusOr<std::shared_ptr<internal::Engine>> engine = internal::Engine::Create(options);
  if (!engine.ok()) return engine.status();
  absl::StatusOr<internal::NodePtr> root = (*engine)->AddRoot(module);
  if (!root.ok()) return root.status();
  auto problem = std::unique_ptr<PassOrderProblem>(
      new PassOrderProblem(*std::move(engine), *std::move(root), options.episode_length));
  if (!options.seed_pipeline.empty()) {
    absl::StatusOr<Candidate> seed = DefaultOrderSeed(*problem, module, options);
    if (!seed.ok()) return seed.status();
    if (!seed->empty()) problem->seeds_.push_back(*std::move(seed));
  }
  for (const std::vector<std::string>& names : options.seed_sequences) {
    Candidate seed;
    for (const std::string& name : names) {
      if (static_cast<int64_t>(seed.size()) >= options.episode_length) break;
      absl::StatusOr<Candidate> action = problem->ParseCandidate({name});
      if (action.ok()) seed.push_back(action->front());
    }
    if (!seed.empty()) problem->seeds_.push_back(std::move(seed));
  }
  return problem;
}

std::vector<Candidate> PassOrderProblem::SeedCandidates() { return seeds_; }

PassOrderProblem::PassOrderProblem(std::shared_ptr<internal::Engine> engine, internal::NodePtr root,
                                   int64_t episode_length)
    : engine_(std::move(engine)), root_(std::move(root)), episode_length_(episode_length) {}

PassOrderProblem::~PassOrderProblem() = default;

SearchSpace PassOrderProblem::space() const {
  SearchSpace s;
  s.choices = {engine_->action_count()};
  s.max_length = episode_length_;
  s.fixed_length = false;
  return s;
}

std::string PassOrderProblem::ActionName(int64_t /*position*/, Action action) const {
  return action >= 0 && action < engine_->action_count() ? engine_->action_names()[action]
                                                         : std::to_string(action);
}

std::unique_ptr<State> PassOrderProblem::NewState() {
  return std::make_unique<PassOrderState>(engine_, root_);
}

int64_t PassOrderProblem::PrefixCacheCapacity() const {
  // Cached prefixes pin their modules; keep them to a share of the module cache's memory.
  const int64_t per_state = std::max<int64_t>(root_->instructions, 1);
  return std::clamp(engine_->cache_instructions() / kPrefixCacheShare / per_state, kMinPrefixStates,
                    kMaxPrefixStates);
}

std::vector<std::pair<std::string, int64_t>> PassOrderProblem::Stats() const {
  const PassOrderStats s = engine_->stats();
  return {{"pass_runs", s.pass_runs},       {"clones", s.clones},
          {"fingerprints", s.fingerprints}, {"cache_hits", s.cache_hits},
          {"pass_failures", s.failures},    {"distinct_modules", s.distinct_modules}};
}

const std::vector<std::string>& PassOrderProblem::action_names() const {
  return engine_->action_names();
}

std::vector<std::string> PassOrderProblem::PassNames(const Candidate& candidate) const {
  std::vector<std::string> names;
  for (Action a : candidate) names.push_back(ActionName(0, a));
  return names;
}

absl::StatusOr<Candidate> PassOrderProblem::ParseCandidate(
    const std::vector<std::string>& pass_names) const {
  Candidate c;
  for (const std::string& name : pass_names) {
    const int a = engine_->ActionIndex(name);
    if (a < 0) return absl::NotFoundError(absl::StrCat("pass ", name, " is not an action"));
    c.push_back(a);
  }
  return c;
}

double PassOrderProblem::initial_score() const { return root_->score; }
int64_t PassOrderProblem::initial_op_count() const { return root_->op_count; }

internal::NodePtr PassOrderProblem::Replay(const Candidate& candidate) {
  internal::NodePtr node = root_;
  for (Action a : candidate) {
    if (a < 0 || a >= engine_->action_count()) continue;
    node = engine_->Apply(node, a, /*exact=*/false).node;
  }
  return node;
}

std::unique_ptr<ir::Module> PassOrderProblem::Apply(const Candidate& candidate) {
  return Replay(candidate)->module->Clone();
}

Observation PassOrderProblem::Observe(const Candidate& candidate) {
  return engine_->Observe(*Replay(candidate));
}

const std::vector<PassFailure>& PassOrderProblem::failures() const { return engine_->failures(); }
PassOrderStats PassOrderProblem::stats() const { return engine_->stats(); }

}  // namespace mltune::opt::pass_order
