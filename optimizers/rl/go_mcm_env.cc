// GO on a multi-chip module: one chip per op, every decision realized through the MCM's
// constraint solver, scored by the simulated pipeline's stage seconds.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "backends/mcm_sim/mcm_sim.h"
#include "optimizers/constraints/constraints.h"
#include "optimizers/mcm/mcm_problem.h"
#include "optimizers/rl/go_features.h"

namespace mltune::opt::rl {
namespace {

using internal::BuildGoGraph;
using internal::UnitFacts;

// Local search through the solver for the imitation teacher, in evaluations.
constexpr int64_t kTeacherSearch = 400;

class McmEnvironment : public GoEnvironment {
 public:
  explicit McmEnvironment(const mcm::McmChipProblem& problem) : problem_(problem) {
    const costmodels::OpGraph& graph = problem.graph();
    const backends::TargetSpec& spec = problem.simulator().spec();
    const backends::MemoryLevel* sram = spec.Memory("sram");
    if (sram == nullptr && !spec.memory.empty()) sram = &spec.memory.front();
    const double sram_bytes = sram != nullptr ? static_cast<double>(sram->bytes) : 0;
    double link = 1e10;
    for (const backends::Link& l : spec.links) {
      if (l.bandwidth > 0) link = l.bandwidth;
    }
    const std::vector<double> seconds = problem.simulator().OpSeconds(graph);
    std::vector<UnitFacts> units(static_cast<size_t>(graph.size()));
    for (int32_t i = 0; i < graph.size(); ++i) {
      const costmodels::OpNode& op = graph.nodes[static_cast<size_t>(i)];
      UnitFacts& u = units[static_cast<size_t>(i)];
      u.seconds = seconds[static_cast<size_t>(i)];
      u.bytes = op.output_bytes;
      for (const costmodels::OpWeight& w : op.weights) u.bytes += w.bytes;
      u.out_cost = op.output_bytes / link;
      u.kind = op.matmul ? 1 : op.elementwise_like ? 2 : 3;
    }
    std::vector<int32_t> src, dst;
    internal::OpGraphEdges(graph, &src, &dst);
    go_ = BuildGoGraph(graph.module_name, units, std::move(src), std::move(dst),
                       problem.simulator().chips(), sram_bytes);
    const backends::mcm::McmResult balanced = problem.Simulate(problem.BalancedCandidate());
    reference_ = balanced.valid ? balanced.stage_seconds : 0;
    if (!(reference_ > 0)) {
      for (const GoDecision& d : Baselines()) {
        const Outcome o = Evaluate(d);
        if (o.valid && (reference_ <= 0 || o.score < reference_)) reference_ = o.score;
      }
    }
    if (!(reference_ > 0)) reference_ = 1;
  }

  const GoGraph& graph() const override { return go_; }
  Outcome Evaluate(const GoDecision& decision) override {
    const backends::mcm::McmResult r =
        problem_.Simulate(Candidate(decision.device.begin(), decision.device.end()));
    Outcome o;
    o.valid = r.valid && r.stage_seconds > 0;
    o.score = o.valid ? r.stage_seconds : 0;
    o.overflow = o.valid ? 0 : 1;
    return o;
  }
  double reference_score() const override { return reference_; }

  // The balanced partition, the solver's first-fit fill, and the solver's local search.
  std::vector<GoDecision> Baselines() override {
    if (!baselines_.empty()) return baselines_;
    auto add = [&](const Candidate& c) {
      GoDecision d;
      d.device.assign(c.begin(), c.end());
      baselines_.push_back(std::move(d));
    };
    add(problem_.BalancedCandidate());
    absl::StatusOr<std::vector<int32_t>> first_fit = constraints::Repair(
        problem_, std::vector<int32_t>(static_cast<size_t>(problem_.graph().size()), 0));
    if (first_fit.ok()) add(Candidate(first_fit->begin(), first_fit->end()));
    mcm::McmChipProblem copy = problem_;  // searches count evaluations
    absl::StatusOr<std::unique_ptr<Strategy>> search =
        constraints::SolverStrategies().Create("solver-local-search");
    if (search.ok()) {
      absl::StatusOr<Result> r = (*search)->Search(copy, Budget(kTeacherSearch, 0), 1);
      if (r.ok() && std::isfinite(r->best_score)) add(r->best);
    }
    return baselines_;
  }

 private:
  const mcm::McmChipProblem& problem_;
  GoGraph go_;
  double reference_ = 1;
  std::vector<GoDecision> baselines_;
};

}  // namespace

std::unique_ptr<GoEnvironment> MakeMcmEnvironment(const mcm::McmChipProblem& problem,
                                                  GoSolverMode mode, uint64_t seed) {
  return MakeConstrainedEnvironment(std::make_unique<McmEnvironment>(problem), problem, mode, seed);
}

}  // namespace mltune::opt::rl
