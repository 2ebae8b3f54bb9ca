// Random search. Sequence problems: random episodes that pick, at each state, a uniformly random
// action among those not yet seen to be no-ops there; an episode ends at max_length or when every
// action is a known no-op (a fixed point). Every prefix is a scored candidate. Problems without
// states: uniformly random candidates (sequences of random length).
#include <vector>

#include "optimizers/core/search.h"
#include "optimizers/core/strategy_util.h"

namespace mltune::opt {
namespace {

class RandomSearch : public Strategy {
 public:
  std::string_view name() const override { return "random"; }

 protected:
  bool Run(SearchContext& ctx) override {
    return ctx.has_states() ? RunEpisodes(ctx) : RunCandidates(ctx);
  }

 private:
  bool RunEpisodes(SearchContext& ctx) {
    const SearchSpace& space = ctx.space();
    const int32_t actions = space.ChoicesAt(0);
    internal::NoOpMemo memo(actions);
    std::vector<Action> open;
    while (!ctx.Exhausted()) {
      std::unique_ptr<State> state = ctx.NewState();
      // No-ops of the current state for problems without keys (the memo covers keyed ones).
      std::vector<bool> local(static_cast<size_t>(actions), false);
      int64_t charged = 0;
      while (static_cast<int64_t>(state->actions().size()) < space.max_length) {
        open.clear();
        for (Action a = 0; a < actions; ++a) {
          if (!local[a] && !memo.IsNoOp(*state, a)) open.push_back(a);
        }
        if (open.empty()) break;
        const Action a = open[internal::Uniform(ctx.rng(), static_cast<int64_t>(open.size()))];
        const SearchContext::StepOutcome outcome = ctx.Step(*state, a);
        if (outcome == SearchContext::StepOutcome::kOutOfBudget) return true;
        ++charged;
        if (outcome == SearchContext::StepOutcome::kUnchanged) {
          local[a] = true;
          memo.MarkNoOp(*state, a);
        } else {
          local.assign(local.size(), false);
        }
      }
      // An episode that could not take a step means every path from the start is known: the
      // space is exhausted.
      if (charged == 0) return false;
    }
    return true;
  }

  bool RunCandidates(SearchContext& ctx) {
    const SearchSpace& space = ctx.space();
    while (!ctx.Exhausted()) {
      const int64_t length = space.fixed_length
                                 ? space.max_length
                                 : 1 + internal::Uniform(ctx.rng(), space.max_length);
      if (!ctx.Evaluate(internal::RandomCandidate(space, length, ctx.rng()))) return true;
    }
    return true;
  }
};

}  // namespace

namespace internal {
void RegisterRandomSearch(StrategyRegistry& registry) {
  registry.Register("random",
                    "random episodes over actions not yet seen to be no-ops (no parameters)",
                    [](const StrategyParams& params) -> absl::StatusOr<std::unique_ptr<Strategy>> {
                      absl::Status s = CheckParams(params, "random", {});
                      if (!s.ok()) return s;
                      return std::make_unique<RandomSearch>();
                    });
}
}  // namespace internal

}  // namespace mltune::opt
