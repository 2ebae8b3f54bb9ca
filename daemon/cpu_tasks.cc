#include "daemon/cpu_tasks.h"

#include <cmath>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "daemon/learned_cost_models.h"
#include "nlohmann/json.hpp"
#include "optimizers/core/model_topk.h"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/tiling/confirm_tuned_kernels.h"
#include "optimizers/tiling/cpu_kernel_graph.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace mltune::daemon {
namespace {

using nlohmann::json;
namespace cpu = backends::cpu;

absl::StatusOr<std::unique_ptr<ir::Module>> PrepareModule(const ir::Module& module,
                                                          const ConfigTaskOptions& options) {
  if (options.noise != 0) {
    return absl::InvalidArgumentError("option noise applies to tpu-sim only; cpu is measured");
  }
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = cpu::RunCpuPipeline(module);
  if (!optimized.ok() && absl::IsUnimplemented(optimized.status())) {
    return absl::FailedPreconditionError(optimized.status().message());
  }
  return optimized;
}

// Times the whole module under `configs` and `plan`; +inf (with the error) when it fails.
absl::StatusOr<double> ModuleSeconds(const ir::Module& module,
                                     const std::vector<cpu::KernelConfig>& configs,
                                     const costmodels::FusionPlan* plan, uint64_t seed) {
  absl::StatusOr<cpu::Timing> t =
      cpu::MeasureModule(module, configs, plan, opt::tiling::ModuleTuningMeasureOptions(), seed);
  if (!t.ok()) return t.status();
  return t->median_s;
}

}  // namespace

absl::StatusOr<TaskOutcome> SearchCpuTiles(const TaskRequest& request,
                                           const ConfigTaskOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = PrepareModule(*request.module, options);
  if (!module.ok()) return module.status();
  absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(**module);
  if (!lowered.ok()) return absl::FailedPreconditionError(lowered.status().message());
  const cpu::CompilerOptions compiler;
  const cpu::MeasureOptions measure = opt::tiling::KernelTuningMeasureOptions();
  // Kernel-level rows are the learned cost model's training data: each kernel's structural key
  // (costmodels/features) and graph, stored once, then (key, parameters, measured seconds) rows.
  std::vector<std::string> kernel_keys(lowered->kernels.size());
  auto kernel_key = [&](int32_t k) -> const std::string& {
    std::string& key = kernel_keys[static_cast<size_t>(k)];
    if (!key.empty()) return key;
    absl::StatusOr<opt::tiling::CpuKernelFeatures> features =
        opt::tiling::CpuKernelFeaturesOf(*lowered, k);
    if (!features.ok()) return key;  // no key: the kernel is measured but not logged
    key = features->key;
    if (request.record_kernel_graph) {
      storage::KernelGraphRecord g;
      g.kernel_key = key;
      g.graph = costmodels::features::SerializeKernelGraph(features->graph);
      g.target = "cpu";
      g.module = request.module->name();
      g.module_fingerprint = request.fingerprint;
      g.kernel = lowered->kernels[static_cast<size_t>(k)].name;
      request.record_kernel_graph(std::move(g));
    }
    return key;
  };
  // `task` "tile-kernel" rows are the training data; the confirmation's re-measurements are kept
  // apart ("tile-kernel-confirm"), as a second row of one configuration would pair it with itself.
  auto measure_kernel = [&](std::string_view task, int32_t k,
                            const cpu::KernelConfig& config) -> absl::StatusOr<double> {
    absl::StatusOr<cpu::Timing> t =
        cpu::MeasureKernel(*lowered, k, config, compiler, measure, options.seed);
    if (!t.ok()) return t.status();
    if (request.record_measurement && !kernel_key(k).empty()) {
      storage::MeasurementRecord m;
      m.graph_key = kernel_key(k);
      m.task = std::string(task);
      m.target = "cpu";
      m.configuration =
          opt::tiling::CpuConfigText(lowered->kernels[static_cast<size_t>(k)], config);
      m.value = t->median_s;
      m.worker = request.worker;
      request.record_measurement(std::move(m));
    }
    return t->median_s;
  };
  opt::tiling::CpuTileProblem problem(*lowered, [&](int32_t k, const cpu::KernelConfig& config) {
    return measure_kernel("tile-kernel", k, config);
  });
  if (request.strategy == opt::kModelTopK) {
    // Checked before the baseline is measured: without a model there is nothing to rank with.
    absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> model =
        NewestCostModel(request, "tile");
    if (!model.ok()) return model.status();
    problem.SetRanker(opt::guided::CpuTileRanker(*std::move(model), *lowered));
  }
  const double baseline = problem.Evaluate(problem.DefaultCandidate());
  if (!std::isfinite(baseline)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the default kernels did not run: ", problem.last_error()));
  }
  absl::StatusOr<ConfigSearchRun> run = RunConfigSearch(request, "tile", problem, options.seed,
                                                        baseline, baseline, "measured seconds");
  if (!run.ok()) return run.status();
  const std::vector<cpu::KernelConfig> defaults = problem.Decode(problem.DefaultCandidate());
  // Winners that do not hold up when measured again go back to their defaults.
  const opt::tiling::ConfirmedWinners confirmed = opt::tiling::ConfirmWinners(
      problem, run->best, [&](int32_t k, const cpu::KernelConfig& config) {
        return measure_kernel("tile-kernel-confirm", k, config);
      });
  if (!confirmed.reverted.empty()) {
    run->best = confirmed.best;
    run->outcome.tuned_score = problem.Evaluate(run->best);
    run->outcome.artifacts["configuration"] = opt::ConfigProblem::Format(run->best);
  }
  const std::vector<cpu::KernelConfig> tuned = problem.Decode(run->best);
  json kernels = json::array();
  for (const cpu::Kernel& k : lowered->kernels) {
    const size_t i = static_cast<size_t>(k.id);
    json entry = {{"kernel", k.name},
                  {"kind", cpu::KernelKindName(k.kind)},
                  {"ops", k.members.size()},
                  {"config", opt::tiling::CpuConfigText(k, tuned[i])},
                  {"default_seconds", problem.KernelSeconds(k.id, defaults[i])},
                  {"tuned_seconds", problem.KernelSeconds(k.id, tuned[i])}};
    for (const opt::tiling::KernelConfirmation& c : confirmed.checks) {
      if (c.kernel != k.id) continue;
      // JSON has no infinity: a configuration whose every re-run failed has no figure.
      json check = {{"kept", c.kept}};
      if (std::isfinite(c.default_seconds)) check["default_seconds"] = c.default_seconds;
      if (std::isfinite(c.tuned_seconds)) check["tuned_seconds"] = c.tuned_seconds;
      entry["confirmation"] = std::move(check);
    }
    kernels.push_back(std::move(entry));
  }
  run->outcome.artifacts["kernels"] = kernels.dump(1);
  run->outcome.winners_checked = static_cast<int64_t>(confirmed.checks.size());
  run->outcome.winners_reverted = static_cast<int64_t>(confirmed.reverted.size());
  run->outcome.artifacts["confirmation"] =
      json{{"checked", confirmed.checks.size()}, {"reverted", confirmed.reverted.size()}}.dump();
  // The kernels were timed alone; the whole module, default against tuned, confirms the gain.
  json whole = json::object();
  absl::StatusOr<double> d = ModuleSeconds(**module, defaults, nullptr, options.seed);
  absl::StatusOr<double> t = ModuleSeconds(**module, tuned, nullptr, options.seed);
  if (d.ok()) whole["default_seconds"] = *d;
  if (t.ok()) whole["tuned_seconds"] = *t;
  run->outcome.artifacts["module_timing"] = whole.dump();
  return std::move(run->outcome);
}

absl::StatusOr<TaskOutcome> SearchCpuFusion(const TaskRequest& request,
                                            const ConfigTaskOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = PrepareModule(*request.module, options);
  if (!module.ok()) return module.status();
  // model-topk learns from each measured plan's kernel times (CpuFusionRanker's observe).
  cpu::MeasureOptions plan_timing = opt::tiling::ModuleTuningMeasureOptions();
  plan_timing.kernel_times = request.strategy == opt::kModelTopK;
  opt::fusion::CpuFusionProblem problem(
      costmodels::BuildOpGraph(**module),
      [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<opt::fusion::PlanTiming> {
        absl::StatusOr<cpu::Timing> t =
            cpu::MeasureModule(**module, {}, &plan, plan_timing, options.seed);
        if (!t.ok()) return t.status();
        return opt::fusion::PlanTiming{t->median_s, t->kernel_s};
      });
  if (request.strategy == opt::kModelTopK) {
    // Checked before the baseline is measured: without a model there is nothing to rank with.
    absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> model =
        NewestCostModel(request, "fusion");
    if (!model.ok()) return model.status();
    problem.SetRanker(opt::guided::CpuFusionRanker(*std::move(model), **module));
  }
  const double baseline = problem.Evaluate(problem.DefaultCandidate());
  if (!std::isfinite(baseline)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the default fusion did not run: ", problem.last_error()));
  }
  const costmodels::FusionPlan unfused = costmodels::Unfused(problem.graph());
  absl::StatusOr<double> original = ModuleSeconds(**module, {}, &unfused, options.seed);
  absl::StatusOr<ConfigSearchRun> run = RunConfigSearch(
      request, "fusion", problem, options.seed, original.ok() ? *original : baseline, baseline,
      "measured seconds", opt::FusionModelTopKParams());
  if (!run.ok()) return run.status();
  const costmodels::FusionPlan plan = problem.Plan(run->best);
  json kernels = json::array();
  for (const std::vector<int32_t>& members : plan.kernels) {
    json ops = json::array();
    for (int32_t node : members)
      ops.push_back(problem.graph().nodes[static_cast<size_t>(node)].name);
    kernels.push_back({{"op_names", std::move(ops)}});
  }
  run->outcome.artifacts["kernels"] = kernels.dump(1);
  return std::move(run->outcome);
}

}  // namespace mltune::daemon
