#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/tiling/cpu_kernel_graph.h"

namespace mltune::opt::guided {

namespace cpu = backends::cpu;
namespace features = costmodels::features;
namespace learned = costmodels::learned;

namespace {

// What the ranker remembers across calls: plans and kernels recur from one generation of the
// search to the next, and most of a plan's kernels are in its neighbours too.
struct FusionRankerCache {
  std::map<std::vector<int32_t>, double> plan_seconds;     // by FusionPlan::kernel_of
  std::unordered_map<std::string, double> kernel_seconds;  // by kernel key
};

}  // namespace

fusion::CpuFusionProblem::RankFn CpuFusionRanker(std::shared_ptr<const learned::LearnedModel> model,
                                                 const ir::Module& module) {
  auto cache = std::make_shared<FusionRankerCache>();
  return [model = std::move(model), &module,
          cache](const std::vector<costmodels::FusionPlan>& plans)
             -> absl::StatusOr<std::vector<double>> {
    if (!model->HasHead(learned::Head::kAbsolute)) {
      return absl::FailedPreconditionError(
          "ranking fusion plans needs a cost model with the absolute head (loss mse-log or both)");
    }
    std::vector<double> out(plans.size(), 0);
    // Kernels not predicted yet, each once across the call's plans, and the plans they are in.
    std::vector<features::KernelGraph> pending;
    std::vector<std::string> pending_keys;
    std::unordered_map<std::string, std::vector<size_t>> pending_plans;
    std::vector<std::vector<std::string>> plan_keys(plans.size());
    std::vector<bool> known(plans.size(), false);
    for (size_t i = 0; i < plans.size(); ++i) {
      if (auto it = cache->plan_seconds.find(plans[i].kernel_of); it != cache->plan_seconds.end()) {
        out[i] = it->second;
        known[i] = true;
        continue;
      }
      absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(module, &plans[i]);
      if (!lowered.ok()) {
        // A plan the backend cannot lower would fail to measure: rank it last.
        out[i] = std::numeric_limits<double>::infinity();
        known[i] = true;
        continue;
      }
      for (const cpu::Kernel& k : lowered->kernels) {
        // A kernel the features cannot describe is left out of the sum: plans are compared on
        // the kernels the model sees.
        absl::StatusOr<tiling::CpuKernelFeatures> f = tiling::CpuKernelFeaturesOf(*lowered, k.id);
        if (!f.ok()) continue;
        plan_keys[i].push_back(f->key);
        if (cache->kernel_seconds.count(f->key) != 0) continue;
        if (pending_plans.count(f->key) == 0) {
          // As `mltune collect --task fusion` measures it: the kernel's default configuration.
          absl::Status s = features::SetConfiguration(
              tiling::CpuKernelConfiguration(k, cpu::DefaultConfig(k)), &f->graph);
          if (!s.ok()) return s;
          pending.push_back(std::move(f->graph));
          pending_keys.push_back(f->key);
        }
        pending_plans[f->key].push_back(i);
      }
    }
    if (!pending.empty()) {
      std::vector<const features::KernelGraph*> batch;
      for (const features::KernelGraph& g : pending) batch.push_back(&g);
      absl::StatusOr<std::vector<double>> log_seconds =
          model->Predict(batch, learned::Head::kAbsolute);
      if (!log_seconds.ok()) return log_seconds.status();
      for (size_t j = 0; j < pending.size(); ++j) {
        cache->kernel_seconds[pending_keys[j]] = std::exp((*log_seconds)[j]);
      }
    }
    for (size_t i = 0; i < plans.size(); ++i) {
      if (known[i]) continue;
      for (const std::string& key : plan_keys[i]) out[i] += cache->kernel_seconds.at(key);
      cache->plan_seconds[plans[i].kernel_of] = out[i];
    }
    return out;
  };
}

}  // namespace mltune::opt::guided
