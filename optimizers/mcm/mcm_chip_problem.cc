// Chip-per-op MCM partitioning with its constraint set.
#include <limits>

#include "absl/strings/str_cat.h"
#include "optimizers/mcm/mcm_problem.h"
#include "optimizers/mcm/mcm_sram_constraint.h"

namespace mltune::opt::mcm {

McmChipProblem::McmChipProblem(costmodels::OpGraph graph, backends::mcm::McmSimulator sim)
    : graph_(std::move(graph)), sim_(std::move(sim)) {
  space_.choices = {sim_.chips()};
  space_.max_length = graph_.size();
  space_.fixed_length = true;
  // The balanced partition seeds the search where it is valid (often it breaks the triangle or
  // SRAM rule, and an invalid seed teaches nothing).
  const Candidate balanced = BalancedCandidate();
  if (Simulate(balanced).valid) (void)AddSeed(balanced);
}

std::string McmChipProblem::ActionName(int64_t position, Action action) const {
  return absl::StrCat(graph_.nodes[static_cast<size_t>(position)].name, ":chip", action);
}

Candidate McmChipProblem::BalancedCandidate() const {
  const std::vector<int32_t> chips = sim_.BalancedPartition(graph_);
  return Candidate(chips.begin(), chips.end());
}

Candidate McmChipProblem::ContiguousDpCandidate() const {
  const std::vector<int32_t> dp = ContiguousDpPartition(graph_, sim_);
  if (dp.empty()) return {};
  Candidate chips(dp.begin(), dp.end());
  if (Simulate(chips).valid) return chips;
  absl::StatusOr<std::vector<int32_t>> repaired = constraints::Repair(*this, dp);
  if (!repaired.ok()) return {};
  chips.assign(repaired->begin(), repaired->end());
  return Simulate(chips).valid ? chips : Candidate{};
}

backends::mcm::McmResult McmChipProblem::Simulate(const Candidate& candidate) const {
  return sim_.Simulate(graph_, std::vector<int32_t>(candidate.begin(), candidate.end()));
}

double McmChipProblem::Evaluate(const Candidate& candidate) {
  const backends::mcm::McmResult r = Simulate(candidate);
  ++evaluations_;
  if (!r.valid || !(r.stage_seconds > 0)) return std::numeric_limits<double>::infinity();
  ++valid_;
  return r.stage_seconds;
}

std::vector<std::pair<std::string, int64_t>> McmChipProblem::Stats() const {
  return {{"evaluations", evaluations_}, {"valid_evaluations", valid_}};
}

absl::StatusOr<std::unique_ptr<constraints::Solver>> McmChipProblem::NewSolver() const {
  std::vector<std::string> names;
  std::vector<int32_t> from, to;
  for (int32_t i = 0; i < graph_.size(); ++i) {
    const costmodels::OpNode& op = graph_.nodes[static_cast<size_t>(i)];
    names.push_back(absl::StrCat("op '", op.name, "'"));
    for (const costmodels::OpInput& in : op.inputs) {
      if (in.node < 0 || in.node >= graph_.size() || in.node == i) continue;
      from.push_back(in.node);
      to.push_back(i);
    }
  }
  auto solver = std::make_unique<constraints::Solver>(graph_.size(), sim_.chips(), names);
  solver->Add(constraints::MakeOrderConstraint("acyclic", from, to));
  solver->Add(constraints::MakeConsecutiveConstraint());
  solver->Add(constraints::MakeTriangleConstraint(from, to));
  const backends::MemoryLevel* sram = sim_.spec().Memory("sram");
  if (sram == nullptr && !sim_.spec().memory.empty()) sram = &sim_.spec().memory.front();
  solver->Add(internal::MakeSramConstraint(graph_, static_cast<double>(sram->bytes)));
  if (absl::Status s = solver->Init(); !s.ok()) return s;
  return solver;
}

std::vector<int32_t> McmChipProblem::VariableOrder() const {
  std::vector<int32_t> order(static_cast<size_t>(graph_.size()));
  for (int32_t i = 0; i < graph_.size(); ++i) order[static_cast<size_t>(i)] = i;
  return order;
}

}  // namespace mltune::opt::mcm
