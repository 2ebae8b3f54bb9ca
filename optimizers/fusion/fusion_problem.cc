#include "optimizers/fusion/fusion_problem.h"

#include <limits>
#include <set>

#include "absl/strings/str_cat.h"

namespace mltune::opt::fusion {

TpuFusionProblem::TpuFusionProblem(costmodels::OpGraph graph, backends::tpu::TpuSimulator sim)
    : graph_(std::move(graph)), sim_(std::move(sim)) {
  producers_ = costmodels::FusibleProducers(graph_);
  space_.choices = {2};
  space_.max_length = static_cast<int64_t>(producers_.size());
  space_.fixed_length = true;
  (void)AddSeed(DefaultCandidate());
}

std::string TpuFusionProblem::ActionName(int64_t position, Action action) const {
  return absl::StrCat(
      graph_.nodes[static_cast<size_t>(producers_[static_cast<size_t>(position)])].name,
      action != 0 ? ":fuse" : ":keep");
}

costmodels::FusionPlan TpuFusionProblem::Plan(const Candidate& candidate) const {
  std::vector<uint8_t> allow(candidate.size());
  for (size_t i = 0; i < candidate.size(); ++i) allow[i] = candidate[i] != 0 ? 1 : 0;
  return costmodels::PlanFusion(graph_, allow);
}

backends::tpu::TpuResult TpuFusionProblem::Simulate(const Candidate& candidate) {
  return sim_.Simulate(costmodels::SummarizeKernels(graph_, Plan(candidate)));
}

absl::StatusOr<std::vector<double>> RankPlanSettings(
    const ConfigProblem& problem, int64_t part, const std::vector<Candidate>& settings,
    const std::function<costmodels::FusionPlan(const Candidate&)>& plan, const PlanRankFn& rank) {
  if (part != 0) return absl::InvalidArgumentError(absl::StrCat("fusion has one part, not ", part));
  std::vector<costmodels::FusionPlan> plans;
  plans.reserve(settings.size());
  for (const Candidate& c : settings) {
    if (absl::Status s = problem.Check(c); !s.ok()) return s;
    plans.push_back(plan(c));
  }
  absl::StatusOr<std::vector<double>> ranks = rank(plans);
  if (!ranks.ok()) return ranks;
  if (ranks->size() != plans.size()) {
    return absl::InternalError(
        absl::StrCat("the ranker scored ", ranks->size(), " of ", plans.size(), " plans"));
  }
  std::set<std::vector<int32_t>> seen;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!seen.insert(plans[i].kernel_of).second) {
      (*ranks)[i] = std::numeric_limits<double>::infinity();
    }
  }
  return ranks;
}

absl::StatusOr<std::vector<double>> TpuFusionProblem::RankSettings(
    int64_t part, const std::vector<Candidate>& settings) {
  if (!rank_) return Problem::RankSettings(part, settings);
  return RankPlanSettings(
      *this, part, settings, [this](const Candidate& c) { return Plan(c); }, rank_);
}

double TpuFusionProblem::Evaluate(const Candidate& candidate) {
  const costmodels::FusionPlan plan = Plan(candidate);
  const std::vector<costmodels::KernelSummary> kernels = costmodels::SummarizeKernels(graph_, plan);
  const backends::tpu::TpuResult r = sim_.Simulate(kernels);
  if (observe_) observe_(plan, kernels, r);
  return r.valid ? r.seconds : std::numeric_limits<double>::infinity();
}

}  // namespace mltune::opt::fusion
