#include "optimizers/fusion/cpu_fusion_problem.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "optimizers/fusion/fusion_problem.h"

namespace mltune::opt::fusion {

CpuFusionProblem::CpuFusionProblem(costmodels::OpGraph graph, MeasureFn measure)
    : graph_(std::move(graph)), measure_(std::move(measure)) {
  producers_ = costmodels::FusibleProducers(graph_);
  space_.choices = {static_cast<int32_t>(std::size(kPriorities))};
  space_.max_length = static_cast<int64_t>(producers_.size());
  space_.fixed_length = true;
  (void)AddSeed(DefaultCandidate());
}

std::string CpuFusionProblem::ActionName(int64_t position, Action action) const {
  return absl::StrCat(
      graph_.nodes[static_cast<size_t>(producers_[static_cast<size_t>(position)])].name,
      ":priority=", kPriorities[static_cast<size_t>(action)]);
}

costmodels::FusionPlan CpuFusionProblem::Plan(const Candidate& candidate) const {
  std::vector<int32_t> priority(producers_.size(), 1);
  for (size_t i = 0; i < candidate.size() && i < priority.size(); ++i) {
    priority[i] = kPriorities[static_cast<size_t>(candidate[i])];
  }
  return costmodels::PlanFusionByPriority(graph_, priority);
}

absl::StatusOr<std::vector<double>> CpuFusionProblem::RankSettings(
    int64_t part, const std::vector<Candidate>& settings) {
  if (!ranker_.rank) return Problem::RankSettings(part, settings);
  // Many priority vectors make the same plan.
  return RankPlanSettings(
      *this, part, settings, [this](const Candidate& c) { return Plan(c); }, ranker_.rank);
}

double CpuFusionProblem::Evaluate(const Candidate& candidate) {
  const costmodels::FusionPlan plan = Plan(candidate);
  auto it = cache_.find(plan.kernel_of);
  if (it != cache_.end()) return it->second;
  absl::StatusOr<PlanTiming> timing = measure_(plan);
  double value = std::numeric_limits<double>::infinity();
  if (timing.ok()) {
    value = timing->seconds;
    if (ranker_.observe && !timing->kernel_seconds.empty()) {
      ranker_.observe(plan, timing->kernel_seconds);
    }
  } else {
    last_error_ = std::string(timing.status().message());
  }
  cache_[plan.kernel_of] = value;
  return value;
}

}  // namespace mltune::opt::fusion
