#include "daemon/cpu_tasks.h"

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cut_unsupported.h"
#include "daemon/learned_cost_models.h"
#include "ir/fingerprint.h"
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

// The cpu tasks measure, so the simulators' noise option has no meaning here.
absl::Status CheckMeasuredOptions(const ConfigTaskOptions& options) {
  if (options.noise != 0) {
    return absl::InvalidArgumentError("option noise applies to tpu-sim only; cpu is measured");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ir::Module>> PrepareModule(const ir::Module& module,
                                                          const ConfigTaskOptions& options) {
  if (absl::Status s = CheckMeasuredOptions(options); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = cpu::RunCpuPipeline(module);
  if (!optimized.ok() && absl::IsUnimplemented(optimized.status())) {
    return absl::FailedPreconditionError(optimized.status().message());
  }
  return optimized;
}

// The tile task's module: the cpu pipeline's, with the ops the backend cannot lower (gather, sort,
// custom calls, ...) cut into parameters. Tiles are tuned and timed per kernel, so every kernel
// the backend can generate is tuned even where the module as a whole cannot run yet.
absl::StatusOr<cpu::CutModule> PrepareTileModule(const ir::Module& module,
                                                 const ConfigTaskOptions& options) {
  if (absl::Status s = CheckMeasuredOptions(options); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = cpu::RunCpuPasses(module);
  if (!optimized.ok()) return optimized.status();
  absl::StatusOr<cpu::CutModule> cut = cpu::CutUnsupported(**optimized);
  if (!cut.ok()) return absl::FailedPreconditionError(cut.status().message());
  return cut;
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

// A job's kernel-level rows, the learned cost models' training data: each kernel's structural key
// (costmodels/features) and graph, stored once, then (key, parameters, seconds) rows. Graphs name
// the module after the cpu pipeline by its fingerprint, as `mltune collect` does, so that the
// daemon's kernels and collect's of one program are one program to train-cost-model's split.
class KernelLog {
 public:
  KernelLog(const TaskRequest& request, const ir::Module& prepared)
      : request_(request), fingerprint_(ir::Fingerprint(prepared)) {}

  bool recording() const { return static_cast<bool>(request_.record_measurement); }

  // Kernel `k`'s key, its graph recorded the first time this job sees it; "" when the features
  // cannot describe the kernel (it is measured, not logged).
  std::string Key(const cpu::LoweredModule& lowered, int32_t k) {
    absl::StatusOr<opt::tiling::CpuKernelFeatures> features =
        opt::tiling::CpuKernelFeaturesOf(lowered, k);
    if (!features.ok()) return "";
    if (request_.record_kernel_graph && graphs_.insert(features->key).second) {
      storage::KernelGraphRecord g;
      g.kernel_key = features->key;
      g.graph = costmodels::features::SerializeKernelGraph(features->graph);
      g.target = "cpu";
      g.module = request_.module->name();
      g.module_fingerprint = fingerprint_;
      g.kernel = lowered.kernels[static_cast<size_t>(k)].name;
      request_.record_kernel_graph(std::move(g));
    }
    return features->key;
  }

  // `measured_by`: the remote worker that timed it, "" for this daemon's own runner.
  void Record(std::string_view task, const std::string& key, const cpu::Kernel& kernel,
              const cpu::KernelConfig& config, double seconds, const std::string& measured_by) {
    if (!recording()) return;
    storage::MeasurementRecord m;
    m.graph_key = key;
    m.task = std::string(task);
    m.target = "cpu";
    m.configuration = opt::tiling::CpuConfigText(kernel, config);
    m.value = seconds;
    m.worker = measured_by.empty() ? request_.worker : measured_by;
    request_.record_measurement(std::move(m));
  }

 private:
  const TaskRequest& request_;
  const std::string fingerprint_;
  std::unordered_set<std::string> graphs_;
};

// The remote workers that timed a job's candidates, for its result's provenance ("measured
// seconds on remote-...-HOST"): the measurement log names them row by row.
class RemoteMeasurers {
 public:
  void Note(const cpu::Timing& t) {
    if (!t.measured_by.empty()) ids_.insert(t.measured_by.substr(0, t.measured_by.find(" (")));
  }
  std::string Scorer() const {
    if (ids_.empty()) return "measured seconds";
    return absl::StrCat("measured seconds on ", absl::StrJoin(ids_, ", "));
  }

 private:
  std::set<std::string> ids_;
};

}  // namespace

absl::StatusOr<TaskOutcome> SearchCpuTiles(const TaskRequest& request,
                                           const ConfigTaskOptions& options) {
  absl::StatusOr<cpu::CutModule> prepared = PrepareTileModule(*request.module, options);
  if (!prepared.ok()) return prepared.status();
  const std::vector<std::string> not_lowered = prepared->cut;
  absl::StatusOr<std::unique_ptr<ir::Module>> module = std::move(prepared->module);
  absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(**module);
  if (!lowered.ok()) return absl::FailedPreconditionError(lowered.status().message());
  const cpu::CompilerOptions compiler;
  const cpu::MeasureOptions measure = opt::tiling::KernelTuningMeasureOptions();
  KernelLog log(request, **module);
  std::vector<std::string> kernel_keys(lowered->kernels.size());
  std::vector<bool> keyed(lowered->kernels.size(), false);
  auto kernel_key = [&](int32_t k) -> const std::string& {
    const size_t i = static_cast<size_t>(k);
    if (!keyed[i]) kernel_keys[i] = log.Key(*lowered, k);
    keyed[i] = true;
    return kernel_keys[i];
  };
  RemoteMeasurers remote;
  // `task` "tile-kernel" rows are the training data; the confirmation's re-measurements are kept
  // apart ("tile-kernel-confirm"), as a second row of one configuration would pair it with itself.
  auto measure_kernel = [&](std::string_view task, int32_t k,
                            const cpu::KernelConfig& config) -> absl::StatusOr<double> {
    absl::StatusOr<cpu::Timing> t =
        cpu::MeasureKernel(*lowered, k, config, compiler, measure, options.seed);
    if (!t.ok()) return t.status();
    remote.Note(*t);
    if (log.recording() && !kernel_key(k).empty()) {
      log.Record(task, kernel_key(k), lowered->kernels[static_cast<size_t>(k)], config, t->median_s,
                 t->measured_by);
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
  run->outcome.scorer = remote.Scorer();
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
  // Kernels timed alone do not always add up to the module (caches, frequency): a tuned module
  // measured slower than the default is not returned; the defaults are.
  if (d.ok() && (!t.ok() || *t > *d)) {
    run->best = problem.DefaultCandidate();
    run->outcome.tuned_score = baseline;
    run->outcome.artifacts["configuration"] = opt::ConfigProblem::Format(run->best);
    whole["returned"] = "default (the tuned module measured slower)";
  } else {
    whole["returned"] = "tuned";
  }
  if (!not_lowered.empty()) {
    // Then the module timed is the cut one: its kernels, with those ops' results as inputs.
    whole["ops_as_parameters"] = not_lowered.size();
    run->outcome.artifacts["not_lowered"] = json(not_lowered).dump();
  }
  run->outcome.artifacts["module_timing"] = whole.dump();
  return std::move(run->outcome);
}

absl::StatusOr<TaskOutcome> SearchCpuFusion(const TaskRequest& request,
                                            const ConfigTaskOptions& options) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = PrepareModule(*request.module, options);
  if (!module.ok()) return module.status();
  // Every plan's kernels are timed inside its run as well: model-topk's ranker learns from them
  // within the job (CpuFusionRanker's observe), and the log keeps them as training data.
  cpu::MeasureOptions plan_timing = opt::tiling::ModuleTuningMeasureOptions();
  plan_timing.kernel_times = true;
  KernelLog log(request, **module);
  RemoteMeasurers remote;
  // Plans of one search share most of their kernels: each is logged a few times per job, not once
  // per plan that holds it.
  constexpr int kRowsPerKernel = 3;
  std::unordered_map<std::string, int> rows_of;
  opt::fusion::CpuFusionProblem problem(
      costmodels::BuildOpGraph(**module),
      [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<opt::fusion::PlanTiming> {
        absl::StatusOr<cpu::CompiledModule> compiled = cpu::CompileModule(**module, {}, &plan);
        if (!compiled.ok()) return compiled.status();
        absl::StatusOr<cpu::Timing> t =
            cpu::Measure(compiled->object, compiled->program, options.seed, plan_timing);
        if (!t.ok()) return t.status();
        remote.Note(*t);
        const cpu::LoweredModule& lowered = compiled->lowered;
        if (log.recording() && t->kernel_s.size() == lowered.kernels.size()) {
          for (const cpu::Kernel& k : lowered.kernels) {
            const double seconds = t->kernel_s[static_cast<size_t>(k.id)];
            if (!(seconds > 0)) continue;  // under the timer's resolution
            const std::string key = log.Key(lowered, k.id);
            if (key.empty() || ++rows_of[key] > kRowsPerKernel) continue;
            log.Record(opt::fusion::kFusionKernelInModuleTask, key, k,
                       compiled->configs[static_cast<size_t>(k.id)], seconds, t->measured_by);
          }
        }
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
  run->outcome.scorer = remote.Scorer();
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
