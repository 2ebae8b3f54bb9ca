#include "optimizers/guided/plan_seconds.h"

#include <cmath>
#include <limits>
#include <utility>

namespace mltune::opt::guided {

namespace features = costmodels::features;
namespace learned = costmodels::learned;

absl::StatusOr<std::vector<double>> PlanSeconds::Rank(
    const std::vector<costmodels::FusionPlan>& plans) {
  if (!model_->HasHead(learned::Head::kAbsolute)) {
    return absl::FailedPreconditionError(
        "ranking fusion plans needs a cost model with the absolute head (loss mse-log or both)");
  }
  std::vector<double> out(plans.size(), 0);
  // Kernels not predicted yet, each once across the call's plans.
  std::vector<features::KernelGraph> pending;
  std::vector<std::string> pending_keys;
  std::unordered_map<std::string, bool> queued;
  std::vector<std::vector<std::string>> plan_keys(plans.size());
  std::vector<bool> known(plans.size(), false);
  for (size_t i = 0; i < plans.size(); ++i) {
    if (auto it = plan_seconds_.find(plans[i].kernel_of); it != plan_seconds_.end()) {
      out[i] = it->second;
      known[i] = true;
      continue;
    }
    absl::StatusOr<std::vector<PlanKernel>> kernels = kernels_(plans[i]);
    if (!kernels.ok()) {
      out[i] = std::numeric_limits<double>::infinity();
      known[i] = true;
      continue;
    }
    for (PlanKernel& k : *kernels) {
      plan_keys[i].push_back(k.key);
      if (kernel_seconds_.count(k.key) != 0 || !queued.emplace(k.key, true).second) continue;
      absl::StatusOr<features::KernelGraph> graph = k.graph();
      if (!graph.ok()) return graph.status();
      pending.push_back(*std::move(graph));
      pending_keys.push_back(k.key);
    }
  }
  if (!pending.empty()) {
    std::vector<const features::KernelGraph*> batch;
    for (const features::KernelGraph& g : pending) batch.push_back(&g);
    absl::StatusOr<std::vector<double>> log_seconds =
        model_->Predict(batch, learned::Head::kAbsolute);
    if (!log_seconds.ok()) return log_seconds.status();
    for (size_t j = 0; j < pending.size(); ++j) {
      kernel_seconds_[pending_keys[j]] = std::exp((*log_seconds)[j]);
    }
  }
  for (size_t i = 0; i < plans.size(); ++i) {
    if (known[i]) continue;
    for (const std::string& key : plan_keys[i]) out[i] += kernel_seconds_.at(key);
    plan_seconds_[plans[i].kernel_of] = out[i];
  }
  return out;
}

}  // namespace mltune::opt::guided
