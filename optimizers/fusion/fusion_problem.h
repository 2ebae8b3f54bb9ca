// Fusion search on the TPU simulator: one decision per fusible producer (fuse into its consumers'
// kernel, or not), planned by costmodels::PlanFusion and priced with each kernel's default tiles.
// All-fused, the compiler's default fusion, is the seed.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "optimizers/core/config_problem.h"

namespace mltune::opt::fusion {

// Predicted cost of each fusion plan (lower is better; only the order within one call matters):
// a learned cost model, for the "model-topk" strategy.
using PlanRankFn =
    std::function<absl::StatusOr<std::vector<double>>(const std::vector<costmodels::FusionPlan>&)>;

// RankSettings of a fusion problem (one part, every producer): each setting, checked against
// `problem`'s space, becomes its plan by `plan`, and `rank` scores the plans. A plan that an
// earlier setting already made ranks +infinity: many settings make the same plan, and the best
// ranked should be distinct plans (the top k measure k plans) for exploration to keep variety.
absl::StatusOr<std::vector<double>> RankPlanSettings(
    const ConfigProblem& problem, int64_t part, const std::vector<Candidate>& settings,
    const std::function<costmodels::FusionPlan(const Candidate&)>& plan, const PlanRankFn& rank);

class TpuFusionProblem : public ConfigProblem {
 public:
  using RankFn = PlanRankFn;

  // Told every simulated plan: its kernels and the simulator's result per kernel (each at its
  // default tile): the daemon logs them as training data.
  using ObserveFn = std::function<void(const costmodels::FusionPlan&,
                                       const std::vector<costmodels::KernelSummary>&,
                                       const backends::tpu::TpuResult&)>;

  TpuFusionProblem(costmodels::OpGraph graph, backends::tpu::TpuSimulator sim);
  void SetRanker(RankFn rank) { rank_ = std::move(rank); }
  void SetObserver(ObserveFn observe) { observe_ = std::move(observe); }

  std::string name() const override { return "fusion"; }
  SearchSpace space() const override { return space_; }
  std::string ActionName(int64_t position, Action action) const override;
  double Evaluate(const Candidate& candidate) override;  // seconds; +inf when a kernel is invalid
  // One part, every producer (Problem's default Parts()): RankPlanSettings with the ranker;
  // FailedPrecondition without one.
  absl::StatusOr<std::vector<double>> RankSettings(int64_t part,
                                                   const std::vector<Candidate>& settings) override;

  Candidate DefaultCandidate() const { return Candidate(producers_.size(), 1); }
  costmodels::FusionPlan Plan(const Candidate& candidate) const;
  backends::tpu::TpuResult Simulate(const Candidate& candidate);
  const costmodels::OpGraph& graph() const { return graph_; }

 private:
  costmodels::OpGraph graph_;
  backends::tpu::TpuSimulator sim_;
  std::vector<int32_t> producers_;
  SearchSpace space_;
  RankFn rank_;
  ObserveFn observe_;
};

}  // namespace mltune::opt::fusion
