// The learned cost models in a store's model registry: their names, and loading the newest one
// with an error that says how to make it. The daemon, the CLI's model-topk and the
// time-to-best benchmarks all load models this way.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "costmodels/learned/learned_model.h"
#include "storage/store.h"

namespace mltune::opt::guided {

// The model registry's name of the cost model for a task on a target: "cost-model/tile-cpu".
// `mltune train-cost-model` stores under it and the daemon loads its newest version.
std::string CostModelName(std::string_view task, std::string_view target);

// The train-cost-model flags that shape a stored model: its training recipe. train-cost-model
// records them in each checkpoint's metadata ("recipe": the flags with their values), and the
// daemon retrains a model with its newest version's recipe (daemon/model_refresher.h), so a
// model trained by hand with other options keeps them. Only these flags are taken from a recipe.
inline constexpr std::string_view kTrainingRecipeFlags[] = {"--loss",
                                                            "--epochs",
                                                            "--hidden",
                                                            "--layers",
                                                            "--readout",
                                                            "--absolute-skip",
                                                            "--absolute-head",
                                                            "--transformer-layers",
                                                            "--mape-weight",
                                                            "--dropout",
                                                            "--weight-decay",
                                                            "--real-weight",
                                                            "--node-features",
                                                            "--kernel-features",
                                                            "--ensemble",
                                                            "--min-pair-ratio",
                                                            "--listwise-temperature",
                                                            "--pair-weights",
                                                            "--kernel-weights",
                                                            "--min-seconds",
                                                            "--in-module-min-seconds",
                                                            "--no-in-module",
                                                            "--seed"};

// train-cost-model --gate's exit status when the retrained model loses to the newest stored
// version and is not stored (optimizers/cost_model_training/gate.h): the daemon tells it from a
// failure.
inline constexpr int kGateRejectedExitCode = 3;

// A store's newest checkpoint of a name, or nullopt (storage::Store::LatestModel, or the daemon's
// hook to it).
using LatestModelFn =
    std::function<absl::StatusOr<std::optional<storage::ModelRecord>>(const std::string& name)>;

// The newest record of CostModelName(task, target). FailedPrecondition when there is none: the
// message names `store` (a path, or words such as "the daemon's store") and the commands that
// make one.
absl::StatusOr<storage::ModelRecord> NewestCostModelRecord(const LatestModelFn& latest,
                                                           std::string_view task,
                                                           std::string_view target,
                                                           std::string_view store);

// Loads a record's checkpoint; InvalidArgument naming the model and version when it does not.
absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> LoadCostModel(
    const storage::ModelRecord& record);

struct StoredCostModel {
  std::shared_ptr<const costmodels::learned::LearnedModel> model;
  int64_t version = 0;
};
// The newest CostModelName(task, target) in the store file `db`, for tools that read a store
// they are given: NotFound when the file does not exist (nothing is created), then as
// NewestCostModelRecord and LoadCostModel.
absl::StatusOr<StoredCostModel> LoadNewestCostModel(const std::string& db, std::string_view task,
                                                    std::string_view target);

}  // namespace mltune::opt::guided
