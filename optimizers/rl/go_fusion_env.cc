// GO on fusion: fusion priorities ordering the greedy priority fusion pass, each plan scored by
// tpu-sim or by a measurement (the CPU worker running the fused module).
#include <algorithm>
#include <cmath>
#include <map>

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
  using ScoreFn = std::function<Outcome(const costmodels::FusionPlan&)>;
  // `unit_seconds`: each op as its own kernel; `bandwidth`: bytes per second of the memory an
  // unfused op's result goes through (what fusion saves).
  FusionEnvironment(const costmodels::OpGraph& graph, const std::vector<double>& unit_seconds,
                    double bandwidth, ScoreFn score)
      : graph_(graph), score_(std::move(score)), producers_(costmodels::FusibleProducers(graph)) {
    std::vector<UnitFacts> units(static_cast<size_t>(graph.size()));
    std::vector<int32_t> src, dst;
    for (int32_t i = 0; i < graph.size(); ++i) {
      const costmodels::OpNode& op = graph.nodes[static_cast<size_t>(i)];
      UnitFacts& u = units[static_cast<size_t>(i)];
      u.seconds = unit_seconds[static_cast<size_t>(i)];
      u.bytes = op.output_bytes;
      u.out_cost = op.output_bytes / bandwidth;
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
    // Many priority orders make the same kernels: each plan is scored once (a measurement takes
    // a compilation and a run).
    const costmodels::FusionPlan plan = costmodels::PlanFusionByPriority(graph_, priority);
    auto [it, fresh] = scored_.try_emplace(plan.kernel_of);
    if (fresh) it->second = score_(plan);
    return it->second;
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
  ScoreFn score_;
  std::vector<int32_t> producers_;
  std::map<std::vector<int32_t>, Outcome> scored_;  // by the plan's kernel_of
  GoGraph go_;
  double reference_ = 1;
};

}  // namespace

std::unique_ptr<GoEnvironment> MakeFusionEnvironment(const costmodels::OpGraph& graph,
                                                     backends::tpu::TpuSimulator sim) {
  const costmodels::FusionPlan unfused = costmodels::Unfused(graph);
  const std::vector<costmodels::KernelSummary> kernels =
      costmodels::SummarizeKernels(graph, unfused);
  std::vector<double> seconds(static_cast<size_t>(graph.size()));
  for (int32_t i = 0; i < graph.size(); ++i) {
    const costmodels::KernelSummary& k =
        kernels[static_cast<size_t>(unfused.kernel_of[static_cast<size_t>(i)])];
    seconds[static_cast<size_t>(i)] = sim.SimulateKernel(k, sim.DefaultTile(k)).seconds;
  }
  double hbm = 1e12;
  for (const backends::MemoryLevel& level : sim.spec().memory) {
    if (level.name == "hbm") hbm = level.bandwidth;
  }
  auto score = [&graph, sim = std::move(sim)](const costmodels::FusionPlan& plan) mutable {
    const backends::tpu::TpuResult r = sim.Simulate(costmodels::SummarizeKernels(graph, plan));
    return GoEnvironment::Outcome{
        .score = r.seconds, .valid = r.valid, .overflow = r.valid ? 0.0 : 1.0};
  };
  return std::make_unique<FusionEnvironment>(graph, seconds, hbm, std::move(score));
}

std::unique_ptr<GoEnvironment> MakeMeasuredFusionEnvironment(const costmodels::OpGraph& graph,
                                                             FusionPlanMeasure measure) {
  // Features need only the ops' relative costs: a roofline at a server core's balance (tens of
  // GFLOP/s against a few GB/s of DRAM per core) orders them as a measurement would.
  constexpr double kFlops = 50e9, kBandwidth = 10e9, kOverhead = 1e-6;
  std::vector<double> seconds(static_cast<size_t>(graph.size()));
  for (int32_t i = 0; i < graph.size(); ++i) {
    const costmodels::OpCost& c = graph.nodes[static_cast<size_t>(i)].cost;
    seconds[static_cast<size_t>(i)] =
        std::max(c.flops / kFlops, c.bytes() / kBandwidth) + kOverhead;
  }
  auto score = [measure = std::move(measure)](const costmodels::FusionPlan& plan) {
    const absl::StatusOr<double> s = measure(plan);
    if (!s.ok() || !std::isfinite(*s)) {
      return GoEnvironment::Outcome{.score = 0, .valid = false, .overflow = 1};
    }
    return GoEnvironment::Outcome{.score = *s, .valid = true, .overflow = 0};
  };
  return std::make_unique<FusionEnvironment>(graph, seconds, kBandwidth, std::move(score));
}

}  // namespace mltune::opt::rl
