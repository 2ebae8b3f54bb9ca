#include <memory>
#include <utility>
#include <vector>

#include "optimizers/guided/plan_seconds.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/tiling/cpu_kernel_graph.h"

namespace mltune::opt::guided {

namespace cpu = backends::cpu;
namespace features = costmodels::features;

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
          // As `mltune collect --task fusion` measures it: the kernel's default configuration.
          auto graph = std::make_shared<features::KernelGraph>(std::move(f->graph));
          const features::Configuration config =
              tiling::CpuKernelConfiguration(k, cpu::DefaultConfig(k));
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
