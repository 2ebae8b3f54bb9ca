// Internal to daemon/: the GO policy as a search strategy of the configuration tasks.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "daemon/task.h"
#include "optimizers/core/search.h"
#include "optimizers/rl/rl.h"

namespace mltune::daemon {

// The store's name of the GO policy (pretrained as version 0).
inline constexpr char kGoModel[] = "partition/go";

// The newest `partition/go` of the request's store running on `env`: every decision it evaluates
// (the environment's device decision is the problem's candidate) goes through the search
// context, so it is charged to the budget, logged and traced like any other strategy's, and it
// refines the best seed. FailedPrecondition when the store has no policy.
absl::StatusOr<std::unique_ptr<opt::Strategy>> MakeGoStrategy(
    const TaskRequest& request, std::unique_ptr<opt::rl::GoEnvironment> env, bool fine_tune);

}  // namespace mltune::daemon
