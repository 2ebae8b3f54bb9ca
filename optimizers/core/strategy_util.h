// Internal helpers shared by the strategies: parameters, random candidates and the
// mutation/crossover operators of annealing and evolutionary search.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizers/core/search.h"

namespace mltune::opt::internal {

// Uniform integer in [0, n).
inline int64_t Uniform(std::mt19937_64& rng, int64_t n) {
  return static_cast<int64_t>(rng() % static_cast<uint64_t>(n));
}
inline double Uniform01(std::mt19937_64& rng) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// Fisher-Yates with Uniform, so orders are the same on every standard library.
template <typename T>
void Shuffle(std::vector<T>& v, std::mt19937_64& rng) {
  for (int64_t i = static_cast<int64_t>(v.size()) - 1; i > 0; --i) {
    std::swap(v[i], v[Uniform(rng, i + 1)]);
  }
}

// Rejects parameter names not in `known`, so typos fail loudly.
absl::Status CheckParams(const StrategyParams& params, std::string_view strategy,
                         std::initializer_list<std::string_view> known);
double Param(const StrategyParams& params, const std::string& name, double fallback);

// A uniformly random configuration (fixed-length spaces) or a sequence of `length` actions.
Candidate RandomCandidate(const SearchSpace& space, int64_t length, std::mt19937_64& rng);

// How often each action changed the state in the sequences evaluated so far, to draw inserted and
// replacing actions with probability proportional to (changed + 1) / (tried + 2): actions that
// never do anything on this problem become rare (never impossible), which matters when most
// actions are no-ops on most states, as most passes are on most modules.
class ActionWeights {
 public:
  explicit ActionWeights(int32_t actions);
  // `effective` is `requested` without its no-op steps.
  void Observe(const Candidate& requested, const Candidate& effective);
  Action Draw(std::mt19937_64& rng) const;

 private:
  std::vector<double> tried_;
  std::vector<double> changed_;
};

// One random edit: replace (configurations); replace, insert, delete or swap adjacent
// (sequences, within [0, max_length]), new actions drawn from `weights` when given. Returns the
// candidate unchanged only when no edit exists.
Candidate Mutate(const SearchSpace& space, const Candidate& c, std::mt19937_64& rng,
                 const ActionWeights* weights = nullptr);

// Configurations: uniform crossover. Sequences: a head of `a` and a tail of `b` at independent
// cut points, truncated to max_length.
Candidate Crossover(const SearchSpace& space, const Candidate& a, const Candidate& b,
                    std::mt19937_64& rng);

// Sequence problems with states: a random sequence of up to `length` actions built one
// evaluation at a time, each action drawn among those not yet seen to be no-ops at that point
// (each evaluation resumes from the previous prefix, so one step per action tried). Returns the
// sequence without its no-ops and its best prefix score (the start's score for an empty one), or
// nullopt when the budget could not cover the first step.
struct Grown {
  Candidate candidate;
  double best_prefix_score = 0;
};
std::optional<Grown> GrowRandomSequence(SearchContext& ctx, int64_t length);

// The best-scoring evaluated seed (SearchContext::seeds), or nullptr without seeds.
const SearchContext::Evaluation* BestSeed(const SearchContext& ctx);

// Every configuration differing from `c` at exactly one position, in position then value order.
std::vector<Candidate> Neighbours(const SearchSpace& space, const Candidate& c);

// Steepest descent over Neighbours from `current` (its score `score`), moving to the best
// strictly better neighbour until none is; true when the budget ran out first.
bool HillClimb(SearchContext& ctx, Candidate current, double score);

// Steps learned to change nothing, per state key: strategies skip them instead of paying again.
class NoOpMemo {
 public:
  explicit NoOpMemo(int32_t actions) : actions_(actions) {}
  bool IsNoOp(const State& s, Action a) const;
  void MarkNoOp(const State& s, Action a);

 private:
  int32_t actions_;
  std::unordered_map<std::string, std::vector<bool>> memo_;
};

// Registration hooks, one per strategy file.
void RegisterRandomSearch(StrategyRegistry& registry);
void RegisterGreedySearch(StrategyRegistry& registry);
void RegisterBeamSearch(StrategyRegistry& registry);
void RegisterSimulatedAnnealing(StrategyRegistry& registry);
void RegisterEvolutionarySearch(StrategyRegistry& registry);

}  // namespace mltune::opt::internal
