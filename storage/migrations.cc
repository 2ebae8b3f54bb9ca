#include "storage/migrations.h"

#include <iterator>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "storage/store.h"

namespace mltune::storage {
namespace {

struct Migration {
  int version;  // user_version after this migration
  const char* description;
  const char* sql;
};

// Append only: a released migration never changes (files in the field have run it). Tables are
// STRICT (a wrongly typed value is an error, not a silent conversion); enums are CHECKed.
constexpr Migration kMigrations[] = {
    {1, "initial schema", R"sql(
CREATE TABLE results (
  id INTEGER PRIMARY KEY,
  fingerprint TEXT NOT NULL CHECK (length(fingerprint) > 0),
  task TEXT NOT NULL CHECK (length(task) > 0),
  target TEXT NOT NULL CHECK (length(target) > 0),
  search_version TEXT NOT NULL CHECK (length(search_version) > 0),
  baseline_score REAL NOT NULL,
  tuned_score REAL NOT NULL,
  budget_steps INTEGER NOT NULL CHECK (budget_steps >= 0),
  strategy TEXT NOT NULL,
  worker TEXT NOT NULL,
  mltune_version TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  hit_count INTEGER NOT NULL DEFAULT 0 CHECK (hit_count >= 0),
  UNIQUE (fingerprint, task, target, search_version)
) STRICT;

CREATE TABLE results_artifacts (
  result_id INTEGER NOT NULL REFERENCES results (id) ON DELETE CASCADE,
  name TEXT NOT NULL CHECK (length(name) > 0),
  data BLOB NOT NULL,
  PRIMARY KEY (result_id, name)
) STRICT;

CREATE TABLE measurements (
  id INTEGER PRIMARY KEY,
  graph_key TEXT NOT NULL CHECK (length(graph_key) > 0),
  task TEXT NOT NULL CHECK (length(task) > 0),
  target TEXT NOT NULL CHECK (length(target) > 0),
  configuration TEXT NOT NULL,
  value REAL NOT NULL,
  worker TEXT NOT NULL,
  time_ms INTEGER NOT NULL
) STRICT;
CREATE INDEX measurements_by_graph ON measurements (graph_key, task, target);
CREATE INDEX measurements_by_task_target ON measurements (task, target);

CREATE TABLE jobs (
  id TEXT PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
  state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled')),
  fingerprint TEXT NOT NULL CHECK (length(fingerprint) > 0),
  task TEXT NOT NULL CHECK (length(task) > 0),
  target TEXT NOT NULL CHECK (length(target) > 0),
  search_version TEXT NOT NULL CHECK (length(search_version) > 0),
  budget_steps INTEGER NOT NULL CHECK (budget_steps >= 0),
  strategy TEXT NOT NULL,
  request BLOB NOT NULL,
  progress REAL NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 1),
  best_score REAL,
  error TEXT NOT NULL DEFAULT '',
  attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  CHECK (state <> 'failed' OR length(error) > 0)
) STRICT;
CREATE INDEX jobs_by_state ON jobs (state, created_ms);

CREATE TABLE models (
  name TEXT NOT NULL CHECK (length(name) > 0),
  version INTEGER NOT NULL CHECK (version >= 0),
  data BLOB NOT NULL,
  metadata_json TEXT NOT NULL CHECK (json_valid(metadata_json)),
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (name, version)
) STRICT;
)sql"},
    // The graph's own score before any pass, next to the baseline (the compiler's default) and the
    // tuned score; NULL for results written before it existed.
    {2, "results.original_score", R"sql(
ALTER TABLE results ADD COLUMN original_score REAL;
)sql"},
    // Each measured kernel's graph (the learned cost model's input), once per kernel key; the
    // measurement log refers to it by graph_key.
    {3, "kernel_graphs", R"sql(
CREATE TABLE kernel_graphs (
  kernel_key TEXT PRIMARY KEY CHECK (length(kernel_key) > 0),
  graph BLOB NOT NULL CHECK (length(graph) > 0),
  target TEXT NOT NULL CHECK (length(target) > 0),
  module TEXT NOT NULL,
  module_fingerprint TEXT NOT NULL,
  kernel TEXT NOT NULL,
  created_ms INTEGER NOT NULL
) STRICT;
)sql"},
    // Each retraining the daemon ran and how it ended, so a restarted daemon neither forgets a
    // rejected or failed model (and trains it again on the same rows) nor its last outcome.
    {4, "model_trainings", R"sql(
CREATE TABLE model_trainings (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL CHECK (length(name) > 0),
  outcome TEXT NOT NULL
    CHECK (outcome IN ('stored', 'rejected', 'failed', 'preempted', 'stopped')),
  started_ms INTEGER NOT NULL,
  ended_ms INTEGER NOT NULL CHECK (ended_ms >= started_ms),
  new_rows INTEGER NOT NULL CHECK (new_rows >= 0),
  detail TEXT NOT NULL
) STRICT;
CREATE INDEX model_trainings_by_name ON model_trainings (name, ended_ms);
)sql"},
    // Several daemons on one store: identical in-flight requests share a job (the unique index),
    // and a running job is leased to the daemon that claimed it.
    {5, "job dedup keys and leases", R"sql(
ALTER TABLE jobs ADD COLUMN dedup_key TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN lease_expires_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0
  CHECK (cancel_requested IN (0, 1));
CREATE UNIQUE INDEX jobs_in_flight ON jobs (dedup_key)
  WHERE dedup_key <> '' AND state IN ('queued', 'running');
CREATE INDEX jobs_by_owner ON jobs (owner) WHERE owner <> '';
CREATE INDEX jobs_claimable ON jobs (created_ms) WHERE state IN ('queued', 'running');
)sql"},
    // Submitted graphs, once per content (by SHA-256), in pieces of a few MiB: a model with its
    // weights is hundreds of MB, and the jobs that run it refer to it by hash.
    {6, "graphs", R"sql(
CREATE TABLE graphs (
  sha256 TEXT PRIMARY KEY CHECK (length(sha256) = 64),
  size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
  pieces INTEGER NOT NULL CHECK (pieces >= 0),
  created_ms INTEGER NOT NULL
) STRICT;
CREATE TABLE graph_pieces (
  sha256 TEXT NOT NULL REFERENCES graphs (sha256) ON DELETE CASCADE,
  seq INTEGER NOT NULL CHECK (seq >= 0),
  data BLOB NOT NULL CHECK (length(data) > 0),
  PRIMARY KEY (sha256, seq)
) STRICT;
)sql"},
};

absl::StatusOr<int> UserVersion(Database& db) {
  absl::StatusOr<std::string> text = db.QueryText("PRAGMA user_version");
  if (!text.ok()) return text.status();
  int version = 0;
  if (!absl::SimpleAtoi(*text, &version)) {
    return absl::InternalError(absl::StrCat(db.path(), ": unreadable user_version '", *text, "'"));
  }
  if (version > LatestSchemaVersion() || version < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(db.path(), ": schema version ", version, " (PRAGMA user_version) is ",
                     version < 0 ? "invalid" : "newer than this mltune knows", " (it knows up to ",
                     LatestSchemaVersion(), "); use a newer mltune or another store file"));
  }
  return version;
}

}  // namespace

static_assert(std::end(kMigrations)[-1].version == Store::kSchemaVersion,
              "Store::kSchemaVersion must name the last migration");

int LatestSchemaVersion() { return Store::kSchemaVersion; }

absl::Status Migrate(Database& db) {
  // Fast path without the write lock: a current store opens while another process is writing.
  absl::StatusOr<int> version = UserVersion(db);
  if (!version.ok()) return version.status();
  if (*version == LatestSchemaVersion()) return absl::OkStatus();

  return db.WriteTransaction([&]() -> absl::Status {
    // Again under the write lock: another process may have migrated meanwhile.
    absl::StatusOr<int> current = UserVersion(db);
    if (!current.ok()) return current.status();
    for (const Migration& m : kMigrations) {
      if (m.version <= *current) continue;
      if (absl::Status s = db.Exec(m.sql); !s.ok()) {
        return absl::Status(
            s.code(), absl::StrCat("migration to schema version ", m.version, " (", m.description,
                                   ") failed: ", std::string(s.message())));
      }
    }
    if (*current == LatestSchemaVersion()) return absl::OkStatus();
    return db.Exec(absl::StrCat("PRAGMA user_version = ", LatestSchemaVersion()));
  });
}

}  // namespace mltune::storage
