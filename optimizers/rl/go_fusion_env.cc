// GO on tpu-sim: fusion priorities ordering the greedy priority fusion pass.
#include <algorithm>
#include <cmath>

#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "optimizers/rl/go_features.h"

namespace mltune::opt::rl {
namespace {

using internal::BuildGoGraph;
using internal::UnitFacts;

class FusionEnvironment : public GoEnvironment {
 public:
  FusionEnvironment(const costmodels::OpGraph& graph, backends::tpu::TpuSimulator sim)
      : graph_(graph), sim_(std::move(sim)), producers_(costmodels::FusibleProducers(graph)) {
    const costmodels::FusionPlan unfused = costmodels::Unfused(graph);
    const std::vector<costmodels::KernelSummary> kernels =
        costmodels::SummarizeKernels(graph, unfused);
    std::vector<UnitFacts> units(static_cast<size_t>(graph.size()));
    double hbm = 1e12;
    for (const backends::MemoryLevel& level : sim_.spec().memory) {
      if (level.name == "hbm") hbm = level.bandwidth;
    }
    std::vector<int32_t> src, dst;
    for (int32_t i = 0; i < graph.size(); ++i) {
      const costmodels::OpNode& op = graph.nodes[static_cast<size_t>(i)];
      UnitFacts& u = units[static_cast<size_t>(i)];
      const int32_t k = unfused.kernel_of[static_cast<size_t>(i)];
      const costmodels::KernelSummary& kernel = kernels[static_cast<size_t>(k)];
      u.seconds = sim_.SimulateKernel(kernel, sim_.DefaultTile(kernel)).seconds;
      u.bytes = op.output_bytes;
      u.out_cost = op.output_bytes / hbm;
      u.kind = op.matmul ? 1 : op.elementwise_like ? 2 : 3;
      u.cpu_only = op.opaque;
    }
    internal::OpGraphEdges(graph, &src, &dst);
    go_ = BuildGoGraph(graph.module_name, units, std::move(src), std::move(dst), 1, 0);
    go_.fusion = true;
    GoDecision fused;
    fused.fusion.assign(static_cast<size_t>(graph.size()), 1);
    const Outcome o = Evaluate(fused);
    reference_ = o.valid ? std::max(o.score, 1e-30) : 1;
  }

  const GoGraph& graph() const override { return go_; }
  Outcome Evaluate(const GoDecision& decision) override {
    std::vector<int32_t> priority(producers_.size(), 1);
    if (decision.fusion.size() == static_cast<size_t>(graph_.size())) {
      for (size_t p = 0; p < producers_.size(); ++p) {
        priority[p] = decision.fusion[static_cast<size_t>(producers_[p])];
      }
    }
    const costmodels::FusionPlan plan = costmodels::PlanFusionByPriority(graph_, priority);
    const backends::tpu::TpuResult r = sim_.Simulate(costmodels::SummarizeKernels(graph_, plan));
    Outcome o;
    o.valid = r.valid;
    o.score = r.seconds;
    o.overflow = r.valid ? 0 : 1;
    return o;
  }
  double reference_score() const override { return reference_; }
  std::vector<GoDecision> Baselines() override {
    GoDecision fused, unfused;
    fused.fusion.assign(static_cast<size_t>(graph_.size()), 1);
    unfused.fusion.assign(static_cast<size_t>(graph_.size()), 0);
    return {fused, unfused};
  }

 private:
  const costmodels::OpGraph& graph_;
  backends::tpu::TpuSimulator sim_;
  std::vector<int32_t> producers_;
  GoGraph go_;
  double reference_ = 1;
};

// Placement, scheduling and fusion at once on cluster-sim: the fusion head's levels order the
// priority fusion pass, the kernels it makes run on the device of their root op, in the order of
// their highest priority; the simulated makespan of the fused graph.

}  // namespace

std::unique_ptr<GoEnvironment> MakeFusionEnvironment(const costmodels::OpGraph& graph,
                                                     backends::tpu::TpuSimulator sim) {
  return std::make_unique<FusionEnvironment>(graph, std::move(sim));
}

}  // namespace mltune::opt::rl
