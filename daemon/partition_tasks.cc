// The multi-device tasks: "mcm-partition" (ops onto the chips of a multi-chip module, mcm-sim,
// scored by the pipeline's stage time, against the balanced contiguous partition) and
// "placement" (ops onto the devices of a cluster, cluster-sim, scored by the makespan, against
// Baechi's m-ETF placement).
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backends/cluster_sim/cluster_sim.h"
#include "backends/mcm_sim/mcm_sim.h"
#include "costmodels/analytical/op_graph.h"
#include "daemon/config_search.h"
#include "daemon/sim_workers.h"
#include "nlohmann/json.hpp"
#include "optimizers/mcm/mcm_problem.h"
#include "optimizers/placement/placement_problem.h"

namespace mltune::daemon {
namespace {

using nlohmann::json;

json Assignment(const costmodels::OpGraph& graph, const std::vector<int32_t>& unit) {
  json out = json::object();
  for (int32_t i = 0; i < graph.size() && static_cast<size_t>(i) < unit.size(); ++i) {
    out[graph.nodes[static_cast<size_t>(i)].name] = unit[static_cast<size_t>(i)];
  }
  return out;
}

class McmPartitionTask : public ConfigTask {
 public:
  McmPartitionTask()
      : ConfigTask(
            "mcm-partition",
            "ops onto the chips of a multi-chip module as a pipeline (acyclic, no skipped chip, "
            "no chip triangle, SRAM), in simulated stage seconds, against the balanced partition",
            "mcm-sim", false) {}

 protected:
  absl::StatusOr<TaskOutcome> Search(const TaskRequest& request, const ConfigTaskOptions& options,
                                     const backends::TargetSpec& spec) const override {
    absl::StatusOr<backends::mcm::McmSimulator> sim = backends::mcm::McmSimulator::Create(spec);
    if (!sim.ok()) return sim.status();
    opt::mcm::McmPartitionProblem problem(costmodels::BuildOpGraph(*request.module),
                                          *std::move(sim));
    const double baseline = problem.Evaluate(problem.BalancedCandidate());
    // The graph as given: everything on one chip, when it fits.
    const backends::mcm::McmResult one_chip = problem.simulator().Simulate(
        problem.graph(), std::vector<int32_t>(static_cast<size_t>(problem.graph().size()), 0));
    absl::StatusOr<ConfigSearchRun> run = RunConfigSearch(
        request, name(), problem, options.seed, one_chip.valid ? one_chip.stage_seconds : baseline,
        baseline, "simulated stage seconds");
    if (!run.ok()) return run.status();
    const backends::mcm::McmResult best = problem.Simulate(run->best);
    run->outcome.artifacts["partition"] =
        Assignment(problem.graph(), problem.Decode(run->best)).dump(1);
    run->outcome.artifacts["summary"] = json{
        {"throughput_per_s", best.throughput},
        {"stage_seconds", best.stage_seconds},
        {"chips_used", best.chips_used},
        {"bottleneck_chip", best.bottleneck_chip},
        {"transfer_bytes",
         best.transfer_bytes}}.dump(1);
    return std::move(run->outcome);
  }
};

class PlacementTask : public ConfigTask {
 public:
  PlacementTask()
      : ConfigTask(
            "placement",
            "ops onto the devices of a cluster (event-driven simulation with links and memory), "
            "in simulated makespan seconds, against Baechi's m-ETF placement",
            "cluster-sim", false) {}

 protected:
  absl::StatusOr<TaskOutcome> Search(const TaskRequest& request, const ConfigTaskOptions& options,
                                     const backends::TargetSpec& spec) const override {
    absl::StatusOr<backends::cluster::ClusterSimulator> sim =
        backends::cluster::ClusterSimulator::Create(spec);
    if (!sim.ok()) return sim.status();
    opt::placement::PlacementProblem problem(costmodels::BuildOpGraph(*request.module),
                                             *std::move(sim));
    const double baseline = problem.Evaluate(problem.EarliestFinishCandidate());
    const double one_device =
        problem.Evaluate(opt::Candidate(static_cast<size_t>(problem.graph().size()), 0));
    absl::StatusOr<ConfigSearchRun> run = RunConfigSearch(
        request, name(), problem, options.seed, std::isfinite(one_device) ? one_device : baseline,
        baseline, "simulated makespan seconds");
    if (!run.ok()) return run.status();
    const backends::cluster::ClusterResult best = problem.Simulate(run->best);
    run->outcome.artifacts["placement"] =
        Assignment(problem.graph(), problem.Decode(run->best)).dump(1);
    run->outcome.artifacts["summary"] = json{
        {"makespan_seconds", best.makespan_s},
        {"busy_seconds", best.busy_s},
        {"peak_memory_bytes", best.peak_memory_bytes},
        {"transfer_bytes", best.transfer_bytes},
        {"transfers", best.transfers}}.dump(1);
    return std::move(run->outcome);
  }
};

}  // namespace

std::unique_ptr<Task> MakeMcmPartitionTask() { return std::make_unique<McmPartitionTask>(); }
std::unique_ptr<Task> MakePlacementTask() { return std::make_unique<PlacementTask>(); }

}  // namespace mltune::daemon
