// The split as a configuration problem: one accelerator per colocation class.
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "optimizers/device_partition/device_partition.h"

namespace mltune::opt::partition {

PartitionProblem::PartitionProblem(const PartitionGraph& graph, Objective objective,
                                   bool contiguous, bool seeds)
    : graph_(graph),
      objective_(objective),
      contiguous_(contiguous),
      cpu_group_(static_cast<size_t>(graph.groups), false) {
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
  if (!seeds) return;
  const Split one = OneAccelerator(graph);
  const SplitScore one_score = Score(graph, one, objective);
  if (one_score.valid && one_score.feasible) (void)AddSeed(Encode(one));
  (void)AddSeed(Encode(EarliestFinish(graph)));
  // The contiguous DP's split: valid under latency where m-ETF's pieces form a cycle (ResNet-50's
  // latency operator graph), and a strong start under throughput.
  (void)AddSeed(Encode(ContiguousDpSplit(graph, objective)));
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

absl::StatusOr<std::unique_ptr<constraints::Solver>> PartitionProblem::NewSolver() const {
  const size_t groups = static_cast<size_t>(graph_.groups);
  std::vector<std::string> names(groups);
  std::vector<double> bytes(groups, 0);
  for (size_t c = 0; c < groups; ++c) {
    const PartitionNode& first = graph_.nodes[static_cast<size_t>(graph_.group_nodes[c][0])];
    names[c] = graph_.group_nodes[c].size() == 1
                   ? absl::StrCat("node ", first.id)
                   : absl::StrCat("the colocation class of node ", first.id);
  }
  for (const PartitionNode& n : graph_.nodes) {
    if (!cpu_group_[static_cast<size_t>(n.group)]) bytes[static_cast<size_t>(n.group)] += n.bytes;
  }
  auto solver =
      std::make_unique<constraints::Solver>(graph_.groups, graph_.accelerators, std::move(names));
  solver->Add(constraints::MakeCapacityConstraint(
      "memory", std::move(bytes),
      std::vector<double>(static_cast<size_t>(graph_.accelerators), graph_.accelerator_bytes)));
  // Latency's pieces can form a cycle across accelerators; ordering the accelerators along every
  // path rules that out (and makes each accelerator's classes contiguous).
  if (contiguous_ || objective_ == Objective::kLatency) {
    std::vector<int32_t> from, to;
    OrderEdges(&from, &to);
    solver->Add(constraints::MakeOrderConstraint(contiguous_ ? "contiguous" : "acyclic-pieces",
                                                 std::move(from), std::move(to)));
  }
  if (absl::Status s = solver->Init(); !s.ok()) return s;
  // CPU classes have one choice (candidate value 0).
  for (size_t c = 0; c < groups; ++c) {
    if (cpu_group_[c] && !solver->Fix(static_cast<int32_t>(c), 0)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no valid split: ", solver->conflict_constraint(), ": ", solver->conflict()));
    }
  }
  return solver;
}

void PartitionProblem::OrderEdges(std::vector<int32_t>* from, std::vector<int32_t>* to) const {
  // From each accelerator class, the accelerator classes reached by an edge or through CPU
  // classes: a path through the CPU that returns to a lower accelerator breaks contiguity too.
  std::vector<std::vector<int32_t>> succ(static_cast<size_t>(graph_.groups));
  for (int32_t v = 0; v < graph_.size(); ++v) {
    const int32_t a = graph_.nodes[static_cast<size_t>(v)].group;
    for (int32_t w : graph_.succ[static_cast<size_t>(v)]) {
      const int32_t b = graph_.nodes[static_cast<size_t>(w)].group;
      if (a != b) succ[static_cast<size_t>(a)].push_back(b);
    }
  }
  std::vector<int32_t> seen(static_cast<size_t>(graph_.groups), -1);
  for (int32_t a = 0; a < graph_.groups; ++a) {
    if (cpu_group_[static_cast<size_t>(a)]) continue;
    std::vector<int32_t> stack = {a};
    seen[static_cast<size_t>(a)] = a;
    while (!stack.empty()) {
      const int32_t c = stack.back();
      stack.pop_back();
      for (int32_t b : succ[static_cast<size_t>(c)]) {
        if (seen[static_cast<size_t>(b)] == a) continue;
        seen[static_cast<size_t>(b)] = a;
        if (cpu_group_[static_cast<size_t>(b)]) {
          stack.push_back(b);
        } else {
          from->push_back(a);
          to->push_back(b);
        }
      }
    }
  }
}

std::vector<int32_t> PartitionProblem::VariableOrder() const {
  std::vector<int32_t> order(static_cast<size_t>(graph_.groups));
  for (int32_t c = 0; c < graph_.groups; ++c) order[static_cast<size_t>(c)] = c;
  return order;
}

}  // namespace mltune::opt::partition
