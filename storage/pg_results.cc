// PgStore's results cache: cache key -> best result with its artifacts, under results.cc's rules.
#include <algorithm>
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

// One row per artifact (a result without artifacts: one row with a NULL name), so that a lookup is
// one statement, reading one snapshot: a concurrent replacement cannot pair the old scores with
// the new artifacts.
constexpr char kSelectWithArtifacts[] =
    "SELECT r.fingerprint, r.task, r.target, r.search_version, r.baseline_score, r.tuned_score, "
    "r.budget_steps, r.strategy, r.worker, r.mltune_version, r.created_ms, r.updated_ms, "
    "r.hit_count, r.original_score, a.name, a.data "
    "FROM results r LEFT JOIN results_artifacts a ON a.result_id = r.id ";

constexpr char kKeyCondition[] =
    "fingerprint = $1 AND task = $2 AND target = $3 AND search_version = $4";

std::vector<PgParam> KeyParams(const CacheKey& key) {
  return {PgParam::Text(key.fingerprint), PgParam::Text(key.task), PgParam::Text(key.target),
          PgParam::Text(key.search_version)};
}

// The results in `rows` (columns of kSelectWithArtifacts, a result's rows adjacent), in order.
absl::StatusOr<std::vector<ResultRecord>> ReadResults(const PgResult& rows) {
  std::vector<ResultRecord> out;
  std::optional<CacheKey> last;
  for (int i = 0; i < rows.rows(); ++i) {
    CacheKey key{rows.Text(i, 0), rows.Text(i, 1), rows.Text(i, 2), rows.Text(i, 3)};
    if (!last.has_value() || !(*last == key)) {
      ResultRecord& r = out.emplace_back();
      r.key = key;
      absl::StatusOr<double> baseline = rows.Double(i, 4);
      absl::StatusOr<double> tuned = rows.Double(i, 5);
      absl::StatusOr<int64_t> budget = rows.Int(i, 6);
      absl::StatusOr<int64_t> created = rows.Int(i, 10);
      absl::StatusOr<int64_t> updated = rows.Int(i, 11);
      absl::StatusOr<int64_t> hits = rows.Int(i, 12);
      for (const absl::Status& s : {baseline.status(), tuned.status(), budget.status(),
                                    created.status(), updated.status(), hits.status()}) {
        if (!s.ok()) return s;
      }
      r.baseline_score = *baseline;
      r.tuned_score = *tuned;
      r.budget_steps = *budget;
      r.strategy = rows.Text(i, 7);
      r.provenance = {rows.Text(i, 8), rows.Text(i, 9), *created, *updated};
      r.hit_count = *hits;
      if (!rows.IsNull(i, 13)) {
        absl::StatusOr<double> original = rows.Double(i, 13);
        if (!original.ok()) return original.status();
        r.original_score = *original;
      }
      last = std::move(key);
    }
    if (rows.IsNull(i, 14)) continue;
    absl::StatusOr<std::string> data = rows.Bytes(i, 15);
    if (!data.ok()) return data.status();
    out.back().artifacts[rows.Text(i, 14)] = *std::move(data);
  }
  return out;
}

absl::Status WriteArtifacts(PgConnection& conn, int64_t result_id,
                            const std::map<std::string, std::string>& artifacts) {
  absl::Status s =
      conn.Query("DELETE FROM results_artifacts WHERE result_id = $1", {PgParam::Int(result_id)})
          .status();
  if (!s.ok() || artifacts.empty()) return s;
  // One multi-row INSERT per chunk (a round trip each), the bytes as binary parameters; chunks
  // keep a statement under PostgreSQL's 65535 parameters.
  constexpr size_t kChunk = 1000;
  auto it = artifacts.begin();
  while (it != artifacts.end()) {
    std::string sql = "INSERT INTO results_artifacts (result_id, name, data) VALUES ";
    std::vector<PgParam> params = {PgParam::Int(result_id)};
    for (size_t n = 0; n < kChunk && it != artifacts.end(); ++n, ++it) {
      if (n > 0) sql.append(", ");
      absl::StrAppend(&sql, "($1, $", params.size() + 1, ", $", params.size() + 2, ")");
      params.push_back(PgParam::Text(it->first));
      params.push_back(PgParam::Bytes(it->second));
    }
    if (absl::Status s2 = conn.Query(sql, params).status(); !s2.ok()) return s2;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PutOutcome> PgStore::PutResult(const ResultRecord& record) {
  if (absl::Status s = ValidateResult(record); !s.ok()) return s;
  const CacheKey& key = record.key;
  PutOutcome outcome = PutOutcome::kKeptExisting;
  absl::Status status = Transaction([&](PgConnection& conn) -> absl::Status {
    const int64_t now = NowMs();
    // Two daemons putting a new key at once: one inserts; the other's ON CONFLICT waits for it to
    // commit and then does nothing, and it goes on to compare with the committed row below, so
    // neither fails on the unique key.
    std::vector<PgParam> params = KeyParams(key);
    params.insert(
        params.end(),
        {PgParam::Double(record.baseline_score), PgParam::Double(record.tuned_score),
         PgParam::Int(record.budget_steps), PgParam::Text(record.strategy),
         PgParam::Text(record.provenance.worker), PgParam::Text(record.provenance.mltune_version),
         PgParam::Int(now), PgParam::OptionalDouble(record.original_score)});
    absl::StatusOr<PgResult> inserted = conn.Query(
        "INSERT INTO results (fingerprint, task, target, search_version, baseline_score, "
        "tuned_score, budget_steps, strategy, worker, mltune_version, created_ms, updated_ms, "
        "original_score) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12) "
        "ON CONFLICT (fingerprint, task, target, search_version) DO NOTHING RETURNING id",
        params);
    if (!inserted.ok()) return inserted.status();
    if (inserted->rows() == 1) {
      absl::StatusOr<int64_t> id = inserted->Int(0, 0);
      if (!id.ok()) return id.status();
      outcome = PutOutcome::kInserted;
      return WriteArtifacts(conn, *id, record.artifacts);
    }

    // The row is locked until COMMIT, so a concurrent put of the same key compares with what
    // this one leaves behind rather than with a score about to be replaced.
    absl::StatusOr<PgResult> cached =
        conn.Query(absl::StrCat("SELECT id, tuned_score, budget_steps FROM results WHERE ",
                                kKeyCondition, " FOR UPDATE"),
                   KeyParams(key));
    if (!cached.ok()) return cached.status();
    if (cached->rows() != 1) {
      // Results are never deleted, so this is not expected; a retry would see the row.
      return absl::AbortedError(
          absl::StrCat("PutResult: the result for ", key.ToString(), " vanished; try again"));
    }
    absl::StatusOr<int64_t> id = cached->Int(0, 0);
    absl::StatusOr<double> cached_score = cached->Double(0, 1);
    absl::StatusOr<int64_t> cached_budget = cached->Int(0, 2);
    for (const absl::Status& s : {id.status(), cached_score.status(), cached_budget.status()}) {
      if (!s.ok()) return s;
    }
    const int64_t budget = std::max(*cached_budget, record.budget_steps);
    const bool replace =
        record.tuned_score < *cached_score ||
        (record.tuned_score == *cached_score && record.budget_steps > *cached_budget);
    if (replace) {
      absl::Status s =
          conn.Query(
                  "UPDATE results SET baseline_score = $2, tuned_score = $3, budget_steps = $4, "
                  "strategy = $5, worker = $6, mltune_version = $7, updated_ms = $8, "
                  "original_score = $9 WHERE id = $1",
                  {PgParam::Int(*id), PgParam::Double(record.baseline_score),
                   PgParam::Double(record.tuned_score), PgParam::Int(budget),
                   PgParam::Text(record.strategy), PgParam::Text(record.provenance.worker),
                   PgParam::Text(record.provenance.mltune_version), PgParam::Int(now),
                   PgParam::OptionalDouble(record.original_score)})
              .status();
      if (!s.ok()) return s;
      outcome = PutOutcome::kReplaced;
      return WriteArtifacts(conn, *id, record.artifacts);
    }
    outcome = PutOutcome::kKeptExisting;
    if (budget == *cached_budget) return absl::OkStatus();
    return conn
        .Query("UPDATE results SET budget_steps = $2, updated_ms = $3 WHERE id = $1",
               {PgParam::Int(*id), PgParam::Int(budget), PgParam::Int(now)})
        .status();
  });
  if (!status.ok()) return status;
  return outcome;
}

absl::StatusOr<std::optional<ResultRecord>> PgStore::LookupResult(const CacheKey& key) {
  if (absl::Status s = ValidateKey(key, "LookupResult"); !s.ok()) return s;
  std::optional<ResultRecord> result;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> rows =
        conn.Query(absl::StrCat(kSelectWithArtifacts,
                                "WHERE r.fingerprint = $1 AND r.task = $2 AND r.target = $3 "
                                "AND r.search_version = $4"),
                   KeyParams(key));
    if (!rows.ok()) return rows.status();
    absl::StatusOr<std::vector<ResultRecord>> results = ReadResults(*rows);
    if (!results.ok()) return results.status();
    if (!results->empty()) result = std::move(results->front());
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return result;
}

absl::StatusOr<std::vector<ResultRecord>> PgStore::LookupResultsByFingerprint(
    const std::string& fingerprint) {
  if (fingerprint.empty()) {
    return absl::InvalidArgumentError("LookupResultsByFingerprint: fingerprint is empty");
  }
  std::vector<ResultRecord> results;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    // COLLATE "C": byte order, as SQLite sorts text, whatever the database's locale.
    absl::StatusOr<PgResult> rows =
        conn.Query(absl::StrCat(kSelectWithArtifacts,
                                "WHERE r.fingerprint = $1 ORDER BY r.task COLLATE \"C\", "
                                "r.target COLLATE \"C\", r.search_version COLLATE \"C\", r.id"),
                   {PgParam::Text(fingerprint)});
    if (!rows.ok()) return rows.status();
    absl::StatusOr<std::vector<ResultRecord>> read = ReadResults(*rows);
    if (!read.ok()) return read.status();
    results = *std::move(read);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return results;
}

absl::StatusOr<int64_t> PgStore::CountResults() {
  return QueryCount("SELECT count(*) FROM results", {});
}

absl::StatusOr<int64_t> PgStore::RecordHit(const CacheKey& key) {
  if (absl::Status s = ValidateKey(key, "RecordHit"); !s.ok()) return s;
  int64_t hits = 0;
  // One statement: atomic without an explicit transaction.
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> rows =
        conn.Query(absl::StrCat("UPDATE results SET hit_count = hit_count + 1 WHERE ",
                                kKeyCondition, " RETURNING hit_count"),
                   KeyParams(key));
    if (!rows.ok()) return rows.status();
    if (rows->rows() == 0) {
      return absl::NotFoundError(absl::StrCat("RecordHit: no cached result for ", key.ToString()));
    }
    absl::StatusOr<int64_t> n = rows->Int(0, 0);
    if (!n.ok()) return n.status();
    hits = *n;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return hits;
}

}  // namespace mltune::storage
