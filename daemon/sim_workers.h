// The simulated workers (tpu-sim, mcm-sim, cluster-sim): which target specs each serves, what
// its scores mean, and the mapping from a request's --target (a spec name, or a worker name
// meaning that worker's default spec) to the worker that scores it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mltune::daemon {

struct SimWorker {
  const char* name;            // "tpu-sim"
  const char* spec_kind;       // the TargetSpec kind it serves: "tpu", "mcm", "gpu-cluster"
  const char* default_target;  // the spec a bare worker name means
  const char* default_task;    // the task a request without tasks runs on it
  const char* scorer;          // what its scores are
  const char* description;
};

const std::vector<SimWorker>& SimWorkers();

// A worker name becomes its default spec; anything else is returned as given.
std::string ResolveTarget(std::string_view target);
// The simulated worker scoring `target` (a resolved spec name), or nullptr (cpu, gpu: in-process).
const SimWorker* WorkerForTarget(std::string_view target);
// The spec names of `worker`'s kind known to this process, sorted.
std::vector<std::string> TargetsOf(const SimWorker& worker);
// Every spec name of the kind served by the worker named `worker_name`.
std::vector<std::string> TargetsOfWorker(std::string_view worker_name);

}  // namespace mltune::daemon
