#include "storage/pg_migrations.h"

#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "storage/store.h"

namespace mltune::storage {
namespace {

struct Migration {
  int version;
  const char* description;
  const char* sql;
};

// Append only, and in step with migrations.cc: the same tables, columns and checks. BIGINT for
// SQLite's INTEGER, DOUBLE PRECISION for REAL, BYTEA for BLOB; ids are identity columns.
constexpr Migration kMigrations[] = {
    {1, "initial schema", R"sql(
CREATE TABLE results (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  fingerprint TEXT NOT NULL CHECK (length(fingerprint) > 0),
  task TEXT NOT NULL CHECK (length(task) > 0),
  target TEXT NOT NULL CHECK (length(target) > 0),
  search_version TEXT NOT NULL CHECK (length(search_version) > 0),
  baseline_score DOUBLE PRECISION NOT NULL,
  tuned_score DOUBLE PRECISION NOT NULL,
  budget_steps BIGINT NOT NULL CHECK (budget_steps >= 0),
  strategy TEXT NOT NULL,
  worker TEXT NOT NULL,
  mltune_version TEXT NOT NULL,
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL,
  hit_count BIGINT NOT NULL DEFAULT 0 CHECK (hit_count >= 0),
  UNIQUE (fingerprint, task, target, search_version)
);

CREATE TABLE results_artifacts (
  result_id BIGINT NOT NULL REFERENCES results (id) ON DELETE CASCADE,
  name TEXT NOT NULL CHECK (length(name) > 0),
  data BYTEA NOT NULL,
  PRIMARY KEY (result_id, name)
);

CREATE TABLE measurements (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  graph_key TEXT NOT NULL CHECK (length(graph_key) > 0),
  task TEXT NOT NULL CHECK (length(task) > 0),
  target TEXT NOT NULL CHECK (length(target) > 0),
  configuration TEXT NOT NULL,
  value DOUBLE PRECISION NOT NULL,
  worker TEXT NOT NULL,
  time_ms BIGINT NOT NULL
);
CREATE INDEX measurements_by_graph ON measurements (graph_key, task, target);
CREATE INDEX measurements_by_task_target ON measurements (task, target);

CREATE TABLE jobs (
  id TEXT PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
  -- Insertion order, where SQLite has its rowid: ties on created_ms keep it.
  seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
  fingerprint TEXT NOT NULL CHECK (length(fingerprint) > 0),
  task TEXT NOT NULL CHECK (length(task) > 0),
  target TEXT NOT NULL CHECK (length(target) > 0),
  search_version TEXT NOT NULL CHECK (length(search_version) > 0),
  budget_steps BIGINT NOT NULL CHECK (budget_steps >= 0),
  strategy TEXT NOT NULL,
  request BYTEA NOT NULL,
  progress DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 1),
  best_score DOUBLE PRECISION,
  error TEXT NOT NULL DEFAULT '',
  attempts BIGINT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  created_ms BIGINT NOT NULL,
  updated_ms BIGINT NOT NULL,
  started_ms BIGINT NOT NULL DEFAULT 0,
  finished_ms BIGINT NOT NULL DEFAULT 0,
  CHECK (state <> 'failed' OR length(error) > 0)
);
CREATE INDEX jobs_by_state ON jobs (state, created_ms);

CREATE TABLE models (
  name TEXT NOT NULL CHECK (length(name) > 0),
  version BIGINT NOT NULL CHECK (version >= 0),
  data BYTEA NOT NULL,
  metadata_json TEXT NOT NULL CHECK (metadata_json::jsonb IS NOT NULL),
  created_ms BIGINT NOT NULL,
  PRIMARY KEY (name, version)
);
)sql"},
    {2, "results.original_score", R"sql(
ALTER TABLE results ADD COLUMN original_score DOUBLE PRECISION;
)sql"},
    {3, "kernel_graphs", R"sql(
CREATE TABLE kernel_graphs (
  kernel_key TEXT PRIMARY KEY CHECK (length(kernel_key) > 0),
  graph BYTEA NOT NULL CHECK (length(graph) > 0),
  target TEXT NOT NULL CHECK (length(target) > 0),
  module TEXT NOT NULL,
  module_fingerprint TEXT NOT NULL,
  kernel TEXT NOT NULL,
  created_ms BIGINT NOT NULL
);
)sql"},
    {4, "model_trainings", R"sql(
CREATE TABLE model_trainings (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name TEXT NOT NULL CHECK (length(name) > 0),
  outcome TEXT NOT NULL
    CHECK (outcome IN ('stored', 'rejected', 'failed', 'preempted', 'stopped')),
  started_ms BIGINT NOT NULL,
  ended_ms BIGINT NOT NULL CHECK (ended_ms >= started_ms),
  new_rows BIGINT NOT NULL CHECK (new_rows >= 0),
  detail TEXT NOT NULL
);
CREATE INDEX model_trainings_by_name ON model_trainings (name, ended_ms);
)sql"},
    {5, "job dedup keys and leases", R"sql(
ALTER TABLE jobs ADD COLUMN dedup_key TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN lease_expires_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN cancel_requested BOOLEAN NOT NULL DEFAULT false;
CREATE UNIQUE INDEX jobs_in_flight ON jobs (dedup_key)
  WHERE dedup_key <> '' AND state IN ('queued', 'running');
CREATE INDEX jobs_by_owner ON jobs (owner) WHERE owner <> '';
CREATE INDEX jobs_claimable ON jobs (created_ms) WHERE state IN ('queued', 'running');
)sql"},
    {6, "graphs", R"sql(
CREATE TABLE graphs (
  sha256 TEXT PRIMARY KEY CHECK (length(sha256) = 64),
  size_bytes BIGINT NOT NULL CHECK (size_bytes >= 0),
  pieces BIGINT NOT NULL CHECK (pieces >= 0),
  created_ms BIGINT NOT NULL
);
CREATE TABLE graph_pieces (
  sha256 TEXT NOT NULL REFERENCES graphs (sha256) ON DELETE CASCADE,
  seq BIGINT NOT NULL CHECK (seq >= 0),
  data BYTEA NOT NULL CHECK (length(data) > 0),
  PRIMARY KEY (sha256, seq)
);
)sql"},
};

static_assert(std::end(kMigrations)[-1].version == Store::kSchemaVersion,
              "the PostgreSQL migrations must reach Store::kSchemaVersion");

// Any constant would do; it only has to be the same for every mltune.
constexpr char kMigrationLock[] = "SELECT pg_advisory_xact_lock(7086117001)";

}  // namespace

absl::StatusOr<int> PostgresSchemaVersion(PgConnection& conn) {
  absl::StatusOr<PgResult> exists = conn.Query("SELECT to_regclass('mltune_schema') IS NOT NULL");
  if (!exists.ok()) return exists.status();
  if (exists->Text(0, 0) != "t") return 0;
  absl::StatusOr<PgResult> version = conn.Query("SELECT version FROM mltune_schema");
  if (!version.ok()) return version.status();
  if (version->rows() != 1) {
    return absl::DataLossError(
        absl::StrCat("mltune_schema has ", version->rows(), " rows; expected one"));
  }
  absl::StatusOr<int64_t> v = version->Int(0, 0);
  if (!v.ok()) return v.status();
  return static_cast<int>(*v);
}

absl::Status MigratePostgres(PgConnection& conn, const std::string& where) {
  return conn.Transaction([&]() -> absl::Status {
    if (absl::Status s = conn.Query(kMigrationLock).status(); !s.ok()) return s;
    absl::StatusOr<int> current = PostgresSchemaVersion(conn);
    if (!current.ok()) return current.status();
    if (*current > Store::kSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, ": schema version ", *current, " (mltune_schema) is newer than this mltune knows",
          " (it knows up to ", Store::kSchemaVersion, "); use a newer mltune or another database"));
    }
    if (*current == Store::kSchemaVersion) return absl::OkStatus();
    if (*current == 0) {
      absl::Status s = conn.Exec(
          "CREATE TABLE mltune_schema (version INTEGER NOT NULL);"
          "INSERT INTO mltune_schema VALUES (0)");
      if (!s.ok()) return s;
    }
    for (const Migration& m : kMigrations) {
      if (m.version <= *current) continue;
      if (absl::Status s = conn.Exec(m.sql); !s.ok()) {
        return absl::Status(s.code(),
                            absl::StrCat(where, ": migration to schema version ", m.version, " (",
                                         m.description, ") failed: ", std::string(s.message())));
      }
    }
    return conn.Exec(absl::StrCat("UPDATE mltune_schema SET version = ", Store::kSchemaVersion));
  });
}

}  // namespace mltune::storage
