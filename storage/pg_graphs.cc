// PgStore's graph store: submitted graphs once per content hash, in pieces of a few MiB (see
// Store::PutGraph). Pieces are read one query each, so no result holds a whole model (bytea comes
// back as hex text, twice its size).
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/pg_store.h"
#include "storage/postgres.h"
#include "storage/store.h"

namespace mltune::storage {

absl::StatusOr<bool> PgStore::PutGraph(const std::string& sha256, const GraphSource& next) {
  if (absl::Status s = ValidateGraphHash(sha256, "PutGraph"); !s.ok()) return s;
  bool inserted = false;
  bool consumed = false;  // `next` cannot be rewound for a retried transaction
  absl::Status status = Transaction([&](PgConnection& conn) -> absl::Status {
    if (consumed) {
      return absl::UnavailableError(
          absl::StrCat("PutGraph: storing graph ", sha256, " lost to a concurrent transaction"));
    }
    // A concurrent insert of the same hash waits here for the other transaction, then does
    // nothing: the graph is stored once.
    absl::StatusOr<PgResult> insert = conn.Query(
        "INSERT INTO graphs (sha256, size_bytes, pieces, created_ms) VALUES ($1, 0, 0, $2) "
        "ON CONFLICT (sha256) DO NOTHING",
        {PgParam::Text(sha256), PgParam::Int(NowMs())});
    if (!insert.ok()) return insert.status();
    if (insert->affected() == 0) return absl::OkStatus();
    consumed = true;
    int64_t size = 0;
    int64_t pieces = 0;
    while (true) {
      absl::StatusOr<std::string> data = next();
      if (!data.ok()) return data.status();
      if (data->empty()) break;
      absl::Status s =
          conn.Query("INSERT INTO graph_pieces (sha256, seq, data) VALUES ($1, $2, $3)",
                     {PgParam::Text(sha256), PgParam::Int(pieces), PgParam::Bytes(*data)})
              .status();
      if (!s.ok()) return s;
      size += static_cast<int64_t>(data->size());
      ++pieces;
    }
    if (pieces == 0) {
      return absl::InvalidArgumentError(absl::StrCat("PutGraph: graph ", sha256, " has no bytes"));
    }
    inserted = true;
    return conn
        .Query("UPDATE graphs SET size_bytes = $2, pieces = $3 WHERE sha256 = $1",
               {PgParam::Text(sha256), PgParam::Int(size), PgParam::Int(pieces)})
        .status();
  });
  if (!status.ok()) return status;
  return inserted;
}

absl::StatusOr<std::optional<int64_t>> PgStore::GraphSize(const std::string& sha256) {
  if (absl::Status s = ValidateGraphHash(sha256, "GraphSize"); !s.ok()) return s;
  std::optional<int64_t> size;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> rows =
        conn.Query("SELECT size_bytes FROM graphs WHERE sha256 = $1", {PgParam::Text(sha256)});
    if (!rows.ok()) return rows.status();
    if (rows->rows() == 0) return absl::OkStatus();
    absl::StatusOr<int64_t> n = rows->Int(0, 0);
    if (!n.ok()) return n.status();
    size = *n;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return size;
}

absl::StatusOr<std::optional<std::string>> PgStore::GetGraph(const std::string& sha256) {
  if (absl::Status s = ValidateGraphHash(sha256, "GetGraph"); !s.ok()) return s;
  std::optional<std::string> out;
  // No transaction is needed: a stored graph's rows never change once committed.
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> head = conn.Query(
        "SELECT size_bytes, pieces FROM graphs WHERE sha256 = $1", {PgParam::Text(sha256)});
    if (!head.ok()) return head.status();
    if (head->rows() == 0) return absl::OkStatus();
    absl::StatusOr<int64_t> size = head->Int(0, 0);
    if (!size.ok()) return size.status();
    absl::StatusOr<int64_t> pieces = head->Int(0, 1);
    if (!pieces.ok()) return pieces.status();
    std::string& bytes = out.emplace();
    bytes.reserve(static_cast<size_t>(*size));
    for (int64_t seq = 0; seq < *pieces; ++seq) {
      absl::StatusOr<PgResult> piece =
          conn.Query("SELECT data FROM graph_pieces WHERE sha256 = $1 AND seq = $2",
                     {PgParam::Text(sha256), PgParam::Int(seq)});
      if (!piece.ok()) return piece.status();
      if (piece->rows() == 0) break;
      absl::StatusOr<std::string> data = piece->Bytes(0, 0);
      if (!data.ok()) return data.status();
      bytes += *data;
    }
    if (static_cast<int64_t>(bytes.size()) != *size) {
      return absl::DataLossError(absl::StrCat(display_url_, ": graph ", sha256, " has ",
                                              bytes.size(), " bytes stored of its ", *size));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<GraphTotals> PgStore::CountGraphs() {
  GraphTotals totals;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> rows =
        conn.Query("SELECT count(*), coalesce(sum(size_bytes), 0) FROM graphs");
    if (!rows.ok()) return rows.status();
    absl::StatusOr<int64_t> graphs = rows->Int(0, 0);
    if (!graphs.ok()) return graphs.status();
    absl::StatusOr<int64_t> bytes = rows->Int(0, 1);
    if (!bytes.ok()) return bytes.status();
    totals = GraphTotals{*graphs, *bytes};
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return totals;
}

}  // namespace mltune::storage
