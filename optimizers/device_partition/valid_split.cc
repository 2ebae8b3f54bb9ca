// Every strategy's last step: a split the evaluator accepts, or an error naming the constraint
// that no split meets.
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "optimizers/device_partition/device_partition.h"

namespace mltune::opt::partition {
namespace {

// Accelerator classes reached from accelerator node `s` along edges and CPU nodes: what must not
// sit on a lower-numbered accelerator for the split to be contiguous.
std::string FeedsLower(const PartitionGraph& g, const Split& split, int32_t s) {
  std::vector<int32_t> stack = {s};
  std::vector<bool> seen(g.nodes.size(), false);
  while (!stack.empty()) {
    const int32_t v = stack.back();
    stack.pop_back();
    for (int32_t w : g.succ[static_cast<size_t>(v)]) {
      if (seen[static_cast<size_t>(w)]) continue;
      seen[static_cast<size_t>(w)] = true;
      const int32_t d = split[static_cast<size_t>(w)];
      if (d == 0) {
        stack.push_back(w);
      } else if (d < split[static_cast<size_t>(s)]) {
        return absl::StrCat("node ", g.nodes[static_cast<size_t>(s)].id, " on accelerator ",
                            split[static_cast<size_t>(s)], " feeds node ",
                            g.nodes[static_cast<size_t>(w)].id, " on accelerator ", d);
      }
    }
  }
  return "";
}

}  // namespace

std::string ContiguityError(const PartitionGraph& g, const Split& split) {
  for (int32_t s = 0; s < g.size(); ++s) {
    if (split[static_cast<size_t>(s)] == 0) continue;
    if (std::string e = FeedsLower(g, split, s); !e.empty()) return e;
  }
  return "";
}

std::string SplitError(const PartitionGraph& g, const Split& split, Objective objective,
                       bool contiguous) {
  const SplitScore s = Score(g, split, objective);
  if (!s.valid || !s.feasible) return s.error;
  return contiguous ? ContiguityError(g, split) : "";
}

absl::StatusOr<Split> ValidSplit(const PartitionGraph& g, Objective objective,
                                 const Split& proposal, bool contiguous) {
  if (proposal.size() == g.nodes.size() && SplitError(g, proposal, objective, contiguous).empty()) {
    return proposal;
  }
  // The cheap bound first: what the accelerators must hold against what k of them can.
  const PartitionProblem problem(g, objective, contiguous, /*seeds=*/false);
  std::vector<bool> cpu(static_cast<size_t>(g.groups), false);
  for (const PartitionNode& n : g.nodes) {
    if (!n.accelerator_ok) cpu[static_cast<size_t>(n.group)] = true;
  }
  double bytes = 0;
  for (const PartitionNode& n : g.nodes) bytes += cpu[static_cast<size_t>(n.group)] ? 0 : n.bytes;
  if (bytes > g.accelerators * g.accelerator_bytes) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "no valid split: memory: the accelerator nodes need %.6g bytes, %d accelerators of %.6g "
        "hold %.6g",
        bytes, g.accelerators, g.accelerator_bytes, g.accelerators * g.accelerator_bytes));
  }
  Split start = proposal;
  start.resize(g.nodes.size(), 1);
  const Candidate c = problem.Encode(start);
  absl::StatusOr<std::vector<int32_t>> repaired =
      constraints::Repair(problem, std::vector<int32_t>(c.begin(), c.end()));
  if (!repaired.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("no valid split: ", repaired.status().message()));
  }
  Split split = problem.Decode(*repaired);
  // The solver's constraints imply the evaluator's; a gap between them is a bug to report.
  if (std::string e = SplitError(g, split, objective, contiguous); !e.empty()) {
    return absl::InternalError(absl::StrCat("the repaired split is invalid: ", e));
  }
  return split;
}

}  // namespace mltune::opt::partition
