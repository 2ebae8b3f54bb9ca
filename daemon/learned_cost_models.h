// The daemon's learned cost models: for a task and target, the newest checkpoint of
// cost-model/<task>-<target> in the daemon's store (`mltune train-cost-model --db` writes them),
// loaded once per checkpoint and shared by every job that ranks with it.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "costmodels/learned/learned_model.h"
#include "daemon/task.h"

namespace mltune::daemon {

// The newest model for `task` on the request's target. A newer version in the store replaces the
// loaded one on the next call; jobs still holding the old one keep it alive until they end.
// FailedPrecondition (with the commands that make one) when the store has none, InvalidArgument
// when the checkpoint does not load.
absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> NewestCostModel(
    const TaskRequest& request, std::string_view task);

}  // namespace mltune::daemon
