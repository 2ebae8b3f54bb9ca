// The graphs and tasks GO decides on: splits of dnn-partitioning graphs (throughput, latency)
// and placement with scheduling priorities on cluster-sim. Each turns its graph into the same
// unit features, so one policy learns across them.
#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "backends/cluster_sim/cluster_sim.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/rl/rl.h"

namespace mltune::opt::rl {
namespace {

constexpr int kFeatures = 18;

// What every unit of every graph is described by; see GoGraph for features 0 and 1.
struct UnitFacts {
  double seconds = 0;  // on one accelerator
  double bytes = 0;
  double out_cost = 0;  // moving the unit's output to another device, in the unit of seconds
  bool backward = false;
  bool cpu_only = false;
  int kind = 0;  // 0 unknown, 1 matmul-like, 2 elementwise-like, 3 other
};

GoGraph BuildGoGraph(std::string name, const std::vector<UnitFacts>& units,
                     std::vector<int32_t> src, std::vector<int32_t> dst, int32_t devices,
                     double device_bytes) {
  GoGraph g;
  g.name = std::move(name);
  g.units = static_cast<int32_t>(units.size());
  g.feature_size = kFeatures;
  g.devices = devices;
  double total_seconds = 0, total_bytes = 0;
  for (const UnitFacts& u : units) {
    total_seconds += u.seconds;
    total_bytes += u.bytes;
  }
  const double n = std::max<double>(1, static_cast<double>(units.size()));
  const double mean_seconds = std::max(total_seconds / n, 1e-30);
  std::vector<int32_t> in(units.size(), 0), out(units.size(), 0);
  for (size_t e = 0; e < src.size(); ++e) {
    ++out[static_cast<size_t>(src[e])];
    ++in[static_cast<size_t>(dst[e])];
  }
  const double pressure = device_bytes > 0 ? total_bytes / (devices * device_bytes) : 0;
  g.features.reserve(units.size() * kFeatures);
  // Compute and memory up to and including each unit, in topological order: a contiguous split
  // (what pipelines and the latency objective favour) cuts where these cross multiples of 1/k.
  double seconds_before = 0, bytes_before = 0;
  for (size_t i = 0; i < units.size(); ++i) {
    const UnitFacts& u = units[i];
    seconds_before += u.seconds;
    bytes_before += u.bytes;
    const float f[kFeatures] = {
        static_cast<float>(total_seconds > 0 ? u.seconds / total_seconds : 0),
        static_cast<float>(total_bytes > 0 ? u.bytes / total_bytes : 0),
        static_cast<float>(std::log1p(u.seconds / mean_seconds)),
        static_cast<float>(device_bytes > 0 ? std::min(4.0, u.bytes / device_bytes) : 0),
        static_cast<float>(std::log1p(u.out_cost / mean_seconds)),
        static_cast<float>(std::log1p(in[i])),
        static_cast<float>(std::log1p(out[i])),
        static_cast<float>(static_cast<double>(i) / n),
        u.backward ? 1.0f : 0.0f,
        u.cpu_only ? 1.0f : 0.0f,
        static_cast<float>(1.0 / devices),
        static_cast<float>(std::min(4.0, pressure)),
        static_cast<float>(std::log1p(n) / 10),
        u.kind == 1 ? 1.0f : 0.0f,
        u.kind == 2 ? 1.0f : 0.0f,
        u.kind == 3 ? 1.0f : 0.0f,
        static_cast<float>(total_seconds > 0 ? seconds_before / total_seconds : 0),
        static_cast<float>(device_bytes > 0 ? bytes_before / (devices * device_bytes) : 0),
    };
    g.features.insert(g.features.end(), f, f + kFeatures);
  }
  g.edge_src = std::move(src);
  g.edge_dst = std::move(dst);
  return g;
}

class PartitionEnvironment : public GoEnvironment {
 public:
  PartitionEnvironment(const partition::PartitionGraph& graph, partition::Objective objective)
      : graph_(graph), problem_(graph, objective) {
    std::vector<UnitFacts> units(static_cast<size_t>(graph.groups));
    for (const partition::PartitionNode& n : graph.nodes) {
      UnitFacts& u = units[static_cast<size_t>(n.group)];
      u.seconds += n.accelerator_latency;
      u.bytes += n.bytes;
      u.out_cost += n.out_cost;
      u.backward = u.backward || n.backward;
      u.cpu_only = u.cpu_only || !n.accelerator_ok;
    }
    std::set<std::pair<int32_t, int32_t>> edges;
    for (int32_t v = 0; v < graph.size(); ++v) {
      for (int32_t w : graph.succ[static_cast<size_t>(v)]) {
        const int32_t a = graph.nodes[static_cast<size_t>(v)].group;
        const int32_t b = graph.nodes[static_cast<size_t>(w)].group;
        if (a != b) edges.emplace(a, b);
      }
    }
    std::vector<int32_t> src, dst;
    for (const auto& [a, b] : edges) {
      src.push_back(a);
      dst.push_back(b);
    }
    go_ = BuildGoGraph(graph.name, units, std::move(src), std::move(dst), graph.accelerators,
                       graph.accelerator_bytes);
    reference_ = std::numeric_limits<double>::infinity();
    for (const partition::Split& s :
         {partition::OneAccelerator(graph), partition::EarliestFinish(graph)}) {
      reference_ = std::min(reference_, problem_.Evaluate(problem_.Encode(s)));
    }
    if (!std::isfinite(reference_)) {
      reference_ = partition::Score(graph, partition::EarliestFinish(graph), objective).objective;
    }
    reference_ = std::max(reference_, 1e-30);
  }

  const GoGraph& graph() const override { return go_; }
  Outcome Evaluate(const GoDecision& decision) override {
    const partition::Split split = problem_.Decode(decision.device);
    const partition::SplitScore s = partition::Score(graph_, split, problem_.objective());
    Outcome o;
    o.score = s.objective;
    o.valid = s.valid && s.feasible;
    o.overflow = graph_.accelerator_bytes > 0 ? s.overflow_bytes / graph_.accelerator_bytes : 0;
    if (!s.feasible && o.overflow == 0) o.overflow = 1;  // more accelerators than the graph has
    return o;
  }
  double reference_score() const override { return reference_; }
  std::vector<GoDecision> Baselines() override {
    std::mt19937_64 rng(1);
    std::vector<partition::Split> splits = {
        partition::OneAccelerator(graph_), partition::EarliestFinish(graph_),
        partition::ContiguousSplit(graph_),
        partition::ContiguousDpSplit(graph_, problem_.objective()),
        partition::LocalSearch(graph_, problem_.objective(), 1, rng, 2000, nullptr)};
    if (absl::StatusOr<partition::Split> metis = partition::MetisSplit(graph_, 1); metis.ok()) {
      splits.push_back(*metis);
    }
    std::vector<GoDecision> out;
    for (const partition::Split& split : splits) {
      GoDecision d;
      const opt::Candidate c = problem_.Encode(split);
      d.device.assign(c.begin(), c.end());
      out.push_back(std::move(d));
    }
    return out;
  }

 private:
  const partition::PartitionGraph& graph_;
  partition::PartitionProblem problem_;
  GoGraph go_;
  double reference_ = 1;
};

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
      for (const costmodels::OpInput& in : op.inputs) {
        if (in.node < 0 || in.node == i) continue;
        src.push_back(in.node);
        dst.push_back(i);
      }
    }
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
      for (const costmodels::OpInput& in : op.inputs) {
        if (in.node < 0 || in.node == i) continue;
        src.push_back(in.node);
        dst.push_back(i);
      }
    }
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

int GoFeatureSize() { return kFeatures; }

std::unique_ptr<GoEnvironment> MakeJointEnvironment(
    const costmodels::OpGraph& graph, const backends::cluster::ClusterSimulator& sim) {
  return std::make_unique<JointEnvironment>(graph, sim);
}

std::unique_ptr<GoEnvironment> MakeFusionEnvironment(const costmodels::OpGraph& graph,
                                                     backends::tpu::TpuSimulator sim) {
  return std::make_unique<FusionEnvironment>(graph, std::move(sim));
}

std::unique_ptr<GoEnvironment> MakePartitionEnvironment(const partition::PartitionGraph& graph,
                                                        partition::Objective objective) {
  return std::make_unique<PartitionEnvironment>(graph, objective);
}

std::unique_ptr<GoEnvironment> MakeClusterEnvironment(
    const costmodels::OpGraph& graph, const backends::cluster::ClusterSimulator& sim,
    bool schedule) {
  return std::make_unique<ClusterEnvironment>(graph, sim, schedule);
}

}  // namespace mltune::opt::rl
