// GO on cluster-sim: placement with scheduling priorities, and the joint task that also fuses.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cluster_sim/cluster_sim.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "optimizers/rl/go_features.h"

namespace mltune::opt::rl {
namespace {

using internal::BuildGoGraph;
using internal::UnitFacts;

class ClusterEnvironment : public GoEnvironment {
 public:
  ClusterEnvironment(const costmodels::OpGraph& graph,
                     const backends::cluster::ClusterSimulator& sim, bool schedule)
      : graph_(graph), sim_(sim), schedule_(schedule) {
    const backends::TargetSpec& spec = sim.spec();
    const double link = spec.links.empty() ? 1e12 : spec.links[0].bandwidth;
    device_bytes_ = spec.memory.empty() ? 0 : static_cast<double>(spec.memory[0].bytes);
    std::vector<UnitFacts> units(static_cast<size_t>(graph.size()));
    std::vector<int32_t> src, dst;
    std::vector<bool> weight_seen(static_cast<size_t>(graph.weight_count), false);
    for (int32_t i = 0; i < graph.size(); ++i) {
      const costmodels::OpNode& op = graph.nodes[static_cast<size_t>(i)];
      UnitFacts& u = units[static_cast<size_t>(i)];
      u.seconds = sim.NodeSeconds(op);
      u.bytes = op.output_bytes;
      for (const costmodels::OpWeight& w : op.weights) {
        if (w.id >= 0 && static_cast<size_t>(w.id) < weight_seen.size() &&
            !weight_seen[static_cast<size_t>(w.id)]) {
          weight_seen[static_cast<size_t>(w.id)] = true;
          u.bytes += w.bytes;
        }
      }
      u.out_cost = op.output_bytes / link;
      u.kind = op.matmul ? 1 : op.elementwise_like ? 2 : 3;
    }
    internal::OpGraphEdges(graph, &src, &dst);
    go_ = BuildGoGraph(graph.module_name, units, std::move(src), std::move(dst), sim.devices(),
                       device_bytes_);
    go_.priorities = schedule;
    GoDecision metf;
    metf.device = sim.EarliestFinishPlacement(graph);
    const Outcome o = Evaluate(metf);
    GoDecision one;
    one.device.assign(static_cast<size_t>(graph.size()), 0);
    const Outcome p = Evaluate(one);
    reference_ = std::min(o.valid ? o.score : std::numeric_limits<double>::infinity(),
                          p.valid ? p.score : std::numeric_limits<double>::infinity());
    if (!std::isfinite(reference_)) reference_ = o.score;
    reference_ = std::max(reference_, 1e-30);
  }

  const GoGraph& graph() const override { return go_; }
  Outcome Evaluate(const GoDecision& decision) override {
    backends::cluster::SimulationOptions options;
    if (schedule_ && decision.priority.size() == decision.device.size()) {
      options.policy = backends::cluster::QueuePolicy::kPriority;
      options.priority.assign(decision.priority.begin(), decision.priority.end());
    }
    const backends::cluster::ClusterResult r = sim_.Simulate(graph_, decision.device, options);
    Outcome o;
    o.valid = r.valid;
    o.score = r.makespan_s;
    if (!r.valid) {
      double worst = 0;
      for (double peak : r.peak_memory_bytes) worst = std::max(worst, peak);
      o.overflow = device_bytes_ > 0 ? std::max(0.0, worst / device_bytes_ - 1) : 1;
      if (o.overflow == 0) o.overflow = 1;
    }
    return o;
  }
  double reference_score() const override { return reference_; }
  std::vector<GoDecision> Baselines() override {
    GoDecision metf, one;
    metf.device = sim_.EarliestFinishPlacement(graph_);
    one.device.assign(static_cast<size_t>(graph_.size()), 0);
    return {metf, one};
  }

 private:
  const costmodels::OpGraph& graph_;
  const backends::cluster::ClusterSimulator& sim_;
  bool schedule_;
  double device_bytes_ = 0;
  GoGraph go_;
  double reference_ = 1;
};

// Fusion priorities ordering the greedy fusion pass on tpu-sim (XLA's priority fusion): the
// fusion head's level of each fusible producer is its priority, level 0 keeps it apart; the
// plan's simulated seconds with every kernel at its default tile.

class JointEnvironment : public GoEnvironment {
 public:
  JointEnvironment(const costmodels::OpGraph& graph, const backends::cluster::ClusterSimulator& sim)
      : graph_(graph), sim_(sim), producers_(costmodels::FusibleProducers(graph)) {
    ClusterEnvironment placement(graph, sim, true);
    go_ = placement.graph();
    go_.fusion = true;
    GoDecision one = Default();
    const Outcome a = Evaluate(one);
    const Outcome b = Evaluate(EarliestFinish());
    reference_ = std::min(a.valid ? a.score : 1e300, b.valid ? b.score : 1e300);
    if (reference_ >= 1e300) reference_ = 1;
  }

  // XLA's fusion, every kernel on device 0, FIFO: what a framework does with no placement.
  GoDecision Default() const {
    GoDecision d;
    d.device.assign(static_cast<size_t>(graph_.size()), 0);
    d.fusion.assign(static_cast<size_t>(graph_.size()), 1);
    return d;
  }
  // XLA's fusion, then m-ETF on its kernels (each op on its kernel's device).
  GoDecision EarliestFinish() const {
    GoDecision d = Default();
    std::vector<int32_t> kernel_ids;
    const costmodels::FusionPlan plan =
        costmodels::PlanFusionByPriority(graph_, std::vector<int32_t>(producers_.size(), 1));
    const costmodels::OpGraph fused = costmodels::FuseOpGraph(graph_, plan, &kernel_ids);
    const std::vector<int32_t> device = sim_.EarliestFinishPlacement(fused);
    std::vector<int32_t> device_of_kernel(plan.kernels.size(), 0);
    for (size_t i = 0; i < kernel_ids.size(); ++i) {
      device_of_kernel[static_cast<size_t>(kernel_ids[i])] = device[i];
    }
    for (int32_t v = 0; v < graph_.size(); ++v) {
      d.device[static_cast<size_t>(v)] =
          device_of_kernel[static_cast<size_t>(plan.kernel_of[static_cast<size_t>(v)])];
    }
    return d;
  }

  const GoGraph& graph() const override { return go_; }
  Outcome Evaluate(const GoDecision& decision) override {
    std::vector<int32_t> levels(producers_.size(), 1);
    if (decision.fusion.size() == static_cast<size_t>(graph_.size())) {
      for (size_t p = 0; p < producers_.size(); ++p) {
        levels[p] = decision.fusion[static_cast<size_t>(producers_[p])];
      }
    }
    const costmodels::FusionPlan plan = costmodels::PlanFusionByPriority(graph_, levels);
    std::vector<int32_t> kernel_ids;
    const costmodels::OpGraph fused = costmodels::FuseOpGraph(graph_, plan, &kernel_ids);
    std::vector<int32_t> device(kernel_ids.size(), 0);
    backends::cluster::SimulationOptions options;
    options.policy = backends::cluster::QueuePolicy::kPriority;
    options.priority.assign(kernel_ids.size(), 0);
    for (size_t i = 0; i < kernel_ids.size(); ++i) {
      const std::vector<int32_t>& members = plan.kernels[static_cast<size_t>(kernel_ids[i])];
      if (decision.device.size() == static_cast<size_t>(graph_.size())) {
        device[i] = decision.device[static_cast<size_t>(members.back())];
      }
      if (decision.priority.size() == static_cast<size_t>(graph_.size())) {
        for (int32_t v : members) {
          options.priority[i] = std::max(
              options.priority[i], static_cast<double>(decision.priority[static_cast<size_t>(v)]));
        }
      } else {
        options.policy = backends::cluster::QueuePolicy::kFifo;
      }
    }
    const backends::cluster::ClusterResult r = sim_.Simulate(fused, device, options);
    Outcome o;
    o.valid = r.valid;
    o.score = r.makespan_s;
    o.overflow = r.valid ? 0 : 1;
    return o;
  }
  double reference_score() const override { return reference_; }
  std::vector<GoDecision> Baselines() override { return {EarliestFinish(), Default()}; }

 private:
  const costmodels::OpGraph& graph_;
  const backends::cluster::ClusterSimulator& sim_;
  std::vector<int32_t> producers_;
  GoGraph go_;
  double reference_ = 1;
};

}  // namespace

std::unique_ptr<GoEnvironment> MakeClusterEnvironment(
    const costmodels::OpGraph& graph, const backends::cluster::ClusterSimulator& sim,
    bool schedule) {
  return std::make_unique<ClusterEnvironment>(graph, sim, schedule);
}

std::unique_ptr<GoEnvironment> MakeJointEnvironment(
    const costmodels::OpGraph& graph, const backends::cluster::ClusterSimulator& sim) {
  return std::make_unique<JointEnvironment>(graph, sim);
}

}  // namespace mltune::opt::rl
