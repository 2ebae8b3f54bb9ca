// Fusion search on the TPU simulator: one decision per fusible producer (fuse into its consumers'
// kernel, or not), planned by costmodels::PlanFusion and priced with each kernel's default tiles.
// All-fused, the compiler's default fusion, is the seed.
#pragma once

#include <string>
#include <vector>

#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "optimizers/core/config_problem.h"

namespace mltune::opt::fusion {

class TpuFusionProblem : public ConfigProblem {
 public:
  TpuFusionProblem(costmodels::OpGraph graph, backends::tpu::TpuSimulator sim);

  std::string name() const override { return "fusion"; }
  SearchSpace space() const override { return space_; }
  std::string ActionName(int64_t position, Action action) const override;
  double Evaluate(const Candidate& candidate) override;  // seconds; +inf when a kernel is invalid

  Candidate DefaultCandidate() const { return Candidate(producers_.size(), 1); }
  costmodels::FusionPlan Plan(const Candidate& candidate) const;
  backends::tpu::TpuResult Simulate(const Candidate& candidate);
  const costmodels::OpGraph& graph() const { return graph_; }

 private:
  costmodels::OpGraph graph_;
  backends::tpu::TpuSimulator sim_;
  std::vector<int32_t> producers_;
  SearchSpace space_;
};

}  // namespace mltune::opt::fusion
