#include "daemon/sim_workers.h"

#include "backends/spec/target_spec.h"

namespace mltune::daemon {

const std::vector<SimWorker>& SimWorkers() {
  static const std::vector<SimWorker>* workers = new std::vector<SimWorker>{
      {"tpu-sim", "tpu", "tpu-v4-core", "pass-order", "simulated seconds",
       "TPU-like core: kernel time from fusion and tiles (MXU padding, HBM re-reads, VMEM, "
       "double buffering)"},
      {"mcm-sim", "mcm", "mcm-36", "mcm-partition", "simulated stage seconds",
       "multi-chip module: pipeline partitions over a ring of chips, 1 / max(compute + transfer)"},
      {"cluster-sim", "gpu-cluster", "gpu-4x-nvlink", "placement", "simulated makespan seconds",
       "multi-device cluster: event-driven placement simulator with links and memory"},
  };
  return *workers;
}

std::string ResolveTarget(std::string_view target) {
  for (const SimWorker& w : SimWorkers()) {
    if (target == w.name) return w.default_target;
  }
  return std::string(target);
}

const SimWorker* WorkerForTarget(std::string_view target) {
  const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find(target);
  if (spec == nullptr) return nullptr;
  for (const SimWorker& w : SimWorkers()) {
    if (spec->kind == w.spec_kind) return &w;
  }
  return nullptr;
}

std::vector<std::string> TargetsOf(const SimWorker& worker) {
  std::vector<std::string> names;
  for (const backends::TargetSpec* spec :
       backends::TargetRegistry::Global().OfKind(worker.spec_kind)) {
    names.push_back(spec->name);
  }
  return names;
}

std::vector<std::string> TargetsOfWorker(std::string_view worker_name) {
  for (const SimWorker& w : SimWorkers()) {
    if (worker_name == w.name) return TargetsOf(w);
  }
  return {};
}

}  // namespace mltune::daemon
