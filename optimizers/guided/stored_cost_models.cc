#include "optimizers/guided/stored_cost_models.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace mltune::opt::guided {

std::string CostModelName(std::string_view task, std::string_view target) {
  return absl::StrCat("cost-model/", std::string(task), "-", std::string(target));
}

absl::StatusOr<storage::ModelRecord> NewestCostModelRecord(const LatestModelFn& latest,
                                                           std::string_view task,
                                                           std::string_view target,
                                                           std::string_view store) {
  const std::string name = CostModelName(task, target);
  if (!latest) return absl::InternalError(absl::StrCat("no model store to load ", name, " from"));
  absl::StatusOr<std::optional<storage::ModelRecord>> record = latest(name);
  if (!record.ok()) return record.status();
  if (!record->has_value()) {
    const std::string args = absl::StrCat(" --target ", std::string(target), " --task ",
                                          std::string(task), " --db STORE");
    return absl::FailedPreconditionError(absl::StrCat(
        std::string(store), " holds no ", name, "; make one with `mltune collect FILES", args,
        "` then `mltune train-cost-model", args, "` (STORE: ", std::string(store), ")"));
  }
  return *std::move(*record);
}

absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> LoadCostModel(
    const storage::ModelRecord& record) {
  absl::StatusOr<std::unique_ptr<costmodels::learned::LearnedModel>> model =
      costmodels::learned::LearnedModel::Load(record.data);
  if (!model.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(record.name, " version ", record.version,
                                                   " does not load: ", model.status().message()));
  }
  return std::shared_ptr<const costmodels::learned::LearnedModel>(*std::move(model));
}

absl::StatusOr<StoredCostModel> LoadNewestCostModel(const std::string& db, std::string_view task,
                                                    std::string_view target) {
  absl::StatusOr<std::unique_ptr<storage::Store>> store =
      storage::Store::Open(db, storage::StoreOptions{.must_exist = true});
  if (!store.ok()) return store.status();
  absl::StatusOr<storage::ModelRecord> record = NewestCostModelRecord(
      [&](const std::string& name) { return (*store)->LatestModel(name); }, task, target, db);
  if (!record.ok()) return record.status();
  absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> model =
      LoadCostModel(*record);
  if (!model.ok()) return model.status();
  return StoredCostModel{*std::move(model), record->version};
}

}  // namespace mltune::opt::guided
