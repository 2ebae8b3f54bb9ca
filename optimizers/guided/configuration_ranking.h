// Shared by the configuration rankers (CpuTileRanker, TpuTileRanker): a kernel's graph built once,
// and its configurations scored in one batched Predict.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodels/features/kernel_graph.h"
#include "costmodels/learned/learned_model.h"

namespace mltune::opt::guided {

// Kernel graphs (configuration slots empty) built on first use, by kernel index: a search ranks a
// kernel's configurations many times, and most kernels of a large module perhaps never.
class KernelGraphCache {
 public:
  using BuildFn = std::function<absl::StatusOr<costmodels::features::KernelGraph>(int32_t kernel)>;
  explicit KernelGraphCache(BuildFn build) : build_(std::move(build)) {}

  // The graph of `kernel`, or why it has none (remembered too).
  const absl::StatusOr<costmodels::features::KernelGraph>& Get(int32_t kernel);

 private:
  BuildFn build_;
  std::map<int32_t, absl::StatusOr<costmodels::features::KernelGraph>> graphs_;
};

// Scores each of `configs` of the kernel whose graph is `graph`: each fills a copy's configuration
// slots, and one batched Predict scores them, with the relative head when the model has one (it is
// trained to order one kernel's configurations) and the absolute head otherwise.
absl::StatusOr<std::vector<double>> RankConfigurations(
    const costmodels::learned::LearnedModel& model, const costmodels::features::KernelGraph& graph,
    const std::vector<costmodels::features::Configuration>& configs);

}  // namespace mltune::opt::guided
