#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "optimizers/guided/plan_seconds.h"
#include "optimizers/guided/rankers.h"

namespace mltune::opt::guided {

namespace features = costmodels::features;

fusion::TpuFusionProblem::RankFn TpuFusionRanker(
    std::shared_ptr<const costmodels::learned::LearnedModel> model, const ir::Module& module,
    const costmodels::OpGraph& graph, backends::tpu::TpuSimulator sim) {
  auto seconds = std::make_shared<PlanSeconds>(
      std::move(model),
      [&module, &graph, sim = std::move(sim)](
          const costmodels::FusionPlan& plan) -> absl::StatusOr<std::vector<PlanKernel>> {
        const std::vector<costmodels::KernelSummary> summaries =
            costmodels::SummarizeKernels(graph, plan);
        std::vector<PlanKernel> kernels;
        for (size_t k = 0; k < summaries.size() && k < plan.kernels.size(); ++k) {
          // Opaque kernels are alike in every plan, and collect leaves them out.
          if (summaries[k].opaque) continue;
          absl::StatusOr<std::string> key = features::KernelKey(graph, module, plan.kernels[k]);
          if (!key.ok()) continue;
          // As `mltune collect --target tpu-sim --task fusion` measures it: the default tile.
          const features::Configuration config =
              tiling::TpuTileConfiguration(sim.DefaultTile(summaries[k]));
          kernels.push_back({*key,
                             [&module, &graph, nodes = plan.kernels[k],
                              config]() -> absl::StatusOr<features::KernelGraph> {
                               return features::BuildKernelGraph(graph, module, nodes, config);
                             },
                             -1,
                             {}});
        }
        return kernels;
      });
  return
      [seconds](const std::vector<costmodels::FusionPlan>& plans) { return seconds->Rank(plans); };
}

}  // namespace mltune::opt::guided
