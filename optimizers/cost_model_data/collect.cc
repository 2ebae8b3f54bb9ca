// Collect checks the options and picks the collector (collect_cpu.cc, collect_tpu.cc), which plans
// the kernels and configurations; collect_plan.cc measures the plan, skipping what the log holds,
// so a rerun resumes.
#include "optimizers/cost_model_data/collect.h"

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/spec/target_spec.h"
#include "ir/hlo_files.h"
#include "optimizers/cost_model_data/collect_plan.h"
#include "storage/store.h"

namespace mltune::opt::cost_model_data {

absl::Status Collect(const CollectOptions& cmd, std::ostream& out, std::ostream& err) {
  CollectPlan plan;
  // cpu, or a tpu spec (tpu-sim meaning its default spec, as the daemon resolves it): rows are
  // logged under the spec name, which train-cost-model resolves the same way.
  plan.target = cmd.target;
  const bool cpu = plan.target == "cpu";
  if (!cpu) {
    const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find(plan.target);
    if (spec == nullptr || spec->kind != "tpu") {
      return absl::InvalidArgumentError(
          absl::StrCat("--target ", cmd.target, ": collect supports cpu and tpu spec names"));
    }
  }
  if (cmd.task != "tile" && cmd.task != "fusion") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--task ", cmd.task,
        ": collect supports tile (kernel configurations) and fusion (kernels of random "
        "fusion decisions)"));
  }
  if (cmd.db.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--db PATH is required"));
  }
  if (cmd.per_kernel < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--per-kernel must be at least 1"));
  }
  if (cmd.per_module < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--per-module must be at least 1 (or 0 for the task's default)"));
  }
  if (cmd.rounds < 0 || cmd.rounds > 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rounds must be in [1, 100] (measurements per configuration; 0: the "
                     "target's default)"));
  }
  if (cmd.rounds > 1 && !cpu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--rounds is for --target cpu (simulated times are drawn once, with --noise)"));
  }
  if (!(cmd.noise >= 0 && cmd.noise <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--noise must be in [0, 1] (the log-normal sigma of simulated times)"));
  }
  if (cmd.cut_unsupported && cmd.target != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("--cut-unsupported is for --target cpu (the simulators price every op)"));
  }
  if (!(cmd.seconds >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat("--seconds must be >= 0 (0: no limit)"));
  }
  absl::StatusOr<std::vector<ir::HloFile>> files = ir::FindHloFiles(cmd.inputs);
  if (!files.ok()) return files.status();
  if (files->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no HLO files in ", cmd.inputs.size(), " input(s)"));
  }
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(cmd.db);
  if (!store.ok()) return store.status();

  const bool tile = cmd.task == "tile";
  plan.log_task = tile ? "tile-kernel" : "fusion-kernel";  // as the daemon's tile task logs
  plan.once_per_kernel = !tile;
  plan.rounds = !cpu ? 1 : cmd.rounds > 0 ? cmd.rounds : 3;
  const absl::Status planned =
      cpu ? (tile ? PlanCpuTile(cmd, *files, plan, err) : PlanCpuFusion(cmd, *files, plan, err))
          : (tile ? PlanTpuTile(cmd, *files, plan, err) : PlanTpuFusion(cmd, *files, plan, err));
  if (!planned.ok()) return planned;
  if (plan.modules == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("none of the ", files->size(), " file(s) can be compiled for ", cmd.target));
  }
  return RunCollectPlan(cmd, plan, **store, out, err);
}

}  // namespace mltune::opt::cost_model_data
