// What the `mltune partition` paths share.
#include "client/partition_common.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "daemon/pretrained_paths.h"
#include "optimizers/constraints/constraints.h"

namespace mltune::client::internal {

namespace rl = opt::rl;
using json = nlohmann::ordered_json;

namespace {

// The pretrained GO policy's checkpoint, model "partition/go"; "" without a pretrained folder.
std::string DefaultGoCheckpoint() {
  const std::string dir = daemon::DefaultPretrainedDir();
  if (dir.empty()) return "";
  return (std::filesystem::path(dir) / (daemon::PretrainedFileStem("partition/go") + ".ckpt"))
      .string();
}

const opt::StrategyRegistry* RegistryOf(const std::string& name) {
  if (opt::StrategyRegistry::Global().Create(name).ok()) return &opt::StrategyRegistry::Global();
  if (opt::constraints::SolverStrategies().Create(name).ok()) {
    return &opt::constraints::SolverStrategies();
  }
  return nullptr;
}

}  // namespace

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string Number(double v) { return absl::StrFormat("%.6g", v); }

// An explicit --model asks for GO; otherwise GO runs when its pretrained checkpoint is there, so
// a fresh checkout (none yet) still gets a search.
std::string DefaultStrategy(const PartitionCommand& cmd, const std::string& fallback) {
  if (!cmd.model.empty()) return "go";
  const std::string checkpoint = DefaultGoCheckpoint();
  std::error_code ec;
  if (!checkpoint.empty() && std::filesystem::is_regular_file(checkpoint, ec)) return "go";
  return fallback;
}

std::string Available(std::vector<std::string> own) {
  for (const opt::StrategyRegistry* registry :
       {&opt::StrategyRegistry::Global(), &opt::constraints::SolverStrategies()}) {
    for (const std::string& name : registry->Names()) {
      if (std::find(own.begin(), own.end(), name) == own.end()) own.push_back(name);
    }
  }
  std::sort(own.begin(), own.end());
  return absl::StrJoin(own, ", ");
}

bool IsRegistryStrategy(const std::string& name) { return RegistryOf(name) != nullptr; }

opt::Budget SearchBudget(const PartitionCommand& cmd) {
  const int64_t steps = cmd.budget > 0 ? cmd.budget : cmd.seconds > 0 ? 0 : kSearchBudget;
  return opt::Budget(steps, cmd.seconds);
}

absl::StatusOr<opt::Result> RegistrySearch(const std::string& name, opt::Problem& problem,
                                           const opt::Budget& budget, uint64_t seed,
                                           int64_t* evaluations) {
  const opt::StrategyRegistry* registry = RegistryOf(name);
  if (registry == nullptr) {
    return absl::NotFoundError(absl::StrCat("unknown search strategy '", name, "'"));
  }
  absl::StatusOr<std::unique_ptr<opt::Strategy>> strategy = registry->Create(name);
  if (!strategy.ok()) return strategy.status();
  absl::StatusOr<opt::Result> result = (*strategy)->Search(problem, budget, seed);
  if (!result.ok()) return result.status();
  if (evaluations != nullptr) *evaluations = result->evaluations;
  if (result->best.empty()) {
    std::vector<std::string> limits;
    if (budget.max_steps > 0) limits.push_back(absl::StrCat("--budget ", budget.max_steps));
    if (budget.max_seconds > 0) limits.push_back(absl::StrCat("--seconds ", budget.max_seconds));
    return absl::FailedPreconditionError(absl::StrCat(
        "strategy ", name, " found no valid candidate within ", absl::StrJoin(limits, " and ")));
  }
  return result;
}

// Loads the GO policy and runs it on `env` (nullptr: this build has no GO environment).
// Unless --no-warm-start, the policy refines the best of `starts` (the baselines' decisions).
absl::StatusOr<rl::GoSolveResult> SolveWithGo(const PartitionCommand& cmd, rl::GoEnvironment* env,
                                              std::vector<rl::GoDecision> starts,
                                              double decision_seconds) {
  const std::string checkpoint = cmd.model.empty() ? DefaultGoCheckpoint() : cmd.model;
  if (checkpoint.empty()) {
    return absl::NotFoundError(absl::StrCat("--strategy go: no pretrained folder holds ",
                                            daemon::PretrainedFileStem("partition/go"),
                                            ".ckpt; name one with --model"));
  }
  std::ifstream in(checkpoint, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("--strategy go: cannot read the GO checkpoint ",
                                            checkpoint, ": ", std::strerror(errno)));
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  absl::StatusOr<std::unique_ptr<rl::GoPolicy>> policy = rl::GoPolicy::Load(bytes.str());
  if (!policy.ok()) {
    return absl::Status(policy.status().code(), absl::StrCat("--strategy go: ", checkpoint, ": ",
                                                             policy.status().message()));
  }
  if (env == nullptr) {
    return absl::UnimplementedError("--strategy go: this build has no GO environment for it");
  }
  rl::GoSolveOptions options;
  // Fine-tuning under --seconds alone runs until the deadline; the zero-shot chain keeps its
  // default samples. A deadline already spent returns the first start (or, without a valid one,
  // the first greedy decision); no decision starts that would end past it.
  options.max_samples = cmd.budget > 0                     ? cmd.budget
                        : cmd.fine_tune && cmd.seconds > 0 ? std::numeric_limits<int64_t>::max() / 4
                                                           : kGoBudget;
  options.fine_tune = cmd.fine_tune;
  options.seed = cmd.seed;
  if (cmd.seconds > 0) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(cmd.seconds));
    options.stop = [deadline] { return std::chrono::steady_clock::now() >= deadline; };
    options.seconds = cmd.seconds;
    options.decision_seconds = decision_seconds;
  }
  if (cmd.warm_start) options.starts = std::move(starts);
  absl::StatusOr<rl::GoSolveResult> result = (*policy)->Solve(*env, options);
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat("--strategy go: ", result.status().message()));
  }
  if (result->best.device.size() != static_cast<size_t>(env->graph().units)) {
    return absl::InternalError(absl::StrCat("--strategy go: the policy decided ",
                                            result->best.device.size(), " devices for ",
                                            env->graph().units, " units"));
  }
  return result;
}

bool WriteText(const std::string& path, const std::string& text, std::ostream& err) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  file.close();
  if (!file) {
    err << "error: cannot write " << path << "\n";
    return false;
  }
  return true;
}

void Print(const PartitionCommand& cmd, const Report& r, const std::string& summary,
           std::ostream& out) {
  if (cmd.json) {
    json j = r.header;
    j["objective_name"] = r.objective_name;
    j["objective"] = r.objective;  // null when infinite
    j["feasible"] = r.feasible;
    if (!r.feasible) j["error"] = r.error;
    j["strategy"] = r.strategy;
    j["samples"] = r.samples;
    j["seconds"] = r.seconds;
    if (cmd.seconds > 0) j["seconds_limit"] = cmd.seconds;
    json refs = json::object();
    for (const auto& [name, value] : r.references) refs[name] = value;
    j["reference"] = std::move(refs);
    if (!cmd.out.empty()) j["out"] = cmd.out;
    out << j.dump(2) << "\n";
    return;
  }
  out << summary << "\n";
  out << absl::StrFormat("%s: %s%s (%s)\n", r.label, Number(r.objective), r.unit,
                         r.feasible ? "feasible" : "infeasible: " + r.error);
  out << absl::StrFormat("strategy %s: %d sample%s in %.3g s%s\n", r.strategy, r.samples,
                         r.samples == 1 ? "" : "s", r.seconds,
                         cmd.seconds > 0 ? absl::StrFormat(" (limit %g s)", cmd.seconds) : "");
  std::vector<std::string> refs;
  for (const auto& [name, value] : r.references) {
    refs.push_back(
        absl::StrCat(name, " ", std::isfinite(value) ? Number(value) + r.unit : "infeasible"));
  }
  if (!refs.empty()) out << "for reference: " << absl::StrJoin(refs, ", ") << "\n";
  if (!cmd.out.empty()) out << "written to " << cmd.out << "\n";
}

}  // namespace mltune::client::internal
