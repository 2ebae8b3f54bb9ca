// Shared by the configuration tasks on the simulated workers (tile, fusion, mcm-partition,
// placement): runs a strategy on an opt::ConfigProblem within the request's budget, seeded with
// the cached best when continuing, logs every distinct valid candidate to the measurement log,
// and fills the outcome's scores, steps and completion.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "backends/spec/target_spec.h"
#include "daemon/task.h"
#include "optimizers/core/config_problem.h"

namespace mltune::daemon {

// Options every configuration task takes: seed (search), noise (the simulator's log-normal
// noise, tpu-sim only), fine_tune (the tasks that serve a learned policy).
struct ConfigTaskOptions {
  uint64_t seed = 0;
  double noise = 0;
  bool fine_tune = false;  // learned policies (go): train on this graph with the budget left
};
absl::StatusOr<ConfigTaskOptions> ParseConfigTaskOptions(std::string_view task,
                                                         const TaskOptions& options,
                                                         bool allow_noise,
                                                         bool allow_fine_tune = false);

// The spec of a resolved target name, or InvalidArgument.
absl::StatusOr<const backends::TargetSpec*> FindSpec(std::string_view target);

// Base of the configuration tasks: a name, a description, the simulated worker whose targets it
// runs on and whether it takes `noise`; Run parses the options and finds the spec, then calls
// Search. A task that also runs on the real CPU (tile, fusion) overrides SearchCpu, which Run
// calls for target "cpu".
class ConfigTask : public Task {
 public:
  // `allow_fine_tune`: the task serves a learned policy that takes option fine_tune.
  ConfigTask(std::string name, std::string description, std::string worker, bool allow_noise,
             bool allow_fine_tune = false)
      : name_(std::move(name)),
        description_(std::move(description)),
        worker_(std::move(worker)),
        allow_noise_(allow_noise),
        allow_fine_tune_(allow_fine_tune) {}

  std::string_view name() const override { return name_; }
  std::string description() const override { return description_; }
  std::vector<std::string> targets() const override;
  absl::Status ValidateOptions(const TaskOptions& options,
                               const std::string& target) const override;
  absl::StatusOr<TaskOutcome> Run(const TaskRequest& request) const final;

 protected:
  virtual absl::StatusOr<TaskOutcome> Search(const TaskRequest& request,
                                             const ConfigTaskOptions& options,
                                             const backends::TargetSpec& spec) const = 0;
  virtual bool RunsOnCpu() const { return false; }
  virtual absl::StatusOr<TaskOutcome> SearchCpu(const TaskRequest& request,
                                                const ConfigTaskOptions& options) const;
  // Target "gpu": measured on the attached GPU (daemon/gpu_tasks.h).
  virtual bool RunsOnGpu() const { return false; }
  virtual absl::StatusOr<TaskOutcome> SearchGpu(const TaskRequest& request,
                                                const ConfigTaskOptions& options) const;

 private:
  std::string name_, description_, worker_;
  bool allow_noise_;
  bool allow_fine_tune_;
};

struct ConfigSearchRun {
  opt::Candidate best;  // the best configuration (a seed when the search found nothing better)
  TaskOutcome outcome;  // scores, steps, completion; artifacts["configuration"]
};

// `baseline_score` is the problem's default configuration's score (its first seed), and
// `original_score` the graph's as given. FailedPrecondition when no valid configuration exists.
// `model_topk_params` are the task's parameters for strategy model-topk; `own_strategy`, when
// given, runs instead of the registry's strategy of the request's name (a task's learned policy).
absl::StatusOr<ConfigSearchRun> RunConfigSearch(
    const TaskRequest& request, std::string_view task, opt::ConfigProblem& problem, uint64_t seed,
    double original_score, double baseline_score, std::string scorer,
    const opt::StrategyParams& model_topk_params = {},
    std::unique_ptr<opt::Strategy> own_strategy = nullptr);

}  // namespace mltune::daemon
