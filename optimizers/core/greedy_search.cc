// Greedy search. Sequence problems: from the start, try every action on a fork of the current
// state (one step each) and move to the best child that changed the state, is not a state already
// on the path and is no worse than the current one (ties broken at random by the seed); stop at
// max_length or when no such child exists. Problems without states: steepest-descent hill
// climbing over single-position changes from random starting points, restarting at local optima.
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "optimizers/core/search.h"
#include "optimizers/core/strategy_util.h"

namespace mltune::opt {
namespace {

class GreedySearch : public Strategy {
 public:
  std::string_view name() const override { return "greedy"; }

 protected:
  bool Run(SearchContext& ctx) override {
    return ctx.has_states() ? RunSequence(ctx) : RunHillClimbing(ctx);
  }

 private:
  bool RunSequence(SearchContext& ctx) {
    const SearchSpace& space = ctx.space();
    const int32_t actions = space.ChoicesAt(0);
    std::unique_ptr<State> state = ctx.NewState();
    std::unordered_set<std::string> path{state->Key()};
    std::vector<std::unique_ptr<State>> children;
    while (static_cast<int64_t>(state->actions().size()) < space.max_length) {
      children.clear();
      for (Action a = 0; a < actions; ++a) {
        std::unique_ptr<State> child = state->Fork();
        const SearchContext::StepOutcome outcome = ctx.Step(*child, a);
        if (outcome == SearchContext::StepOutcome::kOutOfBudget) return true;
        if (outcome == SearchContext::StepOutcome::kChanged) children.push_back(std::move(child));
      }
      // Best score first, equals in seeded random order; keys (possibly costly) only as needed.
      internal::Shuffle(children, ctx.rng());
      std::stable_sort(children.begin(), children.end(),
                       [](const auto& a, const auto& b) { return a->score() < b->score(); });
      bool moved = false;
      for (std::unique_ptr<State>& child : children) {
        if (child->score() > state->score()) break;
        const std::string key = child->Key();
        if (!key.empty() && !path.insert(key).second) continue;
        state = std::move(child);
        moved = true;
        break;
      }
      if (!moved) return false;
    }
    return false;
  }

  bool RunHillClimbing(SearchContext& ctx) {
    const SearchSpace& space = ctx.space();
    while (!ctx.Exhausted()) {
      const int64_t length = space.fixed_length
                                 ? space.max_length
                                 : 1 + internal::Uniform(ctx.rng(), space.max_length);
      Candidate current = internal::RandomCandidate(space, length, ctx.rng());
      std::optional<SearchContext::Evaluation> eval = ctx.Evaluate(current);
      if (!eval) return true;
      if (internal::HillClimb(ctx, std::move(current), eval->score)) return true;
    }
    return true;
  }
};

}  // namespace

namespace internal {
void RegisterGreedySearch(StrategyRegistry& registry) {
  registry.Register("greedy",
                    "best next action by score at every step; hill climbing for configurations "
                    "(no parameters)",
                    [](const StrategyParams& params) -> absl::StatusOr<std::unique_ptr<Strategy>> {
                      absl::Status s = CheckParams(params, "greedy", {});
                      if (!s.ok()) return s;
                      return std::make_unique<GreedySearch>();
                    });
}
}  // namespace internal

}  // namespace mltune::opt
