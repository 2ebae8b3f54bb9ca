// Shared by the fusion-plan rankers (CpuFusionRanker, TpuFusionRanker): a plan's predicted time
// is the sum of its kernels' predicted seconds (the absolute head), each kernel predicted once
// across calls and each call's new kernels in one batched Predict.
//
// Measured plans correct the predictions (Observe). A kernel timed inside a measured module is
// priced at its measured seconds from then on. A kernel not measured yet is priced at its
// prediction times exp(c): c averages the measured kernels' log errors (log of measured over
// predicted) with weight J^4, J being the Jaccard similarity of the two kernels' op names, and
// kPrior more weight on 0 (no correction). A kernel model's errors are per kernel and
// persistent (a held-out program's kernel predicted 10x too fast stays so), and the plans of one
// search are made of overlapping kernels: a measured kernel tells most about the variants that
// differ from it by a few ops, little about kernels that share a few of its ops.
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
  // For Observe: the kernel's place in the plan's measured kernel times, and the names of the
  // module's ops it computes (similarity between kernels).
  int32_t index = -1;
  std::vector<std::string> ops;
};

// A plan's kernels; an error ranks the plan +infinity (it would fail to measure). Kernels the
// features cannot describe may be left out: plans are compared on the kernels the model sees.
using PlanKernelsFn =
    std::function<absl::StatusOr<std::vector<PlanKernel>>(const costmodels::FusionPlan&)>;

class PlanSeconds {
 public:
  PlanSeconds(std::shared_ptr<const costmodels::learned::LearnedModel> model, PlanKernelsFn kernels)
      : model_(std::move(model)), kernels_(std::move(kernels)) {}

  // Each plan's summed seconds, predicted and corrected (FailedPrecondition without an absolute
  // head).
  absl::StatusOr<std::vector<double>> Rank(const std::vector<costmodels::FusionPlan>& plans);

  // `kernel_seconds`: the plan's kernels timed inside its measured run, by PlanKernel::index
  // (0: under the timer's resolution, left unmeasured). Later Rank calls price those kernels at
  // their measured seconds (the geometric mean when measured in several plans) and correct the
  // rest.
  absl::Status Observe(const costmodels::FusionPlan& plan,
                       const std::vector<double>& kernel_seconds);

  // How many kernels Observe has measured (distinct keys).
  size_t measured_kernels() const { return measured_.size(); }

  // The weight of "no correction" against the measured kernels' J^4 weights: a kernel with
  // half its ops' union in common with a measured one (J^4 = 1/16) takes 0.0625 / (0.0625 +
  // kPrior) = 56% of that kernel's log error; one that differs from it by 1 op in 20 takes 94%.
  static constexpr double kPrior = 0.05;

 private:
  struct Measured {
    std::vector<std::string> ops;  // sorted
    double seconds;                // inside the measured module
    double log_error;              // log(seconds / predicted)
  };
  // Predicts the queued kernels into predicted_.
  absl::Status PredictPending(std::vector<costmodels::features::KernelGraph>& pending,
                              const std::vector<std::string>& keys);
  // A kernel's seconds: measured, or predicted and corrected.
  double Seconds(const std::string& key);

  std::shared_ptr<const costmodels::learned::LearnedModel> model_;
  PlanKernelsFn kernels_;
  // Plans and kernels recur from one generation of the search to the next, and most of a plan's
  // kernels are in its neighbours too. A plan's kernels are kept (not its sum), so that after
  // an Observe a plan is priced again without lowering it again.
  std::map<std::vector<int32_t>, std::vector<std::string>> plan_keys_;  // by FusionPlan::kernel_of
  std::unordered_map<std::string, double> predicted_;                   // by kernel key
  std::unordered_map<std::string, std::vector<std::string>> kernel_ops_;  // sorted
  std::unordered_map<std::string, Measured> measured_;                    // by kernel key
  std::unordered_map<std::string, double> seconds_;  // Seconds' cache, cleared by Observe
};

}  // namespace mltune::opt::guided
