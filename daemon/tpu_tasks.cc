// The tpu-sim tasks: "tile" (a tile per kernel of the default fusion) and "fusion" (which
// producers join their consumers' kernels), scored in simulated seconds on a TPU-like core spec,
// against the compiler's defaults (DefaultTile, all-fused) as the baseline.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/analytical.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "costmodels/analytical/tile_cost.h"
#include "costmodels/features/kernel_graph.h"
#include "daemon/config_search.h"
#include "daemon/cpu_tasks.h"
#include "daemon/gpu_tasks.h"
#include "daemon/learned_cost_models.h"
#include "daemon/sim_workers.h"
#include "ir/fingerprint.h"
#include "nlohmann/json.hpp"
#include "optimizers/core/model_topk.h"
#include "optimizers/fusion/fusion_problem.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/tiling/tile_problem.h"

namespace mltune::daemon {
namespace {

using nlohmann::json;

absl::StatusOr<backends::tpu::TpuSimulator> MakeSimulator(const backends::TargetSpec& spec,
                                                          const ConfigTaskOptions& options) {
  backends::tpu::TpuSimOptions sim;
  sim.noise_stddev = options.noise;
  sim.seed = options.seed;
  return backends::tpu::TpuSimulator::Create(spec, sim);
}

json KernelTable(const std::vector<costmodels::KernelSummary>& kernels,
                 const backends::tpu::TpuResult& timing,
                 const std::vector<backends::tpu::TileConfig>* tiles) {
  json out = json::array();
  for (size_t i = 0; i < kernels.size() && i < timing.kernels.size(); ++i) {
    json k = {{"kernel", kernels[i].name},
              {"ops", kernels[i].ops},
              {"seconds", timing.kernels[i].seconds},
              {"hbm_bytes", timing.kernels[i].hbm_bytes},
              {"steps", timing.kernels[i].steps}};
    if (tiles != nullptr && !kernels[i].opaque) k["tile"] = backends::tpu::TileName((*tiles)[i]);
    out.push_back(std::move(k));
  }
  return out;
}

// A job's simulated kernel times as training rows, as `mltune collect --target <spec>` logs them:
// each non-opaque kernel's key and graph (once), then (key, tile, seconds) rows under
// "<task>-kernel", with the analytical baseline's prediction under "<task>-kernel-analytical".
// A search simulates the same kernel at the same tile again and again: each pair is logged once
// per job.
class SimKernelLog {
 public:
  SimKernelLog(const TaskRequest& request, const costmodels::OpGraph& graph, std::string_view task)
      : request_(request),
        graph_(graph),
        task_(std::string(task) + "-kernel"),
        fingerprint_(ir::Fingerprint(*request.module)) {}

  // Kernel `kernel` (plan.kernels[k]) at `tile`, simulated as `timing`; `analytical` is the
  // baseline's prediction.
  void Log(const costmodels::FusionPlan& plan, size_t k, const costmodels::KernelSummary& kernel,
           const backends::tpu::TileConfig& tile, const backends::tpu::KernelTiming& timing,
           double analytical) {
    if (!request_.record_measurement || kernel.opaque || !timing.valid) return;
    const std::string& key = Key(plan.kernels[k], kernel.name);
    if (key.empty()) return;
    std::string configuration = opt::tiling::TpuTileConfigText(tile);
    if (!logged_.insert(absl::StrCat(key, "\n", configuration)).second) return;
    storage::MeasurementRecord m;
    m.graph_key = key;
    m.task = task_;
    m.target = request_.target;
    m.configuration = configuration;
    m.value = timing.seconds;
    m.worker = request_.worker;
    request_.record_measurement(m);
    m.task = task_ + "-analytical";
    m.configuration = std::move(configuration);
    m.value = analytical;
    request_.record_measurement(std::move(m));
  }

 private:
  // The kernel's key ("" when the features cannot describe it), its graph recorded the first time.
  const std::string& Key(const std::vector<int32_t>& members, const std::string& name) {
    auto [it, fresh] = keys_.emplace(members, "");
    if (!fresh) return it->second;
    absl::StatusOr<std::string> key =
        costmodels::features::KernelKey(graph_, *request_.module, members);
    absl::StatusOr<costmodels::features::KernelGraph> graph =
        costmodels::features::BuildKernelGraph(graph_, *request_.module, members, {});
    if (!key.ok() || !graph.ok()) return it->second;
    it->second = *key;
    if (request_.record_kernel_graph) {
      storage::KernelGraphRecord g;
      g.kernel_key = *key;
      g.graph = costmodels::features::SerializeKernelGraph(*graph);
      g.target = request_.target;
      g.module = request_.module->name();
      g.module_fingerprint = fingerprint_;
      g.kernel = name;
      request_.record_kernel_graph(std::move(g));
    }
    return it->second;
  }

  const TaskRequest& request_;
  const costmodels::OpGraph& graph_;
  const std::string task_;
  const std::string fingerprint_;
  std::map<std::vector<int32_t>, std::string> keys_;  // by the kernel's op-graph nodes
  std::set<std::string> logged_;                      // key and configuration
};

class TileTask : public ConfigTask {
 public:
  TileTask()
      : ConfigTask("tile",
                   "per-kernel tiles of the default fusion against the compiler's defaults: on "
                   "cpu the generated kernels' parameters (blocking, unroll, vectorization, "
                   "reduction order, GEMM library or register/cache tiles), measured; on gpu "
                   "launch shapes, reduction splits, GEMM tiles or cuBLASLt algorithms, "
                   "measured on the attached GPU; on tpu "
                   "targets m, n, k and double buffering in simulated seconds",
                   "tpu-sim", true) {}

  std::vector<OwnStrategy> own_strategies() const override {
    return {{opt::kModelTopK,
             "the newest learned cost model of the target (mltune train-cost-model --target T) "
             "ranks up to 256 configurations per kernel and only its 5 best are measured (cpu "
             "and tpu targets)",
             [](std::string_view target) { return opt::guided::CostModelName("tile", target); }}};
  }

 protected:
  bool RunsOnCpu() const override { return true; }
  absl::StatusOr<TaskOutcome> SearchCpu(const TaskRequest& request,
                                        const ConfigTaskOptions& options) const override {
    return SearchCpuTiles(request, options);
  }
  bool RunsOnGpu() const override { return true; }
  absl::StatusOr<TaskOutcome> SearchGpu(const TaskRequest& request,
                                        const ConfigTaskOptions& options) const override {
    return SearchGpuTiles(request, options);
  }
  absl::StatusOr<TaskOutcome> Search(const TaskRequest& request, const ConfigTaskOptions& options,
                                     const backends::TargetSpec& spec) const override {
    absl::StatusOr<backends::tpu::TpuSimulator> sim = MakeSimulator(spec, options);
    if (!sim.ok()) return sim.status();
    const costmodels::OpGraph graph = costmodels::BuildOpGraph(*request.module);
    const costmodels::FusionPlan plan = costmodels::PlanFusion(graph);
    opt::tiling::TpuTileProblem problem(costmodels::SummarizeKernels(graph, plan), *std::move(sim));
    // Every simulated candidate's kernels are training data, as collect's.
    SimKernelLog log(request, graph, name());
    problem.SetObserver([&](const std::vector<backends::tpu::TileConfig>& tiles,
                            const backends::tpu::TpuResult& r) {
      for (size_t k = 0; k < problem.kernels().size() && k < r.kernels.size(); ++k) {
        const costmodels::KernelSummary& kernel = problem.kernels()[k];
        log.Log(
            plan, k, kernel, tiles[k], r.kernels[k],
            costmodels::AnalyticalTileSeconds(kernel, {tiles[k].m, tiles[k].n, tiles[k].k}, spec));
      }
    });
    if (request.strategy == opt::kModelTopK) {
      absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> model =
          NewestCostModel(request, "tile");
      if (!model.ok()) return model.status();
      problem.SetRanker(
          opt::guided::TpuTileRanker(*std::move(model), graph, *request.module, plan));
    }
    const double baseline = problem.Evaluate(problem.DefaultCandidate());
    absl::StatusOr<ConfigSearchRun> run = RunConfigSearch(request, name(), problem, options.seed,
                                                          baseline, baseline, "simulated seconds");
    if (!run.ok()) return run.status();
    const std::vector<backends::tpu::TileConfig> tiles = problem.Decode(run->best);
    run->outcome.artifacts["tiles"] =
        KernelTable(problem.kernels(), problem.Simulate(run->best), &tiles).dump(1);
    return std::move(run->outcome);
  }
};

class FusionTask : public ConfigTask {
 public:
  FusionTask()
      : ConfigTask("fusion",
                   "which producers fuse into their consumers' kernels (XLA's rules) against the "
                   "compiler's default fusion: on cpu and gpu fusion priorities, the whole module "
                   "measured; on tpu targets fuse/keep per producer in simulated seconds",
                   "tpu-sim", true) {}

  std::vector<OwnStrategy> own_strategies() const override {
    return {{opt::kModelTopK,
             "the newest learned cost model of the target (mltune train-cost-model --task "
             "fusion --target T) predicts each fusion plan's time as the sum of its kernels', "
             "explores plans with it and measures only the 10 best ranked, then climbs in the "
             "model's order (cpu and tpu targets)",
             [](std::string_view target) { return opt::guided::CostModelName("fusion", target); }}};
  }

 protected:
  bool RunsOnCpu() const override { return true; }
  absl::StatusOr<TaskOutcome> SearchCpu(const TaskRequest& request,
                                        const ConfigTaskOptions& options) const override {
    return SearchCpuFusion(request, options);
  }
  bool RunsOnGpu() const override { return true; }
  absl::StatusOr<TaskOutcome> SearchGpu(const TaskRequest& request,
                                        const ConfigTaskOptions& options) const override {
    return SearchGpuFusion(request, options);
  }
  absl::StatusOr<TaskOutcome> Search(const TaskRequest& request, const ConfigTaskOptions& options,
                                     const backends::TargetSpec& spec) const override {
    absl::StatusOr<backends::tpu::TpuSimulator> sim = MakeSimulator(spec, options);
    if (!sim.ok()) return sim.status();
    backends::tpu::TpuSimulator unfused_sim = *sim;
    opt::fusion::TpuFusionProblem problem(costmodels::BuildOpGraph(*request.module),
                                          *std::move(sim));
    const costmodels::OpGraph& graph = problem.graph();
    // Every simulated plan's kernels are training data, each at its default tile, as collect's.
    SimKernelLog log(request, graph, name());
    problem.SetObserver([&](const costmodels::FusionPlan& plan,
                            const std::vector<costmodels::KernelSummary>& kernels,
                            const backends::tpu::TpuResult& r) {
      for (size_t k = 0; k < kernels.size() && k < r.kernels.size(); ++k) {
        log.Log(
            plan, k, kernels[k], unfused_sim.DefaultTile(kernels[k]), r.kernels[k],
            costmodels::RooflineSeconds(kernels[k].roofline_cost, spec, kernels[k].element_type));
      }
    });
    if (request.strategy == opt::kModelTopK) {
      absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> model =
          NewestCostModel(request, "fusion");
      if (!model.ok()) return model.status();
      problem.SetRanker(
          opt::guided::TpuFusionRanker(*std::move(model), *request.module, graph, unfused_sim));
    }
    const backends::tpu::TpuResult unfused =
        unfused_sim.Simulate(costmodels::SummarizeKernels(graph, costmodels::Unfused(graph)));
    const double baseline = problem.Evaluate(problem.DefaultCandidate());
    absl::StatusOr<ConfigSearchRun> run = RunConfigSearch(
        request, name(), problem, options.seed, unfused.valid ? unfused.seconds : baseline,
        baseline, "simulated seconds", opt::FusionModelTopKParams());
    if (!run.ok()) return run.status();
    const costmodels::FusionPlan plan = problem.Plan(run->best);
    json kernels = KernelTable(costmodels::SummarizeKernels(graph, plan),
                               problem.Simulate(run->best), nullptr);
    for (size_t k = 0; k < plan.kernels.size() && k < kernels.size(); ++k) {
      json ops = json::array();
      for (int32_t node : plan.kernels[k])
        ops.push_back(graph.nodes[static_cast<size_t>(node)].name);
      kernels[k]["op_names"] = std::move(ops);
    }
    run->outcome.artifacts["kernels"] = kernels.dump(1);
    return std::move(run->outcome);
  }
};

}  // namespace

std::unique_ptr<Task> MakeTileTask() { return std::make_unique<TileTask>(); }
std::unique_ptr<Task> MakeFusionTask() { return std::make_unique<FusionTask>(); }

}  // namespace mltune::daemon
