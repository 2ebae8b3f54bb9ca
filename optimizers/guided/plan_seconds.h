// Shared by the fusion-plan rankers (CpuFusionRanker, TpuFusionRanker): a plan's predicted time
// is the sum of its kernels' predicted seconds (the absolute head), each kernel predicted once
// across calls and each call's new kernels in one batched Predict.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/features/kernel_graph.h"
#include "costmodels/learned/learned_model.h"

namespace mltune::opt::guided {

// One kernel of a plan as the model sees it: its key, and its graph with the configuration
// slots filled as the fusion data was measured (built only for kernels not predicted yet).
struct PlanKernel {
  std::string key;
  std::function<absl::StatusOr<costmodels::features::KernelGraph>()> graph;
};

// A plan's kernels; an error ranks the plan +infinity (it would fail to measure). Kernels the
// features cannot describe may be left out: plans are compared on the kernels the model sees.
using PlanKernelsFn =
    std::function<absl::StatusOr<std::vector<PlanKernel>>(const costmodels::FusionPlan&)>;

class PlanSeconds {
 public:
  PlanSeconds(std::shared_ptr<const costmodels::learned::LearnedModel> model, PlanKernelsFn kernels)
      : model_(std::move(model)), kernels_(std::move(kernels)) {}

  // Each plan's summed predicted seconds (FailedPrecondition without an absolute head).
  absl::StatusOr<std::vector<double>> Rank(const std::vector<costmodels::FusionPlan>& plans);

 private:
  std::shared_ptr<const costmodels::learned::LearnedModel> model_;
  PlanKernelsFn kernels_;
  // Plans and kernels recur from one generation of the search to the next, and most of a plan's
  // kernels are in its neighbours too.
  std::map<std::vector<int32_t>, double> plan_seconds_;     // by FusionPlan::kernel_of
  std::unordered_map<std::string, double> kernel_seconds_;  // by kernel key
};

}  // namespace mltune::opt::guided
