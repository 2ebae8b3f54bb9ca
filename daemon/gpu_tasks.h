// The tile and fusion tasks on target "gpu", measured on the attached GPU. The module is first run
// through XLA's default CPU pipeline, as both backends compile it.
#pragma once

#include "absl/status/statusor.h"
#include "daemon/config_search.h"
#include "daemon/task.h"

namespace mltune::daemon {

// Each kernel's GPU parameters (backends/gpu/gpu_codegen.h) searched by measuring the kernels
// alone, the whole module then timed default against tuned. FailedPrecondition, with the
// reason, where no GPU is attached or the module has kernels the GPU does not generate yet (both
// tasks).
absl::StatusOr<TaskOutcome> SearchGpuTiles(const TaskRequest& request,
                                           const ConfigTaskOptions& options);
// The fusion task on target "gpu": fusion priorities (optimizers/fusion/cpu_fusion_problem.h),
// each plan's module compiled with the default kernel parameters and timed whole on the GPU.
absl::StatusOr<TaskOutcome> SearchGpuFusion(const TaskRequest& request,
                                            const ConfigTaskOptions& options);

}  // namespace mltune::daemon
