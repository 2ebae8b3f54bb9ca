// GO on dnn-partitioning graphs: one device per colocation class, scored by the throughput or
// latency objective.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "optimizers/device_partition/device_partition.h"
#include "optimizers/rl/go_features.h"

namespace mltune::opt::rl {
namespace {

using internal::BuildGoGraph;
using internal::UnitFacts;

class PartitionEnvironment : public GoEnvironment {
 public:
  PartitionEnvironment(const partition::PartitionGraph& graph, partition::Objective objective)
      : graph_(graph), problem_(graph, objective, /*contiguous=*/false, /*seeds=*/false) {
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
  // The policy's decision may overflow memory or, under latency, form a cycle of pieces; the
  // nearest valid split (ValidSplit's repair) is what gets evaluated, so every answer is valid.
  bool realizes() const override { return true; }
  GoDecision Realize(const GoDecision& proposal, const std::vector<float>& /*probs*/) override {
    const partition::Split split = problem_.Decode(proposal.device);
    absl::StatusOr<partition::Split> valid =
        partition::ValidSplit(graph_, problem_.objective(), split);
    if (!valid.ok() || *valid == split) return proposal;  // none exists: evaluated as proposed
    GoDecision realized = proposal;
    const opt::Candidate c = problem_.Encode(*valid);
    realized.device.assign(c.begin(), c.end());
    return realized;
  }
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

}  // namespace

std::unique_ptr<GoEnvironment> MakePartitionEnvironment(const partition::PartitionGraph& graph,
                                                        partition::Objective objective) {
  return std::make_unique<PartitionEnvironment>(graph, objective);
}

}  // namespace mltune::opt::rl
