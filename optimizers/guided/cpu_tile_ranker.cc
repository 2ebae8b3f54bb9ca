#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizers/guided/configuration_ranking.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/tiling/cpu_kernel_graph.h"

namespace mltune::opt::guided {

namespace features = costmodels::features;

tiling::CpuTileProblem::RankFn CpuTileRanker(
    std::shared_ptr<const costmodels::learned::LearnedModel> model,
    const backends::cpu::LoweredModule& module) {
  auto graphs = std::make_shared<KernelGraphCache>(
      [&module](int32_t kernel) -> absl::StatusOr<features::KernelGraph> {
        absl::StatusOr<tiling::CpuKernelFeatures> f = tiling::CpuKernelFeaturesOf(module, kernel);
        if (!f.ok()) return f.status();
        return std::move(f->graph);
      });
  return [model = std::move(model), &module, graphs](
             int32_t kernel, const std::vector<backends::cpu::KernelConfig>& configs)
             -> absl::StatusOr<std::vector<double>> {
    if (kernel < 0 || kernel >= static_cast<int32_t>(module.kernels.size())) {
      return absl::InvalidArgumentError(absl::StrCat("no kernel ", kernel));
    }
    const absl::StatusOr<features::KernelGraph>& graph = graphs->Get(kernel);
    if (!graph.ok()) return graph.status();
    const backends::cpu::Kernel& k = module.kernels[static_cast<size_t>(kernel)];
    std::vector<features::Configuration> named;
    for (const backends::cpu::KernelConfig& c : configs) {
      named.push_back(tiling::CpuKernelConfiguration(k, c));
    }
    return RankConfigurations(*model, *graph, named);
  };
}

}  // namespace mltune::opt::guided
