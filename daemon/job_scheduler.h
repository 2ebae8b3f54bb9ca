// The daemon's job scheduler: a bounded queue in front of a fixed pool of worker threads, each
// running one job at a time through its tasks (daemon/task.h). It persists every job in the store
// (so a restart resumes what was queued or running), attaches identical in-flight requests to one
// job, enforces deadlines, cancels on request and, on shutdown, drains running jobs for a while
// and then checkpoints them (best-so-far cached, job queued again). No gRPC types here: the
// service (compile_service.cc) translates.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "daemon/metrics/metrics.h"
#include "daemon/task.h"
#include "ir/module.h"
#include "storage/store.h"

namespace mltune::daemon {

// A validated request: what a job runs.
struct JobSpec {
  std::shared_ptr<const ir::Module> module;  // verified
  std::string fingerprint;
  std::string graph_name;
  std::vector<std::string> tasks;  // registered, non-empty
  std::string target;
  std::string strategy;
  int64_t budget_steps = 0;   // > 0
  double budget_seconds = 0;  // 0 = none (max_job_seconds still applies)
  TaskOptions options;
  bool skip_cache = false;
  std::string request;  // the serialized wire request, stored so the job can resume after a crash

  storage::CacheKey TaskKey(const std::string& task) const;
  // Equal for requests that would run the same search: the key of in-flight de-duplication.
  std::string DedupKey() const;
};

// What a watcher sees of a job.
struct JobView {
  storage::JobRecord record;            // state, progress, best score, error, times, attempts
  std::shared_ptr<const JobSpec> spec;  // nullptr for a job the store no longer can decode
  int64_t steps_done = 0;               // of the running task
  int64_t version = 0;                  // grows with every change while the job is live
  bool live = false;                    // held by this scheduler (queued or running)
};

struct WorkerView {
  std::string name;
  std::string job_id;  // "" when idle
  std::string target;  // of the job it runs
  int64_t candidates_evaluated = 0;
};

struct SchedulerOptions {
  int worker_threads = 2;
  int queue_size = 64;
  double max_job_seconds = 3600;
  int max_attempts = 3;
  std::string search_version;
  // Progress is written to the store at most this often (watchers see every change sooner).
  double progress_write_seconds = 1.0;
};

class JobScheduler {
 public:
  // Rebuilds a job's spec from its stored request (for jobs resumed after a restart).
  using Decoder = std::function<absl::StatusOr<JobSpec>(const storage::JobRecord&)>;

  JobScheduler(storage::Store& store, Metrics& metrics, SchedulerOptions options, Decoder decoder);
  ~JobScheduler();  // Shutdown(0) when still running
  JobScheduler(const JobScheduler&) = delete;
  JobScheduler& operator=(const JobScheduler&) = delete;

  // Resumes the previous process's jobs (running ones are queued again, or failed after
  // max_attempts) and starts the workers. Call once.
  absl::Status Start();

  struct Submitted {
    std::string job_id;
    bool attached = false;  // an identical job was already queued or running
  };
  // Queues a job, or attaches to an identical in-flight one. ResourceExhausted when the queue is
  // full, Unavailable when shutting down.
  absl::StatusOr<Submitted> Submit(std::shared_ptr<const JobSpec> spec);

  // Cancels a queued job at once, a running one at its next search step (then it is cancelled,
  // its best so far cached). FailedPrecondition for a finished job, NotFound for an unknown one.
  absl::StatusOr<JobView> Cancel(const std::string& job_id);

  absl::StatusOr<JobView> Get(const std::string& job_id);
  // Blocks until the live job's version exceeds `seen_version`, the job leaves the scheduler, the
  // scheduler shuts down or `timeout` passes. Returns immediately for a job that is not live.
  void WaitForChange(const std::string& job_id, int64_t seen_version,
                     std::chrono::milliseconds timeout);

  std::vector<WorkerView> Workers();
  // Candidates scored per simulated worker (tpu-sim, ...) since start-up.
  std::map<std::string, int64_t> SimulatedCandidates();
  int64_t queue_depth();
  int64_t running();
  int worker_threads() const { return options_.worker_threads; }
  int queue_capacity() const { return options_.queue_size; }
  bool shutting_down() const { return shutting_down_.load(); }
  // Shutdown has finished: no job runs, none will (queued ones wait in the store for a restart).
  bool stopped() const { return joined_.load(); }

  // Stops accepting jobs, lets running jobs go on for up to `drain_seconds`, then stops them:
  // each caches its best so far and goes back to queued in the store (resumed on the next
  // start). Queued jobs stay queued in the store. Joins the workers. Idempotent.
  void Shutdown(double drain_seconds);

 private:
  struct LiveJob;

  void WorkerLoop(int index);
  void RunJob(int worker, const std::shared_ptr<LiveJob>& job);
  // Runs one task of a job; returns its final state for the job when it should end now (failed,
  // cancelled, or queued for a shutdown), nullopt to go on with the next task.
  std::optional<storage::JobState> RunTask(int worker, const std::shared_ptr<LiveJob>& job,
                                           size_t task_index, std::string* error);
  void Finish(const std::shared_ptr<LiveJob>& job, storage::JobState state,
              const std::string& error);
  JobView ViewLocked(const LiveJob& job) const;
  void UpdateGauges();       // under mu_
  void Touch(LiveJob& job);  // under mu_: bump the version and wake watchers

  storage::Store& store_;
  Metrics& metrics_;
  SchedulerOptions options_;
  Decoder decoder_;

  std::mutex mu_;
  std::condition_variable work_cv_;    // workers wait for jobs
  std::condition_variable change_cv_;  // watchers wait for job changes
  std::deque<std::shared_ptr<LiveJob>> queue_;
  std::map<std::string, std::shared_ptr<LiveJob>> live_;  // by job id: queued or running
  std::map<std::string, std::string> in_flight_;          // dedup key -> job id
  // The last finished jobs, newest last: their views keep what the store does not (steps done).
  std::deque<std::shared_ptr<LiveJob>> recent_;
  std::vector<WorkerView> workers_;
  std::map<std::string, int64_t> simulated_candidates_;
  int64_t running_ = 0;
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> stop_running_{false};  // running jobs must stop (after the drain)
  bool started_ = false;
  std::atomic<bool> joined_{false};
  std::vector<std::thread> threads_;
};

}  // namespace mltune::daemon
