// Kernel graphs: the learned cost model's input per kernel key, written once, next to the
// measurement log that refers to them (docs/cost_models.md).
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace mltune::storage {

absl::StatusOr<bool> SqliteStore::PutKernelGraph(const KernelGraphRecord& record,
                                                 const GraphCheck& is_current) {
  if (absl::Status s = ValidateKernelGraph(record); !s.ok()) return s;
  bool inserted = false;
  absl::Status status = Write([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> insert = db.Prepare(
        "INSERT INTO kernel_graphs (kernel_key, graph, target, module, module_fingerprint, kernel, "
        "created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (kernel_key) DO NOTHING");
    if (!insert.ok()) return insert.status();
    absl::Status s = insert->BindText(1, record.kernel_key)
                         .BindBlob(2, record.graph)
                         .BindText(3, record.target)
                         .BindText(4, record.module)
                         .BindText(5, record.module_fingerprint)
                         .BindText(6, record.kernel)
                         .BindInt(7, NowMs())
                         .Run();
    if (!s.ok()) return s;
    absl::StatusOr<std::string> changes = db.QueryText("SELECT changes()");
    if (!changes.ok()) return changes.status();
    inserted = *changes != "0";
    if (inserted || !is_current) return absl::OkStatus();
    // In the same transaction, so no writer sees the stale graph between the check and update.
    std::string stored;
    {
      absl::StatusOr<Statement> select =
          db.Prepare("SELECT graph FROM kernel_graphs WHERE kernel_key = ?1");
      if (!select.ok()) return select.status();
      select->BindText(1, record.kernel_key);
      absl::StatusOr<bool> row = select->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      stored = select->ColumnBlob(0);
    }  // the read is finished before the row is updated
    if (is_current(stored)) return absl::OkStatus();
    absl::StatusOr<Statement> update =
        db.Prepare("UPDATE kernel_graphs SET graph = ?2 WHERE kernel_key = ?1");
    if (!update.ok()) return update.status();
    absl::Status s2 = update->BindText(1, record.kernel_key).BindBlob(2, record.graph).Run();
    if (!s2.ok()) return s2;
    inserted = true;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return inserted;
}

absl::StatusOr<std::optional<KernelGraphRecord>> SqliteStore::GetKernelGraph(
    const std::string& kernel_key) {
  if (kernel_key.empty()) return absl::InvalidArgumentError("GetKernelGraph: kernel_key is empty");
  std::optional<KernelGraphRecord> out;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare(
        "SELECT graph, target, module, module_fingerprint, kernel, created_ms FROM kernel_graphs "
        "WHERE kernel_key = ?1");
    if (!stmt.ok()) return stmt.status();
    stmt->BindText(1, kernel_key);
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    KernelGraphRecord& r = out.emplace();
    r.kernel_key = kernel_key;
    r.graph = stmt->ColumnBlob(0);
    r.target = stmt->ColumnText(1);
    r.module = stmt->ColumnText(2);
    r.module_fingerprint = stmt->ColumnText(3);
    r.kernel = stmt->ColumnText(4);
    r.created_ms = stmt->ColumnInt(5);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<int64_t> SqliteStore::CountKernelGraphs() {
  int64_t count = 0;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<std::string> text = db.QueryText("SELECT count(*) FROM kernel_graphs");
    if (!text.ok()) return text.status();
    if (!absl::SimpleAtoi(*text, &count)) {
      return absl::InternalError(absl::StrCat("CountKernelGraphs: unreadable count '", *text, "'"));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return count;
}

}  // namespace mltune::storage
