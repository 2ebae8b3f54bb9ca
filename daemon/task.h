// Tuning tasks the daemon runs ("pass-order" now; tile sizes, fusion, placement and MCM
// partitioning later): each turns a verified graph, a target, a strategy and a budget into a
// tuned result with artifacts. A new task is one file plus one line in task_registry.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/module.h"
#include "optimizers/core/search.h"
#include "storage/store.h"

namespace mltune::daemon {

using TaskOptions = std::map<std::string, std::string>;

struct TaskRequest {
  const ir::Module* module = nullptr;  // verified
  std::string fingerprint;             // of `module`
  std::string target;
  std::string strategy;
  TaskOptions options;  // validated by Task::ValidateOptions
  // Steps and seconds; `stop` and `on_step` are the daemon's cancellation and progress hooks.
  opt::Budget budget;
  // The cached result to continue from (a larger budget than the cache's), or nullopt.
  std::optional<storage::ResultRecord> continue_from;
  std::string worker;  // the name measurements are recorded under
  // The newest checkpoint of a learned model by name (e.g. "pass-order/rl-ppo"), from the store.
  std::function<absl::StatusOr<std::optional<storage::ModelRecord>>(const std::string&)>
      latest_model;
  // Receives every distinct candidate scored, for the measurement log (the cost models' training
  // data). The daemon batches the writes; may be empty.
  std::function<void(storage::MeasurementRecord)> record_measurement;
  // Stores a measured kernel's graph once per kernel key (the learned cost model's input for the
  // tile-kernel rows whose graph_key is that key); may be empty.
  std::function<void(storage::KernelGraphRecord)> record_kernel_graph;
};

// A task logs at most this many distinct candidates per run: the de-duplication set and the log
// stay bounded on searches of millions of steps.
inline constexpr size_t kMaxMeasurementsPerRun = 100'000;

struct TaskOutcome {
  double original_score = 0;  // the graph as given
  double baseline_score = 0;  // the compiler's default for the target
  double tuned_score = 0;     // the best found (never worse than continue_from's)
  int64_t steps = 0;          // charged by the search
  // cpu tile: kernels whose search winner was measured again against its default
  // (opt::tiling::ConfirmWinners), and kernels set back to their defaults.
  int64_t winners_checked = 0;
  int64_t winners_reverted = 0;
  bool stopped = false;  // budget.stop ended the search early
  // The search used its whole step budget or ended on its own; false when time or `stop` cut it
  // short (then the cache records only the steps actually spent).
  bool complete = true;
  std::string scorer;  // what a score is, e.g. "op-count"
  // "optimized_hlo", "pass_sequence", ... (the cache stores them as given).
  std::map<std::string, std::string> artifacts;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string_view name() const = 0;
  virtual std::string description() const = 0;
  virtual std::vector<std::string> targets() const = 0;
  // InvalidArgument naming the bad key or value, and the keys the task knows; or naming an option
  // that does not apply to `target` (a registered target of the task), and where it does.
  virtual absl::Status ValidateOptions(const TaskOptions& options,
                                       const std::string& target) const = 0;
  // A tag for options that change what a score means (pass-order's score=latency: seconds, not
  // ops), "" for none. It extends the result's cache key, so results under different scorers
  // never answer for, continue or replace each other.
  virtual std::string ScoreVariant(const TaskOptions& /*options*/) const { return ""; }
  // Strategies the task runs itself, beside opt::StrategyRegistry's (e.g. learned agents): name,
  // description, and the model the strategy needs from the store on a request's target (a
  // learned cost model is per target, an agent is not; unset or "" = none).
  struct OwnStrategy {
    std::string name;
    std::string description;
    std::function<std::string(std::string_view target)> model;

    std::string ModelFor(std::string_view target) const { return model ? model(target) : ""; }
  };
  virtual std::vector<OwnStrategy> own_strategies() const { return {}; }
  // Thread-safe: the daemon runs one job per worker thread on the same Task.
  virtual absl::StatusOr<TaskOutcome> Run(const TaskRequest& request) const = 0;
};

class TaskRegistry {
 public:
  // Every built-in task.
  static const TaskRegistry& Global();

  void Register(std::unique_ptr<Task> task);
  // nullptr when unknown.
  const Task* Find(std::string_view name) const;
  std::vector<const Task*> All() const;  // by name

 private:
  std::map<std::string, std::unique_ptr<Task>, std::less<>> tasks_;
};

// The pass-ordering task (pass_order_task.cc).
std::unique_ptr<Task> MakePassOrderTask();
// Tile sizes and fusion on tpu-sim (tpu_tasks.cc).
std::unique_ptr<Task> MakeTileTask();
std::unique_ptr<Task> MakeFusionTask();
// Multi-chip-module partitioning on mcm-sim and placement on cluster-sim (partition_tasks.cc).
std::unique_ptr<Task> MakeMcmPartitionTask();
std::unique_ptr<Task> MakePlacementTask();
// XLA's debug options, scored by XLA's measured runtime on xla-cpu / xla-gpu (xla_tasks.cc).
std::unique_ptr<Task> MakeXlaOptionsTask();

}  // namespace mltune::daemon
