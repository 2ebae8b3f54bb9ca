// GO on dnn-partitioning graphs: one device per colocation class, scored by the throughput or
// latency objective.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
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
    // The decision just realized was scored then (a latency score takes 0.1-1 s at 100k nodes).
    const bool known = !decision.device.empty() && decision.device == realized_.device;
    const partition::SplitScore s =
        known ? realized_score_
              : partition::Score(graph_, problem_.Decode(decision.device), problem_.objective());
    Outcome o;
    o.score = s.objective;
    o.valid = s.valid && s.feasible;
    o.overflow = graph_.accelerator_bytes > 0 ? s.overflow_bytes / graph_.accelerator_bytes : 0;
    if (!s.feasible && o.overflow == 0) o.overflow = 1;  // more accelerators than the graph has
    return o;
  }
  double reference_score() const override { return reference_; }
  // A decision is read two ways, and the better valid reading is evaluated: as it stands, and as
  // an order of the classes, device by device (ties by the expected device under `probs`), a
  // topological order whose cuts the contiguous DP places. The order makes a roughly right
  // decision a good one: the policy need only say which classes go early and which late, not
  // where to cut. When neither is valid, ValidSplit's solver repairs the decision as it stands
  // (memory, or under latency a cycle of pieces).
  bool realizes() const override { return true; }
  GoDecision Realize(const GoDecision& proposal, const std::vector<float>& probs) override {
    const partition::Objective objective = problem_.objective();
    const partition::Split as_is = problem_.Decode(proposal.device);
    const partition::SplitScore as_is_score = partition::Score(graph_, as_is, objective);
    auto valid = [](const partition::SplitScore& s) { return s.valid && s.feasible; };
    std::optional<partition::Split> best;
    partition::SplitScore best_score;
    if (valid(as_is_score)) {
      best = as_is;
      best_score = as_is_score;
    }
    partition::Split ordered = partition::RankedDpSplit(graph_, objective, Rank(proposal, probs));
    const partition::SplitScore ordered_score = partition::Score(graph_, ordered, objective);
    if (valid(ordered_score) && (!best || ordered_score.objective < best_score.objective)) {
      best = std::move(ordered);
      best_score = ordered_score;
    }
    if (best) return Remember(*best == as_is ? proposal : Encode(*best), best_score);
    absl::StatusOr<partition::Split> repaired = partition::ValidSplit(graph_, objective, as_is);
    if (!repaired.ok()) return Remember(proposal, as_is_score);  // none exists: as proposed
    return Remember(Encode(*repaired), partition::Score(graph_, *repaired, objective));
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
    for (const partition::Split& split : splits) out.push_back(Encode(split));
    return out;
  }

 private:
  const GoDecision& Remember(GoDecision realized, const partition::SplitScore& score) {
    realized_ = std::move(realized);
    realized_score_ = score;
    return realized_;
  }

  GoDecision Encode(const partition::Split& split) const {
    GoDecision d;
    const opt::Candidate c = problem_.Encode(split);
    d.device.assign(c.begin(), c.end());
    return d;
  }

  // Each class's place in the decoded order: its device, then its expected device under `probs`
  // (units x kGoMaxDevices) as a fraction below the next device.
  std::vector<double> Rank(const GoDecision& d, const std::vector<float>& probs) const {
    std::vector<double> rank(static_cast<size_t>(go_.units), 0);
    if (d.device.size() != rank.size()) return {};
    const bool soft = probs.size() == rank.size() * static_cast<size_t>(kGoMaxDevices);
    for (size_t u = 0; u < rank.size(); ++u) {
      double expected = 0;
      if (soft) {
        for (int32_t k = 0; k < kGoMaxDevices; ++k) {
          expected += k * probs[u * static_cast<size_t>(kGoMaxDevices) + static_cast<size_t>(k)];
        }
      }
      rank[u] = d.device[u] + expected / kGoMaxDevices;
    }
    return rank;
  }

  const partition::PartitionGraph& graph_;
  partition::PartitionProblem problem_;
  GoGraph go_;
  double reference_ = 1;
  GoDecision realized_;  // the last decision Realize returned, and its score
  partition::SplitScore realized_score_;
};

}  // namespace

std::unique_ptr<GoEnvironment> MakePartitionEnvironment(const partition::PartitionGraph& graph,
                                                        partition::Objective objective) {
  return std::make_unique<PartitionEnvironment>(graph, objective);
}

}  // namespace mltune::opt::rl
