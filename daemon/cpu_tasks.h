// The tile and fusion tasks on target "cpu": real measurements of generated kernels
// (backends/cpu) instead of a simulator. The module is first run through XLA's default CPU
// pipeline, as the backend would compile it.
#pragma once

#include "absl/status/statusor.h"
#include "daemon/config_search.h"
#include "daemon/task.h"

namespace mltune::daemon {

// Per-kernel parameters (optimizers/tiling/cpu_tile_problem.h), scored by summed kernel seconds.
absl::StatusOr<TaskOutcome> SearchCpuTiles(const TaskRequest& request,
                                           const ConfigTaskOptions& options);
// Fusion priorities (optimizers/fusion/cpu_fusion_problem.h), scored by whole-module seconds.
absl::StatusOr<TaskOutcome> SearchCpuFusion(const TaskRequest& request,
                                            const ConfigTaskOptions& options);

}  // namespace mltune::daemon
