// The job table: the state machine, and recovery of jobs a killed daemon left running.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "storage/internal.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace mltune::storage {

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

namespace {

std::optional<JobState> ParseJobState(const std::string& name) {
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

constexpr char kSelectJob[] =
    "SELECT id, state, fingerprint, task, target, search_version, budget_steps, strategy, "
    "request, progress, best_score, error, attempts, created_ms, updated_ms, started_ms, "
    "finished_ms FROM jobs ";

absl::StatusOr<JobRecord> ReadJobRow(const Statement& stmt, const std::string& path) {
  JobRecord job;
  job.id = stmt.ColumnText(0);
  std::string state = stmt.ColumnText(1);
  std::optional<JobState> parsed = ParseJobState(state);
  if (!parsed.has_value()) {
    return absl::DataLossError(
        absl::StrCat(path, ": job ", job.id, " has an unknown state '", state, "'"));
  }
  job.state = *parsed;
  job.key = {stmt.ColumnText(2), stmt.ColumnText(3), stmt.ColumnText(4), stmt.ColumnText(5)};
  job.budget_steps = stmt.ColumnInt(6);
  job.strategy = stmt.ColumnText(7);
  job.request = stmt.ColumnBlob(8);
  job.progress = stmt.ColumnDouble(9);
  job.best_score = stmt.ColumnOptionalDouble(10);
  job.error = stmt.ColumnText(11);
  job.attempts = stmt.ColumnInt(12);
  job.created_ms = stmt.ColumnInt(13);
  job.updated_ms = stmt.ColumnInt(14);
  job.started_ms = stmt.ColumnInt(15);
  job.finished_ms = stmt.ColumnInt(16);
  return job;
}

absl::StatusOr<bool> JobExists(Database& db, const std::string& id) {
  absl::StatusOr<Statement> stmt = db.Prepare("SELECT 1 FROM jobs WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, id);
  return stmt->Step();
}

}  // namespace

absl::StatusOr<std::string> SqliteStore::CreateJob(const JobRecord& job) {
  const std::string what = "CreateJob";
  if (!job.id.empty()) {
    if (absl::Status s = ValidateJobId(job.id, what); !s.ok()) return s;
  }
  if (job.state != JobState::kQueued) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": a new job must be queued, not ",
                                                   std::string(JobStateName(job.state))));
  }
  if (absl::Status s = ValidateKey(job.key, what); !s.ok()) return s;
  if (job.budget_steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": budget_steps is ", job.budget_steps, ", must be >= 0"));
  }
  if (absl::Status s = ValidateProgress(job.progress, job.best_score, what); !s.ok()) return s;

  std::string id = job.id;
  absl::Status status = Write([&](Database& db) -> absl::Status {
    for (int tries = 0;; ++tries) {
      if (job.id.empty()) id = NewJobId();
      absl::StatusOr<bool> exists = JobExists(db, id);
      if (!exists.ok()) return exists.status();
      if (!*exists) break;
      if (!job.id.empty() || tries == 8) {
        return absl::AlreadyExistsError(absl::StrCat(what, ": job ", id, " already exists"));
      }
    }
    const int64_t now = NowMs();
    absl::StatusOr<Statement> insert = db.Prepare(
        "INSERT INTO jobs (id, state, fingerprint, task, target, search_version, budget_steps, "
        "strategy, request, progress, best_score, error, created_ms, updated_ms) "
        "VALUES (?1, 'queued', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)");
    if (!insert.ok()) return insert.status();
    return insert->BindText(1, id)
        .BindText(2, job.key.fingerprint)
        .BindText(3, job.key.task)
        .BindText(4, job.key.target)
        .BindText(5, job.key.search_version)
        .BindInt(6, job.budget_steps)
        .BindText(7, job.strategy)
        .BindBlob(8, job.request)
        .BindDouble(9, job.progress)
        .BindOptionalDouble(10, job.best_score)
        .BindText(11, job.error)
        .BindInt(12, now)
        .Run();
  });
  if (!status.ok()) return status;
  return id;
}

absl::Status SqliteStore::UpdateJobState(const std::string& id, JobState state, double progress,
                                         std::optional<double> best_score,
                                         const std::string& error) {
  const std::string what = absl::StrCat("UpdateJobState(", id, ")");
  if (absl::Status s = ValidateJobId(id, what); !s.ok()) return s;
  if (absl::Status s = ValidateProgress(progress, best_score, what); !s.ok()) return s;
  if (state == JobState::kFailed && error.empty()) {
    return absl::InvalidArgumentError(what + ": a failed job needs an error message");
  }
  return Write([&](Database& db) -> absl::Status {
    JobState from = JobState::kQueued;
    int64_t attempts = 0, started_ms = 0, finished_ms = 0;
    {
      absl::StatusOr<Statement> stmt =
          db.Prepare("SELECT state, attempts, started_ms, finished_ms FROM jobs WHERE id = ?1");
      if (!stmt.ok()) return stmt.status();
      stmt->BindText(1, id);
      absl::StatusOr<bool> row = stmt->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::NotFoundError(absl::StrCat(what, ": no such job"));
      std::optional<JobState> parsed = ParseJobState(stmt->ColumnText(0));
      if (!parsed.has_value()) {
        return absl::DataLossError(absl::StrCat(path_, ": job ", id, " has an unknown state"));
      }
      from = *parsed;
      attempts = stmt->ColumnInt(1);
      started_ms = stmt->ColumnInt(2);
      finished_ms = stmt->ColumnInt(3);
    }
    if (!IsLegalTransition(from, state)) {
      return absl::FailedPreconditionError(absl::StrCat(what, ": illegal transition ",
                                                        std::string(JobStateName(from)), " -> ",
                                                        std::string(JobStateName(state))));
    }
    const int64_t now = NowMs();
    if (state == JobState::kRunning && from != JobState::kRunning) {
      ++attempts;
      started_ms = now;
    }
    if (IsFinal(state)) finished_ms = now;
    absl::StatusOr<Statement> update = db.Prepare(
        "UPDATE jobs SET state = ?2, progress = ?3, best_score = coalesce(?4, best_score), "
        "error = ?5, attempts = ?6, started_ms = ?7, finished_ms = ?8, updated_ms = ?9 "
        "WHERE id = ?1");
    if (!update.ok()) return update.status();
    return update->BindText(1, id)
        .BindText(2, JobStateName(state))
        .BindDouble(3, progress)
        .BindOptionalDouble(4, best_score)
        .BindText(5, error)
        .BindInt(6, attempts)
        .BindInt(7, started_ms)
        .BindInt(8, finished_ms)
        .BindInt(9, now)
        .Run();
  });
}

absl::StatusOr<JobRecord> SqliteStore::GetJob(const std::string& id) {
  if (absl::Status s = ValidateJobId(id, "GetJob"); !s.ok()) return s;
  std::optional<JobRecord> job;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare(absl::StrCat(kSelectJob, "WHERE id = ?1"));
    if (!stmt.ok()) return stmt.status();
    stmt->BindText(1, id);
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::NotFoundError(absl::StrCat("GetJob: no job ", id));
    absl::StatusOr<JobRecord> record = ReadJobRow(*stmt, path_);
    if (!record.ok()) return record.status();
    job = *std::move(record);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return *std::move(job);
}

absl::StatusOr<std::vector<JobRecord>> SqliteStore::ListJobs(std::optional<JobState> state) {
  std::vector<JobRecord> jobs;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare(absl::StrCat(
        kSelectJob, state.has_value() ? "WHERE state = ?1 " : "", "ORDER BY created_ms, rowid"));
    if (!stmt.ok()) return stmt.status();
    if (state.has_value()) stmt->BindText(1, JobStateName(*state));
    while (true) {
      absl::StatusOr<bool> row = stmt->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      absl::StatusOr<JobRecord> record = ReadJobRow(*stmt, path_);
      if (!record.ok()) return record.status();
      jobs.push_back(*std::move(record));
    }
  });
  if (!status.ok()) return status;
  return jobs;
}

absl::StatusOr<std::map<std::string, int64_t>> SqliteStore::CountJobsByState() {
  std::map<std::string, int64_t> counts;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt =
        db.Prepare("SELECT state, count(*) FROM jobs GROUP BY state ORDER BY state");
    if (!stmt.ok()) return stmt.status();
    while (true) {
      absl::StatusOr<bool> row = stmt->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      counts[stmt->ColumnText(0)] = stmt->ColumnInt(1);
    }
  });
  if (!status.ok()) return status;
  return counts;
}

absl::StatusOr<RecoveredJobs> SqliteStore::RecoverAfterCrash(RecoveryPolicy policy,
                                                             int max_attempts) {
  if (max_attempts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecoverAfterCrash: max_attempts is ", max_attempts, ", must be >= 1"));
  }
  RecoveredJobs recovered;
  absl::Status status = Write([&](Database& db) -> absl::Status {
    recovered = {};
    std::vector<std::pair<std::string, int64_t>> running;  // id, attempts
    {
      absl::StatusOr<Statement> stmt = db.Prepare(
          "SELECT id, attempts FROM jobs WHERE state = 'running' ORDER BY created_ms, rowid");
      if (!stmt.ok()) return stmt.status();
      while (true) {
        absl::StatusOr<bool> row = stmt->Step();
        if (!row.ok()) return row.status();
        if (!*row) break;
        running.emplace_back(stmt->ColumnText(0), stmt->ColumnInt(1));
      }
    }
    const int64_t now = NowMs();
    absl::StatusOr<Statement> requeue =
        db.Prepare("UPDATE jobs SET state = 'queued', error = '', updated_ms = ?2 WHERE id = ?1");
    if (!requeue.ok()) return requeue.status();
    absl::StatusOr<Statement> fail = db.Prepare(
        "UPDATE jobs SET state = 'failed', error = ?2, updated_ms = ?3, finished_ms = ?3 "
        "WHERE id = ?1");
    if (!fail.ok()) return fail.status();
    for (const auto& [id, attempts] : running) {
      if (policy == RecoveryPolicy::kResume && attempts < max_attempts) {
        if (absl::Status s = requeue->BindText(1, id).BindInt(2, now).Run(); !s.ok()) return s;
        recovered.resumed.push_back(id);
        continue;
      }
      std::string error = kDaemonStoppedError;
      if (policy == RecoveryPolicy::kResume) {
        error = absl::StrCat(error, " (", attempts, " attempts; not resumed again)");
      }
      if (absl::Status s = fail->BindText(1, id).BindText(2, error).BindInt(3, now).Run();
          !s.ok()) {
        return s;
      }
      recovered.failed.push_back(id);
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return recovered;
}

}  // namespace mltune::storage
