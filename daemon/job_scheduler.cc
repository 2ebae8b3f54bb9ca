#include "daemon/job_scheduler.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
constexpr size_t kKnownSpecs = 1024;
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

namespace {

// Leaves out the artifacts the store cannot keep, naming them in an "omitted" artifact, so the
// result (its scores, pass-order's pass_sequence) is still cached: a tuned module as HLO text is
// about 4x its model's weights, and a model of 250 MB of weights passes the store's limit.
void OmitOversizedArtifacts(std::map<std::string, std::string>& artifacts) {
  std::vector<std::string> omitted;
  for (auto it = artifacts.begin(); it != artifacts.end();) {
    if (static_cast<int64_t>(it->second.size()) <= storage::kMaxArtifactBytes) {
      ++it;
      continue;
    }
    omitted.push_back(absl::StrCat(it->first, " (", it->second.size(), " bytes)"));
    it = artifacts.erase(it);
  }
  if (omitted.empty()) return;
  artifacts["omitted"] = absl::StrCat(
      absl::StrJoin(omitted, ", "), ": over the store's limit of ", storage::kMaxArtifactBytes,
      " bytes per artifact; for pass-order, apply the pass_sequence artifact to the model with "
      "`mltune opt MODEL --passes P1,P2,... -o OUT`");
}

}  // namespace

struct JobScheduler::LiveJob {
  std::string id;
  std::shared_ptr<const JobSpec> spec;
  storage::JobRecord record;  // mirrors the store's row
  std::atomic<bool> cancel{false};
  // Another daemon holds the job now (this one's lease expired): stop, and write nothing more.
  std::atomic<bool> lost{false};
  int64_t steps_done = 0;
  int64_t version = 0;
  Clock::time_point started;  // of this attempt; deadlines use it (immune to wall-clock jumps)
};

namespace {

std::string DefaultOwner() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "unknown");
  std::random_device device;
  return absl::StrFormat("%s:%d:%08x", host, static_cast<int>(getpid()), device());
}

}  // namespace

JobScheduler::JobScheduler(storage::Store& store, Metrics& metrics, SchedulerOptions options,
                           Decoder decoder)
    : store_(store), metrics_(metrics), options_(std::move(options)), decoder_(std::move(decoder)) {
  options_.worker_threads = std::max(1, options_.worker_threads);
  options_.lease_seconds = std::max(0.3, options_.lease_seconds);
  options_.poll_seconds = std::clamp(options_.poll_seconds, 0.01, 60.0);
  owner_ = options_.owner.empty() ? DefaultOwner() : options_.owner;
  for (int i = 0; i < options_.worker_threads; ++i)
    workers_.push_back(
        {.name = WorkerName(i), .job_id = "", .target = "", .candidates_evaluated = 0});
}

JobScheduler::~JobScheduler() { Shutdown(0); }

int64_t JobScheduler::lease_ms() const {
  return static_cast<int64_t>(options_.lease_seconds * 1000);
}

std::chrono::milliseconds JobScheduler::poll_interval() const {
  return std::chrono::milliseconds(static_cast<int64_t>(options_.poll_seconds * 1000));
}

absl::Status JobScheduler::Start() {
  if (started_) return absl::FailedPreconditionError("JobScheduler::Start called twice");
  // Alone on its store, a daemon knows that what was running belongs to its previous process; on
  // a shared store it may be another daemon's, so only expired leases are taken over.
  if (!store_.shared()) {
    absl::StatusOr<storage::RecoveredJobs> recovered =
        store_.RecoverAfterCrash(storage::RecoveryPolicy::kResume, options_.max_attempts);
    if (!recovered.ok()) return recovered.status();
    for (const std::string& id : recovered->failed) {
      std::cerr << "mltuned: job " << id << " failed: it was running at " << options_.max_attempts
                << " crashes\n";
    }
  }
  absl::StatusOr<std::map<std::string, int64_t>> counts = store_.CountJobsByState();
  if (!counts.ok()) return counts.status();
  std::lock_guard<std::mutex> lock(mu_);
  queued_gauge_ = (*counts)["queued"];
  if (queued_gauge_ > 0) std::cerr << "mltuned: " << queued_gauge_ << " queued job(s) to run\n";
  for (int i = 0; i < options_.worker_threads; ++i) {
    threads_.emplace_back([this, i] { WorkerLoop(i); });
  }
  lease_thread_ = std::thread([this] { LeaseLoop(); });
  started_ = true;
  UpdateGauges();
  return absl::OkStatus();
}

absl::StatusOr<JobScheduler::Submitted> JobScheduler::Submit(std::shared_ptr<const JobSpec> spec) {
  if (shutting_down_) {
    return absl::UnavailableError("mltuned is shutting down; submit again after it restarts");
  }
  storage::JobRecord record;
  record.state = storage::JobState::kQueued;
  record.key = {spec->fingerprint, absl::StrJoin(spec->tasks, ","), spec->target, kSearchVersion};
  record.budget_steps = spec->budget_steps;
  record.strategy = spec->strategy;
  record.request = spec->request;
  record.dedup_key = spec->DedupKey();
  absl::StatusOr<storage::SubmittedJob> submitted =
      store_.SubmitJob(record, std::max(1, options_.queue_size));
  if (!submitted.ok()) return submitted.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (!submitted->attached) {
    RememberSpecLocked(submitted->id, std::move(spec));
    ++submissions_;
    ++queued_gauge_;
    work_cv_.notify_one();
    UpdateGauges();
  }
  return Submitted{submitted->id, submitted->attached};
}

absl::StatusOr<JobView> JobScheduler::Cancel(const std::string& job_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(job_id);
    if (it != live_.end()) {
      // Running here: the search sees the flag at its next step; the worker finishes the job.
      LiveJob& job = *it->second;
      job.cancel = true;
      Touch(job);
      return ViewLocked(job);
    }
  }
  // Queued (cancelled at once) or running on another daemon (which stops it at its next renewal).
  absl::StatusOr<storage::JobRecord> record = store_.RequestCancel(job_id);
  if (!record.ok()) return record.status();
  if (record->state == storage::JobState::kRunning && record->owner == owner_) {
    // Claimed here meanwhile: live now, or about to be (Claim then finds it pending).
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(job_id);
    if (it != live_.end()) {
      it->second->cancel = true;
      Touch(*it->second);
    } else {
      cancel_pending_.insert(job_id);
    }
  }
  if (record->state == storage::JobState::kCancelled) {
    std::lock_guard<std::mutex> lock(mu_);
    queued_gauge_ = std::max<int64_t>(0, queued_gauge_ - 1);
    UpdateGauges();
    change_cv_.notify_all();
  }
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
  view.live = view.record.state == storage::JobState::kQueued ||
              view.record.state == storage::JobState::kRunning;
  view.version = view.record.updated_ms;
  std::lock_guard<std::mutex> lock(mu_);
  view.spec = KnownSpecLocked(job_id);
  return view;
}

void JobScheduler::WaitForChange(const std::string& job_id, int64_t seen_version,
                                 std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = live_.find(job_id);
  if (it == live_.end()) {
    // Queued, or running elsewhere: wake when this daemon claims it, else read the store again.
    change_cv_.wait_for(lock, std::min(timeout, poll_interval()),
                        [&] { return joined_ || live_.contains(job_id); });
    return;
  }
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
  absl::StatusOr<std::map<std::string, int64_t>> counts = store_.CountJobsByState();
  std::lock_guard<std::mutex> lock(mu_);
  if (counts.ok()) queued_gauge_ = (*counts)["queued"];
  UpdateGauges();
  return queued_gauge_;
}

bool JobScheduler::busy() {
  std::lock_guard<std::mutex> lock(mu_);
  return running_ > 0 || queued_gauge_ > 0;
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
  // The leases are renewed until the last job is checkpointed, so none expires meanwhile.
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease_stop_ = true;
    change_cv_.notify_all();
  }
  if (lease_thread_.joinable()) lease_thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  threads_.clear();
  joined_ = true;
  change_cv_.notify_all();
}

void JobScheduler::WorkerLoop(int index) {
  while (true) {
    int64_t seen_submissions = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      // Queued jobs stay queued in the store when the daemon stops: the next start runs them.
      if (shutting_down_) return;
      seen_submissions = submissions_;
    }
    std::shared_ptr<LiveJob> job = Claim(index);
    if (job == nullptr) {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait_for(lock, poll_interval(),
                        [&] { return shutting_down_ || submissions_ != seen_submissions; });
      continue;
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

std::shared_ptr<JobScheduler::LiveJob> JobScheduler::Claim(int worker) {
  absl::StatusOr<std::optional<storage::JobRecord>> claimed =
      store_.ClaimJob(owner_, lease_ms(), options_.max_attempts);
  if (!claimed.ok()) {
    LogError("claiming a job", claimed.status());
    return nullptr;
  }
  if (!claimed->has_value()) return nullptr;
  storage::JobRecord record = **std::move(claimed);
  std::shared_ptr<const JobSpec> spec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queued_gauge_ = std::max<int64_t>(0, queued_gauge_ - 1);
    spec = KnownSpecLocked(record.id);
  }
  if (spec == nullptr) {
    absl::StatusOr<JobSpec> decoded = decoder_(record);
    if (!decoded.ok()) {
      const std::string error = absl::StrCat("cannot resume: ", decoded.status().message());
      absl::Status s = store_.UpdateJobState(record.id, storage::JobState::kFailed, record.progress,
                                             {}, error, owner_);
      if (!s.ok()) LogError(absl::StrCat("failing job ", record.id), s);
      return nullptr;
    }
    spec = std::make_shared<const JobSpec>(*std::move(decoded));
  }
  auto job = std::make_shared<LiveJob>();
  job->id = record.id;
  job->spec = spec;
  job->record = std::move(record);
  job->record.progress = 0;
  job->started = Clock::now();
  if (job->record.attempts > 1) {
    std::cerr << "mltuned: job " << job->id << " resumes (attempt " << job->record.attempts
              << ")\n";
  }
  std::lock_guard<std::mutex> lock(mu_);
  RememberSpecLocked(job->id, spec);
  live_[job->id] = job;
  if (cancel_pending_.erase(job->id) > 0 || job->record.cancel_requested) job->cancel = true;
  ++running_;
  workers_[worker].job_id = job->id;
  workers_[worker].target = spec->target;
  Touch(*job);
  UpdateGauges();
  return job;
}

void JobScheduler::LeaseLoop() {
  // A third of the lease: two renewals can fail (a store hiccup) before the lease runs out.
  const auto period = std::chrono::milliseconds(std::max<int64_t>(lease_ms() / 3, 10));
  std::unique_lock<std::mutex> lock(mu_);
  while (!lease_stop_) {
    change_cv_.wait_for(lock, period, [&] { return lease_stop_; });
    if (lease_stop_) return;
    lock.unlock();
    RenewLeases();
    lock.lock();
  }
}

void JobScheduler::RenewLeases() {
  // Only jobs claimed before the renewal began can be judged by its answer.
  std::vector<std::shared_ptr<LiveJob>> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, job] : live_) held.push_back(job);
  }
  absl::StatusOr<std::map<std::string, bool>> renewed = store_.RenewLeases(owner_, lease_ms());
  absl::StatusOr<std::map<std::string, int64_t>> counts = store_.CountJobsByState();
  std::lock_guard<std::mutex> lock(mu_);
  if (counts.ok()) queued_gauge_ = (*counts)["queued"];
  UpdateGauges();
  if (!renewed.ok()) {
    LogError("renewing job leases", renewed.status());
    return;
  }
  for (const std::shared_ptr<LiveJob>& job : held) {
    if (!live_.contains(job->id)) continue;  // finished meanwhile
    auto it = renewed->find(job->id);
    if (it == renewed->end()) {
      if (!job->lost.exchange(true)) {
        std::cerr << "mltuned: job " << job->id
                  << " was taken over by another daemon (its lease expired); stopping it here\n";
      }
    } else if (it->second && !job->cancel.exchange(true)) {
      Touch(*job);
    }
  }
}

void JobScheduler::RunJob(int worker, const std::shared_ptr<LiveJob>& job) {
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
  if (stop_running_ || job->lost) return storage::JobState::kQueued;
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
  request.budget.stop = [this, job] {
    return job->cancel.load() || stop_running_.load() || job->lost.load();
  };
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
      absl::Status s =
          store_.UpdateJobState(job->id, storage::JobState::kRunning, progress, best, "", owner_);
      // Refused by the fence: another daemon took the job over.
      if (absl::IsFailedPrecondition(s)) job->lost = true;
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
  OmitOversizedArtifacts(result.artifacts);
  if (absl::StatusOr<storage::PutOutcome> put = store_.PutResult(result); !put.ok()) {
    *error = absl::StrCat("store: ", put.status().message());
    return storage::JobState::kFailed;
  }
  if (!outcome->complete) {
    if (job->cancel) return storage::JobState::kCancelled;
    if (stop_running_ || job->lost) return storage::JobState::kQueued;
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
  // A lost job belongs to another daemon now: its row is that daemon's to write.
  if (!job->lost) {
    absl::Status s = store_.UpdateJobState(job->id, state, progress, best, message, owner_);
    if (!s.ok()) LogError(absl::StrCat("finishing job ", job->id), s);
  }
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
  // A finished job's views need its spec's fields, not its graph: otherwise the daemon would keep
  // the weights of every model among the jobs it remembers. (A checkpointed or lost job keeps
  // its module: it runs again.)
  if (state != storage::JobState::kQueued && job->spec->module != nullptr) {
    auto light = std::make_shared<JobSpec>(*job->spec);
    light->module.reset();
    job->spec = light;
    if (auto known = specs_.find(job->id); known != specs_.end()) known->second = light;
  }
  // A checkpointed or lost job is not finished: views must come from the store again.
  if (state != storage::JobState::kQueued) {
    recent_.push_back(job);
    if (recent_.size() > kRecentJobs) recent_.pop_front();
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
  metrics_.SetQueueDepth(queued_gauge_);
  metrics_.SetJobsRunning(running_);
}

std::shared_ptr<const JobSpec> JobScheduler::KnownSpecLocked(const std::string& job_id) const {
  auto it = specs_.find(job_id);
  return it != specs_.end() ? it->second : nullptr;
}

void JobScheduler::RememberSpecLocked(const std::string& job_id,
                                      std::shared_ptr<const JobSpec> spec) {
  if (specs_.insert_or_assign(job_id, std::move(spec)).second) spec_order_.push_back(job_id);
  while (spec_order_.size() > kKnownSpecs) {
    specs_.erase(spec_order_.front());
    spec_order_.pop_front();
  }
}

void JobScheduler::Touch(LiveJob& job) {
  ++job.version;
  change_cv_.notify_all();
}

}  // namespace mltune::daemon
