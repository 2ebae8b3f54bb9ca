// The multi-device tasks: "mcm-partition" (ops onto the chips of a multi-chip module, mcm-sim,
// scored by the pipeline's stage time, against the balanced contiguous partition) and
// "placement" (ops onto the devices of a cluster, cluster-sim, scored by the makespan, against
// Baechi's m-ETF placement).
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/mcm_sim/mcm_sim.h"
#include "costmodels/analytical/op_graph.h"
#include "daemon/config_search.h"
#include "daemon/go_strategy.h"
#include "daemon/sim_workers.h"
#include "nlohmann/json.hpp"
#include "optimizers/constraints/constraints.h"
#include "optimizers/mcm/mcm_problem.h"
#include "optimizers/placement/placement_problem.h"
#include "optimizers/rl/rl.h"

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

// A baseline as a strategy: evaluates its one candidate (after the seeds).
class OneCandidate : public opt::Strategy {
 public:
  OneCandidate(std::string name, opt::Candidate candidate)
      : name_(std::move(name)), candidate_(std::move(candidate)) {}
  std::string_view name() const override { return name_; }

 protected:
  bool Run(opt::SearchContext& context) override {
    return !context.Evaluate(candidate_).has_value();
  }

 private:
  std::string name_;
  opt::Candidate candidate_;
};

class McmPartitionTask : public ConfigTask {
 public:
  McmPartitionTask()
      : ConfigTask(
            "mcm-partition",
            "ops onto the chips of a multi-chip module as a pipeline (acyclic, no skipped chip, "
            "no chip triangle, SRAM), in simulated stage seconds, against the balanced partition",
            "mcm-sim", false, /*allow_fine_tune=*/true) {}

  // The registry's strategies search where each chip starts in op order; these assign a chip to
  // every op through the constraint solver, so every partition they try is valid.
  std::vector<OwnStrategy> own_strategies() const override {
    std::vector<OwnStrategy> own;
    const opt::StrategyRegistry& solver = opt::constraints::SolverStrategies();
    for (const std::string& name : solver.Names()) {
      own.push_back({name, solver.Description(name), nullptr});
    }
    own.push_back({"contiguous-dp",
                   "the best contiguous partition in op order by DP over cut points (Tarnawski et "
                   "al. 2020), repaired by the constraint solver where the simulator refuses it",
                   nullptr});
    auto go = [](std::string_view) { return std::string(kGoModel); };
    own.push_back({"go-fix",
                   "the GO graph policy (pretrained) proposes every op's chip, the constraint "
                   "solver repairs it; option fine_tune trains it on the graph",
                   go});
    own.push_back({"go-sample",
                   "the GO graph policy (pretrained) draws each op's chip from what the "
                   "constraint solver still allows; option fine_tune trains it on the graph",
                   go});
    return own;
  }

 protected:
  absl::StatusOr<TaskOutcome> Search(const TaskRequest& request, const ConfigTaskOptions& options,
                                     const backends::TargetSpec& spec) const override {
    absl::StatusOr<backends::mcm::McmSimulator> sim = backends::mcm::McmSimulator::Create(spec);
    if (!sim.ok()) return sim.status();
    const bool go = request.strategy == "go-fix" || request.strategy == "go-sample";
    if (options.fine_tune && !go) {
      return absl::InvalidArgumentError(
          "option fine_tune applies to strategies go-fix and "
          "go-sample only");
    }
    if (go || request.strategy == "contiguous-dp" ||
        opt::constraints::SolverStrategies().Create(request.strategy).ok()) {
      return SearchChips(request, options, *std::move(sim), go);
    }
    opt::mcm::McmPartitionProblem problem(costmodels::BuildOpGraph(*request.module),
                                          *std::move(sim));
    const double baseline = problem.Evaluate(problem.BalancedCandidate());
    absl::StatusOr<ConfigSearchRun> run =
        RunConfigSearch(request, name(), problem, options.seed,
                        OneChip(problem.graph(), problem.simulator(), baseline), baseline,
                        "simulated stage seconds");
    if (!run.ok()) return run.status();
    const opt::Candidate best = run->best;
    return Finish(*std::move(run), problem.graph(), problem.Decode(best), problem.Simulate(best));
  }

 private:
  // The graph as given: everything on one chip, when it fits.
  static double OneChip(const costmodels::OpGraph& graph, const backends::mcm::McmSimulator& sim,
                        double otherwise) {
    const backends::mcm::McmResult r =
        sim.Simulate(graph, std::vector<int32_t>(static_cast<size_t>(graph.size()), 0));
    return r.valid ? r.stage_seconds : otherwise;
  }

  absl::StatusOr<TaskOutcome> SearchChips(const TaskRequest& request,
                                          const ConfigTaskOptions& options,
                                          backends::mcm::McmSimulator sim, bool go) const {
    opt::mcm::McmChipProblem problem(costmodels::BuildOpGraph(*request.module), std::move(sim));
    // An infeasible instance (an op larger than a chip) is refused here, naming the constraint.
    if (absl::StatusOr<std::unique_ptr<opt::constraints::Solver>> solver = problem.NewSolver();
        !solver.ok()) {
      return solver.status();
    }
    std::unique_ptr<opt::Strategy> strategy;
    if (request.strategy == "contiguous-dp") {
      const opt::Candidate dp = problem.ContiguousDpCandidate();
      if (dp.empty()) {
        return absl::FailedPreconditionError(
            "contiguous-dp: no valid contiguous partition of the module on this target");
      }
      strategy = std::make_unique<OneCandidate>("contiguous-dp", dp);
    } else if (go) {
      absl::StatusOr<std::unique_ptr<opt::Strategy>> made = MakeGoStrategy(
          request,
          opt::rl::MakeMcmEnvironment(problem,
                                      request.strategy == "go-fix" ? opt::rl::GoSolverMode::kFix
                                                                   : opt::rl::GoSolverMode::kSample,
                                      options.seed),
          options.fine_tune);
      if (!made.ok()) return made.status();
      strategy = *std::move(made);
    } else {
      absl::StatusOr<std::unique_ptr<opt::Strategy>> made =
          opt::constraints::SolverStrategies().Create(request.strategy);
      if (!made.ok()) return made.status();
      strategy = *std::move(made);
    }
    // Simulated, not evaluated: the validity artifact counts the strategy's own tries.
    const backends::mcm::McmResult balanced = problem.Simulate(problem.BalancedCandidate());
    const double baseline =
        balanced.valid ? balanced.stage_seconds : std::numeric_limits<double>::infinity();
    absl::StatusOr<ConfigSearchRun> run =
        RunConfigSearch(request, name(), problem, options.seed,
                        OneChip(problem.graph(), problem.simulator(), baseline), baseline,
                        "simulated stage seconds", {}, std::move(strategy));
    if (!run.ok()) return run.status();
    const opt::Candidate best = run->best;
    TaskOutcome outcome =
        Finish(*std::move(run), problem.graph(), std::vector<int32_t>(best.begin(), best.end()),
               problem.Simulate(best));
    outcome.artifacts["validity"] =
        json{{"evaluations", problem.evaluations()}, {"valid", problem.valid_evaluations()}}.dump();
    return outcome;
  }

  static TaskOutcome Finish(ConfigSearchRun run, const costmodels::OpGraph& graph,
                            const std::vector<int32_t>& chips,
                            const backends::mcm::McmResult& best) {
    run.outcome.artifacts["partition"] = Assignment(graph, chips).dump(1);
    run.outcome.artifacts["summary"] = json{
        {"throughput_per_s", best.throughput},
        {"stage_seconds", best.stage_seconds},
        {"chips_used", best.chips_used},
        {"bottleneck_chip", best.bottleneck_chip},
        {"transfer_bytes",
         best.transfer_bytes}}.dump(1);
    return std::move(run.outcome);
  }
};

class PlacementTask : public ConfigTask {
 public:
  PlacementTask()
      : ConfigTask(
            "placement",
            "ops onto the devices of a cluster (event-driven simulation with links and memory), "
            "in simulated makespan seconds, against Baechi's m-ETF placement",
            "cluster-sim", false, /*allow_fine_tune=*/true) {}

  std::vector<OwnStrategy> own_strategies() const override {
    return {{"go",
             "the GO graph policy (mltune train-agent --algo go; pretrained): one decision for "
             "every op at once, refined, then sampled; option fine_tune trains it on the graph",
             [](std::string_view) { return std::string(kGoModel); }}};
  }

 protected:
  absl::StatusOr<TaskOutcome> Search(const TaskRequest& request, const ConfigTaskOptions& options,
                                     const backends::TargetSpec& spec) const override {
    absl::StatusOr<backends::cluster::ClusterSimulator> sim =
        backends::cluster::ClusterSimulator::Create(spec);
    if (!sim.ok()) return sim.status();
    const backends::cluster::ClusterSimulator simulator = *sim;
    opt::placement::PlacementProblem problem(costmodels::BuildOpGraph(*request.module),
                                             *std::move(sim));
    const double baseline = problem.Evaluate(problem.EarliestFinishCandidate());
    const double one_device =
        problem.Evaluate(opt::Candidate(static_cast<size_t>(problem.graph().size()), 0));
    std::unique_ptr<opt::Strategy> go;
    if (request.strategy == "go") {
      absl::StatusOr<std::unique_ptr<opt::Strategy>> made = MakeGoStrategy(
          request, opt::rl::MakeClusterEnvironment(problem.graph(), simulator, /*schedule=*/false),
          options.fine_tune);
      if (!made.ok()) return made.status();
      go = *std::move(made);
    } else if (options.fine_tune) {
      return absl::InvalidArgumentError("option fine_tune applies to strategy go only");
    }
    absl::StatusOr<ConfigSearchRun> run = RunConfigSearch(
        request, name(), problem, options.seed, std::isfinite(one_device) ? one_device : baseline,
        baseline, "simulated makespan seconds", {}, std::move(go));
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
