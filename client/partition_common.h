// Internal to client/: what the `mltune partition` paths share (graphs, cluster placement, MCM
// partitioning): strategy lookup across the registries, the GO policy's loading and run, and the
// report printed as text or JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/spec/target_spec.h"
#include "client/cli_commands.h"
#include "nlohmann/json.hpp"
#include "optimizers/core/search.h"
#include "optimizers/rl/rl.h"

namespace mltune::client::internal {

inline constexpr int64_t kSearchBudget = 1000;  // evaluations of a search strategy
inline constexpr int64_t kGoBudget = 16;        // decisions the GO policy evaluates

double SecondsSince(std::chrono::steady_clock::time_point start);
std::string Number(double v);  // %.6g

// "go" when --model is given or the pretrained GO checkpoint exists, else `fallback`.
std::string DefaultStrategy(const PartitionCommand& cmd, const std::string& fallback);
// `own` and the registries' strategies, sorted and joined.
std::string Available(std::vector<std::string> own);
// The search budget --budget and --seconds give: cmd.budget evaluations (0: kSearchBudget, or
// unlimited when --seconds bounds the search) and cmd.seconds of wall time, whichever ends first.
opt::Budget SearchBudget(const PartitionCommand& cmd);
// A strategy of the search registry or the solver-backed ones (optimizers/constraints), run
// within `budget`. `evaluations` (optional) gets the evaluations spent, also when the search
// found nothing valid.
bool IsRegistryStrategy(const std::string& name);
absl::StatusOr<opt::Result> RegistrySearch(const std::string& name, opt::Problem& problem,
                                           const opt::Budget& budget, uint64_t seed,
                                           int64_t* evaluations = nullptr);
// Loads the GO policy (--model, else the pretrained one) and runs it on `env`; unless
// --no-warm-start, it refines the best of `starts`. `decision_seconds`: the caller's estimate of
// one decision's cost under --seconds (GoSolveOptions::decision_seconds).
absl::StatusOr<opt::rl::GoSolveResult> SolveWithGo(const PartitionCommand& cmd,
                                                   opt::rl::GoEnvironment* env,
                                                   std::vector<opt::rl::GoDecision> starts,
                                                   double decision_seconds = 0);
bool WriteText(const std::string& path, const std::string& text, std::ostream& err);
// go, go-fix or go-sample.
inline bool IsGo(const std::string& strategy) {
  return strategy == "go" || strategy == "go-fix" || strategy == "go-sample";
}

// The strategy's result and the references, as text or one JSON object.
struct Report {
  nlohmann::ordered_json header;  // graph, size and target facts, in print order
  std::string objective_name;
  std::string label, unit;  // how the text names the objective and its unit
  double objective = 0;
  bool feasible = true;
  std::string error;  // why not feasible
  std::string strategy;
  int64_t samples = 0;
  double seconds = 0;  // the strategy's wall time, its validity repair included
  std::vector<std::pair<std::string, double>> references;  // +inf: infeasible
};
void Print(const PartitionCommand& cmd, const Report& r, const std::string& summary,
           std::ostream& out);

// An HLO module's ops onto the chips of a multi-chip module (partition_mcm.cc).
int PartitionModuleOnMcm(const PartitionCommand& cmd, const backends::TargetSpec& spec,
                         std::ostream& out, std::ostream& err);

}  // namespace mltune::client::internal
