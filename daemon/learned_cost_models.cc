#include "daemon/learned_cost_models.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "optimizers/guided/rankers.h"

namespace mltune::daemon {
namespace {

namespace learned = costmodels::learned;

struct Loaded {
  std::string checkpoint;  // the bytes it was loaded from: equal bytes, same model
  std::shared_ptr<const learned::LearnedModel> model;
};

// Process-wide, by model name: loading a checkpoint costs milliseconds, a job may rank thousands
// of candidates with it, and Predict is safe to share across the job threads.
std::mutex& CacheMutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<std::string, Loaded>& Cache() {
  static auto* cache = new std::map<std::string, Loaded>;
  return *cache;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const learned::LearnedModel>> NewestCostModel(
    const TaskRequest& request, std::string_view task) {
  const std::string name = opt::guided::CostModelName(task, request.target);
  if (!request.latest_model) return absl::InternalError("no model store for learned cost models");
  absl::StatusOr<std::optional<storage::ModelRecord>> record = request.latest_model(name);
  if (!record.ok()) return record.status();
  if (!record->has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no trained ", name,
        " in the daemon's store; make one with `mltune collect FILES --target ", request.target,
        " --task ", std::string(task),
        " --db STORE` then `mltune train-cost-model --db STORE --task ", std::string(task),
        " --target ", request.target, "` (STORE: the daemon's store file)"));
  }
  std::lock_guard<std::mutex> lock(CacheMutex());
  auto it = Cache().find(name);
  if (it != Cache().end() && it->second.checkpoint == (*record)->data) return it->second.model;
  absl::StatusOr<std::unique_ptr<learned::LearnedModel>> model =
      learned::LearnedModel::Load((*record)->data);
  if (!model.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(name, " version ", (*record)->version,
                                                   " does not load: ", model.status().message()));
  }
  Loaded& entry = Cache()[name];
  entry.checkpoint = std::move((*record)->data);
  entry.model = std::shared_ptr<const learned::LearnedModel>(*std::move(model));
  return entry.model;
}

}  // namespace mltune::daemon
