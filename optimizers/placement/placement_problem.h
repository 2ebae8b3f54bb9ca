// Device placement on the cluster simulator (as Placeto and Baechi): one device per op, the
// simulated makespan as the score, out-of-memory placements +infinity. The m-ETF placement and
// everything-on-one-device are the seeds.
#pragma once

#include <string>
#include <vector>

#include "backends/cluster_sim/cluster_sim.h"
#include "costmodels/analytical/op_graph.h"
#include "optimizers/core/config_problem.h"

namespace mltune::opt::placement {

class PlacementProblem : public ConfigProblem {
 public:
  PlacementProblem(costmodels::OpGraph graph, backends::cluster::ClusterSimulator sim);

  std::string name() const override { return "placement"; }
  SearchSpace space() const override { return space_; }
  std::string ActionName(int64_t position, Action action) const override;
  double Evaluate(const Candidate& candidate) override;

  std::vector<int32_t> Decode(const Candidate& candidate) const {
    return std::vector<int32_t>(candidate.begin(), candidate.end());
  }
  Candidate EarliestFinishCandidate() const;
  backends::cluster::ClusterResult Simulate(const Candidate& candidate) const;
  const costmodels::OpGraph& graph() const { return graph_; }

 private:
  costmodels::OpGraph graph_;
  backends::cluster::ClusterSimulator sim_;
  SearchSpace space_;
};

}  // namespace mltune::opt::placement
