// The measurement log: every evaluated candidate, appended in batches; the cost models' training
// data.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "storage/internal.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace mltune::storage {
namespace {

// " WHERE ..." for the set fields of `filter` (parameters ?1..?4 and ?6; ?5 is the limit), or "".
std::string WhereClause(const MeasurementFilter& filter) {
  std::vector<std::string> conditions;
  if (filter.graph_key) conditions.push_back("graph_key = ?1");
  if (filter.task) conditions.push_back("task = ?2");
  if (filter.target) conditions.push_back("target = ?3");
  if (filter.worker) conditions.push_back("worker = ?4");
  if (filter.after_ms) conditions.push_back("time_ms > ?6");
  if (conditions.empty()) return "";
  return absl::StrCat(" WHERE ", absl::StrJoin(conditions, " AND "));
}

void BindFilter(const MeasurementFilter& filter, Statement& stmt) {
  if (filter.graph_key) stmt.BindText(1, *filter.graph_key);
  if (filter.task) stmt.BindText(2, *filter.task);
  if (filter.target) stmt.BindText(3, *filter.target);
  if (filter.worker) stmt.BindText(4, *filter.worker);
  if (filter.after_ms) stmt.BindInt(6, *filter.after_ms);
}

}  // namespace

absl::Status SqliteStore::AppendMeasurements(std::span<const MeasurementRecord> records) {
  // Validate everything before taking the write lock: a bad record writes nothing.
  for (size_t i = 0; i < records.size(); ++i) {
    if (absl::Status s = ValidateMeasurement(records[i], i); !s.ok()) return s;
  }
  if (records.empty()) return absl::OkStatus();
  return Write([&](Database& db) -> absl::Status {
    const int64_t now = NowMs();
    absl::StatusOr<Statement> insert = db.Prepare(
        "INSERT INTO measurements (graph_key, task, target, configuration, value, worker, "
        "time_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!insert.ok()) return insert.status();
    for (const MeasurementRecord& m : records) {
      absl::Status s = insert->BindText(1, m.graph_key)
                           .BindText(2, m.task)
                           .BindText(3, m.target)
                           .BindText(4, m.configuration)
                           .BindDouble(5, m.value)
                           .BindText(6, m.worker)
                           .BindInt(7, m.time_ms != 0 ? m.time_ms : now)
                           .Run();
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<MeasurementRecord>> SqliteStore::QueryMeasurements(
    const MeasurementFilter& filter) {
  if (filter.limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("QueryMeasurements: limit is ", filter.limit, " (< 0)"));
  }
  std::vector<MeasurementRecord> out;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare(
        absl::StrCat("SELECT id, graph_key, task, target, configuration, value, worker, time_ms "
                     "FROM measurements",
                     WhereClause(filter), " ORDER BY id LIMIT ?5"));
    if (!stmt.ok()) return stmt.status();
    BindFilter(filter, *stmt);
    stmt->BindInt(5, filter.limit > 0 ? filter.limit : -1);  // LIMIT -1: no limit
    while (true) {
      absl::StatusOr<bool> row = stmt->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      MeasurementRecord& m = out.emplace_back();
      m.id = stmt->ColumnInt(0);
      m.graph_key = stmt->ColumnText(1);
      m.task = stmt->ColumnText(2);
      m.target = stmt->ColumnText(3);
      m.configuration = stmt->ColumnText(4);
      m.value = stmt->ColumnDouble(5);
      m.worker = stmt->ColumnText(6);
      m.time_ms = stmt->ColumnInt(7);
    }
  });
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<int64_t> SqliteStore::CountMeasurements(const MeasurementFilter& filter) {
  int64_t count = 0;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt =
        db.Prepare(absl::StrCat("SELECT count(*) FROM measurements", WhereClause(filter)));
    if (!stmt.ok()) return stmt.status();
    BindFilter(filter, *stmt);
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    count = *row ? stmt->ColumnInt(0) : 0;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return count;
}

}  // namespace mltune::storage
