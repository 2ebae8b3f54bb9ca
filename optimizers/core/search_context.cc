#include <chrono>
#include <cmath>
#include <limits>
#include <list>
#include <string>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "optimizers/core/search.h"

namespace mltune::opt {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string PrefixKey(const Candidate& c, size_t length) {
  return std::string(reinterpret_cast<const char*>(c.data()), length * sizeof(Action));
}

}  // namespace

std::unique_ptr<State> State::Fork() const {
  std::unique_ptr<State> copy = DoFork();
  copy->actions_ = actions_;
  copy->score_ = score_;
  return copy;
}

bool State::Step(Action action) {
  double score = score_;
  if (!DoStep(action, &score)) return false;
  actions_.push_back(action);
  score_ = score;
  return true;
}

std::string Problem::ActionName(int64_t /*position*/, Action action) const {
  return std::to_string(action);
}

double Problem::Evaluate(const Candidate& /*candidate*/) { return kInf; }

std::vector<std::vector<int64_t>> Problem::Parts() const {
  std::vector<int64_t> all(static_cast<size_t>(space().max_length));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  return {all};
}

absl::StatusOr<std::vector<double>> Problem::RankSettings(
    int64_t /*part*/, const std::vector<Candidate>& /*settings*/) {
  return absl::FailedPreconditionError(
      absl::StrCat("problem ", name(), " has no cost model to rank candidates with"));
}

// States reached by evaluated prefixes, keyed by the prefix as requested (no-ops included) and
// by its effective form, least recently used evicted first. Entries are never stepped: an
// evaluation forks the entry it resumes from.
class SearchContext::PrefixCache {
 public:
  struct Entry {
    std::shared_ptr<const State> state;
    double best_prefix_score;    // best over the prefixes of length >= 1 on the way
    int64_t best_prefix_length;  // in positions of the key
    int64_t best_effective_length;
  };

  explicit PrefixCache(int64_t capacity) : capacity_(capacity) {}

  const Entry* Find(const std::string& key) {
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return &it->second.entry;
  }

  void Put(std::string key, Entry entry) {
    if (capacity_ <= 0) return;
    auto it = map_.find(key);
    if (it != map_.end()) {
      it->second.entry = std::move(entry);
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return;
    }
    lru_.push_front(key);
    map_.emplace(std::move(key), Slot{std::move(entry), lru_.begin()});
    while (static_cast<int64_t>(map_.size()) > capacity_) {
      map_.erase(lru_.back());
      lru_.pop_back();
    }
  }

 private:
  struct Slot {
    Entry entry;
    std::list<std::string>::iterator lru;
  };
  int64_t capacity_;
  std::list<std::string> lru_;
  std::unordered_map<std::string, Slot> map_;
};

SearchContext::SearchContext(Problem& problem, const Budget& budget, uint64_t seed)
    : problem_(problem),
      space_(problem.space()),
      budget_(budget),
      rng_(seed),
      start_(NowSeconds()),
      initial_score_(kInf),
      best_score_(kInf) {
  std::unique_ptr<State> root = problem_.NewState();
  if (root != nullptr) {
    has_states_ = true;
    initial_score_ = root->score();
    best_score_ = initial_score_;
    prefix_cache_ = std::make_unique<PrefixCache>(problem_.PrefixCacheCapacity());
  }
}

SearchContext::~SearchContext() = default;

double SearchContext::elapsed_seconds() const { return NowSeconds() - start_; }

bool SearchContext::Exhausted() const {
  if (budget_.max_steps > 0 && steps_ >= budget_.max_steps) return true;
  if (budget_.stop && budget_.stop()) return true;
  return budget_.max_seconds > 0 && elapsed_seconds() >= budget_.max_seconds;
}

double SearchContext::Progress() const {
  double p = 0;
  if (budget_.max_steps > 0) p = static_cast<double>(steps_) / budget_.max_steps;
  if (budget_.max_seconds > 0) p = std::max(p, elapsed_seconds() / budget_.max_seconds);
  return std::min(p, 1.0);
}

std::unique_ptr<State> SearchContext::NewState() const {
  return has_states_ ? problem_.NewState() : nullptr;
}

void SearchContext::Charge(const Candidate* candidate, double score, int64_t steps) {
  if (candidate != nullptr && score < best_score_) {
    best_score_ = score;
    best_ = *candidate;
  }
  const double seconds = elapsed_seconds();
  for (int64_t i = 0; i < steps; ++i) {
    ++steps_;
    trace_.push_back({steps_, seconds, best_score_});
  }
  if (budget_.on_step && steps > 0) budget_.on_step({steps_, best_score_, candidate, score});
}

SearchContext::StepOutcome SearchContext::Step(State& state, Action action) {
  if (Exhausted()) return StepOutcome::kOutOfBudget;
  const bool changed = state.Step(action);
  Charge(&state.actions(), state.score(), 1);
  return changed ? StepOutcome::kChanged : StepOutcome::kUnchanged;
}

std::optional<SearchContext::Evaluation> SearchContext::Evaluate(const Candidate& candidate) {
  Evaluation eval;
  if (!has_states_) {
    const int64_t cost = problem_.EvaluationCost(candidate);
    if (Exhausted() || (budget_.max_steps > 0 && steps_ + cost > budget_.max_steps)) {
      return std::nullopt;
    }
    eval.score = problem_.Evaluate(candidate);
    eval.best_prefix_score = eval.score;
    eval.best_prefix_length = static_cast<int64_t>(candidate.size());
    eval.effective = candidate;
    eval.steps = cost;
    Charge(&candidate, eval.score, cost);
    ++evaluations_;
    return eval;
  }

  // Resume from the longest cached prefix.
  size_t resumed = candidate.size();
  const PrefixCache::Entry* entry = nullptr;
  for (; resumed > 0; --resumed) {
    entry = prefix_cache_->Find(PrefixKey(candidate, resumed));
    if (entry != nullptr) break;
  }
  const int64_t remaining = static_cast<int64_t>(candidate.size() - resumed);
  if (remaining > 0 &&
      (Exhausted() || (budget_.max_steps > 0 && steps_ + remaining > budget_.max_steps))) {
    return std::nullopt;
  }
  std::unique_ptr<State> state = entry != nullptr ? entry->state->Fork() : NewState();
  eval.best_prefix_score = entry != nullptr ? entry->best_prefix_score : kInf;
  eval.best_prefix_length = entry != nullptr ? entry->best_prefix_length : 0;
  int64_t best_effective_length = entry != nullptr ? entry->best_effective_length : 0;
  for (size_t i = resumed; i < candidate.size(); ++i) {
    if (Step(*state, candidate[i]) == StepOutcome::kOutOfBudget) return std::nullopt;
    ++eval.steps;
    const int64_t effective_length = static_cast<int64_t>(state->actions().size());
    if (state->score() < eval.best_prefix_score) {
      eval.best_prefix_score = state->score();
      eval.best_prefix_length = static_cast<int64_t>(i + 1);
      best_effective_length = effective_length;
    }
    // Cache every new prefix under its requested and its effective form, sharing one fork. No-op
    // steps keep scores, so both forms have the same best prefix score.
    std::shared_ptr<const State> snapshot = state->Fork();
    if (effective_length != static_cast<int64_t>(i + 1)) {
      prefix_cache_->Put(
          PrefixKey(state->actions(), state->actions().size()),
          {snapshot, eval.best_prefix_score, best_effective_length, best_effective_length});
    }
    prefix_cache_->Put(PrefixKey(candidate, i + 1),
                       {std::move(snapshot), eval.best_prefix_score, eval.best_prefix_length,
                        best_effective_length});
  }
  if (candidate.empty()) eval.best_prefix_score = state->score();
  eval.score = state->score();
  eval.effective = state->actions();
  ++evaluations_;
  return eval;
}

Result SearchContext::Finish(std::string strategy, bool budget_exhausted) {
  Result r;
  r.strategy = std::move(strategy);
  r.best = best_;
  r.best_score = best_score_;
  r.initial_score = initial_score_;
  r.steps = steps_;
  r.evaluations = evaluations_;
  r.seconds = elapsed_seconds();
  r.budget_exhausted = budget_exhausted;
  r.trace = trace_;
  r.stats = problem_.Stats();
  return r;
}

bool SearchContext::EvaluateSeeds() {
  for (const Candidate& c : problem_.SeedCandidates()) {
    std::optional<Evaluation> e = Evaluate(c);
    if (!e) return false;
    if (!has_states_) e->effective = c;  // configurations: the candidate itself
    seeds_.push_back(*std::move(e));
  }
  return true;
}

absl::StatusOr<Result> Strategy::Search(Problem& problem, const Budget& budget, uint64_t seed) {
  if (budget.max_steps <= 0 && budget.max_seconds <= 0) {
    return absl::InvalidArgumentError("a search budget needs max_steps or max_seconds");
  }
  const SearchSpace space = problem.space();
  if (space.choices.empty() || space.max_length <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("problem ", problem.name(), " has an empty search space"));
  }
  const bool per_position =
      space.fixed_length && static_cast<int64_t>(space.choices.size()) == space.max_length;
  if (space.choices.size() != 1 && !per_position) {
    return absl::InvalidArgumentError(
        absl::StrCat("problem ", problem.name(),
                     ": choices needs one entry (sequences) or one per position (configurations)"));
  }
  for (int32_t c : space.choices) {
    if (c <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("problem ", problem.name(), " has a position without choices"));
    }
  }
  if (absl::Status s = CheckProblem(problem); !s.ok()) return s;
  failure_ = absl::OkStatus();
  SearchContext context(problem, budget, seed);
  if (!context.EvaluateSeeds()) return context.Finish(std::string(name()), true);
  const bool exhausted = Run(context);
  if (!failure_.ok()) return failure_;
  return context.Finish(std::string(name()), exhausted || context.Exhausted());
}

}  // namespace mltune::opt
