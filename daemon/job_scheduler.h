// The daemon's job scheduler: a fixed pool of worker threads that claim jobs from the store and
// run each through its tasks (daemon/task.h). The queue is the store's job table, so several
// daemons on one shared store (PostgreSQL) take jobs from one queue: each claims under a lease it
// renews while the job runs, and a job whose daemon died is taken over when its lease expires.
// Identical in-flight requests attach to one job (in the store, so across daemons too); deadlines
// and cancels are enforced, and on shutdown running jobs drain for a while and are then
// checkpointed (best-so-far cached, job queued again). No gRPC types here: the service
// (compile_service.cc) translates.
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
#include <set>
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
  std::string graph_sha256;        // of the graph's bytes: where the graph store keeps it
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
  // Grows with every change a watcher should see: a counter while this daemon runs the job, the
  // store's updated_ms otherwise.
  int64_t version = 0;
  bool live = false;  // queued or running (here or on another daemon sharing the store)
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
  // This daemon's name in the store's leases; "" = HOST:PID:RANDOM.
  std::string owner;
  // A running job's lease, renewed every third of it; when its daemon stops renewing (killed),
  // another daemon on the same store takes the job over after this long.
  double lease_seconds = 30;
  // How often idle workers look for jobs other daemons queued, and watchers of jobs running
  // elsewhere re-read them (jobs submitted here wake the workers at once).
  double poll_seconds = 0.5;
};

class JobScheduler {
 public:
  // Rebuilds a job's spec from its stored request (for jobs resumed after a restart).
  using Decoder = std::function<absl::StatusOr<JobSpec>(const storage::JobRecord&)>;

  JobScheduler(storage::Store& store, Metrics& metrics, SchedulerOptions options, Decoder decoder);
  ~JobScheduler();  // Shutdown(0) when still running
  JobScheduler(const JobScheduler&) = delete;
  JobScheduler& operator=(const JobScheduler&) = delete;

  // Alone on its store, resumes the previous process's jobs (running ones are queued again, or
  // failed after max_attempts); then starts the workers and the lease renewal. Call once.
  absl::Status Start();

  struct Submitted {
    std::string job_id;
    bool attached = false;  // an identical job was already queued or running
  };
  // Queues a job, or attaches to an identical in-flight one (on any daemon sharing the store).
  // ResourceExhausted when the queue is full, Unavailable when shutting down.
  absl::StatusOr<Submitted> Submit(std::shared_ptr<const JobSpec> spec);

  // Cancels a queued job at once, a running one at its next search step (then it is cancelled,
  // its best so far cached); a job running on another daemon stops when that daemon next renews
  // its lease. FailedPrecondition for a finished job, NotFound for an unknown one.
  absl::StatusOr<JobView> Cancel(const std::string& job_id);

  absl::StatusOr<JobView> Get(const std::string& job_id);
  // Blocks until the job's version exceeds `seen_version`, the job leaves this scheduler, the
  // scheduler shuts down or `timeout` passes. For a job not running here it waits at most
  // poll_seconds (the caller reads the store again).
  void WaitForChange(const std::string& job_id, int64_t seen_version,
                     std::chrono::milliseconds timeout);

  std::vector<WorkerView> Workers();
  // Candidates scored per simulated worker (tpu-sim, ...) since start-up.
  std::map<std::string, int64_t> SimulatedCandidates();
  int64_t queue_depth();  // queued jobs in the store (every daemon's); one store query
  // A job runs here, or one was queued at the last look: the store's count at the last lease
  // renewal, kept current by this daemon's own submits, claims and cancels. No store query, for
  // the model refresher's poll every 0.1 s.
  bool busy();
  int64_t running();  // jobs running here
  int worker_threads() const { return options_.worker_threads; }
  int queue_capacity() const { return options_.queue_size; }
  bool shutting_down() const { return shutting_down_.load(); }
  // Shutdown has finished: no job runs, none will (queued ones wait in the store for a restart).
  bool stopped() const { return joined_.load(); }

  // Stops accepting and claiming jobs, lets running jobs go on for up to `drain_seconds`, then
  // stops them: each caches its best so far and goes back to queued in the store (resumed on the
  // next start, or at once by another daemon). Queued jobs stay queued. Joins the workers.
  // Idempotent.
  void Shutdown(double drain_seconds);

 private:
  struct LiveJob;

  void WorkerLoop(int index);
  // Claims a job from the store and makes it live here; nullptr when none is waiting.
  std::shared_ptr<LiveJob> Claim(int worker);
  void LeaseLoop();
  void RenewLeases();
  void RunJob(int worker, const std::shared_ptr<LiveJob>& job);
  // Runs one task of a job; returns its final state for the job when it should end now (failed,
  // cancelled, or queued for a shutdown or a lost lease), nullopt to go on with the next task.
  std::optional<storage::JobState> RunTask(int worker, const std::shared_ptr<LiveJob>& job,
                                           size_t task_index, std::string* error);
  void Finish(const std::shared_ptr<LiveJob>& job, storage::JobState state,
              const std::string& error);
  JobView ViewLocked(const LiveJob& job) const;
  // The spec this daemon decoded or was given for a job, or nullptr; under mu_.
  std::shared_ptr<const JobSpec> KnownSpecLocked(const std::string& job_id) const;
  void RememberSpecLocked(const std::string& job_id, std::shared_ptr<const JobSpec> spec);
  void UpdateGauges();       // under mu_
  void Touch(LiveJob& job);  // under mu_: bump the version and wake watchers
  int64_t lease_ms() const;
  std::chrono::milliseconds poll_interval() const;

  storage::Store& store_;
  Metrics& metrics_;
  SchedulerOptions options_;
  Decoder decoder_;
  std::string owner_;

  std::mutex mu_;
  std::condition_variable work_cv_;    // workers wait for jobs
  std::condition_variable change_cv_;  // watchers wait for job changes; the lease loop to stop
  int64_t submissions_ = 0;  // jobs submitted here: wakes idle workers without a lost wakeup
  std::map<std::string, std::shared_ptr<LiveJob>> live_;  // by job id: running here
  // Cancels of jobs this daemon had claimed in the store but not yet made live: Claim reads them
  // under mu_, so a cancel arriving between the claim and the job's start is not left to the
  // next lease renewal (by which time a short job has finished).
  std::set<std::string> cancel_pending_;
  // Specs of jobs submitted or run here, newest last (bounded): they spare a claim the decoding
  // of the stored request and let views of jobs running elsewhere name their tasks' cache keys.
  std::map<std::string, std::shared_ptr<const JobSpec>> specs_;
  std::deque<std::string> spec_order_;
  // The last finished jobs, newest last: their views keep what the store does not (steps done).
  std::deque<std::shared_ptr<LiveJob>> recent_;
  std::vector<WorkerView> workers_;
  std::map<std::string, int64_t> simulated_candidates_;
  int64_t running_ = 0;
  int64_t queued_gauge_ = 0;  // the store's queued jobs at the last look
  std::atomic<bool> shutting_down_{false};
  std::atomic<bool> stop_running_{false};  // running jobs must stop (after the drain)
  bool started_ = false;
  std::atomic<bool> joined_{false};
  bool lease_stop_ = false;  // under mu_
  std::vector<std::thread> threads_;
  std::thread lease_thread_;
};

}  // namespace mltune::daemon
