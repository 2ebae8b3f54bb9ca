// GO through a constraint solver: the policy's device decision, repaired (FIX) or sampled
// within the domains the constraints leave (SAMPLE), is what the environment evaluates.
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizers/constraints/constraints.h"
#include "optimizers/rl/rl.h"

namespace mltune::opt::rl {
namespace {

// Failed fixes one realization may spend: a proposal is one sample, not a search.
constexpr int64_t kRealizeFailures = 3000;

class ConstrainedEnvironment : public GoEnvironment {
 public:
  ConstrainedEnvironment(std::unique_ptr<GoEnvironment> inner,
                         const constraints::ConstrainedProblem& problem, GoSolverMode mode,
                         uint64_t seed)
      : inner_(std::move(inner)),
        problem_(problem),
        mode_(mode),
        rng_(seed),
        order_(problem.VariableOrder()) {}

  const GoGraph& graph() const override { return inner_->graph(); }
  Outcome Evaluate(const GoDecision& decision) override { return inner_->Evaluate(decision); }
  double reference_score() const override { return inner_->reference_score(); }
  std::vector<GoDecision> Baselines() override { return inner_->Baselines(); }
  bool realizes() const override { return true; }

  GoDecision Realize(const GoDecision& proposal,
                     const std::vector<float>& device_probabilities) override {
    if (solver_ == nullptr) {
      absl::StatusOr<std::unique_ptr<constraints::Solver>> solver = problem_.NewSolver();
      if (!solver.ok()) return proposal;  // infeasible: evaluated (and refused) as proposed
      solver_ = *std::move(solver);
      root_ = solver_->Checkpoint();
    }
    solver_->Undo(root_);
    constraints::CompleteOptions options;
    options.max_failures = kRealizeFailures;
    options.seed = rng_();
    const bool sample = mode_ == GoSolverMode::kSample && !device_probabilities.empty();
    absl::StatusOr<std::vector<int32_t>> a =
        sample ? constraints::Complete(
                     *solver_, order_,
                     constraints::SampledOrder(device_probabilities, kGoMaxDevices, rng_), options)
               : constraints::Complete(*solver_, order_, constraints::NearestOrder(proposal.device),
                                       options);
    solver_->Undo(root_);
    if (!a.ok()) return proposal;
    GoDecision realized = proposal;
    realized.device = *std::move(a);
    return realized;
  }

 private:
  std::unique_ptr<GoEnvironment> inner_;
  const constraints::ConstrainedProblem& problem_;
  GoSolverMode mode_;
  std::mt19937_64 rng_;
  std::vector<int32_t> order_;
  std::unique_ptr<constraints::Solver> solver_;
  size_t root_ = 0;
};

}  // namespace

absl::StatusOr<GoSolverMode> ParseGoSolverMode(std::string_view name) {
  if (name == "fix") return GoSolverMode::kFix;
  if (name == "sample") return GoSolverMode::kSample;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown solver mode '", std::string(name), "' (expected fix or sample)"));
}

std::unique_ptr<GoEnvironment> MakeConstrainedEnvironment(
    std::unique_ptr<GoEnvironment> inner, const constraints::ConstrainedProblem& problem,
    GoSolverMode mode, uint64_t seed) {
  return std::make_unique<ConstrainedEnvironment>(std::move(inner), problem, mode, seed);
}

}  // namespace mltune::opt::rl
