#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizers/guided/rankers.h"

namespace mltune::opt::guided {

namespace features = costmodels::features;
namespace learned = costmodels::learned;

tiling::TpuTileProblem::RankFn TpuTileRanker(std::shared_ptr<const learned::LearnedModel> model,
                                             const costmodels::OpGraph& graph,
                                             const ir::Module& module,
                                             const costmodels::FusionPlan& plan) {
  // Graphs are built on first use, as `mltune collect --target tpu-sim --task tile` builds them:
  // the plan kernel's op graph nodes, the tile in the configuration slots.
  auto graphs = std::make_shared<std::map<int32_t, absl::StatusOr<features::KernelGraph>>>();
  return [model = std::move(model), &graph, &module, &plan, graphs](
             int32_t kernel, const std::vector<backends::tpu::TileConfig>& tiles)
             -> absl::StatusOr<std::vector<double>> {
    if (kernel < 0 || kernel >= static_cast<int32_t>(plan.kernels.size())) {
      return absl::InvalidArgumentError(absl::StrCat("no kernel ", kernel));
    }
    auto it = graphs->find(kernel);
    if (it == graphs->end()) {
      it = graphs
               ->emplace(kernel, features::BuildKernelGraph(
                                     graph, module, plan.kernels[static_cast<size_t>(kernel)], {}))
               .first;
    }
    if (!it->second.ok()) return it->second.status();
    std::vector<features::KernelGraph> filled(tiles.size(), *it->second);
    std::vector<const features::KernelGraph*> batch;
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (absl::Status s =
              features::SetConfiguration(tiling::TpuTileConfiguration(tiles[i]), &filled[i]);
          !s.ok()) {
        return s;
      }
      batch.push_back(&filled[i]);
    }
    const learned::Head head = model->HasHead(learned::Head::kRelative) ? learned::Head::kRelative
                                                                        : learned::Head::kAbsolute;
    return model->Predict(batch, head);
  };
}

}  // namespace mltune::opt::guided
