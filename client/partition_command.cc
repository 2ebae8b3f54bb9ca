// `mltune partition`: splits a dnn-partitioning graph (JSON) across accelerators and a CPU under
// the throughput or latency objective (optimizers/device_partition), or places an HLO module's
// ops on a simulated GPU cluster by makespan (optimizers/placement), with a baseline, a search
// strategy or the GO policy (optimizers/rl). In mltune-full: `go` loads LibTorch.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/spec/target_spec.h"
#include "client/cli_commands.h"
#include "client/load.h"
#include "client/partition_common.h"
#include "client/partition_graph.h"
#include "client/sim_targets.h"
#include "costmodels/analytical/op_graph.h"
#include "daemon/pretrained_paths.h"
#include "nlohmann/json.hpp"
#include "optimizers/core/search.h"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/placement/placement_problem.h"
#include "optimizers/rl/rl.h"

namespace mltune::client {
namespace {

namespace partition = opt::partition;
namespace rl = opt::rl;
using internal::Available;
using internal::DefaultStrategy;
using internal::Number;
using internal::Print;
using internal::RegistrySearch;
using internal::Report;
using internal::SecondsSince;
using internal::SolveWithGo;
using internal::WriteText;
using json = nlohmann::ordered_json;

constexpr char kDefaultClusterTarget[] = "gpu-4x-nvlink";

// ---- dnn-partitioning graphs ----

double FeasibleObjective(const partition::SplitScore& s) {
  return s.valid && s.feasible ? s.objective : std::numeric_limits<double>::infinity();
}

int PartitionGraphFile(const PartitionCommand& cmd, std::ostream& out, std::ostream& err) {
  if (!cmd.target.empty() || cmd.measured) {
    err << "error: --target and --measured place an HLO module; a partition graph names its own "
           "accelerators (maxFPGAs) and costs\n";
    return 1;
  }
  if (cmd.objective.empty()) {
    err << "error: a partition graph (.json) needs --objective throughput or latency\n";
    return 1;
  }
  absl::StatusOr<partition::Objective> objective = partition::ParseObjective(cmd.objective);
  if (!objective.ok()) {
    err << "error: --objective: " << objective.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<partition::PartitionGraph> graph = partition::LoadPartitionGraph(cmd.graph);
  if (!graph.ok()) {
    err << "error: " << graph.status().message() << "\n";
    return 1;
  }
  if (*objective == partition::Objective::kLatency && !graph->IsDag()) {
    err << "error: " << cmd.graph << ": the latency objective needs an acyclic graph\n";
    return 1;
  }

  Report report;
  report.header["graph"] = graph->name;
  report.header["nodes"] = graph->size();
  report.header["classes"] = graph->groups;
  report.header["accelerators"] = graph->accelerators;
  report.header["accelerator_bytes"] = graph->accelerator_bytes;
  report.header["cpus"] = graph->cpus;
  report.objective_name = std::string(partition::ObjectiveName(*objective));
  report.label =
      *objective == partition::Objective::kThroughput ? "throughput (max-load)" : "latency";
  const std::string summary = absl::StrFormat(
      "graph %s: %d nodes, %d colocation classes, %d accelerators of %s bytes, %d CPU%s",
      graph->name, graph->size(), graph->groups, graph->accelerators,
      Number(graph->accelerator_bytes), graph->cpus, graph->cpus == 1 ? "" : "s");
  report.references = {
      {"one-accelerator",
       FeasibleObjective(partition::Score(*graph, partition::OneAccelerator(*graph), *objective))},
      {"m-etf",
       FeasibleObjective(partition::Score(*graph, partition::EarliestFinish(*graph), *objective))}};

  partition::Split split;
  const auto start = std::chrono::steady_clock::now();
  if (!cmd.evaluate.empty()) {
    if (!cmd.strategy.empty()) {
      err << "error: --evaluate scores the given split; it takes no --strategy\n";
      return 1;
    }
    absl::StatusOr<partition::Split> loaded = partition::LoadSplit(*graph, cmd.evaluate);
    if (!loaded.ok()) {
      err << "error: " << loaded.status().message() << "\n";
      return 1;
    }
    split = *std::move(loaded);
    report.strategy = "evaluate";
    report.samples = 1;
  } else {
    report.strategy = cmd.strategy.empty() ? DefaultStrategy(cmd, "local-search") : cmd.strategy;
    if (!internal::IsGo(report.strategy) && (!cmd.model.empty() || cmd.fine_tune)) {
      err << "error: --model and --fine-tune apply to --strategy go, go-fix and go-sample, not "
          << report.strategy << "\n";
      return 1;
    }
    PartitionCommand run = cmd;
    run.strategy = report.strategy;
    absl::StatusOr<internal::GraphSplit> result = internal::SplitGraph(run, *graph, *objective);
    if (!result.ok()) {
      err << "error: " << result.status().message() << "\n";
      return 1;
    }
    split = std::move(result->split);
    report.samples = result->samples;
  }
  report.seconds = SecondsSince(start);

  const partition::SplitScore score = partition::Score(*graph, split, *objective);
  if (!score.valid) {
    err << "error: " << (cmd.evaluate.empty() ? report.strategy : cmd.evaluate)
        << ": invalid split: " << score.error << "\n";
    return 1;
  }
  report.objective = score.objective;
  report.feasible = score.feasible;
  report.error = score.error;
  if (!cmd.out.empty() &&
      !WriteText(cmd.out, partition::FormatSplit(*graph, split, *objective, score.objective),
                 err)) {
    return 1;
  }
  Print(cmd, report, summary, out);
  return 0;
}

// ---- HLO modules on cluster-sim ----

int PlaceModule(const PartitionCommand& cmd, std::ostream& out, std::ostream& err) {
  if (!cmd.evaluate.empty()) {
    err << "error: --evaluate scores a split of a partition graph (.json), not of an HLO module\n";
    return 1;
  }
  // A placement is scored by its makespan: one sample's latency.
  if (!cmd.objective.empty() && cmd.objective != "latency") {
    err << "error: --objective " << cmd.objective
        << ": an HLO module's placement is scored by its simulated makespan (latency); "
           "throughput applies to partition graphs (.json)\n";
    return 1;
  }
  backends::TargetRegistry& registry = backends::TargetRegistry::Global();
  const std::string target = cmd.target.empty() ? kDefaultClusterTarget : cmd.target;
  const backends::TargetSpec* spec = registry.Find(ResolveAlias(target));
  if (spec == nullptr) {
    err << "error: unknown target '" << target << "' (" << KnownTargets() << ")\n";
    return 1;
  }
  if (spec->kind == "mcm" && cmd.measured) {
    err << "error: --measured places kernels on a cluster target (e.g. cpu-4x-ethernet), not on "
           "a multi-chip module\n";
    return 1;
  }
  if (spec->kind == "mcm") return internal::PartitionModuleOnMcm(cmd, *spec, out, err);
  if (spec->kind != "gpu-cluster" && spec->kind != "cpu-cluster") {
    err << "error: target '" << spec->name << "' is of kind '" << spec->kind
        << "'; partition places ops on a cluster target (e.g. gpu-4x-nvlink, cluster-sim, "
           "cpu-4x-ethernet) or partitions them onto a multi-chip module (mcm-36, mcm-sim)\n";
    return 1;
  }
  absl::StatusOr<backends::cluster::ClusterSimulator> sim =
      backends::cluster::ClusterSimulator::Create(*spec);
  if (!sim.ok()) {
    err << "error: " << sim.status().message() << "\n";
    return 1;
  }
  std::unique_ptr<ir::Module> module = LoadVerified(cmd.graph, err);
  if (module == nullptr) return 1;
  costmodels::OpGraph ops;
  if (cmd.measured) {
    // Every kernel timed inside the module's run, once, before any strategy scores a placement.
    absl::StatusOr<costmodels::OpGraph> measured =
        backends::cpu::MeasuredKernelGraph(*module, {}, cmd.seed);
    if (!measured.ok()) {
      err << "error: --measured: " << cmd.graph << ": " << measured.status().message() << "\n";
      return 1;
    }
    ops = *std::move(measured);
  } else {
    ops = costmodels::BuildOpGraph(*module);
  }
  opt::placement::PlacementProblem problem(std::move(ops), *sim);
  const costmodels::OpGraph& graph = problem.graph();
  if (graph.size() == 0) {
    err << "error: " << cmd.graph << ": the entry computation has no ops to place\n";
    return 1;
  }
  auto makespan = [](const backends::cluster::ClusterResult& r) {
    return r.valid ? r.makespan_s : std::numeric_limits<double>::infinity();
  };
  const opt::Candidate one_device(static_cast<size_t>(graph.size()), 0);
  const opt::Candidate metf = problem.EarliestFinishCandidate();

  Report report;
  report.header["graph"] = module->name();
  report.header["ops"] = graph.size();
  report.header["target"] = spec->name;
  report.header["devices"] = sim->devices();
  report.objective_name = "makespan_seconds";
  report.label = "makespan";
  report.unit = " s";
  report.references = {{"one-device", makespan(problem.Simulate(one_device))},
                       {"m-etf", makespan(problem.Simulate(metf))}};
  const std::string summary =
      absl::StrFormat("module %s: %d ops on %s (%d devices)", module->name(), graph.size(),
                      spec->name, sim->devices());

  report.strategy = cmd.strategy.empty() ? DefaultStrategy(cmd, "annealing") : cmd.strategy;
  const std::string& s = report.strategy;
  if (s != "go" && (!cmd.model.empty() || cmd.fine_tune)) {
    err << "error: --model and --fine-tune apply to --strategy go, not " << s << "\n";
    return 1;
  }
  opt::Candidate placement;
  const auto start = std::chrono::steady_clock::now();
  if (s == "one-device") {
    placement = one_device;
    report.samples = 1;
  } else if (s == "m-etf") {
    placement = metf;
    report.samples = 1;
  } else if (s == "go") {
    std::unique_ptr<rl::GoEnvironment> env =
        rl::MakeClusterEnvironment(graph, *sim, /*schedule=*/false);
    std::vector<rl::GoDecision> starts(1);
    starts[0].device = metf;
    absl::StatusOr<rl::GoSolveResult> result = SolveWithGo(cmd, env.get(), std::move(starts));
    if (!result.ok()) {
      err << "error: " << result.status().message() << "\n";
      return 1;
    }
    placement = result->best.device;
    report.samples = result->samples;
  } else if (internal::IsRegistryStrategy(s)) {
    absl::StatusOr<opt::Result> result =
        RegistrySearch(s, problem, internal::SearchBudget(cmd), cmd.seed);
    if (!result.ok()) {
      err << "error: " << s << ": " << result.status().message() << "\n";
      return 1;
    }
    placement = result->best;
    report.samples = result->evaluations;
  } else {
    err << "error: unknown strategy '" << s
        << "' for an HLO module (available: " << Available({"go", "m-etf", "one-device"}) << ")\n";
    return 1;
  }
  report.seconds = SecondsSince(start);

  const backends::cluster::ClusterResult result = problem.Simulate(placement);
  report.objective = makespan(result);
  report.feasible = result.valid;
  report.error = result.error;
  if (!cmd.out.empty()) {
    json assignment = json::object();
    for (size_t i = 0; i < graph.nodes.size(); ++i) assignment[graph.nodes[i].name] = placement[i];
    const json file = {{"placement", std::move(assignment)},
                       {"makespan_seconds", report.objective}};
    if (!WriteText(cmd.out, file.dump(1) + "\n", err)) return 1;
  }
  Print(cmd, report, summary, out);
  return 0;
}

}  // namespace

int RunPartition(const PartitionCommand& cmd, std::ostream& out, std::ostream& err) {
  if (cmd.budget < 0) {
    err << "error: --budget must be >= 0 (0: the strategy's default)\n";
    return 1;
  }
  if (!std::isfinite(cmd.seconds) || cmd.seconds < 0) {
    err << "error: --seconds must be a finite number >= 0 (0: no time limit)\n";
    return 1;
  }
  if (cmd.graph.ends_with(".json")) return PartitionGraphFile(cmd, out, err);
  return PlaceModule(cmd, out, err);
}

}  // namespace mltune::client
