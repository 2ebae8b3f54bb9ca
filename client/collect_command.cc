// `mltune collect FILES_OR_DIRS... --target cpu|tpu-sim --task tile|fusion --db PATH`: the
// learned cost model's training data (docs/cost_models.md). This file checks the flags and picks
// the collector (collect_cpu.cc, collect_tpu.cc), which plans the kernels and configurations;
// collect_runner.cc measures the plan, skipping what the log holds, so a rerun resumes.
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "backends/spec/target_spec.h"
#include "client/cli_commands.h"
#include "client/collect_runner.h"
#include "client/load.h"
#include "client/sim_targets.h"
#include "storage/store.h"

namespace mltune::client {

int RunCollect(const CollectCommand& cmd, std::ostream& out, std::ostream& err) {
  CollectPlan plan;
  // cpu, or a tpu spec (tpu-sim meaning its default spec, as the daemon resolves it): rows are
  // logged under the spec name, which train-cost-model resolves the same way.
  plan.target = ResolveAlias(cmd.target);
  const bool cpu = plan.target == "cpu";
  if (!cpu) {
    const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find(plan.target);
    if (spec == nullptr || spec->kind != "tpu") {
      err << "error: --target " << cmd.target
          << ": collect supports cpu, tpu-sim and tpu spec names (" << KnownTargets() << ")\n";
      return 1;
    }
  }
  if (cmd.task != "tile" && cmd.task != "fusion") {
    err << "error: --task " << cmd.task
        << ": collect supports tile (kernel configurations) and fusion (kernels of random "
           "fusion decisions)\n";
    return 1;
  }
  if (cmd.db.empty()) {
    err << "error: --db PATH is required\n";
    return 1;
  }
  if (cmd.per_kernel < 1) {
    err << "error: --per-kernel must be at least 1\n";
    return 1;
  }
  if (cmd.per_module < 0) {
    err << "error: --per-module must be at least 1 (or 0 for the task's default)\n";
    return 1;
  }
  if (cmd.rounds < 0 || cmd.rounds > 100) {
    err << "error: --rounds must be in [1, 100] (measurements per configuration; 0: the "
           "target's default)\n";
    return 1;
  }
  if (cmd.rounds > 1 && !cpu) {
    err << "error: --rounds is for --target cpu (simulated times are drawn once, with --noise)\n";
    return 1;
  }
  if (!(cmd.noise >= 0 && cmd.noise <= 1)) {
    err << "error: --noise must be in [0, 1] (the log-normal sigma of simulated times)\n";
    return 1;
  }
  if (cmd.cut_unsupported && cmd.target != "cpu") {
    err << "error: --cut-unsupported is for --target cpu (the simulators price every op)\n";
    return 1;
  }
  if (!(cmd.seconds >= 0)) {
    err << "error: --seconds must be >= 0 (0: no limit)\n";
    return 1;
  }
  std::optional<std::vector<InputFile>> files = CollectHloFiles(cmd.inputs, err);
  if (!files) return 1;
  if (files->empty()) {
    err << "error: no HLO files in " << cmd.inputs.size() << " input(s)\n";
    return 1;
  }
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(cmd.db);
  if (!store.ok()) {
    err << "error: " << store.status().message() << "\n";
    return 1;
  }

  const bool tile = cmd.task == "tile";
  plan.log_task = tile ? "tile-kernel" : "fusion-kernel";  // as the daemon's tile task logs
  plan.once_per_kernel = !tile;
  plan.rounds = !cpu ? 1 : cmd.rounds > 0 ? cmd.rounds : 3;
  const bool planned =
      cpu ? (tile ? PlanCpuTile(cmd, *files, plan, err) : PlanCpuFusion(cmd, *files, plan, err))
          : (tile ? PlanTpuTile(cmd, *files, plan, err) : PlanTpuFusion(cmd, *files, plan, err));
  if (!planned) return 1;
  if (plan.modules == 0) {
    err << "error: none of the " << files->size() << " file(s) can be compiled for " << cmd.target
        << "\n";
    return 1;
  }
  return RunCollectPlan(cmd, plan, **store, out, err);
}

}  // namespace mltune::client
