// Fusion search on the CPU backend, as XLA's priority fusion and GO frame it: a priority per
// fusible producer orders a greedy fusion pass that keeps XLA's legality rules
// (costmodels::PlanFusionByPriority); priority 0 keeps a producer out of its consumers' kernel.
// The score is the whole module's measured time (compiled with default kernel parameters), each
// distinct plan measured once. All priorities equal, the compiler's default fusion, is the seed.
// With a ranker attached (a learned cost model predicting each plan's time from its kernels),
// "model-topk" explores plans with the model and measures only the best ranked.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "optimizers/core/config_problem.h"
#include "optimizers/fusion/fusion_problem.h"

namespace mltune::opt::fusion {

// A plan measured: the whole module's seconds and, when the measurement also timed each kernel
// inside the module's run (backends::cpu::MeasureOptions::kernel_times), those seconds in the
// lowered module's kernel order.
struct PlanTiming {
  double seconds = 0;
  std::vector<double> kernel_seconds;
};

// The measurement log's task of those kernel times (the daemon's fusion task logs them; `mltune
// train-cost-model --task fusion` trains on them next to collect's "fusion-kernel" rows, which
// time each kernel alone). Kept apart because a kernel inside its module starts from the cache
// its producers left, not from its own previous run.
inline constexpr char kFusionKernelInModuleTask[] = "fusion-kernel-in-module";

class CpuFusionProblem : public ConfigProblem {
 public:
  using MeasureFn = std::function<absl::StatusOr<PlanTiming>(const costmodels::FusionPlan&)>;
  using RankFn = PlanRankFn;
  // Told every plan measured with its kernels' seconds, so a ranker learns from measurements.
  using ObserveFn =
      std::function<void(const costmodels::FusionPlan&, const std::vector<double>& kernel_seconds)>;
  struct Ranker {
    RankFn rank;
    ObserveFn observe;  // may be empty
  };
  // The priority each action stands for: action 0 is the default priority.
  static constexpr int32_t kPriorities[] = {1, 0, 2, 3};

  CpuFusionProblem(costmodels::OpGraph graph, MeasureFn measure);
  void SetRanker(Ranker ranker) { ranker_ = std::move(ranker); }

  std::string name() const override { return "fusion"; }
  SearchSpace space() const override { return space_; }
  std::string ActionName(int64_t position, Action action) const override;
  double Evaluate(const Candidate& candidate) override;  // seconds; +inf when it fails
  // One part, every producer (Problem's default Parts()): RankPlanSettings with the ranker;
  // FailedPrecondition without one.
  absl::StatusOr<std::vector<double>> RankSettings(int64_t part,
                                                   const std::vector<Candidate>& settings) override;

  Candidate DefaultCandidate() const { return Candidate(producers_.size(), 0); }
  costmodels::FusionPlan Plan(const Candidate& candidate) const;
  const costmodels::OpGraph& graph() const { return graph_; }
  int64_t measurements() const { return static_cast<int64_t>(cache_.size()); }
  const std::string& last_error() const { return last_error_; }

 private:
  costmodels::OpGraph graph_;
  MeasureFn measure_;
  Ranker ranker_;
  std::vector<int32_t> producers_;
  SearchSpace space_;
  std::map<std::vector<int32_t>, double> cache_;  // by kernel_of
  std::string last_error_;
};

}  // namespace mltune::opt::fusion
