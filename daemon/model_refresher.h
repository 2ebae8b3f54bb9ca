// Keeps the daemon's learned cost models current with its own measurements. Every tile and fusion
// job logs the kernels it measures or simulates (the cost models' training data); once a model's
// log has grown by enough rows since its newest version, and the daemon has had no job for a
// while, the refresher runs `mltune train-cost-model --no-eval` on the daemon's store in a child
// process at the lowest CPU priority. The child stores the next version, which the next
// model-guided job loads (daemon/learned_cost_models.h). A job arriving while it trains kills it
// at once: training must not share the machine with measurements, and it resumes on the next
// idle spell. Training runs out of process so a killed or crashing trainer cannot take the daemon
// down, and its LibTorch threads and memory go with it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/metrics/metrics.h"
#include "storage/store.h"

namespace mltune::daemon {

// A cost model (cost-model/<task>-<target>) and the rows logged for it since `since_ms`.
struct ModelNewRows {
  std::string task;    // "tile" or "fusion"
  std::string target;  // "cpu", "tpu-v4-core", ...
  int64_t new_rows = 0;
  int64_t since_ms = 0;  // its newest version's creation (0 when it has none)
  int64_t version = 0;   // its newest version; 0 when it has none
  // The train-cost-model flags its newest version was trained with (its metadata's "recipe",
  // only opt::guided::kTrainingRecipeFlags); empty for none, or one from before recipes.
  std::vector<std::string> recipe;
};

// The measurement log's tasks that train the `task` model: what train-cost-model reads.
std::vector<std::string> TrainingLogTasks(std::string_view task);

// For each task ("tile", "fusion") on each of `targets`: the rows logged for it after its newest
// version was stored, or after not_before_ms[name] when later (a failed training waits for new
// data, not for the clock). Every model, most new rows first.
absl::StatusOr<std::vector<ModelNewRows>> NewRowsPerModel(
    storage::Store& store, const std::vector<std::string>& targets,
    const std::map<std::string, int64_t>& not_before_ms = {});

// Whether `model` has enough new rows to be retrained: at least `min_new_rows`, and at least 1.
bool IsDue(const ModelNewRows& model, int64_t min_new_rows);

// Those of NewRowsPerModel that are due (IsDue).
absl::StatusOr<std::vector<ModelNewRows>> StaleModels(
    storage::Store& store, const std::vector<std::string>& targets, int64_t min_new_rows,
    const std::map<std::string, int64_t>& not_before_ms = {});

// The flags a retraining passes to train-cost-model: `recipe`, with each flag that `overrides`
// (--trainer-args) also sets replaced by the override's ("--epochs 30" and "--epochs=30" alike).
std::vector<std::string> TrainerFlags(const std::vector<std::string>& recipe,
                                      const std::vector<std::string>& overrides);

struct RefresherOptions {
  int64_t min_new_rows = 1000;  // 0: never retrain
  double idle_seconds = 60;     // no job queued or running for this long before training starts
  std::string trainer;          // the mltune CLI
  std::vector<std::string> trainer_args;  // added to train-cost-model's command line
  // Passes --gate: a retrained model that loses to the version it would replace is not stored
  // (outcome "rejected"), and the model waits for min_new_rows more rows.
  bool gate = true;
  std::string store_path;
  std::string log_path;  // the trainer's output, appended
  std::vector<std::string> targets;
  double poll_seconds = 0.1;  // how often a running trainer is checked against new jobs
  // While idle, how often the log is counted again with no job run since the last count (rows
  // that another process, such as `mltune collect`, writes into the store).
  double recount_seconds = 60;
};

// How a model's last retraining ended.
struct LastTraining {
  std::string outcome;  // the metrics' label: "stored", "rejected", "failed", ...
  int64_t ended_ms = 0;
};

// What GetStats reports of the refresher.
struct RefresherStatus {
  int64_t min_new_rows = 0;  // 0: retraining is off
  double idle_seconds = 0;
  int64_t counted_ms = 0;                    // when `models` was counted (unix ms); 0: not yet
  std::vector<ModelNewRows> models;          // every model on the targets, as last counted
  std::string training;                      // the model a trainer runs for now; "" when none
  std::map<std::string, LastTraining> last;  // by model name, also runs before a restart
};

// The mltune CLI the daemon trains with when --trainer is not given: MLTUNE_CLI, else `mltune-full`
// or `mltune` beside this executable, else the build tree's; "" when none is executable.
std::string DefaultTrainerPath();

class ModelRefresher {
 public:
  // `busy` says whether a job is queued or running; it is polled every options.poll_seconds.
  ModelRefresher(storage::Store& store, Metrics& metrics, std::function<bool()> busy,
                 RefresherOptions options);
  ~ModelRefresher();  // Shutdown()
  ModelRefresher(const ModelRefresher&) = delete;
  ModelRefresher& operator=(const ModelRefresher&) = delete;

  void Start();  // no-op when min_new_rows is 0
  // Kills a running trainer and joins. Idempotent.
  void Shutdown();
  RefresherStatus Status() const;  // thread-safe

 private:
  enum class Outcome { kStored, kRejected, kFailed, kPreempted, kStopped };
  static std::string_view OutcomeName(Outcome outcome);  // the metrics' label
  void Loop();
  // Runs the trainer for `model` until it exits, a job arrives or Shutdown.
  Outcome Train(const ModelNewRows& model);
  // Reads each model's last retraining from the store: its outcome for Status(), and after a
  // rejection or failure the wait for new rows, as if this process had run it.
  void RestoreLastTrainings();
  bool WaitFor(double seconds);  // false once stopping

  storage::Store& store_;
  Metrics& metrics_;
  std::function<bool()> busy_;
  RefresherOptions options_;
  std::map<std::string, int64_t> not_before_ms_;  // by model name: the last failed start

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  RefresherStatus status_;  // under mu_
  std::thread thread_;
};

}  // namespace mltune::daemon
