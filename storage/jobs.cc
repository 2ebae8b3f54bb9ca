// The job table: the state machine, and recovery of jobs a killed daemon left running.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace mltune::storage {

namespace {

constexpr char kSelectJob[] =
    "SELECT id, state, fingerprint, task, target, search_version, budget_steps, strategy, "
    "request, progress, best_score, error, attempts, created_ms, updated_ms, started_ms, "
    "finished_ms, dedup_key, owner, lease_expires_ms, cancel_requested FROM jobs ";

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
  job.dedup_key = stmt.ColumnText(17);
  job.owner = stmt.ColumnText(18);
  job.lease_expires_ms = stmt.ColumnInt(19);
  job.cancel_requested = stmt.ColumnInt(20) != 0;
  return job;
}

absl::StatusOr<bool> JobExists(Database& db, const std::string& id) {
  absl::StatusOr<Statement> stmt = db.Prepare("SELECT 1 FROM jobs WHERE id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, id);
  return stmt->Step();
}

}  // namespace

namespace {

// The queued or running job holding `dedup_key`, if any.
absl::StatusOr<std::optional<std::string>> InFlightJob(Database& db, const std::string& dedup_key) {
  absl::StatusOr<Statement> stmt = db.Prepare(
      "SELECT id FROM jobs WHERE dedup_key = ?1 AND state IN ('queued', 'running') LIMIT 1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, dedup_key);
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(stmt->ColumnText(0));
}

// Inserts `job` as queued, under a generated id when it has none; returns the id.
absl::StatusOr<std::string> InsertJob(Database& db, const JobRecord& job, const std::string& what) {
  std::string id = job.id;
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
      "strategy, request, progress, best_score, error, created_ms, updated_ms, dedup_key) "
      "VALUES (?1, 'queued', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13)");
  if (!insert.ok()) return insert.status();
  absl::Status s = insert->BindText(1, id)
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
                       .BindText(13, job.dedup_key)
                       .Run();
  if (!s.ok()) return s;
  return id;
}

absl::StatusOr<JobRecord> ReadJob(Database& db, const std::string& id, const std::string& path,
                                  std::string_view what) {
  absl::StatusOr<Statement> stmt = db.Prepare(absl::StrCat(kSelectJob, "WHERE id = ?1"));
  if (!stmt.ok()) return stmt.status();
  stmt->BindText(1, id);
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::NotFoundError(absl::StrCat(std::string(what), ": no job ", id));
  return ReadJobRow(*stmt, path);
}

}  // namespace

absl::StatusOr<SubmittedJob> SqliteStore::SubmitJob(const JobRecord& job, int64_t max_queued) {
  const std::string what = "SubmitJob";
  if (absl::Status s = ValidateNewJob(job, what); !s.ok()) return s;
  SubmittedJob submitted;
  absl::Status status = Write([&](Database& db) -> absl::Status {
    if (!job.dedup_key.empty()) {
      absl::StatusOr<std::optional<std::string>> existing = InFlightJob(db, job.dedup_key);
      if (!existing.ok()) return existing.status();
      if (existing->has_value()) {
        submitted = {**existing, true};
        return absl::OkStatus();
      }
    }
    if (max_queued > 0) {
      absl::StatusOr<Statement> count =
          db.Prepare("SELECT count(*) FROM jobs WHERE state = 'queued'");
      if (!count.ok()) return count.status();
      absl::StatusOr<bool> row = count->Step();
      if (!row.ok()) return row.status();
      if (absl::Status s = QueueFull(count->ColumnInt(0), max_queued); !s.ok()) return s;
    }
    absl::StatusOr<std::string> inserted = InsertJob(db, job, what);
    if (!inserted.ok()) return inserted.status();
    submitted = {*inserted, false};
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return submitted;
}

absl::Status SqliteStore::UpdateJobState(const std::string& id, JobState state, double progress,
                                         std::optional<double> best_score, const std::string& error,
                                         const std::string& owner) {
  const std::string what = absl::StrCat("UpdateJobState(", id, ")");
  if (absl::Status s = ValidateJobUpdate(id, state, progress, best_score, error, what); !s.ok()) {
    return s;
  }
  return Write([&](Database& db) -> absl::Status {
    absl::StatusOr<JobRecord> job = ReadJob(db, id, path_, what);
    if (!job.ok()) return job.status();
    const int64_t now = NowMs();
    absl::StatusOr<JobRecord> next = ApplyTransition(*job, state, owner, now, what);
    if (!next.ok()) return next.status();
    absl::StatusOr<Statement> update = db.Prepare(
        "UPDATE jobs SET state = ?2, progress = ?3, best_score = coalesce(?4, best_score), "
        "error = ?5, attempts = ?6, started_ms = ?7, finished_ms = ?8, updated_ms = ?9, "
        "owner = ?10, lease_expires_ms = ?11, cancel_requested = ?12 WHERE id = ?1");
    if (!update.ok()) return update.status();
    return update->BindText(1, id)
        .BindText(2, JobStateName(state))
        .BindDouble(3, progress)
        .BindOptionalDouble(4, best_score)
        .BindText(5, error)
        .BindInt(6, next->attempts)
        .BindInt(7, next->started_ms)
        .BindInt(8, next->finished_ms)
        .BindInt(9, next->updated_ms)
        .BindText(10, next->owner)
        .BindInt(11, next->lease_expires_ms)
        .BindInt(12, next->cancel_requested ? 1 : 0)
        .Run();
  });
}

absl::StatusOr<std::optional<JobRecord>> SqliteStore::ClaimJob(const std::string& owner,
                                                               int64_t lease_ms, int max_attempts) {
  const std::string what = "ClaimJob";
  if (absl::Status s = ValidateLease(owner, lease_ms, what); !s.ok()) return s;
  if (max_attempts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": max_attempts is ", max_attempts, ", must be >= 1"));
  }
  std::optional<JobRecord> claimed;
  absl::Status status = Write([&](Database& db) -> absl::Status {
    claimed.reset();
    const int64_t now = NowMs();
    while (true) {
      std::string id;
      JobState state = JobState::kQueued;
      int64_t attempts = 0;
      {
        absl::StatusOr<Statement> next = db.Prepare(
            "SELECT id, state, attempts FROM jobs WHERE state = 'queued' OR (state = 'running' "
            "AND owner <> '' AND lease_expires_ms < ?1) ORDER BY created_ms, rowid LIMIT 1");
        if (!next.ok()) return next.status();
        next->BindInt(1, now);
        absl::StatusOr<bool> row = next->Step();
        if (!row.ok()) return row.status();
        if (!*row) return absl::OkStatus();
        id = next->ColumnText(0);
        state = next->ColumnText(1) == "running" ? JobState::kRunning : JobState::kQueued;
        attempts = next->ColumnInt(2);
      }
      if (state == JobState::kRunning && attempts >= max_attempts) {
        absl::StatusOr<Statement> fail = db.Prepare(
            "UPDATE jobs SET state = 'failed', error = ?2, owner = '', lease_expires_ms = 0, "
            "cancel_requested = 0, updated_ms = ?3, finished_ms = ?3 WHERE id = ?1");
        if (!fail.ok()) return fail.status();
        absl::Status s =
            fail->BindText(1, id).BindText(2, LeaseExpiredError(attempts)).BindInt(3, now).Run();
        if (!s.ok()) return s;
        continue;
      }
      absl::StatusOr<Statement> take = db.Prepare(
          "UPDATE jobs SET state = 'running', owner = ?2, lease_expires_ms = ?3, "
          "attempts = attempts + 1, started_ms = ?4, updated_ms = ?4, error = '' WHERE id = ?1");
      if (!take.ok()) return take.status();
      absl::Status s =
          take->BindText(1, id).BindText(2, owner).BindInt(3, now + lease_ms).BindInt(4, now).Run();
      if (!s.ok()) return s;
      absl::StatusOr<JobRecord> job = ReadJob(db, id, path_, what);
      if (!job.ok()) return job.status();
      claimed = *std::move(job);
      return absl::OkStatus();
    }
  });
  if (!status.ok()) return status;
  return claimed;
}

absl::StatusOr<std::map<std::string, bool>> SqliteStore::RenewLeases(const std::string& owner,
                                                                     int64_t lease_ms) {
  if (absl::Status s = ValidateLease(owner, lease_ms, "RenewLeases"); !s.ok()) return s;
  std::map<std::string, bool> held;
  absl::Status status = Write([&](Database& db) -> absl::Status {
    held.clear();
    absl::StatusOr<Statement> renew = db.Prepare(
        "UPDATE jobs SET lease_expires_ms = ?2 WHERE owner = ?1 AND state = 'running' "
        "RETURNING id, cancel_requested");
    if (!renew.ok()) return renew.status();
    renew->BindText(1, owner).BindInt(2, NowMs() + lease_ms);
    while (true) {
      absl::StatusOr<bool> row = renew->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      held[renew->ColumnText(0)] = renew->ColumnInt(1) != 0;
    }
  });
  if (!status.ok()) return status;
  return held;
}

absl::StatusOr<JobRecord> SqliteStore::RequestCancel(const std::string& id) {
  const std::string what = absl::StrCat("RequestCancel(", id, ")");
  if (absl::Status s = ValidateJobId(id, what); !s.ok()) return s;
  std::optional<JobRecord> result;
  absl::Status status = Write([&](Database& db) -> absl::Status {
    absl::StatusOr<JobRecord> job = ReadJob(db, id, path_, what);
    if (!job.ok()) return job.status();
    if (IsFinal(job->state)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job ", id, " already finished (", std::string(JobStateName(job->state)), ")"));
    }
    const int64_t now = NowMs();
    absl::StatusOr<Statement> update = db.Prepare(
        job->state == JobState::kQueued
            ? "UPDATE jobs SET state = 'cancelled', updated_ms = ?2, finished_ms = ?2 WHERE id = ?1"
            : "UPDATE jobs SET cancel_requested = 1, updated_ms = ?2 WHERE id = ?1");
    if (!update.ok()) return update.status();
    if (absl::Status s = update->BindText(1, id).BindInt(2, now).Run(); !s.ok()) return s;
    absl::StatusOr<JobRecord> after = ReadJob(db, id, path_, what);
    if (!after.ok()) return after.status();
    result = *std::move(after);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return *std::move(result);
}

absl::StatusOr<JobRecord> SqliteStore::GetJob(const std::string& id) {
  if (absl::Status s = ValidateJobId(id, "GetJob"); !s.ok()) return s;
  std::optional<JobRecord> job;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<JobRecord> record = ReadJob(db, id, path_, "GetJob");
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
    absl::StatusOr<Statement> requeue = db.Prepare(
        "UPDATE jobs SET state = 'queued', error = '', owner = '', lease_expires_ms = 0, "
        "updated_ms = ?2 WHERE id = ?1");
    if (!requeue.ok()) return requeue.status();
    absl::StatusOr<Statement> fail = db.Prepare(
        "UPDATE jobs SET state = 'failed', error = ?2, owner = '', lease_expires_ms = 0, "
        "updated_ms = ?3, finished_ms = ?3 WHERE id = ?1");
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
