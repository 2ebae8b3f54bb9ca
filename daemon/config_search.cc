#include "daemon/config_search.h"

#include <cmath>
#include <unordered_set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/sim_workers.h"
#include "optimizers/core/model_topk.h"

namespace mltune::daemon {

absl::StatusOr<ConfigTaskOptions> ParseConfigTaskOptions(std::string_view task,
                                                         const TaskOptions& options,
                                                         bool allow_noise, bool allow_fine_tune) {
  ConfigTaskOptions parsed;
  for (const auto& [key, value] : options) {
    if (key == "seed") {
      if (!absl::SimpleAtoi(value, &parsed.seed)) {
        return absl::InvalidArgumentError(
            absl::StrCat("option seed='", value, "': expected an unsigned integer"));
      }
    } else if (key == "fine_tune" && allow_fine_tune) {
      if (!absl::SimpleAtob(value, &parsed.fine_tune)) {
        return absl::InvalidArgumentError(
            absl::StrCat("option fine_tune='", value, "': expected true or false"));
      }
    } else if (key == "noise" && allow_noise) {
      if (!absl::SimpleAtod(value, &parsed.noise) || !(parsed.noise >= 0 && parsed.noise <= 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat("option noise='", value, "': expected a number in [0, 1]"));
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown option '", key, "' for task ", std::string(task), " (known: seed",
                       allow_fine_tune ? ", fine_tune" : "", allow_noise ? ", noise" : "", ")"));
    }
  }
  return parsed;
}

absl::StatusOr<const backends::TargetSpec*> FindSpec(std::string_view target) {
  const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find(target);
  if (spec == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("no target spec '", std::string(target), "'"));
  }
  return spec;
}

std::vector<std::string> ConfigTask::targets() const {
  std::vector<std::string> targets = TargetsOfWorker(worker_);
  if (RunsOnGpu()) targets.insert(targets.begin(), "gpu");
  if (RunsOnCpu()) targets.insert(targets.begin(), "cpu");
  return targets;
}

absl::StatusOr<TaskOutcome> ConfigTask::SearchGpu(const TaskRequest&,
                                                  const ConfigTaskOptions&) const {
  return absl::InvalidArgumentError(absl::StrCat("task ", name_, " does not run on gpu"));
}

absl::StatusOr<TaskOutcome> ConfigTask::SearchCpu(const TaskRequest&,
                                                  const ConfigTaskOptions&) const {
  return absl::InvalidArgumentError(absl::StrCat("task ", name_, " does not run on cpu"));
}

absl::Status ConfigTask::ValidateOptions(const TaskOptions& options,
                                         const std::string& /*target*/) const {
  return ParseConfigTaskOptions(name_, options, allow_noise_, allow_fine_tune_).status();
}

absl::StatusOr<TaskOutcome> ConfigTask::Run(const TaskRequest& request) const {
  absl::StatusOr<ConfigTaskOptions> options =
      ParseConfigTaskOptions(name_, request.options, allow_noise_, allow_fine_tune_);
  if (!options.ok()) return options.status();
  if (request.target == "cpu" && RunsOnCpu()) return SearchCpu(request, *options);
  if (request.target == "gpu" && RunsOnGpu()) return SearchGpu(request, *options);
  absl::StatusOr<const backends::TargetSpec*> spec = FindSpec(request.target);
  if (!spec.ok()) return spec.status();
  return Search(request, *options, **spec);
}

absl::StatusOr<ConfigSearchRun> RunConfigSearch(const TaskRequest& request, std::string_view task,
                                                opt::ConfigProblem& problem, uint64_t seed,
                                                double original_score, double baseline_score,
                                                std::string scorer,
                                                const opt::StrategyParams& model_topk_params,
                                                std::unique_ptr<opt::Strategy> own_strategy) {
  if (request.continue_from.has_value()) {
    auto it = request.continue_from->artifacts.find("configuration");
    if (it != request.continue_from->artifacts.end()) {
      absl::StatusOr<opt::Candidate> cached = problem.Parse(it->second);
      // A cached configuration from another spec version may not fit: then start afresh.
      if (cached.ok()) (void)problem.AddSeed(*cached);
    }
  }
  ConfigSearchRun run;
  run.outcome.scorer = std::move(scorer);
  run.outcome.original_score = original_score;
  run.outcome.baseline_score = baseline_score;
  const std::vector<opt::Candidate> seeds = problem.SeedCandidates();
  if (problem.space().max_length == 0) {
    // Nothing to decide (e.g. no tilable kernel): the default is the answer.
    run.outcome.tuned_score = baseline_score;
    run.outcome.artifacts["configuration"] = "";
    return run;
  }
  absl::StatusOr<std::unique_ptr<opt::Strategy>> strategy =
      own_strategy != nullptr ? std::move(own_strategy)
      : request.strategy == opt::kModelTopK
          ? opt::CreateModelTopK(model_topk_params)
          : opt::StrategyRegistry::Global().Create(request.strategy);
  if (!strategy.ok()) return strategy.status();

  std::unordered_set<std::string> logged;
  opt::Budget budget = request.budget;
  budget.on_step = [&](const opt::Budget::Report& report) {
    if (request.record_measurement && report.candidate != nullptr && std::isfinite(report.score) &&
        logged.size() < kMaxMeasurementsPerRun) {
      std::string configuration = opt::ConfigProblem::Format(*report.candidate);
      if (logged.insert(configuration).second) {
        storage::MeasurementRecord m;
        m.graph_key = request.fingerprint;
        m.task = std::string(task);
        m.target = request.target;
        m.configuration = std::move(configuration);
        m.value = report.score;
        m.worker = request.worker;
        request.record_measurement(std::move(m));
      }
    }
    if (request.budget.on_step) request.budget.on_step(report);
  };
  absl::StatusOr<opt::Result> result = (*strategy)->Search(problem, budget, seed);
  if (!result.ok()) return result.status();
  if (!std::isfinite(result->best_score)) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(task), ": no valid configuration found on ", request.target,
                     " within the budget (the default is invalid too)"));
  }
  run.best = result->best;
  run.outcome.tuned_score = result->best_score;
  run.outcome.steps = result->steps;
  run.outcome.stopped = request.budget.stop && request.budget.stop();
  const bool out_of_time = budget.max_seconds > 0 && result->seconds >= budget.max_seconds;
  run.outcome.complete = !run.outcome.stopped && !(result->budget_exhausted && out_of_time);
  run.outcome.artifacts["configuration"] = opt::ConfigProblem::Format(run.best);
  return run;
}

}  // namespace mltune::daemon
