// The daemon's retrainings of learned models: one row per run, read back when it restarts.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace mltune::storage {

absl::Status SqliteStore::RecordModelTraining(const ModelTrainingRecord& record) {
  if (absl::Status s = ValidateModelTraining(record); !s.ok()) return s;
  return Write([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> insert = db.Prepare(
        "INSERT INTO model_trainings (name, outcome, started_ms, ended_ms, new_rows, detail) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    if (!insert.ok()) return insert.status();
    return insert->BindText(1, record.name)
        .BindText(2, record.outcome)
        .BindInt(3, record.started_ms)
        .BindInt(4, record.ended_ms)
        .BindInt(5, record.new_rows)
        .BindText(6, record.detail)
        .Run();
  });
}

absl::StatusOr<std::vector<ModelTrainingRecord>> SqliteStore::LatestModelTrainings() {
  std::vector<ModelTrainingRecord> latest;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    // The newest row per name (ties on ended_ms: the later insert).
    absl::StatusOr<Statement> stmt = db.Prepare(
        "SELECT name, outcome, started_ms, ended_ms, new_rows, detail FROM model_trainings t "
        "WHERE id = (SELECT id FROM model_trainings u WHERE u.name = t.name "
        "ORDER BY ended_ms DESC, id DESC LIMIT 1) ORDER BY name");
    if (!stmt.ok()) return stmt.status();
    while (true) {
      absl::StatusOr<bool> row = stmt->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      ModelTrainingRecord& r = latest.emplace_back();
      r.name = stmt->ColumnText(0);
      r.outcome = stmt->ColumnText(1);
      r.started_ms = stmt->ColumnInt(2);
      r.ended_ms = stmt->ColumnInt(3);
      r.new_rows = stmt->ColumnInt(4);
      r.detail = stmt->ColumnText(5);
    }
  });
  if (!status.ok()) return status;
  return latest;
}

}  // namespace mltune::storage
