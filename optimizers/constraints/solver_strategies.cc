// Strategies that search a ConstrainedProblem through its solver, so that every candidate they
// evaluate is complete and valid:
//  - solver-random: each variable in order takes a uniformly random value of its current domain;
//  - solver-annealing: a move changes `changes` random variables and repairs the rest with FIX
//    (nearest allowed values); Metropolis acceptance with T falling geometrically from t_start
//    to t_end (relative to the starting score);
//  - solver-local-search: the same moves, improvements only, restarting from solver-random
//    after `patience` moves without one.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizers/constraints/constraints.h"

namespace mltune::opt::constraints {
namespace {

double Param(const StrategyParams& params, const std::string& name, double fallback) {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

absl::Status CheckParams(const StrategyParams& params, std::string_view strategy,
                         const std::vector<std::string>& known) {
  for (const auto& [name, value] : params) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("strategy ", std::string(strategy), " has no parameter '", name, "'"));
    }
  }
  return absl::OkStatus();
}

class SolverStrategy : public Strategy {
 protected:
  absl::Status CheckProblem(Problem& problem) override {
    problem_ = dynamic_cast<ConstrainedProblem*>(&problem);
    if (problem_ == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("strategy ", std::string(name()),
                       " needs a problem with constraints (mcm-partition, "
                       "device-partition); '",
                       problem.name(), "' has none"));
    }
    absl::StatusOr<std::unique_ptr<Solver>> solver = problem_->NewSolver();
    if (!solver.ok()) return solver.status();
    solver_ = *std::move(solver);
    order_ = problem_->VariableOrder();
    root_ = solver_->Checkpoint();
    return absl::OkStatus();
  }

  // A valid assignment from the root: uniformly random values, or `proposal` repaired.
  std::optional<Candidate> Draw(SearchContext& ctx, const std::vector<int32_t>* proposal) {
    solver_->Undo(root_);
    absl::StatusOr<std::vector<int32_t>> a =
        proposal ? Complete(*solver_, order_, NearestOrder(*proposal))
                 : Complete(*solver_, order_, UniformOrder(ctx.rng()));
    solver_->Undo(root_);
    if (!a.ok()) {
      Fail(a.status());
      return std::nullopt;
    }
    return Candidate(a->begin(), a->end());
  }

  // `current` with `changes` random variables moved to random values, repaired.
  std::optional<Candidate> Move(SearchContext& ctx, const Candidate& current, int changes) {
    std::vector<int32_t> proposal(current.begin(), current.end());
    const int32_t values = solver_->values();
    for (int i = 0; i < changes; ++i) {
      const size_t var = std::uniform_int_distribution<size_t>(0, proposal.size() - 1)(ctx.rng());
      proposal[var] = std::uniform_int_distribution<int32_t>(0, values - 1)(ctx.rng());
    }
    return Draw(ctx, &proposal);
  }

  // The best seed when it is valid, else a random valid assignment; with its score.
  std::optional<std::pair<Candidate, double>> Start(SearchContext& ctx) {
    if (!ctx.best().empty() && std::isfinite(ctx.best_score())) {
      return std::make_pair(ctx.best(), ctx.best_score());
    }
    return Fresh(ctx);
  }
  std::optional<std::pair<Candidate, double>> Fresh(SearchContext& ctx) {
    std::optional<Candidate> c = Draw(ctx, nullptr);
    if (!c) return std::nullopt;
    std::optional<SearchContext::Evaluation> e = ctx.Evaluate(*c);
    if (!e) return std::nullopt;
    return std::make_pair(*std::move(c), e->score);
  }

  ConstrainedProblem* problem_ = nullptr;
  std::unique_ptr<Solver> solver_;
  std::vector<int32_t> order_;
  size_t root_ = 0;
};

class SolverRandom : public SolverStrategy {
 public:
  std::string_view name() const override { return "solver-random"; }

 protected:
  bool Run(SearchContext& ctx) override {
    while (!ctx.Exhausted()) {
      std::optional<Candidate> c = Draw(ctx, nullptr);
      if (!c || !ctx.Evaluate(*c)) return !failed();
    }
    return true;
  }
};

class SolverAnnealing : public SolverStrategy {
 public:
  SolverAnnealing(double t_start, double t_end, int changes)
      : t_start_(t_start), t_end_(t_end), changes_(changes) {}
  std::string_view name() const override { return "solver-annealing"; }

 protected:
  bool Run(SearchContext& ctx) override {
    std::optional<std::pair<Candidate, double>> start = Start(ctx);
    if (!start) return !failed();
    auto [current, energy] = *std::move(start);
    double scale = std::isfinite(energy) && energy > 0 ? energy : 1;
    while (!ctx.Exhausted()) {
      const double t = t_start_ * std::pow(t_end_ / t_start_, ctx.Progress());
      std::optional<Candidate> next = Move(ctx, current, changes_);
      if (!next) return false;
      std::optional<SearchContext::Evaluation> e = ctx.Evaluate(*next);
      if (!e) return true;
      const double delta = (e->score - energy) / scale;
      if (delta <= 0 || (std::isfinite(delta) && std::uniform_real_distribution<double>(
                                                     0, 1)(ctx.rng()) < std::exp(-delta / t))) {
        current = *std::move(next);
        energy = e->score;
      }
    }
    return true;
  }

 private:
  double t_start_, t_end_;
  int changes_;
};

class SolverLocalSearch : public SolverStrategy {
 public:
  SolverLocalSearch(int patience, int changes) : patience_(patience), changes_(changes) {}
  std::string_view name() const override { return "solver-local-search"; }

 protected:
  bool Run(SearchContext& ctx) override {
    std::optional<std::pair<Candidate, double>> start = Start(ctx);
    if (!start) return !failed();
    auto [current, score] = *std::move(start);
    int stale = 0;
    while (!ctx.Exhausted()) {
      if (stale >= patience_) {
        std::optional<std::pair<Candidate, double>> fresh = Fresh(ctx);
        if (!fresh) return !failed();
        std::tie(current, score) = *std::move(fresh);
        stale = 0;
        continue;
      }
      std::optional<Candidate> next = Move(ctx, current, changes_);
      if (!next) return false;
      std::optional<SearchContext::Evaluation> e = ctx.Evaluate(*next);
      if (!e) return true;
      if (e->score < score) {
        current = *std::move(next);
        score = e->score;
        stale = 0;
      } else {
        ++stale;
      }
    }
    return true;
  }

 private:
  int patience_, changes_;
};

}  // namespace

const StrategyRegistry& SolverStrategies() {
  static const StrategyRegistry* const registry = [] {
    auto* r = new StrategyRegistry;
    r->Register("solver-random",
                "uniform over the valid values of each variable in turn (constraint solver)",
                [](const StrategyParams& p) -> absl::StatusOr<std::unique_ptr<Strategy>> {
                  if (absl::Status s = CheckParams(p, "solver-random", {}); !s.ok()) return s;
                  return std::make_unique<SolverRandom>();
                });
    r->Register(
        "solver-annealing",
        "simulated annealing whose moves stay valid through the constraint solver "
        "(t_start 0.05, t_end 0.001, changes 2)",
        [](const StrategyParams& p) -> absl::StatusOr<std::unique_ptr<Strategy>> {
          if (absl::Status s = CheckParams(p, "solver-annealing", {"t_start", "t_end", "changes"});
              !s.ok()) {
            return s;
          }
          return std::make_unique<SolverAnnealing>(
              Param(p, "t_start", 0.05), Param(p, "t_end", 0.001),
              std::max(1, static_cast<int>(Param(p, "changes", 2))));
        });
    r->Register(
        "solver-local-search",
        "local search with restarts whose moves stay valid through the constraint "
        "solver (patience 50, changes 1)",
        [](const StrategyParams& p) -> absl::StatusOr<std::unique_ptr<Strategy>> {
          if (absl::Status s = CheckParams(p, "solver-local-search", {"patience", "changes"});
              !s.ok()) {
            return s;
          }
          return std::make_unique<SolverLocalSearch>(
              std::max(1, static_cast<int>(Param(p, "patience", 50))),
              std::max(1, static_cast<int>(Param(p, "changes", 1))));
        });
    return r;
  }();
  return *registry;
}

}  // namespace mltune::opt::constraints
