// Generic search over candidates: sequences of actions (pass orders) or fixed-length
// configurations (tile sizes, placements). Every strategy runs against a SearchContext that
// charges one budget step per environment step, so budgets compare across strategies, and
// records the best-so-far trace. docs/search.md describes the design and each algorithm.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace mltune::opt {

using Action = int32_t;
// A candidate: one action id per position.
using Candidate = std::vector<Action>;

struct SearchSpace {
  // Choices per position: a single entry applies to every position, otherwise one per position.
  std::vector<int32_t> choices;
  int64_t max_length = 0;
  // Configurations have exactly max_length positions; sequences any length in [0, max_length].
  bool fixed_length = false;

  int32_t ChoicesAt(int64_t position) const {
    return choices.size() == 1 ? choices[0] : choices[static_cast<size_t>(position)];
  }
};

// The incremental view of a sequence problem: the environment after a prefix of actions.
// Strategies step states only through SearchContext::Step, so every step is charged.
class State {
 public:
  virtual ~State() = default;

  // The actions that changed the state so far: a step that changes nothing is not appended, so
  // this is the shortest known sequence reaching the state.
  const Candidate& actions() const { return actions_; }
  double score() const { return score_; }  // lower is better
  // Equal non-empty keys mean equal states (same score, same future); "" when unknown. May be
  // computed on demand (a fingerprint for pass ordering): call it only when needed.
  virtual std::string Key() const { return ""; }
  // Features for learned policies (may be empty).
  virtual std::vector<double> Features() const { return {}; }
  // An independent copy. Free in steps; its time cost is the problem's (copy-on-write for pass
  // ordering).
  std::unique_ptr<State> Fork() const;

 protected:
  explicit State(double initial_score) : score_(initial_score) {}
  virtual std::unique_ptr<State> DoFork() const = 0;
  // Applies `action`; returns true when the state changed and sets `*score`. A false return
  // promises the state (and score) are exactly as before.
  virtual bool DoStep(Action action, double* score) = 0;

 private:
  friend class SearchContext;
  bool Step(Action action);

  Candidate actions_;
  double score_;
};

class Problem {
 public:
  virtual ~Problem() = default;
  virtual std::string name() const = 0;
  virtual SearchSpace space() const = 0;
  virtual std::string ActionName(int64_t position, Action action) const;

  // Sequence problems: the starting state (empty sequence); its score is the baseline.
  // nullptr for problems that only evaluate whole candidates.
  virtual std::unique_ptr<State> NewState() { return nullptr; }
  // Whole-candidate evaluation for problems without states; charged EvaluationCost steps.
  // A candidate that cannot be evaluated scores +infinity.
  virtual double Evaluate(const Candidate& candidate);
  virtual int64_t EvaluationCost(const Candidate& /*candidate*/) const { return 1; }

  // Known-good candidates to start from (for pass ordering, the compiler's default order as a
  // pass sequence). Strategy::Search evaluates them first, charged like any candidate, so no
  // result is worse than the best of them; annealing and evolutionary search start from them.
  virtual std::vector<Candidate> SeedCandidates() { return {}; }

  // How many forked states SearchContext may keep so evaluations resume from the longest
  // evaluated prefix (0 disables). Problems size it to their memory per state.
  virtual int64_t PrefixCacheCapacity() const { return 64; }
  // Counters for reports (pass runs, cache hits, failures, ...).
  virtual std::vector<std::pair<std::string, int64_t>> Stats() const { return {}; }

  // Model-guided search ("model-topk"): a learned cost model ranks settings and only the best
  // ranked are measured. A problem whose score adds up over independent parts (the CPU backend's
  // kernels) lists each part's positions, so each part is ranked and measured on its own; the
  // default is one part holding every position.
  virtual std::vector<std::vector<int64_t>> Parts() const;
  // The predicted cost of each setting of part `part` (one action per position of
  // Parts()[part], in that order): lower is better, and only the order within one call means
  // anything. -infinity marks a setting to measure in addition to the k best ranked (a problem's
  // own must-try, such as each implementation's best guess). FailedPrecondition when no cost
  // model is attached (the default).
  virtual absl::StatusOr<std::vector<double>> RankSettings(int64_t part,
                                                           const std::vector<Candidate>& settings);
};

struct Budget {
  Budget() = default;
  Budget(int64_t steps, double seconds) : max_steps(steps), max_seconds(seconds) {}

  int64_t max_steps = 1000;  // <= 0: unlimited
  double max_seconds = 0;    // <= 0: unlimited; checked before each step
  // Checked before each step like max_seconds: once it returns true the budget counts as spent,
  // so the strategy ends and returns its best so far (the daemon's cancellation and shutdown).
  std::function<bool()> stop;
  // Called after every charged step or evaluation (progress reports, the measurement log; keep it
  // cheap).
  struct Report {
    int64_t steps = 0;                                // charged so far
    double best_score = 0;                            // best so far
    const std::vector<int32_t>* candidate = nullptr;  // what was just scored (sequence problems:
    double score = 0;  // the state's effective actions) and its score
  };
  std::function<void(const Report&)> on_step;
};

struct TracePoint {
  int64_t step = 0;  // steps charged so far
  double seconds = 0;
  double best_score = 0;
};

struct Result {
  std::string strategy;
  Candidate best;  // for sequence problems, the state's effective actions
  double best_score = 0;
  double initial_score = 0;  // the starting state's score; +infinity without states
  int64_t steps = 0;         // charged steps, <= Budget::max_steps
  int64_t evaluations = 0;   // whole-candidate evaluations (Evaluate calls that completed)
  double seconds = 0;
  bool budget_exhausted = false;  // false: the strategy stopped on its own
  // trace[i]: best score after i + 1 steps; non-increasing.
  std::vector<TracePoint> trace;
  std::vector<std::pair<std::string, int64_t>> stats;  // the problem's counters at the end
};

// What a strategy sees: the problem, the budget, a seeded generator, and the only ways to spend
// steps. Tracks the best candidate and the trace.
class SearchContext {
 public:
  SearchContext(Problem& problem, const Budget& budget, uint64_t seed);
  ~SearchContext();
  SearchContext(const SearchContext&) = delete;
  SearchContext& operator=(const SearchContext&) = delete;

  Problem& problem() const { return problem_; }
  const SearchSpace& space() const { return space_; }
  std::mt19937_64& rng() { return rng_; }
  bool has_states() const { return has_states_; }

  const Budget& budget() const { return budget_; }
  int64_t steps() const { return steps_; }
  double elapsed_seconds() const;
  // True when no step is left or time is up.
  bool Exhausted() const;
  // Fraction of the budget used, the larger of steps and time, in [0, 1] (for schedules).
  double Progress() const;
  double best_score() const { return best_score_; }
  // The candidate that scored best_score() (for sequence problems, the effective actions); empty
  // before anything was evaluated.
  const Candidate& best() const { return best_; }
  double initial_score() const { return initial_score_; }

  // The starting state (free); nullptr without states.
  std::unique_ptr<State> NewState() const;

  enum class StepOutcome { kChanged, kUnchanged, kOutOfBudget };
  // One charged step.
  StepOutcome Step(State& state, Action action);

  struct Evaluation {
    double score = 0;              // of the whole candidate
    double best_prefix_score = 0;  // best over prefixes of length >= 1 (the whole, w/o states)
    int64_t best_prefix_length = 0;
    Candidate effective;  // sequence problems: the candidate without its no-op steps
    int64_t steps = 0;    // charged for this evaluation
  };
  // Evaluates a whole candidate. With states, resumes from the longest cached prefix and charges
  // one step per remaining action; otherwise charges the problem's EvaluationCost. nullopt when
  // the budget cannot cover it (nothing beyond what was stepped is charged).
  std::optional<Evaluation> Evaluate(const Candidate& candidate);

  // The problem's seed candidates, evaluated; filled by Strategy::Search before the strategy runs.
  const std::vector<Evaluation>& seeds() const { return seeds_; }

  // Used by Strategy::Search: evaluates the seeds (false when the budget ran out) and ends.
  bool EvaluateSeeds();
  Result Finish(std::string strategy, bool budget_exhausted);

 private:
  class PrefixCache;
  void Charge(const Candidate* candidate, double score, int64_t steps);

  Problem& problem_;
  SearchSpace space_;
  Budget budget_;
  std::mt19937_64 rng_;
  bool has_states_ = false;
  double start_ = 0;
  int64_t steps_ = 0;
  int64_t evaluations_ = 0;
  double initial_score_;
  double best_score_;
  Candidate best_;
  std::vector<TracePoint> trace_;
  std::vector<Evaluation> seeds_;
  std::unique_ptr<PrefixCache> prefix_cache_;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string_view name() const = 0;
  // Runs the strategy within `budget`. Errors: a budget with neither limit, an empty space, or a
  // problem the strategy cannot handle.
  absl::StatusOr<Result> Search(Problem& problem, const Budget& budget, uint64_t seed);

 protected:
  // An error when the strategy cannot search `problem` (checked before any step is charged).
  virtual absl::Status CheckProblem(Problem& /*problem*/) { return absl::OkStatus(); }
  // Returns true when it stopped because the budget ran out. A strategy that hits an error it
  // cannot search past (a cost model failing) records it with Fail and returns; Search then
  // returns the error instead of a result.
  virtual bool Run(SearchContext& context) = 0;
  void Fail(absl::Status status) { failure_ = std::move(status); }
  bool failed() const { return !failure_.ok(); }

 private:
  absl::Status failure_;
};

// Strategy parameters by name (e.g. {"width", 8}); each strategy documents its own.
using StrategyParams = std::map<std::string, double>;

class StrategyRegistry {
 public:
  using Factory = std::function<absl::StatusOr<std::unique_ptr<Strategy>>(const StrategyParams&)>;
  // "random", "greedy", "beam", "annealing", "evolutionary" (search by measurement alone; the
  // model-guided "model-topk" is in model_topk.h, offered by the tasks that attach a model).
  static const StrategyRegistry& Global();

  void Register(std::string name, std::string description, Factory factory);
  absl::StatusOr<std::unique_ptr<Strategy>> Create(std::string_view name,
                                                   const StrategyParams& params = {}) const;
  std::vector<std::string> Names() const;  // sorted
  std::string Description(std::string_view name) const;

 private:
  struct Entry {
    std::string description;
    Factory factory;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace mltune::opt
