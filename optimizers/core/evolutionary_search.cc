// Steady-state evolutionary search over whole candidates (steady state, one child at a time, so
// even a 100-step budget sees selection). A population of random candidates (sequences of 1 to
// init_length actions); each round picks parents by tournament, makes a child by crossover (with
// probability crossover_rate) and mutation (always without crossover, else with probability 1/2),
// skips children already in the population, and replaces the worst member when the child is no
// worse. Fitness is the best prefix score; sequences keep their effective form. Evaluations resume
// from cached prefixes, so children sharing a parent's head pay only for their tail.
//
// Parameters: population (0: sized to the budget, max_steps / 60 clamped to [4, 16], since the
// first generation alone costs about population * init_length / 2 steps; 16 for budgets in
// seconds only), tournament (3), crossover_rate (0.7), init_length (8).
#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include "optimizers/core/search.h"
#include "optimizers/core/strategy_util.h"

namespace mltune::opt {
namespace {

constexpr int kMaxFreeRounds = 10000;
constexpr int kMaxDuplicateRetries = 8;

class EvolutionarySearch : public Strategy {
 public:
  EvolutionarySearch(int64_t population, int64_t tournament, double crossover_rate,
                     int64_t init_length)
      : population_(population),
        tournament_(tournament),
        crossover_rate_(crossover_rate),
        init_length_(init_length) {}
  std::string_view name() const override { return "evolutionary"; }

 protected:
  bool Run(SearchContext& ctx) override {
    const SearchSpace& space = ctx.space();
    int64_t population = population_;
    if (population <= 0) {
      const int64_t steps = ctx.budget().max_steps;
      population = steps > 0 ? std::clamp<int64_t>(steps / 60, 4, 16) : 16;
    }
    std::optional<internal::ActionWeights> weights;
    if (ctx.has_states()) weights.emplace(space.ChoicesAt(0));
    std::vector<Member> pop;
    std::set<Candidate> members;
    for (const SearchContext::Evaluation& seed : ctx.seeds()) {
      if (static_cast<int64_t>(pop.size()) < population && members.insert(seed.effective).second) {
        pop.push_back(Member{seed.effective, seed.best_prefix_score});
      }
    }
    for (int64_t i = 0; i < population * 4 && static_cast<int64_t>(pop.size()) < population; ++i) {
      const int64_t length = 1 + internal::Uniform(ctx.rng(), std::max<int64_t>(init_length_, 1));
      std::optional<Member> m;
      if (ctx.has_states()) {
        // Grown without known no-ops: a uniformly random sequence is mostly passes that do
        // nothing, which small budgets cannot afford.
        std::optional<internal::Grown> g = internal::GrowRandomSequence(ctx, length);
        if (g) m = Member{std::move(g->candidate), g->best_prefix_score};
      } else {
        m = Evaluate(ctx, internal::RandomCandidate(space, length, ctx.rng()));
      }
      if (!m) return true;
      if (members.insert(m->candidate).second) pop.push_back(std::move(*m));
    }
    if (pop.empty()) return false;

    int free_in_a_row = 0;
    while (!ctx.Exhausted()) {
      Candidate child;
      for (int retry = 0; retry <= kMaxDuplicateRetries; ++retry) {
        const Member& a = Tournament(ctx, pop);
        if (internal::Uniform01(ctx.rng()) < crossover_rate_) {
          const Member& b = Tournament(ctx, pop);
          child = internal::Crossover(space, a.candidate, b.candidate, ctx.rng());
          if (internal::Uniform01(ctx.rng()) < 0.5) {
            child = internal::Mutate(space, child, ctx.rng(), weights ? &*weights : nullptr);
          }
        } else {
          child = internal::Mutate(space, a.candidate, ctx.rng(), weights ? &*weights : nullptr);
        }
        if (members.count(child) == 0) break;
      }
      const int64_t steps_before = ctx.steps();
      std::optional<Member> m = Evaluate(ctx, child);
      if (!m) return true;
      if (weights) weights->Observe(child, m->candidate);
      free_in_a_row = ctx.steps() == steps_before ? free_in_a_row + 1 : 0;
      if (free_in_a_row >= kMaxFreeRounds) return false;
      if (members.count(m->candidate) > 0) continue;
      // Replace the worst (the oldest among equals) when the child is no worse.
      size_t worst = 0;
      for (size_t i = 1; i < pop.size(); ++i) {
        if (pop[i].fitness > pop[worst].fitness) worst = i;
      }
      if (m->fitness <= pop[worst].fitness) {
        members.erase(pop[worst].candidate);
        members.insert(m->candidate);
        pop.erase(pop.begin() + static_cast<std::ptrdiff_t>(worst));
        pop.push_back(std::move(*m));
      }
    }
    return true;
  }

 private:
  struct Member {
    Candidate candidate;
    double fitness;
  };

  std::optional<Member> Evaluate(SearchContext& ctx, const Candidate& c) {
    std::optional<SearchContext::Evaluation> e = ctx.Evaluate(c);
    if (!e) return std::nullopt;
    return Member{ctx.has_states() ? e->effective : c, e->best_prefix_score};
  }

  const Member& Tournament(SearchContext& ctx, const std::vector<Member>& pop) {
    const Member* best = nullptr;
    for (int64_t i = 0; i < tournament_; ++i) {
      const Member& m = pop[internal::Uniform(ctx.rng(), static_cast<int64_t>(pop.size()))];
      if (best == nullptr || m.fitness < best->fitness) best = &m;
    }
    return *best;
  }

  int64_t population_;
  int64_t tournament_;
  double crossover_rate_;
  int64_t init_length_;
};

}  // namespace

namespace internal {
void RegisterEvolutionarySearch(StrategyRegistry& registry) {
  registry.Register(
      "evolutionary",
      "steady-state genetic search over candidates (population=0: by budget, tournament=3, "
      "crossover_rate=0.7, init_length=8)",
      [](const StrategyParams& params) -> absl::StatusOr<std::unique_ptr<Strategy>> {
        absl::Status s = CheckParams(params, "evolutionary",
                                     {"population", "tournament", "crossover_rate", "init_length"});
        if (!s.ok()) return s;
        const double population = Param(params, "population", 0);
        const double tournament = Param(params, "tournament", 3);
        const double crossover_rate = Param(params, "crossover_rate", 0.7);
        const double init_length = Param(params, "init_length", 8);
        if ((population != 0 && population < 2) || tournament < 1 || crossover_rate < 0 ||
            crossover_rate > 1 || init_length < 1) {
          return absl::InvalidArgumentError(
              "evolutionary: need population 0 (auto) or >= 2, tournament >= 1, crossover_rate "
              "in [0, 1], init_length >= 1");
        }
        return std::make_unique<EvolutionarySearch>(
            static_cast<int64_t>(population), static_cast<int64_t>(tournament), crossover_rate,
            static_cast<int64_t>(init_length));
      });
}
}  // namespace internal

}  // namespace mltune::opt
