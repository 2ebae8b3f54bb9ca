// The tile task on target "gpu": each kernel's GPU parameters (backends/gpu/gpu_codegen.h)
// searched by measuring the kernels alone on the attached GPU, the whole module then timed
// default against tuned. The module is first run through XLA's default CPU pipeline, as both
// backends compile it.
#pragma once

#include "absl/status/statusor.h"
#include "daemon/config_search.h"
#include "daemon/task.h"

namespace mltune::daemon {

// FailedPrecondition, with the reason, where no GPU is attached or the module has kernels the
// GPU does not generate yet.
absl::StatusOr<TaskOutcome> SearchGpuTiles(const TaskRequest& request,
                                           const ConfigTaskOptions& options);

}  // namespace mltune::daemon
