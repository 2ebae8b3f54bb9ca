#include "daemon/job_scheduler.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/gpu/device.h"
#include "costmodels/features/kernel_graph.h"
#include "daemon/sim_workers.h"
#include "daemon/version.h"
#include "nlohmann/json.hpp"

namespace mltune::daemon {
namespace {

// The search's best score each time it changes, kept as the result's "best_so_far" artifact for
// `mltune result --plot`. Bounded: past kMaxPoints every other point is dropped.
class BestSoFarTrace {
 public:
  void Observe(int64_t step, double seconds, double best) {
    if (!std::isfinite(best) || (!best_.empty() && best == best_.back())) return;
    if (best_.size() >= kMaxPoints) Thin();
    step_.push_back(step);
    seconds_.push_back(seconds);
    best_.push_back(best);
  }
  // Ends the trace at the search's last step with its final best.
  std::string Json(int64_t last_step, double seconds, double final_best) {
    if (std::isfinite(final_best)) {
      step_.push_back(last_step);
      seconds_.push_back(seconds);
      best_.push_back(final_best);
    }
    return nlohmann::json{{"step", step_}, {"seconds", seconds_}, {"best", best_}}.dump();
  }

 private:
  static constexpr size_t kMaxPoints = 2048;
  void Thin() {
    size_t kept = 0;
    for (size_t i = 0; i < best_.size(); i += 2, ++kept) {
      step_[kept] = step_[i];
      seconds_[kept] = seconds_[i];
      best_[kept] = best_[i];
    }
    step_.resize(kept);
    seconds_.resize(kept);
    best_.resize(kept);
  }
  std::vector<int64_t> step_;
  std::vector<double> seconds_, best_;
};

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

constexpr size_t kRecentJobs = 256;
constexpr size_t kMeasurementBatch = 1000;

std::string WorkerName(int index) { return absl::StrCat("inprocess-", index); }

// Store errors in the background have no caller to return to: they go to the daemon's log.
void LogError(const std::string& what, const absl::Status& status) {
  std::cerr << "mltuned: " << what << ": " << status << "\n";
}

}  // namespace

storage::CacheKey JobSpec::TaskKey(const std::string& task) const {
  const Task* t = TaskRegistry::Global().Find(task);
  // GPU results hold for the card they were measured on: its descriptor is in the key.
  return {fingerprint, task, target == "gpu" ? backends::gpu::GpuCacheTarget() : target,
          SearchVersionFor(t != nullptr ? t->ScoreVariant(options) : "")};
}

std::string JobSpec::DedupKey() const {
  std::string key =
      absl::StrCat(fingerprint, "|", absl::StrJoin(tasks, ","), "|", target, "|", strategy, "|",
                   budget_steps, "|", budget_seconds, "|", skip_cache ? 1 : 0);
  for (const auto& [k, v] : options) absl::StrAppend(&key, "|", k, "=", v);
  return key;
}

struct JobScheduler::LiveJob {
  std::string id;
  std::shared_ptr<const JobSpec> spec;
  storage::JobRecord record;  // mirrors the store's row
  std::string dedup_key;
  std::atomic<bool> cancel{false};
  int64_t steps_done = 0;
  int64_t version = 0;
  Clock::time_point started;  // of this attempt; deadlines use it (immune to wall-clock jumps)
};

JobScheduler::JobScheduler(storage::Store& store, Metrics& metrics, SchedulerOptions options,
                           Decoder decoder)
    : store_(store), metrics_(metrics), options_(std::move(options)), decoder_(std::move(decoder)) {
  options_.worker_threads = std::max(1, options_.worker_threads);
  for (int i = 0; i < options_.worker_threads; ++i)
    workers_.push_back(
        {.name = WorkerName(i), .job_id = "", .target = "", .candidates_evaluated = 0});
}

JobScheduler::~JobScheduler() { Shutdown(0); }

absl::Status JobScheduler::Start() {
  if (started_) return absl::FailedPreconditionError("JobScheduler::Start called twice");
  absl::StatusOr<storage::RecoveredJobs> recovered =
      store_.RecoverAfterCrash(storage::RecoveryPolicy::kResume, options_.max_attempts);
  if (!recovered.ok()) return recovered.status();
  for (const std::string& id : recovered->failed) {
    std::cerr << "mltuned: job " << id << " failed: it was running at " << options_.max_attempts
              << " crashes\n";
  }
  absl::StatusOr<std::vector<storage::JobRecord>> queued =
      store_.ListJobs(storage::JobState::kQueued);
  if (!queued.ok()) return queued.status();
  std::lock_guard<std::mutex> lock(mu_);
  for (storage::JobRecord& record : *queued) {
    absl::StatusOr<JobSpec> spec = decoder_(record);
    if (!spec.ok()) {
      // queued -> failed is not a legal transition: pass through running.
      const std::string error = absl::StrCat("cannot resume: ", spec.status().message());
      absl::Status s = store_.UpdateJobState(record.id, storage::JobState::kRunning, 0);
      if (s.ok()) s = store_.UpdateJobState(record.id, storage::JobState::kFailed, 0, {}, error);
      if (!s.ok()) LogError(absl::StrCat("failing job ", record.id), s);
      continue;
    }
    auto job = std::make_shared<LiveJob>();
    job->id = record.id;
    job->spec = std::make_shared<const JobSpec>(*std::move(spec));
    job->dedup_key = job->spec->DedupKey();
    job->record = std::move(record);
    in_flight_.emplace(job->dedup_key, job->id);
    live_[job->id] = job;
    queue_.push_back(job);
  }
  if (!queue_.empty()) std::cerr << "mltuned: resuming " << queue_.size() << " queued job(s)\n";
  for (int i = 0; i < options_.worker_threads; ++i) {
    threads_.emplace_back([this, i] { WorkerLoop(i); });
  }
  started_ = true;
  UpdateGauges();
  return absl::OkStatus();
}

absl::StatusOr<JobScheduler::Submitted> JobScheduler::Submit(std::shared_ptr<const JobSpec> spec) {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) {
    return absl::UnavailableError("mltuned is shutting down; submit again after it restarts");
  }
  std::string dedup_key = spec->DedupKey();
  if (auto it = in_flight_.find(dedup_key); it != in_flight_.end()) {
    return Submitted{it->second, true};
  }
  if (static_cast<int64_t>(queue_.size()) >= options_.queue_size) {
    return absl::ResourceExhaustedError(absl::StrCat("the job queue is full (", queue_.size(),
                                                     " jobs queued, --queue-size ",
                                                     options_.queue_size, "); retry later"));
  }
  storage::JobRecord record;
  record.state = storage::JobState::kQueued;
  record.key = {spec->fingerprint, absl::StrJoin(spec->tasks, ","), spec->target, kSearchVersion};
  record.budget_steps = spec->budget_steps;
  record.strategy = spec->strategy;
  record.request = spec->request;
  absl::StatusOr<std::string> id = store_.CreateJob(record);
  if (!id.ok()) return id.status();
  record.id = *id;
  record.created_ms = record.updated_ms = UnixMs();

  auto job = std::make_shared<LiveJob>();
  job->id = *id;
  job->spec = std::move(spec);
  job->record = std::move(record);
  job->dedup_key = std::move(dedup_key);
  in_flight_.emplace(job->dedup_key, job->id);
  live_[job->id] = job;
  queue_.push_back(job);
  work_cv_.notify_one();
  UpdateGauges();
  return Submitted{*id, false};
}

absl::StatusOr<JobView> JobScheduler::Cancel(const std::string& job_id) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    auto it = live_.find(job_id);
    if (it != live_.end()) {
      std::shared_ptr<LiveJob> job = it->second;
      if (job->record.state == storage::JobState::kQueued) {
        queue_.erase(std::remove(queue_.begin(), queue_.end(), job), queue_.end());
        lock.unlock();
        Finish(job, storage::JobState::kCancelled, "");
        return Get(job_id);
      }
      // Running: the search sees the flag at its next step; the worker finishes the job.
      job->cancel = true;
      Touch(*job);
      return ViewLocked(*job);
    }
  }
  absl::StatusOr<storage::JobRecord> record = store_.GetJob(job_id);
  if (!record.ok()) return record.status();
  if (record->state != storage::JobState::kQueued && record->state != storage::JobState::kRunning) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", job_id, " already finished (",
                     std::string(storage::JobStateName(record->state)), ")"));
  }
  // In the store but not here (it could not be resumed): cancel it there.
  absl::Status s = store_.UpdateJobState(job_id, storage::JobState::kCancelled, record->progress);
  if (!s.ok()) return s;
  return Get(job_id);
}

absl::StatusOr<JobView> JobScheduler::Get(const std::string& job_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(job_id);
    if (it != live_.end()) return ViewLocked(*it->second);
    for (auto r = recent_.rbegin(); r != recent_.rend(); ++r) {
      if ((*r)->id != job_id) continue;
      JobView view = ViewLocked(**r);
      view.live = false;
      return view;
    }
  }
  absl::StatusOr<storage::JobRecord> record = store_.GetJob(job_id);
  if (!record.ok()) return record.status();
  JobView view;
  view.record = *std::move(record);
  return view;
}

void JobScheduler::WaitForChange(const std::string& job_id, int64_t seen_version,
                                 std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = live_.find(job_id);
  if (it == live_.end()) return;
  std::shared_ptr<LiveJob> job = it->second;
  change_cv_.wait_for(lock, timeout, [&] {
    return joined_ || job->version > seen_version || !live_.contains(job_id);
  });
}

std::vector<WorkerView> JobScheduler::Workers() {
  std::lock_guard<std::mutex> lock(mu_);
  return workers_;
}

std::map<std::string, int64_t> JobScheduler::SimulatedCandidates() {
  std::lock_guard<std::mutex> lock(mu_);
  return simulated_candidates_;
}

int64_t JobScheduler::queue_depth() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

int64_t JobScheduler::running() {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

void JobScheduler::Shutdown(double drain_seconds) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (joined_) return;
    shutting_down_ = true;
    work_cv_.notify_all();
    change_cv_.notify_all();
  }
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(drain_seconds * 1000));
  {
    std::unique_lock<std::mutex> lock(mu_);
    work_cv_.wait_until(lock, deadline, [&] { return running_ == 0; });
  }
  stop_running_ = true;  // what still runs checkpoints and goes back to queued
  for (std::thread& t : threads_) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  threads_.clear();
  joined_ = true;
  change_cv_.notify_all();
}

void JobScheduler::WorkerLoop(int index) {
  while (true) {
    std::shared_ptr<LiveJob> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return shutting_down_ || !queue_.empty(); });
      // Queued jobs stay queued in the store when the daemon stops: the next start runs them.
      if (shutting_down_) return;
      job = queue_.front();
      queue_.pop_front();
      ++running_;
      workers_[index].job_id = job->id;
      workers_[index].target = job->spec->target;
      UpdateGauges();
    }
    RunJob(index, job);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
      workers_[index].job_id.clear();
      workers_[index].target.clear();
      UpdateGauges();
    }
    work_cv_.notify_all();  // Shutdown waits for running_ == 0 on the same variable
  }
}

void JobScheduler::RunJob(int worker, const std::shared_ptr<LiveJob>& job) {
  if (absl::Status s = store_.UpdateJobState(job->id, storage::JobState::kRunning, 0); !s.ok()) {
    LogError(absl::StrCat("starting job ", job->id), s);
    Finish(job, storage::JobState::kFailed, absl::StrCat("store: ", s.message()));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job->record.state = storage::JobState::kRunning;
    job->record.attempts += 1;
    job->record.started_ms = UnixMs();
    job->started = Clock::now();
    job->record.progress = 0;
    Touch(*job);
  }
  storage::JobState final_state = storage::JobState::kDone;
  std::string error;
  for (size_t i = 0; i < job->spec->tasks.size(); ++i) {
    std::optional<storage::JobState> ended = RunTask(worker, job, i, &error);
    if (ended.has_value()) {
      final_state = *ended;
      break;
    }
  }
  Finish(job, final_state, error);
  if (final_state != storage::JobState::kQueued) {
    metrics_.ObserveJob(absl::StrJoin(job->spec->tasks, ","), storage::JobStateName(final_state),
                        SecondsSince(job->started));
  }
}

std::optional<storage::JobState> JobScheduler::RunTask(int worker,
                                                       const std::shared_ptr<LiveJob>& job,
                                                       size_t task_index, std::string* error) {
  const JobSpec& spec = *job->spec;
  const std::string& task_name = spec.tasks[task_index];
  if (job->cancel) return storage::JobState::kCancelled;
  if (stop_running_) return storage::JobState::kQueued;
  const Task* task = TaskRegistry::Global().Find(task_name);
  if (task == nullptr) {
    *error = absl::StrCat("unknown task '", task_name, "'");
    return storage::JobState::kFailed;
  }
  const storage::CacheKey key = spec.TaskKey(task_name);
  absl::StatusOr<std::optional<storage::ResultRecord>> cached = store_.LookupResult(key);
  if (!cached.ok()) {
    *error = absl::StrCat("store: ", cached.status().message());
    return storage::JobState::kFailed;
  }
  storage::CacheDecision decision = storage::Decide(*cached, spec.budget_steps);
  if (spec.skip_cache) {
    decision = cached->has_value() ? storage::CacheDecision::kContinueFromBest
                                   : storage::CacheDecision::kMiss;
  }
  if (decision == storage::CacheDecision::kHit) return std::nullopt;  // answered meanwhile

  // A larger budget than the cache's continues from the cached best with the difference.
  const bool resume = decision == storage::CacheDecision::kContinueFromBest;
  int64_t steps = spec.budget_steps;
  if (resume && !spec.skip_cache) steps = std::max<int64_t>(1, steps - (*cached)->budget_steps);

  // The job's deadline covers all its tasks.
  const double remaining = options_.max_job_seconds - SecondsSince(job->started);
  if (remaining <= 0) {
    *error = absl::StrCat("deadline exceeded: the job ran past --max-job-seconds (",
                          options_.max_job_seconds, " s)");
    return storage::JobState::kFailed;
  }

  TaskRequest request;
  request.module = spec.module.get();
  request.fingerprint = spec.fingerprint;
  request.target = spec.target;
  request.strategy = spec.strategy;
  request.options = spec.options;
  // Simulated targets are scored by their simulator, whose name the measurement log records.
  const SimWorker* simulated = WorkerForTarget(spec.target);
  request.worker = simulated != nullptr ? simulated->name : WorkerName(worker);
  request.latest_model = [this](const std::string& name) { return store_.LatestModel(name); };
  if (resume) request.continue_from = **cached;
  request.budget.max_steps = steps;
  request.budget.max_seconds =
      spec.budget_seconds > 0 ? std::min(spec.budget_seconds, remaining) : remaining;
  request.budget.stop = [this, job] { return job->cancel.load() || stop_running_.load(); };
  // Measurements reach the store in batches while the search runs, so a long search neither
  // holds them all in memory nor loses them all to a crash.
  std::vector<storage::MeasurementRecord> batch;
  absl::Status log_status;
  auto flush = [&] {
    if (batch.empty() || !log_status.ok()) return;
    log_status = store_.AppendMeasurements(batch);
    if (log_status.ok()) {
      std::map<std::pair<std::string, std::string>, int64_t> logged;  // by task and target
      for (const storage::MeasurementRecord& m : batch) ++logged[{m.task, m.target}];
      for (const auto& [task_target, n] : logged) {
        metrics_.MeasurementsLogged(task_target.first, task_target.second, n);
      }
    }
    batch.clear();
  };
  request.record_measurement = [&](storage::MeasurementRecord m) {
    batch.push_back(std::move(m));
    if (batch.size() >= kMeasurementBatch) flush();
  };
  // One row per distinct kernel, written at once (insert-or-ignore, or in place of a graph of
  // an older feature set): graphs are few.
  request.record_kernel_graph = [&](storage::KernelGraphRecord g) {
    if (!log_status.ok()) return;
    log_status = store_.PutKernelGraph(g, costmodels::features::IsCurrentKernelGraph).status();
  };

  const double task_share = 1.0 / static_cast<double>(spec.tasks.size());
  Clock::time_point last_touch = Clock::now();
  Clock::time_point last_write = last_touch;
  BestSoFarTrace trace;
  const Clock::time_point task_start = Clock::now();
  request.budget.on_step = [&](const opt::Budget::Report& report) {
    const Clock::time_point now = Clock::now();
    trace.Observe(report.steps, std::chrono::duration<double>(now - task_start).count(),
                  report.best_score);
    // Watchers hear of progress every 50 ms at most; the store every progress_write_seconds.
    if (now - last_touch < std::chrono::milliseconds(50)) return;
    last_touch = now;
    const double progress = std::min(
        1.0, task_share * (static_cast<double>(task_index) +
                           static_cast<double>(report.steps) / static_cast<double>(steps)));
    const std::optional<double> best =
        std::isfinite(report.best_score) ? std::optional<double>(report.best_score) : std::nullopt;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job->steps_done = report.steps;
      job->record.progress = progress;
      if (best.has_value()) job->record.best_score = best;
      Touch(*job);
    }
    if (std::chrono::duration<double>(now - last_write).count() >=
        options_.progress_write_seconds) {
      last_write = now;
      absl::Status s = store_.UpdateJobState(job->id, storage::JobState::kRunning, progress, best);
      if (!s.ok()) LogError(absl::StrCat("progress of job ", job->id), s);
    }
  };

  absl::StatusOr<TaskOutcome> outcome = task->Run(request);
  flush();
  if (!outcome.ok()) {
    *error = absl::StrCat("task ", task_name, ": ", outcome.status().message());
    return storage::JobState::kFailed;
  }
  metrics_.CandidatesEvaluated(task_name, spec.strategy, request.worker, outcome->steps);
  metrics_.WinnersConfirmed(task_name, outcome->winners_checked, outcome->winners_reverted);
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers_[worker].candidates_evaluated += outcome->steps;
    if (simulated != nullptr) simulated_candidates_[simulated->name] += outcome->steps;
    job->steps_done = outcome->steps;
    job->record.best_score = outcome->tuned_score;
    job->record.progress = task_share * static_cast<double>(task_index + 1);
    Touch(*job);
  }
  if (!log_status.ok()) {
    *error = absl::StrCat("store: ", log_status.message());
    return storage::JobState::kFailed;
  }

  storage::ResultRecord result;
  result.key = key;
  result.original_score = outcome->original_score;
  result.baseline_score = outcome->baseline_score;
  result.tuned_score = outcome->tuned_score;
  // The cache records the effort behind its answer: the whole request when the search ran its
  // course, only the steps spent when a deadline, a cancel or a shutdown cut it short.
  const int64_t spent = (resume ? (*cached)->budget_steps : 0) + outcome->steps;
  result.budget_steps = outcome->complete ? std::max(spec.budget_steps, spent) : spent;
  result.strategy = spec.strategy;
  result.artifacts = std::move(outcome->artifacts);
  result.artifacts["best_so_far"] =
      trace.Json(outcome->steps, std::chrono::duration<double>(Clock::now() - task_start).count(),
                 outcome->tuned_score);
  result.provenance.worker = absl::StrCat(request.worker, "/", outcome->scorer);
  result.provenance.mltune_version = kMltuneVersion;
  if (absl::StatusOr<storage::PutOutcome> put = store_.PutResult(result); !put.ok()) {
    *error = absl::StrCat("store: ", put.status().message());
    return storage::JobState::kFailed;
  }
  if (!outcome->complete) {
    if (job->cancel) return storage::JobState::kCancelled;
    if (stop_running_) return storage::JobState::kQueued;
  }
  return std::nullopt;
}

void JobScheduler::Finish(const std::shared_ptr<LiveJob>& job, storage::JobState state,
                          const std::string& error) {
  double progress = 0;
  std::optional<double> best;
  {
    std::lock_guard<std::mutex> lock(mu_);
    progress = state == storage::JobState::kDone ? 1.0 : job->record.progress;
    best = job->record.best_score;
  }
  const std::string message =
      state == storage::JobState::kFailed && error.empty() ? "unknown error" : error;
  absl::Status s = store_.UpdateJobState(job->id, state, progress, best, message);
  if (!s.ok()) LogError(absl::StrCat("finishing job ", job->id), s);
  std::lock_guard<std::mutex> lock(mu_);
  job->record.state = state;
  job->record.progress = progress;
  job->record.error = message;
  if (state != storage::JobState::kQueued) job->record.finished_ms = UnixMs();
  // The worker that ran it is idle from here: a client that saw the job end and then lists the
  // workers must not find one still busy with it.
  for (WorkerView& w : workers_) {
    if (w.job_id == job->id) {
      w.job_id.clear();
      w.target.clear();
    }
  }
  live_.erase(job->id);
  recent_.push_back(job);
  if (recent_.size() > kRecentJobs) recent_.pop_front();
  if (auto it = in_flight_.find(job->dedup_key); it != in_flight_.end() && it->second == job->id) {
    in_flight_.erase(it);
  }
  Touch(*job);
  UpdateGauges();
}

JobView JobScheduler::ViewLocked(const LiveJob& job) const {
  JobView view;
  view.record = job.record;
  view.spec = job.spec;
  view.steps_done = job.steps_done;
  view.version = job.version;
  view.live = true;
  return view;
}

void JobScheduler::UpdateGauges() {
  metrics_.SetQueueDepth(static_cast<int64_t>(queue_.size()));
  metrics_.SetJobsRunning(running_);
}

void JobScheduler::Touch(LiveJob& job) {
  ++job.version;
  change_cv_.notify_all();
}

}  // namespace mltune::daemon
