// Simulated annealing over whole candidates. The energy of a sequence is its best prefix score
// (the search returns best prefixes anyway); a move is one random edit (replace, insert, delete,
// swap adjacent; replace only for configurations); a worse move is accepted with probability
// exp(-delta / T), delta relative to the starting score, and T falls geometrically from t_start to
// t_end as the budget is used. Evaluations resume from cached prefixes, so an edit at position i
// of a sequence costs about length - i steps. After evaluation a sequence keeps its effective form
// (no-op steps dropped). Sequences start from a random sequence grown without known no-ops.
//
// Parameters: t_start (0.02), t_end (0.0005), init_length (8, sequences).
#include <cmath>
#include <limits>
#include <optional>

#include "optimizers/core/search.h"
#include "optimizers/core/strategy_util.h"

namespace mltune::opt {
namespace {

// Evaluations that charged nothing (fully cached) in a row before giving up: the neighbourhood
// of the current candidate is exhausted.
constexpr int kMaxFreeEvaluations = 10000;

class SimulatedAnnealing : public Strategy {
 public:
  SimulatedAnnealing(double t_start, double t_end, int64_t init_length)
      : t_start_(t_start), t_end_(t_end), init_length_(init_length) {}
  std::string_view name() const override { return "annealing"; }

 protected:
  bool Run(SearchContext& ctx) override {
    const SearchSpace& space = ctx.space();
    std::optional<internal::ActionWeights> weights;
    if (ctx.has_states()) weights.emplace(space.ChoicesAt(0));
    Candidate current;
    double energy = 0;
    if (const SearchContext::Evaluation* seed = internal::BestSeed(ctx)) {
      current = seed->effective;
      energy = seed->best_prefix_score;
    } else if (ctx.has_states()) {
      std::optional<internal::Grown> start = internal::GrowRandomSequence(ctx, init_length_);
      if (!start) return true;
      current = std::move(start->candidate);
      energy = start->best_prefix_score;
    } else {
      current = internal::RandomCandidate(space, init_length_, ctx.rng());
      std::optional<SearchContext::Evaluation> eval = ctx.Evaluate(current);
      if (!eval) return true;
      energy = eval->best_prefix_score;
    }
    std::optional<SearchContext::Evaluation> eval;
    double scale = std::abs(ctx.has_states() ? ctx.initial_score() : energy);
    if (!(scale > 0) || !std::isfinite(scale)) scale = 1;
    int free_in_a_row = 0;
    while (!ctx.Exhausted()) {
      const double t = t_start_ * std::pow(t_end_ / t_start_, ctx.Progress());
      Candidate next = internal::Mutate(space, current, ctx.rng(), weights ? &*weights : nullptr);
      eval = ctx.Evaluate(next);
      if (!eval) return true;
      if (weights) weights->Observe(next, eval->effective);
      free_in_a_row = eval->steps == 0 ? free_in_a_row + 1 : 0;
      if (free_in_a_row >= kMaxFreeEvaluations) return false;
      const double delta = (eval->best_prefix_score - energy) / scale;
      if (delta <= 0 ||
          (std::isfinite(delta) && internal::Uniform01(ctx.rng()) < std::exp(-delta / t))) {
        current = ctx.has_states() ? eval->effective : next;
        energy = eval->best_prefix_score;
      }
    }
    return true;
  }

 private:
  double t_start_;
  double t_end_;
  int64_t init_length_;
};

}  // namespace

namespace internal {
void RegisterSimulatedAnnealing(StrategyRegistry& registry) {
  registry.Register(
      "annealing",
      "simulated annealing over candidates (t_start=0.02, t_end=0.0005, init_length=8)",
      [](const StrategyParams& params) -> absl::StatusOr<std::unique_ptr<Strategy>> {
        absl::Status s = CheckParams(params, "annealing", {"t_start", "t_end", "init_length"});
        if (!s.ok()) return s;
        const double t_start = Param(params, "t_start", 0.02);
        const double t_end = Param(params, "t_end", 0.0005);
        const double init_length = Param(params, "init_length", 8);
        if (!(t_start > 0) || !(t_end > 0) || t_end > t_start) {
          return absl::InvalidArgumentError("annealing: need 0 < t_end <= t_start");
        }
        if (init_length < 0) return absl::InvalidArgumentError("annealing: init_length >= 0");
        return std::make_unique<SimulatedAnnealing>(t_start, t_end,
                                                    static_cast<int64_t>(init_length));
      });
}
}  // namespace internal

}  // namespace mltune::opt
