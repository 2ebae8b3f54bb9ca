#include "optimizers/mcm/mcm_problem.h"

#include <limits>

#include "absl/strings/str_cat.h"

namespace mltune::opt::mcm {

McmPartitionProblem::McmPartitionProblem(costmodels::OpGraph graph, backends::mcm::McmSimulator sim)
    : graph_(std::move(graph)), sim_(std::move(sim)) {
  space_.choices = {2};
  space_.max_length = graph_.size();
  space_.fixed_length = true;
  (void)AddSeed(BalancedCandidate());
}

std::string McmPartitionProblem::ActionName(int64_t position, Action action) const {
  return absl::StrCat(graph_.nodes[static_cast<size_t>(position)].name,
                      action != 0 ? ":next-chip" : ":same-chip");
}

Candidate McmPartitionProblem::Encode(const std::vector<int32_t>& chip_of_node) const {
  Candidate c(chip_of_node.size(), 0);
  for (size_t i = 1; i < chip_of_node.size(); ++i) {
    c[i] = chip_of_node[i] != chip_of_node[i - 1] ? 1 : 0;
  }
  return c;
}

std::vector<int32_t> McmPartitionProblem::Decode(const Candidate& candidate) const {
  return sim_.DecodeAdvances(candidate);
}

Candidate McmPartitionProblem::BalancedCandidate() const {
  return Encode(sim_.BalancedPartition(graph_));
}

backends::mcm::McmResult McmPartitionProblem::Simulate(const Candidate& candidate) const {
  return sim_.Simulate(graph_, Decode(candidate));
}

double McmPartitionProblem::Evaluate(const Candidate& candidate) {
  const backends::mcm::McmResult r = Simulate(candidate);
  return r.valid && r.stage_seconds > 0 ? r.stage_seconds : std::numeric_limits<double>::infinity();
}

}  // namespace mltune::opt::mcm
