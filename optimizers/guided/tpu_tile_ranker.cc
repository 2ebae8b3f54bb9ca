#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizers/guided/configuration_ranking.h"
#include "optimizers/guided/rankers.h"

namespace mltune::opt::guided {

namespace features = costmodels::features;

tiling::TpuTileProblem::RankFn TpuTileRanker(
    std::shared_ptr<const costmodels::learned::LearnedModel> model,
    const costmodels::OpGraph& graph, const ir::Module& module,
    const costmodels::FusionPlan& plan) {
  // As `mltune collect --target tpu-sim --task tile` builds them: the plan kernel's op graph
  // nodes, the tile in the configuration slots.
  auto graphs = std::make_shared<KernelGraphCache>([&graph, &module, &plan](int32_t kernel) {
    return features::BuildKernelGraph(graph, module, plan.kernels[static_cast<size_t>(kernel)], {});
  });
  return [model = std::move(model), &plan, graphs](
             int32_t kernel, const std::vector<backends::tpu::TileConfig>& tiles)
             -> absl::StatusOr<std::vector<double>> {
    if (kernel < 0 || kernel >= static_cast<int32_t>(plan.kernels.size())) {
      return absl::InvalidArgumentError(absl::StrCat("no kernel ", kernel));
    }
    const absl::StatusOr<features::KernelGraph>& g = graphs->Get(kernel);
    if (!g.ok()) return g.status();
    std::vector<features::Configuration> named;
    for (const backends::tpu::TileConfig& t : tiles)
      named.push_back(tiling::TpuTileConfiguration(t));
    return RankConfigurations(*model, *g, named);
  };
}

}  // namespace mltune::opt::guided
