// SqliteStore's graph store: submitted graphs once per content hash, in pieces of a few MiB (see
// Store::PutGraph), written in one transaction so a reader never sees half a graph.
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace mltune::storage {

absl::StatusOr<bool> SqliteStore::PutGraph(const std::string& sha256, const GraphSource& next) {
  if (absl::Status s = ValidateGraphHash(sha256, "PutGraph"); !s.ok()) return s;
  bool inserted = false;
  absl::Status status = Write([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> insert = db.Prepare(
        "INSERT INTO graphs (sha256, size_bytes, pieces, created_ms) VALUES (?1, 0, 0, ?2) "
        "ON CONFLICT (sha256) DO NOTHING");
    if (!insert.ok()) return insert.status();
    if (absl::Status s = insert->BindText(1, sha256).BindInt(2, NowMs()).Run(); !s.ok()) return s;
    if (db.Changes() == 0) return absl::OkStatus();  // stored before: keep that copy
    int64_t size = 0;
    int64_t pieces = 0;
    absl::StatusOr<Statement> piece =
        db.Prepare("INSERT INTO graph_pieces (sha256, seq, data) VALUES (?1, ?2, ?3)");
    if (!piece.ok()) return piece.status();
    while (true) {
      absl::StatusOr<std::string> data = next();
      if (!data.ok()) return data.status();
      if (data->empty()) break;
      absl::Status s = piece->BindText(1, sha256).BindInt(2, pieces).BindBlob(3, *data).Run();
      if (!s.ok()) return s;
      size += static_cast<int64_t>(data->size());
      ++pieces;
    }
    if (pieces == 0) {
      return absl::InvalidArgumentError(absl::StrCat("PutGraph: graph ", sha256, " has no bytes"));
    }
    absl::StatusOr<Statement> totals =
        db.Prepare("UPDATE graphs SET size_bytes = ?2, pieces = ?3 WHERE sha256 = ?1");
    if (!totals.ok()) return totals.status();
    inserted = true;
    return totals->BindText(1, sha256).BindInt(2, size).BindInt(3, pieces).Run();
  });
  if (!status.ok()) return status;
  return inserted;
}

absl::StatusOr<std::optional<int64_t>> SqliteStore::GraphSize(const std::string& sha256) {
  if (absl::Status s = ValidateGraphHash(sha256, "GraphSize"); !s.ok()) return s;
  std::optional<int64_t> size;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare("SELECT size_bytes FROM graphs WHERE sha256 = ?1");
    if (!stmt.ok()) return stmt.status();
    stmt->BindText(1, sha256);
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (*row) size = stmt->ColumnInt(0);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return size;
}

absl::StatusOr<std::optional<std::string>> SqliteStore::GetGraph(const std::string& sha256) {
  if (absl::Status s = ValidateGraphHash(sha256, "GetGraph"); !s.ok()) return s;
  std::optional<std::string> out;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    int64_t size = 0;
    {
      absl::StatusOr<Statement> head =
          db.Prepare("SELECT size_bytes FROM graphs WHERE sha256 = ?1");
      if (!head.ok()) return head.status();
      head->BindText(1, sha256);
      absl::StatusOr<bool> row = head->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      size = head->ColumnInt(0);
    }
    std::string& bytes = out.emplace();
    bytes.reserve(static_cast<size_t>(size));
    absl::StatusOr<Statement> pieces =
        db.Prepare("SELECT data FROM graph_pieces WHERE sha256 = ?1 ORDER BY seq");
    if (!pieces.ok()) return pieces.status();
    pieces->BindText(1, sha256);
    while (true) {
      absl::StatusOr<bool> row = pieces->Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      bytes += pieces->ColumnBlob(0);
    }
    if (static_cast<int64_t>(bytes.size()) != size) {
      return absl::DataLossError(absl::StrCat(path_, ": graph ", sha256, " has ", bytes.size(),
                                              " bytes stored of its ", size));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<GraphTotals> SqliteStore::CountGraphs() {
  GraphTotals totals;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt =
        db.Prepare("SELECT count(*), coalesce(sum(size_bytes), 0) FROM graphs");
    if (!stmt.ok()) return stmt.status();
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (*row) totals = GraphTotals{stmt->ColumnInt(0), stmt->ColumnInt(1)};
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return totals;
}

}  // namespace mltune::storage
