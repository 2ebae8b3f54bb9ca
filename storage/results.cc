// The results cache: cache key -> best result with its artifacts, and the budget rule.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace mltune::storage {

std::string CacheKey::ToString() const {
  return absl::StrCat(fingerprint, "/", task, "/", target, "/", search_version);
}

CacheDecision Decide(const std::optional<ResultRecord>& cached, int64_t requested_budget) {
  if (!cached.has_value()) return CacheDecision::kMiss;
  if (std::max<int64_t>(requested_budget, 0) <= cached->budget_steps) return CacheDecision::kHit;
  return CacheDecision::kContinueFromBest;
}

std::string_view CacheDecisionName(CacheDecision decision) {
  switch (decision) {
    case CacheDecision::kMiss:
      return "miss";
    case CacheDecision::kHit:
      return "hit";
    case CacheDecision::kContinueFromBest:
      return "continue-from-best";
  }
  return "?";
}

namespace {

constexpr char kSelectColumns[] =
    "SELECT id, fingerprint, task, target, search_version, baseline_score, tuned_score, "
    "budget_steps, strategy, worker, mltune_version, created_ms, updated_ms, hit_count, "
    "original_score FROM results ";

// Reads the row at the statement's cursor (columns of kSelectColumns); returns its id.
int64_t ReadResultRow(const Statement& stmt, ResultRecord* record) {
  record->key = {stmt.ColumnText(1), stmt.ColumnText(2), stmt.ColumnText(3), stmt.ColumnText(4)};
  record->baseline_score = stmt.ColumnDouble(5);
  record->tuned_score = stmt.ColumnDouble(6);
  record->budget_steps = stmt.ColumnInt(7);
  record->strategy = stmt.ColumnText(8);
  record->provenance = {stmt.ColumnText(9), stmt.ColumnText(10), stmt.ColumnInt(11),
                        stmt.ColumnInt(12)};
  record->hit_count = stmt.ColumnInt(13);
  record->original_score = stmt.ColumnOptionalDouble(14);
  return stmt.ColumnInt(0);
}

absl::Status ReadArtifacts(Database& db, int64_t result_id, ResultRecord* record) {
  absl::StatusOr<Statement> stmt =
      db.Prepare("SELECT name, data FROM results_artifacts WHERE result_id = ?1");
  if (!stmt.ok()) return stmt.status();
  stmt->BindInt(1, result_id);
  while (true) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    record->artifacts[stmt->ColumnText(0)] = stmt->ColumnBlob(1);
  }
}

absl::Status WriteArtifacts(Database& db, int64_t result_id,
                            const std::map<std::string, std::string>& artifacts) {
  absl::StatusOr<Statement> del = db.Prepare("DELETE FROM results_artifacts WHERE result_id = ?1");
  if (!del.ok()) return del.status();
  if (absl::Status s = del->BindInt(1, result_id).Run(); !s.ok()) return s;
  absl::StatusOr<Statement> insert =
      db.Prepare("INSERT INTO results_artifacts (result_id, name, data) VALUES (?1, ?2, ?3)");
  if (!insert.ok()) return insert.status();
  for (const auto& [name, data] : artifacts) {
    absl::Status s = insert->BindInt(1, result_id).BindText(2, name).BindBlob(3, data).Run();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PutOutcome> SqliteStore::PutResult(const ResultRecord& record) {
  if (absl::Status s = ValidateResult(record); !s.ok()) return s;
  const CacheKey& key = record.key;
  PutOutcome outcome = PutOutcome::kKeptExisting;
  absl::Status status = Write([&](Database& db) -> absl::Status {
    const int64_t now = NowMs();
    struct Cached {
      int64_t id;
      double score;
      int64_t budget;
    };
    std::optional<Cached> cached;
    {
      absl::StatusOr<Statement> find = db.Prepare(
          "SELECT id, tuned_score, budget_steps FROM results "
          "WHERE fingerprint = ?1 AND task = ?2 AND target = ?3 AND search_version = ?4");
      if (!find.ok()) return find.status();
      find->BindText(1, key.fingerprint)
          .BindText(2, key.task)
          .BindText(3, key.target)
          .BindText(4, key.search_version);
      absl::StatusOr<bool> found = find->Step();
      if (!found.ok()) return found.status();
      if (*found) cached = Cached{find->ColumnInt(0), find->ColumnDouble(1), find->ColumnInt(2)};
    }

    if (!cached.has_value()) {
      absl::StatusOr<Statement> insert = db.Prepare(
          "INSERT INTO results (fingerprint, task, target, search_version, baseline_score, "
          "tuned_score, budget_steps, strategy, worker, mltune_version, created_ms, updated_ms, "
          "original_score) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?11, ?12)");
      if (!insert.ok()) return insert.status();
      absl::Status s = insert->BindText(1, key.fingerprint)
                           .BindText(2, key.task)
                           .BindText(3, key.target)
                           .BindText(4, key.search_version)
                           .BindDouble(5, record.baseline_score)
                           .BindDouble(6, record.tuned_score)
                           .BindInt(7, record.budget_steps)
                           .BindText(8, record.strategy)
                           .BindText(9, record.provenance.worker)
                           .BindText(10, record.provenance.mltune_version)
                           .BindInt(11, now)
                           .BindOptionalDouble(12, record.original_score)
                           .Run();
      if (!s.ok()) return s;
      outcome = PutOutcome::kInserted;
      return WriteArtifacts(db, db.LastInsertRowId(), record.artifacts);
    }

    const int64_t id = cached->id;
    const double cached_score = cached->score;
    const int64_t cached_budget = cached->budget;
    const int64_t budget = std::max(cached_budget, record.budget_steps);
    const bool replace = record.tuned_score < cached_score || (record.tuned_score == cached_score &&
                                                               record.budget_steps > cached_budget);
    if (replace) {
      absl::StatusOr<Statement> update = db.Prepare(
          "UPDATE results SET baseline_score = ?2, tuned_score = ?3, budget_steps = ?4, "
          "strategy = ?5, worker = ?6, mltune_version = ?7, updated_ms = ?8, original_score = ?9 "
          "WHERE id = ?1");
      if (!update.ok()) return update.status();
      absl::Status s = update->BindInt(1, id)
                           .BindDouble(2, record.baseline_score)
                           .BindDouble(3, record.tuned_score)
                           .BindInt(4, budget)
                           .BindText(5, record.strategy)
                           .BindText(6, record.provenance.worker)
                           .BindText(7, record.provenance.mltune_version)
                           .BindInt(8, now)
                           .BindOptionalDouble(9, record.original_score)
                           .Run();
      if (!s.ok()) return s;
      outcome = PutOutcome::kReplaced;
      return WriteArtifacts(db, id, record.artifacts);
    }
    outcome = PutOutcome::kKeptExisting;
    if (budget == cached_budget) return absl::OkStatus();
    absl::StatusOr<Statement> grow =
        db.Prepare("UPDATE results SET budget_steps = ?2, updated_ms = ?3 WHERE id = ?1");
    if (!grow.ok()) return grow.status();
    return grow->BindInt(1, id).BindInt(2, budget).BindInt(3, now).Run();
  });
  if (!status.ok()) return status;
  return outcome;
}

absl::StatusOr<std::optional<ResultRecord>> SqliteStore::LookupResult(const CacheKey& key) {
  if (absl::Status s = ValidateKey(key, "LookupResult"); !s.ok()) return s;
  std::optional<ResultRecord> result;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    int64_t id = 0;
    {
      absl::StatusOr<Statement> stmt = db.Prepare(absl::StrCat(
          kSelectColumns,
          "WHERE fingerprint = ?1 AND task = ?2 AND target = ?3 AND search_version = ?4"));
      if (!stmt.ok()) return stmt.status();
      stmt->BindText(1, key.fingerprint)
          .BindText(2, key.task)
          .BindText(3, key.target)
          .BindText(4, key.search_version);
      absl::StatusOr<bool> row = stmt->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      result.emplace();
      id = ReadResultRow(*stmt, &*result);
    }
    return ReadArtifacts(db, id, &*result);
  });
  if (!status.ok()) return status;
  return result;
}

absl::StatusOr<std::vector<ResultRecord>> SqliteStore::LookupResultsByFingerprint(
    const std::string& fingerprint) {
  if (fingerprint.empty()) {
    return absl::InvalidArgumentError("LookupResultsByFingerprint: fingerprint is empty");
  }
  std::vector<ResultRecord> results;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    std::vector<int64_t> ids;
    {
      absl::StatusOr<Statement> stmt = db.Prepare(absl::StrCat(
          kSelectColumns, "WHERE fingerprint = ?1 ORDER BY task, target, search_version"));
      if (!stmt.ok()) return stmt.status();
      stmt->BindText(1, fingerprint);
      while (true) {
        absl::StatusOr<bool> row = stmt->Step();
        if (!row.ok()) return row.status();
        if (!*row) break;
        ids.push_back(ReadResultRow(*stmt, &results.emplace_back()));
      }
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      if (absl::Status s = ReadArtifacts(db, ids[i], &results[i]); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return results;
}

absl::StatusOr<int64_t> SqliteStore::CountResults() {
  int64_t count = 0;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare("SELECT count(*) FROM results");
    if (!stmt.ok()) return stmt.status();
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    count = *row ? stmt->ColumnInt(0) : 0;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return count;
}

absl::StatusOr<int64_t> SqliteStore::RecordHit(const CacheKey& key) {
  if (absl::Status s = ValidateKey(key, "RecordHit"); !s.ok()) return s;
  int64_t hits = 0;
  absl::Status status = Write([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare(
        "UPDATE results SET hit_count = hit_count + 1 "
        "WHERE fingerprint = ?1 AND task = ?2 AND target = ?3 AND search_version = ?4 "
        "RETURNING hit_count");
    if (!stmt.ok()) return stmt.status();
    stmt->BindText(1, key.fingerprint)
        .BindText(2, key.task)
        .BindText(3, key.target)
        .BindText(4, key.search_version);
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) {
      return absl::NotFoundError(absl::StrCat("RecordHit: no cached result for ", key.ToString()));
    }
    hits = stmt->ColumnInt(0);
    // Run the statement to completion before COMMIT.
    absl::StatusOr<bool> done = stmt->Step();
    return done.ok() ? absl::OkStatus() : done.status();
  });
  if (!status.ok()) return status;
  return hits;
}

}  // namespace mltune::storage
