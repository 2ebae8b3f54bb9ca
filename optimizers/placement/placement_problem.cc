#include "optimizers/placement/placement_problem.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace mltune::opt::placement {

PlacementProblem::PlacementProblem(costmodels::OpGraph graph,
                                   backends::cluster::ClusterSimulator sim)
    : graph_(std::move(graph)), sim_(std::move(sim)) {
  space_.choices = {static_cast<int32_t>(sim_.devices())};
  space_.max_length = graph_.size();
  space_.fixed_length = true;
  (void)AddSeed(EarliestFinishCandidate());
  (void)AddSeed(Candidate(static_cast<size_t>(graph_.size()), 0));
}

std::string PlacementProblem::ActionName(int64_t position, Action action) const {
  return absl::StrCat(graph_.nodes[static_cast<size_t>(position)].name, "@device", action);
}

Candidate PlacementProblem::EarliestFinishCandidate() const {
  const std::vector<int32_t> p = sim_.EarliestFinishPlacement(graph_);
  return Candidate(p.begin(), p.end());
}

backends::cluster::ClusterResult PlacementProblem::Simulate(const Candidate& candidate) const {
  return sim_.Simulate(graph_, Decode(candidate));
}

double PlacementProblem::Evaluate(const Candidate& candidate) {
  const backends::cluster::ClusterResult r = Simulate(candidate);
  return r.valid ? r.makespan_s : std::numeric_limits<double>::infinity();
}

}  // namespace mltune::opt::placement
