// `mltune partition MODULE --target mcm-36`: an HLO module's ops onto the chips of a multi-chip
// module (optimizers/mcm), by a baseline, a search strategy, the constraint solver's strategies
// or the GO policy through the solver (FIX, SAMPLE), scored by the pipeline's stage time.
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "backends/mcm_sim/mcm_sim.h"
#include "client/load.h"
#include "client/partition_common.h"
#include "costmodels/analytical/op_graph.h"
#include "nlohmann/json.hpp"
#include "optimizers/constraints/constraints.h"
#include "optimizers/mcm/mcm_problem.h"

namespace mltune::client::internal {

int PartitionModuleOnMcm(const PartitionCommand& cmd, const backends::TargetSpec& spec,
                         std::ostream& out, std::ostream& err) {
  if (!cmd.objective.empty() && cmd.objective != "throughput") {
    err << "error: --objective " << cmd.objective
        << ": a multi-chip module runs the ops as a pipeline, scored by its throughput\n";
    return 1;
  }
  if (!cmd.evaluate.empty()) {
    err << "error: --evaluate scores a split of a partition graph (.json), not of an HLO module\n";
    return 1;
  }
  absl::StatusOr<backends::mcm::McmSimulator> sim = backends::mcm::McmSimulator::Create(spec);
  if (!sim.ok()) {
    err << "error: " << sim.status().message() << "\n";
    return 1;
  }
  std::unique_ptr<ir::Module> module = LoadVerified(cmd.graph, err);
  if (module == nullptr) return 1;
  opt::mcm::McmChipProblem problem(costmodels::BuildOpGraph(*module), *sim);
  const costmodels::OpGraph& graph = problem.graph();
  if (graph.size() == 0) {
    err << "error: " << cmd.graph << ": the entry computation has no ops to partition\n";
    return 1;
  }
  auto stage = [](const backends::mcm::McmResult& r) {
    return r.valid ? r.stage_seconds : std::numeric_limits<double>::infinity();
  };
  const opt::Candidate balanced = problem.BalancedCandidate();
  Report report;
  report.header["graph"] = module->name();
  report.header["ops"] = graph.size();
  report.header["target"] = spec.name;
  report.header["chips"] = sim->chips();
  report.objective_name = "stage_seconds";
  report.label = "stage time (1 / throughput)";
  report.unit = " s";
  report.references = {
      {"one-chip", stage(problem.Simulate(opt::Candidate(static_cast<size_t>(graph.size()), 0)))},
      {"balanced", stage(problem.Simulate(balanced))}};
  const std::string summary = absl::StrFormat("module %s: %d ops on %s (%d chips)", module->name(),
                                              graph.size(), spec.name, sim->chips());

  // GO here always goes through the solver: plain "go" is FIX.
  std::string s = cmd.strategy.empty() ? DefaultStrategy(cmd, "solver-annealing") : cmd.strategy;
  if (s == "go") s = "go-fix";
  report.strategy = s;
  if (!IsGo(s) && (!cmd.model.empty() || cmd.fine_tune)) {
    err << "error: --model and --fine-tune apply to --strategy go-fix and go-sample, not " << s
        << "\n";
    return 1;
  }
  const bool solver_backed = IsGo(s) || opt::constraints::SolverStrategies().Create(s).ok();
  if (solver_backed) {
    // An instance no partition satisfies is refused before searching, naming the constraint.
    if (absl::StatusOr<std::unique_ptr<opt::constraints::Solver>> solver = problem.NewSolver();
        !solver.ok()) {
      err << "error: " << cmd.graph << " on " << spec.name << ": " << solver.status().message()
          << "\n";
      return 1;
    }
  }
  opt::Candidate chips;
  const auto start = std::chrono::steady_clock::now();
  if (s == "balanced") {
    chips = balanced;
    report.samples = 1;
  } else if (s == "contiguous-dp") {
    chips = problem.ContiguousDpCandidate();
    if (chips.empty()) {
      err << "error: contiguous-dp: no valid contiguous partition of " << cmd.graph << " on "
          << spec.name << "\n";
      return 1;
    }
    report.samples = 1;
  } else if (IsGo(s)) {
    std::unique_ptr<opt::rl::GoEnvironment> env = opt::rl::MakeMcmEnvironment(
        problem, s == "go-fix" ? opt::rl::GoSolverMode::kFix : opt::rl::GoSolverMode::kSample,
        cmd.seed);
    std::vector<opt::rl::GoDecision> starts(1);
    starts[0].device.assign(balanced.begin(), balanced.end());
    absl::StatusOr<opt::rl::GoSolveResult> result = SolveWithGo(cmd, env.get(), std::move(starts));
    if (!result.ok()) {
      err << "error: " << result.status().message() << "\n";
      return 1;
    }
    chips.assign(result->best.device.begin(), result->best.device.end());
    report.samples = result->samples;
  } else if (solver_backed) {
    absl::StatusOr<opt::Result> result = RegistrySearch(s, problem, SearchBudget(cmd), cmd.seed);
    if (!result.ok()) {
      err << "error: " << s << ": " << result.status().message() << "\n";
      return 1;
    }
    chips = result->best;
    report.samples = result->evaluations;
  } else if (IsRegistryStrategy(s)) {
    // The registry's strategies search where each chip starts, in op order (as mltuned does).
    opt::mcm::McmPartitionProblem boundaries(graph, *sim);
    absl::StatusOr<opt::Result> result = RegistrySearch(s, boundaries, SearchBudget(cmd), cmd.seed);
    if (!result.ok()) {
      err << "error: " << s << ": " << result.status().message() << "\n";
      return 1;
    }
    const std::vector<int32_t> decoded = boundaries.Decode(result->best);
    chips.assign(decoded.begin(), decoded.end());
    report.samples = result->evaluations;
  } else {
    err << "error: unknown strategy '" << s << "' for a multi-chip module (available: "
        << Available({"balanced", "contiguous-dp", "go-fix", "go-sample"}) << ")\n";
    return 1;
  }
  report.seconds = SecondsSince(start);

  const backends::mcm::McmResult result = problem.Simulate(chips);
  report.objective = stage(result);
  report.feasible = result.valid;
  report.error = result.error;
  if (!cmd.out.empty()) {
    nlohmann::ordered_json assignment = nlohmann::ordered_json::object();
    for (size_t i = 0; i < graph.nodes.size(); ++i) assignment[graph.nodes[i].name] = chips[i];
    const nlohmann::ordered_json file = {{"partition", std::move(assignment)},
                                         {"stage_seconds", report.objective},
                                         {"throughput_per_s", result.throughput},
                                         {"chips_used", result.chips_used}};
    if (!WriteText(cmd.out, file.dump(1) + "\n", err)) return 1;
  }
  Print(cmd, report, summary, out);
  return 0;
}

}  // namespace mltune::client::internal
