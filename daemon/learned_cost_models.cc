#include "daemon/learned_cost_models.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "optimizers/guided/stored_cost_models.h"

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
  absl::StatusOr<storage::ModelRecord> record = opt::guided::NewestCostModelRecord(
      request.latest_model, task, request.target, "the daemon's store");
  if (!record.ok()) return record.status();
  std::lock_guard<std::mutex> lock(CacheMutex());
  auto it = Cache().find(record->name);
  if (it != Cache().end() && it->second.checkpoint == record->data) return it->second.model;
  absl::StatusOr<std::shared_ptr<const learned::LearnedModel>> model =
      opt::guided::LoadCostModel(*record);
  if (!model.ok()) return model.status();
  Loaded& entry = Cache()[record->name];
  entry.checkpoint = std::move(record->data);
  entry.model = *std::move(model);
  return entry.model;
}

}  // namespace mltune::daemon
