// The checks both stores apply before they write, and the job state machine.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "storage/internal.h"
#include "storage/store.h"

namespace mltune::storage {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

absl::Status ValidateKey(const CacheKey& key, std::string_view what) {
  const std::pair<const char*, const std::string*> fields[] = {
      {"fingerprint", &key.fingerprint},
      {"task", &key.task},
      {"target", &key.target},
      {"search_version", &key.search_version}};
  for (const auto& [name, value] : fields) {
    if (value->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(what), ": cache key ", name, " is empty"));
    }
  }
  return absl::OkStatus();
}

absl::Status RequireFinite(double value, std::string_view what, std::string_view field) {
  if (std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": ", std::string(field),
                                                 " is ", value, ", not a finite number"));
}

absl::Status ValidateGraphHash(const std::string& sha256, std::string_view what) {
  const bool hex = sha256.size() == 64 && std::all_of(sha256.begin(), sha256.end(), [](char c) {
                     return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                   });
  if (hex) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": '", sha256,
                                                 "' is not a SHA-256 (64 lowercase hex digits)"));
}

absl::Status ValidateResult(const ResultRecord& record) {
  const std::string what = "PutResult";
  if (absl::Status s = ValidateKey(record.key, what); !s.ok()) return s;
  if (absl::Status s = RequireFinite(record.baseline_score, what, "baseline_score"); !s.ok()) {
    return s;
  }
  if (absl::Status s = RequireFinite(record.tuned_score, what, "tuned_score"); !s.ok()) return s;
  if (record.original_score.has_value()) {
    if (absl::Status s = RequireFinite(*record.original_score, what, "original_score"); !s.ok()) {
      return s;
    }
  }
  if (record.budget_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": budget_steps is ", record.budget_steps, ", must be >= 0"));
  }
  for (const auto& [name, data] : record.artifacts) {
    if (name.empty()) return absl::InvalidArgumentError(what + ": an artifact name is empty");
    if (static_cast<int64_t>(data.size()) > kMaxArtifactBytes) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": artifact '", name, "' is ",
                                                     data.size(), " bytes; a result keeps at most ",
                                                     kMaxArtifactBytes, " per artifact"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateMeasurement(const MeasurementRecord& m, size_t index) {
  const std::string what = absl::StrCat("AppendMeasurements: record ", index);
  if (m.graph_key.empty()) return absl::InvalidArgumentError(what + ": graph_key is empty");
  if (m.task.empty()) return absl::InvalidArgumentError(what + ": task is empty");
  if (m.target.empty()) return absl::InvalidArgumentError(what + ": target is empty");
  if (m.time_ms < 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": time_ms is ", m.time_ms, " (< 0)"));
  }
  return RequireFinite(m.value, what, "value");
}

absl::Status ValidateKernelGraph(const KernelGraphRecord& record) {
  const std::string what = absl::StrCat("PutKernelGraph(", record.kernel_key, ")");
  if (record.kernel_key.empty()) {
    return absl::InvalidArgumentError("PutKernelGraph: kernel_key is empty");
  }
  if (record.graph.empty()) return absl::InvalidArgumentError(what + ": graph is empty");
  if (record.target.empty()) return absl::InvalidArgumentError(what + ": target is empty");
  return absl::OkStatus();
}

absl::Status ValidateModel(const std::string& name, int64_t version) {
  if (name.empty()) return absl::InvalidArgumentError("PutModel: model name is empty");
  if (version < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("PutModel(", name, " v", version, "): version must be >= 0"));
  }
  return absl::OkStatus();
}

absl::Status ValidateModelTraining(const ModelTrainingRecord& record) {
  const std::string what = absl::StrCat("RecordModelTraining(", record.name, ")");
  if (record.name.empty()) {
    return absl::InvalidArgumentError("RecordModelTraining: model name is empty");
  }
  bool known = false;
  for (const char* outcome : {"stored", "rejected", "failed", "preempted", "stopped"}) {
    known = known || record.outcome == outcome;
  }
  if (!known) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": unknown outcome '", record.outcome,
                     "' (expected stored, rejected, failed, preempted or stopped)"));
  }
  if (record.new_rows < 0) return absl::InvalidArgumentError(what + ": new_rows is negative");
  if (record.ended_ms < record.started_ms) {
    return absl::InvalidArgumentError(what + ": ended_ms is before started_ms");
  }
  return absl::OkStatus();
}

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
  }
  return "?";
}

bool IsLegalTransition(JobState from, JobState to) {
  switch (from) {
    case JobState::kQueued:
      return to == JobState::kRunning || to == JobState::kCancelled;
    case JobState::kRunning:
      // running -> running records progress; running -> queued resumes after a restart.
      return true;
    case JobState::kDone:
    case JobState::kFailed:
    case JobState::kCancelled:
      return false;
  }
  return false;
}

std::optional<JobState> ParseJobState(std::string_view name) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kFailed,
                     JobState::kCancelled}) {
    if (JobStateName(s) == name) return s;
  }
  return std::nullopt;
}

bool IsFinal(JobState state) {
  return state == JobState::kDone || state == JobState::kFailed || state == JobState::kCancelled;
}

std::string NewJobId() {
  std::random_device device;
  uint64_t bits = (static_cast<uint64_t>(device()) << 32) ^ device();
  return absl::StrFormat("%016x", bits);
}

absl::Status ValidateJobId(const std::string& id, std::string_view what) {
  bool ok = !id.empty() && id.size() <= 64;
  for (char c : id) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '-');
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": job id '", id,
                                                 "' is not 1-64 characters of [A-Za-z0-9_-]"));
}

absl::Status ValidateProgress(double progress, std::optional<double> best_score,
                              std::string_view what) {
  if (!(progress >= 0 && progress <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": progress is ", progress, ", not in [0, 1]"));
  }
  if (best_score.has_value()) return RequireFinite(*best_score, what, "best_score");
  return absl::OkStatus();
}

absl::Status ValidateNewJob(const JobRecord& job, std::string_view what) {
  if (!job.id.empty()) {
    if (absl::Status s = ValidateJobId(job.id, what); !s.ok()) return s;
  }
  if (job.state != JobState::kQueued) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what),
                                                   ": a new job must be queued, not ",
                                                   std::string(JobStateName(job.state))));
  }
  if (absl::Status s = ValidateKey(job.key, what); !s.ok()) return s;
  if (job.budget_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": budget_steps is ", job.budget_steps, ", must be >= 0"));
  }
  return ValidateProgress(job.progress, job.best_score, what);
}

absl::Status ValidateJobUpdate(const std::string& id, JobState state, double progress,
                               std::optional<double> best_score, const std::string& error,
                               std::string_view what) {
  if (absl::Status s = ValidateJobId(id, what); !s.ok()) return s;
  if (absl::Status s = ValidateProgress(progress, best_score, what); !s.ok()) return s;
  if (state == JobState::kFailed && error.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": a failed job needs an error message"));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobRecord> ApplyTransition(const JobRecord& job, JobState state,
                                          const std::string& owner, int64_t now,
                                          std::string_view what) {
  const JobState from = job.state;
  if (!owner.empty() && (from != JobState::kRunning || job.owner != owner)) {
    return absl::FailedPreconditionError(absl::StrCat(
        std::string(what), ": lease lost: the job is ", std::string(JobStateName(from)),
        job.owner.empty() ? "" : absl::StrCat(" under ", job.owner)));
  }
  if (!IsLegalTransition(from, state)) {
    return absl::FailedPreconditionError(absl::StrCat(std::string(what), ": illegal transition ",
                                                      std::string(JobStateName(from)), " -> ",
                                                      std::string(JobStateName(state))));
  }
  JobRecord next = job;
  next.state = state;
  if (state == JobState::kRunning && from != JobState::kRunning) {
    ++next.attempts;
    next.started_ms = now;
    next.owner = owner;
  }
  if (state != JobState::kRunning) {
    next.owner.clear();
    next.lease_expires_ms = 0;
    next.cancel_requested = false;
  }
  if (IsFinal(state)) next.finished_ms = now;
  next.updated_ms = now;
  return next;
}

absl::Status ValidateLease(const std::string& owner, int64_t lease_ms, std::string_view what) {
  if (owner.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": owner is empty"));
  }
  if (lease_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), ": lease_ms is ", lease_ms, ", must be > 0"));
  }
  return absl::OkStatus();
}

absl::Status QueueFull(int64_t queued, int64_t max_queued) {
  if (queued < max_queued) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat("the job queue is full (", queued,
                                                   " jobs queued, --queue-size ", max_queued,
                                                   "); retry later"));
}

std::string LeaseExpiredError(int64_t attempts) {
  return absl::StrCat("the daemon running it stopped renewing its lease (", attempts,
                      " attempts; not resumed again)");
}

}  // namespace mltune::storage
