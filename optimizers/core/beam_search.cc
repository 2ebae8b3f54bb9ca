// Beam search. Sequence problems: level by level, expand every beam state by every action (one
// step each, best-ranked state first) and keep the `width` best children that changed something
// and reach a state not kept before (stable: earlier expansions win ties); stop at max_length or
// when no child is left. Problems without states: local beam search over
// single-position changes, restarting from random candidates when the beam stops improving.
//
// Parameters: width (default 0: sized to the budget, max_steps / (10 * actions) clamped to
// [1, 8], so the beam can go about ten levels deep; 4 for budgets in seconds only).
#include <algorithm>
#include <memory>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "optimizers/core/search.h"
#include "optimizers/core/strategy_util.h"

namespace mltune::opt {
namespace {

class BeamSearch : public Strategy {
 public:
  explicit BeamSearch(int64_t width) : requested_width_(width) {}
  std::string_view name() const override { return "beam"; }

 protected:
  bool Run(SearchContext& ctx) override {
    width_ = requested_width_;
    if (width_ <= 0) {
      const int64_t steps = ctx.budget().max_steps;
      width_ = steps > 0 ? std::clamp<int64_t>(steps / (10 * ctx.space().ChoicesAt(0)), 1, 8) : 4;
    }
    return ctx.has_states() ? RunSequence(ctx) : RunLocalBeam(ctx);
  }

 private:
  bool RunSequence(SearchContext& ctx) {
    const SearchSpace& space = ctx.space();
    const int32_t actions = space.ChoicesAt(0);
    std::vector<std::unique_ptr<State>> beam;
    beam.push_back(ctx.NewState());
    std::unordered_set<std::string> seen{beam[0]->Key()};
    for (int64_t depth = 0; depth < space.max_length; ++depth) {
      std::vector<std::unique_ptr<State>> children;
      for (const std::unique_ptr<State>& parent : beam) {
        for (Action a = 0; a < actions; ++a) {
          std::unique_ptr<State> child = parent->Fork();
          const SearchContext::StepOutcome outcome = ctx.Step(*child, a);
          if (outcome == SearchContext::StepOutcome::kOutOfBudget) return true;
          if (outcome == SearchContext::StepOutcome::kChanged) children.push_back(std::move(child));
        }
      }
      std::stable_sort(children.begin(), children.end(),
                       [](const auto& a, const auto& b) { return a->score() < b->score(); });
      // Keys (possibly costly) only for the children that could be kept.
      std::vector<std::unique_ptr<State>> next;
      for (std::unique_ptr<State>& child : children) {
        if (static_cast<int64_t>(next.size()) == width_) break;
        const std::string key = child->Key();
        if (!key.empty() && !seen.insert(key).second) continue;
        next.push_back(std::move(child));
      }
      if (next.empty()) return false;
      beam = std::move(next);
    }
    return false;
  }

  struct Member {
    Candidate candidate;
    double score;
  };

  bool RunLocalBeam(SearchContext& ctx) {
    const SearchSpace& space = ctx.space();
    auto random_length = [&] {
      return space.fixed_length ? space.max_length
                                : 1 + internal::Uniform(ctx.rng(), space.max_length);
    };
    while (!ctx.Exhausted()) {
      std::vector<Member> beam;
      std::unordered_set<std::string> seen;
      auto key = [](const Candidate& c) {
        return std::string(reinterpret_cast<const char*>(c.data()), c.size() * sizeof(Action));
      };
      for (int64_t i = 0; i < width_; ++i) {
        Candidate c = internal::RandomCandidate(space, random_length(), ctx.rng());
        if (!seen.insert(key(c)).second) continue;
        std::optional<SearchContext::Evaluation> e = ctx.Evaluate(c);
        if (!e) return true;
        beam.push_back({std::move(c), e->score});
      }
      for (bool improved = true; improved;) {
        double best_before = beam.empty() ? 0 : beam[0].score;
        for (const Member& m : beam) best_before = std::min(best_before, m.score);
        std::vector<Member> pool = beam;
        for (const Member& m : beam) {
          for (Candidate& n : internal::Neighbours(space, m.candidate)) {
            if (!seen.insert(key(n)).second) continue;
            std::optional<SearchContext::Evaluation> e = ctx.Evaluate(n);
            if (!e) return true;
            pool.push_back({std::move(n), e->score});
          }
        }
        std::stable_sort(pool.begin(), pool.end(),
                         [](const Member& a, const Member& b) { return a.score < b.score; });
        if (static_cast<int64_t>(pool.size()) > width_) pool.resize(width_);
        beam = std::move(pool);
        improved = !beam.empty() && beam[0].score < best_before;
      }
    }
    return true;
  }

  int64_t requested_width_;
  int64_t width_ = 1;
};

}  // namespace

namespace internal {
void RegisterBeamSearch(StrategyRegistry& registry) {
  registry.Register(
      "beam",
      "beam search over action sequences; local beam for configurations (width=0: by budget)",
      [](const StrategyParams& params) -> absl::StatusOr<std::unique_ptr<Strategy>> {
        absl::Status s = CheckParams(params, "beam", {"width"});
        if (!s.ok()) return s;
        const double width = Param(params, "width", 0);
        if (width < 0) return absl::InvalidArgumentError("beam: width must be >= 0 (0: auto)");
        return std::make_unique<BeamSearch>(static_cast<int64_t>(width));
      });
}
}  // namespace internal

}  // namespace mltune::opt
