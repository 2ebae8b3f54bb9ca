// The multi-device tasks: "mcm-partition" (ops onto the chips of a multi-chip module, mcm-sim,
// scored by the pipeline's stage time, against the balanced contiguous partition) and
// "placement" (ops onto the devices of a cluster, cluster-sim, scored by the makespan, against
// Baechi's m-ETF placement).
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/mcm_sim/mcm_sim.h"
#include "costmodels/analytical/op_graph.h"
#include "daemon/config_search.h"
#include "daemon/sim_workers.h"
#include "nlohmann/json.hpp"
#include "optimizers/mcm/mcm_problem.h"
#include "optimizers/placement/placement_problem.h"
#include "optimizers/rl/rl.h"

namespace mltune::daemon {
namespace {

using nlohmann::json;

constexpr char kGoModel[] = "partition/go";

// The GO policy as a search strategy: every decision it evaluates goes through the search
// context, so it is charged to the budget, logged and traced like any other strategy's, and the
// seeds (m-ETF, one device, the cached best) are scored first, so it never returns worse.
class GoStrategy : public opt::Strategy {
 public:
  GoStrategy(std::unique_ptr<opt::rl::GoPolicy> policy, std::unique_ptr<opt::rl::GoEnvironment> env,
             bool fine_tune)
      : policy_(std::move(policy)), env_(std::move(env)), fine_tune_(fine_tune) {}
  std::string_view name() const override { return "go"; }

 protected:
  bool Run(opt::SearchContext& context) override {
    class Charged : public opt::rl::GoEnvironment {
     public:
      Charged(opt::rl::GoEnvironment& inner, opt::SearchContext& context)
          : inner_(inner), context_(context) {}
      const opt::rl::GoGraph& graph() const override { return inner_.graph(); }
      double reference_score() const override { return inner_.reference_score(); }
      Outcome Evaluate(const opt::rl::GoDecision& decision) override {
        std::optional<opt::SearchContext::Evaluation> e =
            context_.Evaluate(opt::Candidate(decision.device.begin(), decision.device.end()));
        Outcome o;
        o.valid = e.has_value() && std::isfinite(e->score);
        o.score = o.valid ? e->score : 0;
        o.overflow = o.valid ? 0 : 1;
        return o;
      }

     private:
      opt::rl::GoEnvironment& inner_;
      opt::SearchContext& context_;
    } charged(*env_, context);
    opt::rl::GoSolveOptions options;
    const int64_t max_steps = context.budget().max_steps;
    options.max_samples = max_steps > 0 ? max_steps - context.steps() : 64;
    options.sampled = 8;
    options.fine_tune = fine_tune_;
    options.seed = context.rng()();
    options.stop = [&context] { return context.Exhausted(); };
    // Refine the best seed (m-ETF, one device, the cached best) rather than start from nothing.
    if (!context.best().empty()) {
      opt::rl::GoDecision start;
      start.device.assign(context.best().begin(), context.best().end());
      options.starts.push_back(std::move(start));
    }
    absl::StatusOr<opt::rl::GoSolveResult> solved = policy_->Solve(charged, options);
    if (!solved.ok()) Fail(solved.status());
    return context.Exhausted();
  }

 private:
  std::unique_ptr<opt::rl::GoPolicy> policy_;
  std::unique_ptr<opt::rl::GoEnvironment> env_;
  bool fine_tune_;
};

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
            "cluster-sim", false, /*allow_fine_tune=*/true) {}

  std::vector<OwnStrategy> own_strategies() const override {
    return {{"go",
             "the GO graph policy (mltune train-agent --algo go; pretrained): one decision for "
             "every op at once, refined, then sampled; option fine_tune trains it on the graph",
             [](std::string_view) { return std::string(kGoModel); }}};
  }

 protected:
  static absl::StatusOr<std::unique_ptr<opt::Strategy>> MakeGoStrategy(
      const TaskRequest& request, const costmodels::OpGraph& graph,
      const backends::cluster::ClusterSimulator& sim, bool fine_tune) {
    if (!request.latest_model) return absl::InternalError("no model store for learned policies");
    absl::StatusOr<std::optional<storage::ModelRecord>> model = request.latest_model(kGoModel);
    if (!model.ok()) return model.status();
    if (!model->has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat("no ", kGoModel,
                       " model in the store; train one with `mltune train-agent "
                       "--algo go` or start mltuned with its pretrained models"));
    }
    absl::StatusOr<std::unique_ptr<opt::rl::GoPolicy>> policy =
        opt::rl::GoPolicy::Load((*model)->data);
    if (!policy.ok()) return policy.status();
    return std::make_unique<GoStrategy>(
        *std::move(policy), opt::rl::MakeClusterEnvironment(graph, sim, /*schedule=*/false),
        fine_tune);
  }

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
      absl::StatusOr<std::unique_ptr<opt::Strategy>> made =
          MakeGoStrategy(request, problem.graph(), simulator, options.fine_tune);
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
