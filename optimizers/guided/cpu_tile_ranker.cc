#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/tiling/cpu_kernel_graph.h"

namespace mltune::opt::guided {

namespace features = costmodels::features;
namespace learned = costmodels::learned;

tiling::CpuTileProblem::RankFn CpuTileRanker(std::shared_ptr<const learned::LearnedModel> model,
                                             const backends::cpu::LoweredModule& module) {
  // Graphs are built on first use: a search ranks each kernel once, most kernels of a large
  // module perhaps never.
  auto graphs = std::make_shared<std::map<int32_t, absl::StatusOr<features::KernelGraph>>>();
  return [model = std::move(model), &module, graphs](
             int32_t kernel, const std::vector<backends::cpu::KernelConfig>& configs)
             -> absl::StatusOr<std::vector<double>> {
    if (kernel < 0 || kernel >= static_cast<int32_t>(module.kernels.size())) {
      return absl::InvalidArgumentError(absl::StrCat("no kernel ", kernel));
    }
    auto it = graphs->find(kernel);
    if (it == graphs->end()) {
      absl::StatusOr<tiling::CpuKernelFeatures> f = tiling::CpuKernelFeaturesOf(module, kernel);
      it = graphs
               ->emplace(kernel, f.ok() ? absl::StatusOr<features::KernelGraph>(std::move(f->graph))
                                        : absl::StatusOr<features::KernelGraph>(f.status()))
               .first;
    }
    if (!it->second.ok()) return it->second.status();
    const backends::cpu::Kernel& k = module.kernels[static_cast<size_t>(kernel)];
    std::vector<features::KernelGraph> filled(configs.size(), *it->second);
    std::vector<const features::KernelGraph*> batch;
    for (size_t i = 0; i < configs.size(); ++i) {
      if (absl::Status s =
              features::SetConfiguration(tiling::CpuKernelConfiguration(k, configs[i]), &filled[i]);
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
