// The split as a configuration problem: one accelerator per colocation class.
#include <cmath>
#include <limits>

#include "optimizers/device_partition/device_partition.h"

namespace mltune::opt::partition {

PartitionProblem::PartitionProblem(const PartitionGraph& graph, Objective objective)
    : graph_(graph), objective_(objective), cpu_group_(static_cast<size_t>(graph.groups), false) {
  for (const PartitionNode& n : graph.nodes) {
    if (!n.accelerator_ok) cpu_group_[static_cast<size_t>(n.group)] = true;
  }
  space_.max_length = graph.groups;
  space_.fixed_length = true;
  bool any_cpu = false;
  for (bool c : cpu_group_) any_cpu = any_cpu || c;
  if (any_cpu) {
    for (bool c : cpu_group_) space_.choices.push_back(c ? 1 : graph.accelerators);
  } else {
    space_.choices = {graph.accelerators};
  }
  const Split one = OneAccelerator(graph);
  const SplitScore one_score = Score(graph, one, objective);
  if (one_score.valid && one_score.feasible) (void)AddSeed(Encode(one));
  (void)AddSeed(Encode(EarliestFinish(graph)));
}

Split PartitionProblem::Decode(const Candidate& candidate) const {
  Split split(graph_.nodes.size());
  for (size_t v = 0; v < split.size(); ++v) {
    const size_t c = static_cast<size_t>(graph_.nodes[v].group);
    split[v] = cpu_group_[c] ? 0 : candidate[c] + 1;
  }
  return split;
}

Candidate PartitionProblem::Encode(const Split& split) const {
  Candidate candidate(static_cast<size_t>(graph_.groups), 0);
  for (size_t c = 0; c < candidate.size(); ++c) {
    const int32_t d = split[static_cast<size_t>(graph_.group_nodes[c][0])];
    candidate[c] = cpu_group_[c] || d < 1 ? 0 : std::min(d, graph_.accelerators) - 1;
  }
  return candidate;
}

double PartitionProblem::Evaluate(const Candidate& candidate) {
  const SplitScore s = Score(graph_, Decode(candidate), objective_);
  return s.valid && s.feasible ? s.objective : std::numeric_limits<double>::infinity();
}

}  // namespace mltune::opt::partition
