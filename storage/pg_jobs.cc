// The PostgreSQL job table: the state machine, in-flight de-duplication, and leases. Claims use
// FOR UPDATE SKIP LOCKED, so daemons polling one table never wait on each other's claims, and
// lease times come from the database's clock, so daemons on hosts with skewed clocks agree.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/pg_store.h"
#include "storage/postgres.h"
#include "storage/store.h"

namespace mltune::storage {
namespace {

constexpr char kJobColumns[] =
    "id, state, fingerprint, task, target, search_version, budget_steps, strategy, request, "
    "progress, best_score, error, attempts, created_ms, updated_ms, started_ms, finished_ms, "
    "dedup_key, owner, lease_expires_ms, cancel_requested";

std::string SelectJobs(std::string_view rest) {
  return absl::StrCat("SELECT ", kJobColumns, " FROM jobs ", std::string(rest));
}

// Held by a bounded submission until its transaction ends (any constant; the same in every mltune).
constexpr char kSubmitLock[] = "SELECT pg_advisory_xact_lock(7086117002)";

// The database's clock in unix ms: the one every lease is measured by.
constexpr char kDbNowMs[] = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

absl::StatusOr<JobRecord> ReadJobRow(const PgResult& r, int row, const std::string& where) {
  JobRecord job;
  job.id = r.Text(row, 0);
  const std::string state = r.Text(row, 1);
  std::optional<JobState> parsed = ParseJobState(state);
  if (!parsed.has_value()) {
    return absl::DataLossError(
        absl::StrCat(where, ": job ", job.id, " has an unknown state '", state, "'"));
  }
  job.state = *parsed;
  job.key = {r.Text(row, 2), r.Text(row, 3), r.Text(row, 4), r.Text(row, 5)};
  absl::StatusOr<std::string> request = r.Bytes(row, 8);
  if (!request.ok()) return request.status();
  job.request = *std::move(request);
  job.strategy = r.Text(row, 7);
  job.error = r.Text(row, 11);
  job.dedup_key = r.Text(row, 17);
  job.owner = r.Text(row, 18);
  job.cancel_requested = r.Text(row, 20) == "t";
  const std::pair<int, int64_t*> ints[] = {{6, &job.budget_steps},     {12, &job.attempts},
                                           {13, &job.created_ms},      {14, &job.updated_ms},
                                           {15, &job.started_ms},      {16, &job.finished_ms},
                                           {19, &job.lease_expires_ms}};
  for (const auto& [column, field] : ints) {
    absl::StatusOr<int64_t> v = r.Int(row, column);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  absl::StatusOr<double> progress = r.Double(row, 9);
  if (!progress.ok()) return progress.status();
  job.progress = *progress;
  if (!r.IsNull(row, 10)) {
    absl::StatusOr<double> best = r.Double(row, 10);
    if (!best.ok()) return best.status();
    job.best_score = *best;
  }
  return job;
}

absl::StatusOr<std::vector<JobRecord>> ReadJobs(const PgResult& r, const std::string& where) {
  std::vector<JobRecord> jobs;
  for (int i = 0; i < r.rows(); ++i) {
    absl::StatusOr<JobRecord> job = ReadJobRow(r, i, where);
    if (!job.ok()) return job.status();
    jobs.push_back(*std::move(job));
  }
  return jobs;
}

// The job, its row locked until the transaction ends.
absl::StatusOr<JobRecord> LockJob(PgConnection& conn, const std::string& id,
                                  const std::string& where, std::string_view what) {
  absl::StatusOr<PgResult> r =
      conn.Query(SelectJobs("WHERE id = $1 FOR UPDATE"), {PgParam::Text(id)});
  if (!r.ok()) return r.status();
  if (r->rows() == 0) return absl::NotFoundError(absl::StrCat(std::string(what), ": no job ", id));
  return ReadJobRow(*r, 0, where);
}

absl::StatusOr<std::optional<std::string>> InFlightJob(PgConnection& conn,
                                                       const std::string& dedup_key) {
  absl::StatusOr<PgResult> r = conn.Query(
      "SELECT id FROM jobs WHERE dedup_key = $1 AND state IN ('queued', 'running') LIMIT 1",
      {PgParam::Text(dedup_key)});
  if (!r.ok()) return r.status();
  if (r->rows() == 0) return std::optional<std::string>();
  return std::optional<std::string>(r->Text(0, 0));
}

// Inserts `job` as queued; returns its id. A unique violation other than a given id's (another
// daemon inserted the same dedup key, or drew the same random id, since this transaction began)
// is Aborted, which makes PgConnection::Transaction run the whole transaction again.
absl::StatusOr<std::string> InsertJob(PgConnection& conn, const JobRecord& job,
                                      const std::string& what) {
  std::string id = job.id.empty() ? NewJobId() : job.id;
  if (!job.id.empty()) {
    absl::StatusOr<PgResult> exists =
        conn.Query("SELECT 1 FROM jobs WHERE id = $1", {PgParam::Text(id)});
    if (!exists.ok()) return exists.status();
    if (exists->rows() > 0) {
      return absl::AlreadyExistsError(absl::StrCat(what, ": job ", id, " already exists"));
    }
  }
  const int64_t now = NowMs();
  absl::StatusOr<PgResult> r = conn.Query(
      "INSERT INTO jobs (id, state, fingerprint, task, target, search_version, budget_steps, "
      "strategy, request, progress, best_score, error, created_ms, updated_ms, dedup_key) "
      "VALUES ($1, 'queued', $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13)",
      {PgParam::Text(id), PgParam::Text(job.key.fingerprint), PgParam::Text(job.key.task),
       PgParam::Text(job.key.target), PgParam::Text(job.key.search_version),
       PgParam::Int(job.budget_steps), PgParam::Text(job.strategy), PgParam::Bytes(job.request),
       PgParam::Double(job.progress), PgParam::OptionalDouble(job.best_score),
       PgParam::Text(job.error), PgParam::Int(now), PgParam::Text(job.dedup_key)});
  if (absl::IsAlreadyExists(r.status())) {
    return absl::AbortedError(absl::StrCat(what, ": lost an insert race; retrying"));
  }
  if (!r.ok()) return r.status();
  return id;
}

}  // namespace

absl::StatusOr<SubmittedJob> PgStore::SubmitJob(const JobRecord& job, int64_t max_queued) {
  const std::string what = "SubmitJob";
  if (absl::Status s = ValidateNewJob(job, what); !s.ok()) return s;
  SubmittedJob submitted;
  absl::Status status = Transaction([&](PgConnection& conn) -> absl::Status {
    if (!job.dedup_key.empty()) {
      absl::StatusOr<std::optional<std::string>> existing = InFlightJob(conn, job.dedup_key);
      if (!existing.ok()) return existing.status();
      if (existing->has_value()) {
        submitted = {**existing, true};
        return absl::OkStatus();
      }
    }
    if (max_queued > 0) {
      // Submitters take turns from the count to the commit, so daemons racing cannot together
      // queue past the bound (each would count the same free places).
      if (absl::Status s = conn.Query(kSubmitLock).status(); !s.ok()) return s;
      absl::StatusOr<PgResult> count =
          conn.Query("SELECT count(*) FROM jobs WHERE state = 'queued'");
      if (!count.ok()) return count.status();
      absl::StatusOr<int64_t> queued = count->Int(0, 0);
      if (!queued.ok()) return queued.status();
      if (absl::Status s = QueueFull(*queued, max_queued); !s.ok()) return s;
    }
    absl::StatusOr<std::string> inserted = InsertJob(conn, job, what);
    if (!inserted.ok()) return inserted.status();
    submitted = {*inserted, false};
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return submitted;
}

absl::Status PgStore::UpdateJobState(const std::string& id, JobState state, double progress,
                                     std::optional<double> best_score, const std::string& error,
                                     const std::string& owner) {
  const std::string what = absl::StrCat("UpdateJobState(", id, ")");
  if (absl::Status s = ValidateJobUpdate(id, state, progress, best_score, error, what); !s.ok()) {
    return s;
  }
  return Transaction([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<JobRecord> job = LockJob(conn, id, display_url_, what);
    if (!job.ok()) return job.status();
    const int64_t now = NowMs();
    absl::StatusOr<JobRecord> next = ApplyTransition(*job, state, owner, now, what);
    if (!next.ok()) return next.status();
    return conn
        .Query(
            "UPDATE jobs SET state = $2, progress = $3, best_score = coalesce($4, best_score), "
            "error = $5, attempts = $6, started_ms = $7, finished_ms = $8, updated_ms = $9, "
            "owner = $10, lease_expires_ms = $11, cancel_requested = $12 WHERE id = $1",
            {PgParam::Text(id), PgParam::Text(JobStateName(state)), PgParam::Double(progress),
             PgParam::OptionalDouble(best_score), PgParam::Text(error),
             PgParam::Int(next->attempts), PgParam::Int(next->started_ms),
             PgParam::Int(next->finished_ms), PgParam::Int(next->updated_ms),
             PgParam::Text(next->owner), PgParam::Int(next->lease_expires_ms),
             PgParam::Text(next->cancel_requested ? "true" : "false")})
        .status();
  });
}

absl::StatusOr<std::optional<JobRecord>> PgStore::ClaimJob(const std::string& owner,
                                                           int64_t lease_ms, int max_attempts) {
  const std::string what = "ClaimJob";
  if (absl::Status s = ValidateLease(owner, lease_ms, what); !s.ok()) return s;
  if (max_attempts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": max_attempts is ", max_attempts, ", must be >= 1"));
  }
  std::optional<JobRecord> claimed;
  absl::Status status = Transaction([&](PgConnection& conn) -> absl::Status {
    claimed.reset();
    while (true) {
      // SKIP LOCKED: a row another daemon is claiming right now is passed over, not waited for.
      absl::StatusOr<PgResult> next = conn.Query(absl::StrCat(
          "SELECT id, state, attempts FROM jobs WHERE state = 'queued' OR (state = 'running' "
          "AND owner <> '' AND lease_expires_ms < ",
          kDbNowMs, ") ORDER BY created_ms, seq LIMIT 1 FOR UPDATE SKIP LOCKED"));
      if (!next.ok()) return next.status();
      if (next->rows() == 0) return absl::OkStatus();
      const std::string id = next->Text(0, 0);
      const bool expired = next->Text(0, 1) == "running";
      absl::StatusOr<int64_t> attempts = next->Int(0, 2);
      if (!attempts.ok()) return attempts.status();
      const int64_t now = NowMs();
      if (expired && *attempts >= max_attempts) {
        absl::Status s = conn.Query(
                                 "UPDATE jobs SET state = 'failed', error = $2, owner = '', "
                                 "lease_expires_ms = 0, cancel_requested = false, updated_ms = $3, "
                                 "finished_ms = $3 WHERE id = $1",
                                 {PgParam::Text(id), PgParam::Text(LeaseExpiredError(*attempts)),
                                  PgParam::Int(now)})
                             .status();
        if (!s.ok()) return s;
        continue;
      }
      absl::StatusOr<PgResult> taken = conn.Query(
          absl::StrCat(
              "UPDATE jobs SET state = 'running', owner = $2, lease_expires_ms = ", kDbNowMs,
              " + $3, attempts = attempts + 1, started_ms = $4, updated_ms = $4, "
              "error = '' WHERE id = $1 RETURNING ",
              kJobColumns),
          {PgParam::Text(id), PgParam::Text(owner), PgParam::Int(lease_ms), PgParam::Int(now)});
      if (!taken.ok()) return taken.status();
      absl::StatusOr<JobRecord> job = ReadJobRow(*taken, 0, display_url_);
      if (!job.ok()) return job.status();
      claimed = *std::move(job);
      return absl::OkStatus();
    }
  });
  if (!status.ok()) return status;
  return claimed;
}

absl::StatusOr<std::map<std::string, bool>> PgStore::RenewLeases(const std::string& owner,
                                                                 int64_t lease_ms) {
  if (absl::Status s = ValidateLease(owner, lease_ms, "RenewLeases"); !s.ok()) return s;
  std::map<std::string, bool> held;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> r =
        conn.Query(absl::StrCat("UPDATE jobs SET lease_expires_ms = ", kDbNowMs,
                                " + $2 WHERE owner = $1 AND state = 'running' RETURNING id, "
                                "cancel_requested"),
                   {PgParam::Text(owner), PgParam::Int(lease_ms)});
    if (!r.ok()) return r.status();
    for (int i = 0; i < r->rows(); ++i) held[r->Text(i, 0)] = r->Text(i, 1) == "t";
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return held;
}

absl::StatusOr<JobRecord> PgStore::RequestCancel(const std::string& id) {
  const std::string what = absl::StrCat("RequestCancel(", id, ")");
  if (absl::Status s = ValidateJobId(id, what); !s.ok()) return s;
  std::optional<JobRecord> result;
  absl::Status status = Transaction([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<JobRecord> job = LockJob(conn, id, display_url_, what);
    if (!job.ok()) return job.status();
    if (IsFinal(job->state)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job ", id, " already finished (", std::string(JobStateName(job->state)), ")"));
    }
    absl::Status s =
        conn.Query(job->state == JobState::kQueued
                       ? "UPDATE jobs SET state = 'cancelled', updated_ms = $2, finished_ms = $2 "
                         "WHERE id = $1"
                       : "UPDATE jobs SET cancel_requested = true, updated_ms = $2 WHERE id = $1",
                   {PgParam::Text(id), PgParam::Int(NowMs())})
            .status();
    if (!s.ok()) return s;
    absl::StatusOr<JobRecord> after = LockJob(conn, id, display_url_, what);
    if (!after.ok()) return after.status();
    result = *std::move(after);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return *std::move(result);
}

absl::StatusOr<JobRecord> PgStore::GetJob(const std::string& id) {
  if (absl::Status s = ValidateJobId(id, "GetJob"); !s.ok()) return s;
  std::optional<JobRecord> job;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> r = conn.Query(SelectJobs("WHERE id = $1"), {PgParam::Text(id)});
    if (!r.ok()) return r.status();
    if (r->rows() == 0) return absl::NotFoundError(absl::StrCat("GetJob: no job ", id));
    absl::StatusOr<JobRecord> record = ReadJobRow(*r, 0, display_url_);
    if (!record.ok()) return record.status();
    job = *std::move(record);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return *std::move(job);
}

absl::StatusOr<std::vector<JobRecord>> PgStore::ListJobs(std::optional<JobState> state) {
  std::vector<JobRecord> jobs;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> r =
        state.has_value() ? conn.Query(SelectJobs("WHERE state = $1 ORDER BY created_ms, seq"),
                                       {PgParam::Text(JobStateName(*state))})
                          : conn.Query(SelectJobs("ORDER BY created_ms, seq"));
    if (!r.ok()) return r.status();
    absl::StatusOr<std::vector<JobRecord>> read = ReadJobs(*r, display_url_);
    if (!read.ok()) return read.status();
    jobs = *std::move(read);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return jobs;
}

absl::StatusOr<std::map<std::string, int64_t>> PgStore::CountJobsByState() {
  std::map<std::string, int64_t> counts;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> r = conn.Query("SELECT state, count(*) FROM jobs GROUP BY state");
    if (!r.ok()) return r.status();
    for (int i = 0; i < r->rows(); ++i) {
      absl::StatusOr<int64_t> n = r->Int(i, 1);
      if (!n.ok()) return n.status();
      counts[r->Text(i, 0)] = *n;
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return counts;
}

absl::StatusOr<RecoveredJobs> PgStore::RecoverAfterCrash(RecoveryPolicy policy, int max_attempts) {
  if (max_attempts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("RecoverAfterCrash: max_attempts is ", max_attempts, ", must be >= 1"));
  }
  RecoveredJobs recovered;
  absl::Status status = Transaction([&](PgConnection& conn) -> absl::Status {
    recovered = {};
    absl::StatusOr<PgResult> running = conn.Query(
        "SELECT id, attempts FROM jobs WHERE state = 'running' ORDER BY created_ms, seq "
        "FOR UPDATE");
    if (!running.ok()) return running.status();
    const int64_t now = NowMs();
    for (int i = 0; i < running->rows(); ++i) {
      const std::string id = running->Text(i, 0);
      absl::StatusOr<int64_t> attempts = running->Int(i, 1);
      if (!attempts.ok()) return attempts.status();
      if (policy == RecoveryPolicy::kResume && *attempts < max_attempts) {
        absl::Status s = conn.Query(
                                 "UPDATE jobs SET state = 'queued', error = '', owner = '', "
                                 "lease_expires_ms = 0, updated_ms = $2 WHERE id = $1",
                                 {PgParam::Text(id), PgParam::Int(now)})
                             .status();
        if (!s.ok()) return s;
        recovered.resumed.push_back(id);
        continue;
      }
      std::string error = kDaemonStoppedError;
      if (policy == RecoveryPolicy::kResume) {
        error = absl::StrCat(error, " (", *attempts, " attempts; not resumed again)");
      }
      absl::Status s =
          conn.Query(
                  "UPDATE jobs SET state = 'failed', error = $2, owner = '', lease_expires_ms = 0, "
                  "updated_ms = $3, finished_ms = $3 WHERE id = $1",
                  {PgParam::Text(id), PgParam::Text(error), PgParam::Int(now)})
              .status();
      if (!s.ok()) return s;
      recovered.failed.push_back(id);
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return recovered;
}

}  // namespace mltune::storage
