#include "optimizers/guided/plan_seconds.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

namespace mltune::opt::guided {

namespace features = costmodels::features;
namespace learned = costmodels::learned;

namespace {

// |a ∩ b| / |a ∪ b| of two sorted name lists.
double Jaccard(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.empty() && b.empty()) return 0;
  std::vector<std::string> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  const double shared = static_cast<double>(common.size());
  return shared / (static_cast<double>(a.size() + b.size()) - shared);
}

std::vector<std::string> Sorted(std::vector<std::string> ops) {
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

}  // namespace

absl::Status PlanSeconds::PredictPending(std::vector<features::KernelGraph>& pending,
                                         const std::vector<std::string>& keys) {
  if (pending.empty()) return absl::OkStatus();
  std::vector<const features::KernelGraph*> batch;
  for (const features::KernelGraph& g : pending) batch.push_back(&g);
  absl::StatusOr<std::vector<double>> log_seconds =
      model_->Predict(batch, learned::Head::kAbsolute);
  if (!log_seconds.ok()) return log_seconds.status();
  for (size_t j = 0; j < pending.size(); ++j) predicted_[keys[j]] = std::exp((*log_seconds)[j]);
  return absl::OkStatus();
}

double PlanSeconds::Seconds(const std::string& key) {
  if (auto m = measured_.find(key); m != measured_.end()) return m->second.seconds;
  const double predicted = predicted_.at(key);
  if (measured_.empty()) return predicted;
  if (auto c = seconds_.find(key); c != seconds_.end()) return c->second;
  double weight = kPrior, sum = 0;
  if (auto ops = kernel_ops_.find(key); ops != kernel_ops_.end()) {
    for (const auto& [other, m] : measured_) {
      const double j = Jaccard(ops->second, m.ops);
      const double w = j * j * j * j;
      weight += w;
      sum += w * m.log_error;
    }
  }
  const double seconds = predicted * std::exp(sum / weight);
  seconds_[key] = seconds;
  return seconds;
}

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
  std::vector<const std::vector<std::string>*> keys(plans.size(), nullptr);
  for (size_t i = 0; i < plans.size(); ++i) {
    auto it = plan_keys_.find(plans[i].kernel_of);
    if (it == plan_keys_.end()) {
      absl::StatusOr<std::vector<PlanKernel>> kernels = kernels_(plans[i]);
      if (!kernels.ok()) {
        out[i] = std::numeric_limits<double>::infinity();
        continue;
      }
      std::vector<std::string> plan_keys;
      for (PlanKernel& k : *kernels) {
        plan_keys.push_back(k.key);
        if (predicted_.count(k.key) != 0 || !queued.emplace(k.key, true).second) continue;
        absl::StatusOr<features::KernelGraph> graph = k.graph();
        if (!graph.ok()) return graph.status();
        pending.push_back(*std::move(graph));
        pending_keys.push_back(k.key);
        kernel_ops_[k.key] = Sorted(std::move(k.ops));
      }
      it = plan_keys_.emplace(plans[i].kernel_of, std::move(plan_keys)).first;
    }
    keys[i] = &it->second;
  }
  if (absl::Status s = PredictPending(pending, pending_keys); !s.ok()) return s;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (keys[i] == nullptr) continue;
    for (const std::string& key : *keys[i]) out[i] += Seconds(key);
  }
  return out;
}

absl::Status PlanSeconds::Observe(const costmodels::FusionPlan& plan,
                                  const std::vector<double>& kernel_seconds) {
  absl::StatusOr<std::vector<PlanKernel>> kernels = kernels_(plan);
  if (!kernels.ok()) return kernels.status();
  std::vector<features::KernelGraph> pending;
  std::vector<std::string> pending_keys;
  std::vector<PlanKernel*> timed;
  for (PlanKernel& k : *kernels) {
    if (k.index < 0 || static_cast<size_t>(k.index) >= kernel_seconds.size()) continue;
    if (!(kernel_seconds[static_cast<size_t>(k.index)] > 0)) continue;  // under the timer's tick
    timed.push_back(&k);
    if (predicted_.count(k.key) != 0) continue;
    if (std::find(pending_keys.begin(), pending_keys.end(), k.key) != pending_keys.end()) continue;
    absl::StatusOr<features::KernelGraph> graph = k.graph();
    if (!graph.ok()) return graph.status();
    pending.push_back(*std::move(graph));
    pending_keys.push_back(k.key);
  }
  if (absl::Status s = PredictPending(pending, pending_keys); !s.ok()) return s;
  for (PlanKernel* k : timed) {
    const double seconds = kernel_seconds[static_cast<size_t>(k->index)];
    std::vector<std::string> ops = Sorted(k->ops);
    kernel_ops_.emplace(k->key, ops);
    auto [it, first] = measured_.try_emplace(k->key, Measured{std::move(ops), seconds, 0});
    // Measured again in another plan: the geometric mean of its times.
    if (!first) it->second.seconds = std::sqrt(it->second.seconds * seconds);
    it->second.log_error = std::log(it->second.seconds / predicted_.at(k->key));
  }
  seconds_.clear();  // every correction may have moved
  return absl::OkStatus();
}

}  // namespace mltune::opt::guided
