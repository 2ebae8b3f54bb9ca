#include "optimizers/guided/configuration_ranking.h"

#include <utility>

namespace mltune::opt::guided {

namespace features = costmodels::features;
namespace learned = costmodels::learned;

const absl::StatusOr<features::KernelGraph>& KernelGraphCache::Get(int32_t kernel) {
  auto it = graphs_.find(kernel);
  if (it == graphs_.end()) it = graphs_.emplace(kernel, build_(kernel)).first;
  return it->second;
}

absl::StatusOr<std::vector<double>> RankConfigurations(
    const learned::LearnedModel& model, const features::KernelGraph& graph,
    const std::vector<features::Configuration>& configs) {
  std::vector<features::KernelGraph> filled(configs.size(), graph);
  std::vector<const features::KernelGraph*> batch;
  for (size_t i = 0; i < configs.size(); ++i) {
    if (absl::Status s = features::SetConfiguration(configs[i], &filled[i]); !s.ok()) return s;
    batch.push_back(&filled[i]);
  }
  const learned::Head head =
      model.HasHead(learned::Head::kRelative) ? learned::Head::kRelative : learned::Head::kAbsolute;
  return model.Predict(batch, head);
}

}  // namespace mltune::opt::guided
