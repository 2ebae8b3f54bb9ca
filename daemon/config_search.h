// Shared by the configuration tasks on the simulated workers (tile, fusion, mcm-partition,
// placement): runs a strategy on an opt::ConfigProblem within the request's budget, seeded with
// the cached best when continuing, logs every distinct valid candidate to the measurement log,
// and fills the outcome's scores, steps and completion.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "backends/spec/target_spec.h"
#include "daemon/task.h"
#include "optimizers/core/config_problem.h"

namespace mltune::daemon {

// Options every configuration task takes: seed (search), noise (the simulator's log-normal
// noise, tpu-sim only).
struct ConfigTaskOptions {
  uint64_t seed = 0;
  double noise = 0;
};
absl::StatusOr<ConfigTaskOptions> ParseConfigTaskOptions(std::string_view task,
                                                         const TaskOptions& options,
                                                         bool allow_noise);

// The spec of a resolved target name, or InvalidArgument.
absl::StatusOr<const backends::TargetSpec*> FindSpec(std::string_view target);

struct ConfigSearchRun {
  opt::Candidate best;  // the best configuration (a seed when the search found nothing better)
  TaskOutcome outcome;  // scores, steps, completion; artifacts["configuration"]
};

// `baseline_score` is the problem's default configuration's score (its first seed), and
// `original_score` the graph's as given. FailedPrecondition when no valid configuration exists.
absl::StatusOr<ConfigSearchRun> RunConfigSearch(const TaskRequest& request, std::string_view task,
                                                opt::ConfigProblem& problem, uint64_t seed,
                                                double original_score, double baseline_score,
                                                std::string scorer);

}  // namespace mltune::daemon
