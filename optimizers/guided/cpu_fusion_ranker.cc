#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "optimizers/guided/plan_seconds.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/tiling/cpu_kernel_graph.h"

namespace mltune::opt::guided {

namespace cpu = backends::cpu;
namespace features = costmodels::features;

namespace {

// As `mltune collect --task fusion` measures a kernel: its default configuration.
features::Configuration FusionDataConfiguration(const cpu::Kernel& k) {
  return tiling::CpuKernelConfiguration(k, cpu::DefaultConfig(k));
}

}  // namespace

absl::StatusOr<std::vector<double>> CpuFusionKernelSeconds(
    const costmodels::learned::LearnedModel& model, const cpu::LoweredModule& module) {
  std::vector<features::KernelGraph> graphs;
  std::vector<size_t> described;  // kernel index of each graph
  for (const cpu::Kernel& k : module.kernels) {
    absl::StatusOr<tiling::CpuKernelFeatures> f = tiling::CpuKernelFeaturesOf(module, k.id);
    if (!f.ok()) continue;
    if (absl::Status s = features::SetConfiguration(FusionDataConfiguration(k), &f->graph);
        !s.ok()) {
      return s;
    }
    graphs.push_back(std::move(f->graph));
    described.push_back(static_cast<size_t>(k.id));
  }
  std::vector<double> seconds(module.kernels.size(), std::nan(""));
  if (graphs.empty()) return seconds;
  std::vector<const features::KernelGraph*> pointers;
  for (const features::KernelGraph& g : graphs) pointers.push_back(&g);
  absl::StatusOr<std::vector<double>> log_seconds =
      model.Predict(pointers, costmodels::learned::Head::kAbsolute);
  if (!log_seconds.ok()) return log_seconds.status();
  for (size_t i = 0; i < described.size(); ++i) seconds[described[i]] = std::exp((*log_seconds)[i]);
  return seconds;
}

fusion::CpuFusionProblem::Ranker CpuFusionRanker(
    std::shared_ptr<const costmodels::learned::LearnedModel> model, const ir::Module& module) {
  auto seconds = std::make_shared<PlanSeconds>(
      std::move(model),
      [&module](const costmodels::FusionPlan& plan) -> absl::StatusOr<std::vector<PlanKernel>> {
        // A plan the backend cannot lower would fail to measure.
        absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(module, &plan);
        if (!lowered.ok()) return lowered.status();
        std::vector<PlanKernel> kernels;
        for (const cpu::Kernel& k : lowered->kernels) {
          absl::StatusOr<tiling::CpuKernelFeatures> f = tiling::CpuKernelFeaturesOf(*lowered, k.id);
          if (!f.ok()) continue;
          auto graph = std::make_shared<features::KernelGraph>(std::move(f->graph));
          const features::Configuration config = FusionDataConfiguration(k);
          std::vector<std::string> ops;
          for (const ir::Instruction* m : k.members) ops.push_back(m->name());
          kernels.push_back({f->key,
                             [graph, config]() -> absl::StatusOr<features::KernelGraph> {
                               features::KernelGraph g = *graph;
                               if (absl::Status s = features::SetConfiguration(config, &g); !s.ok())
                                 return s;
                               return g;
                             },
                             k.id, std::move(ops)});
        }
        return kernels;
      });
  return {
      [seconds](const std::vector<costmodels::FusionPlan>& plans) { return seconds->Rank(plans); },
      [seconds](const costmodels::FusionPlan& plan, const std::vector<double>& kernel_seconds) {
        // A plan the model cannot describe leaves the corrections as they were.
        (void)seconds->Observe(plan, kernel_seconds);
      }};
}

}  // namespace mltune::opt::guided
