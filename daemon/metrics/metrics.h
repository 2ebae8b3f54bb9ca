// The daemon's Prometheus metrics, served as text on their own HTTP port (GET /metrics).
// prometheus-cpp stays inside metrics.cc. Names follow Prometheus conventions: base units
// (seconds), `_total` for counters; deploy/grafana/mltune.json charts them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mltune::daemon {

class Metrics {
 public:
  // Serves /metrics on `listen` ("HOST:PORT"; port 0 picks a free port). An empty `listen`
  // keeps the metrics without serving them (tests, embedded use). Unavailable when the port
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<Metrics>> Create(const std::string& listen);
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // "HOST:PORT" actually bound ("" when not served); port() is 0 then.
  std::string address() const;
  int port() const;

  // mltune_requests_total{method,code} and mltune_request_duration_seconds{method}.
  // `code` is the gRPC status code name, e.g. "OK", "INVALID_ARGUMENT".
  void ObserveRequest(std::string_view method, std::string_view code, double seconds);
  // mltune_queue_depth, mltune_jobs_running (gauges).
  void SetQueueDepth(int64_t depth);
  void SetJobsRunning(int64_t running);
  // mltune_job_duration_seconds{task,state}: a finished job's run time by its final state
  // ("done", "failed", "cancelled").
  void ObserveJob(std::string_view task, std::string_view state, double seconds);
  // mltune_cache_hits_total{task}, mltune_cache_misses_total{task}.
  void CacheHit(std::string_view task);
  void CacheMiss(std::string_view task);
  // mltune_candidates_evaluated_total{task,strategy,worker}.
  void CandidatesEvaluated(std::string_view task, std::string_view strategy,
                           std::string_view worker, int64_t count);
  // mltune_winners_checked_total{task}, mltune_winners_reverted_total{task}: search winners
  // measured again against the defaults, and those set back (a rising share says the machine's
  // timings are noisy, or the search chases noise).
  void WinnersConfirmed(std::string_view task, int64_t checked, int64_t reverted);
  // mltune_measurements_logged_total{task,target}: rows appended to the measurement log, by its
  // task ("tile", "tile-kernel", "fusion-kernel-in-module", ...): the cost models' training data
  // as it accumulates.
  void MeasurementsLogged(std::string_view task, std::string_view target, int64_t count);
  // mltune_cost_model_trainings_total{model,outcome} and
  // mltune_cost_model_training_seconds_total{model}: the daemon's own retraining of a cost model
  // (daemon/model_refresher.h); outcome "stored", "failed", "preempted" (a job arrived) or
  // "stopped" (shutdown).
  void CostModelTrained(std::string_view model, std::string_view outcome, double seconds);
  // mltune_cost_model_trainer_running: 1 while a trainer child runs.
  void SetCostModelTrainerRunning(bool running);
  // mltune_cost_model_new_rows{model}: training rows logged for a model since its newest version,
  // as the daemon last counted them (retraining starts at --retrain-rows).
  void SetCostModelNewRows(std::string_view model, int64_t rows);

  // The text exposition format of every metric (what GET /metrics returns).
  std::string Serialize() const;

 private:
  struct Impl;
  explicit Metrics(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mltune::daemon
