// PgStore's kernel graphs: the learned cost model's input per kernel key, written once (see
// kernel_graphs.cc), replaced only when the caller's feature set cannot read the stored one.
#include <string>

#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/pg_store.h"
#include "storage/postgres.h"
#include "storage/store.h"

namespace mltune::storage {

absl::StatusOr<bool> PgStore::PutKernelGraph(const KernelGraphRecord& record,
                                             const GraphCheck& is_current) {
  if (absl::Status s = ValidateKernelGraph(record); !s.ok()) return s;
  bool inserted = false;
  absl::Status status = Transaction([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> insert = conn.Query(
        "INSERT INTO kernel_graphs (kernel_key, graph, target, module, module_fingerprint, kernel, "
        "created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (kernel_key) DO NOTHING",
        {PgParam::Text(record.kernel_key), PgParam::Bytes(record.graph),
         PgParam::Text(record.target), PgParam::Text(record.module),
         PgParam::Text(record.module_fingerprint), PgParam::Text(record.kernel),
         PgParam::Int(NowMs())});
    if (!insert.ok()) return insert.status();
    inserted = insert->affected() == 1;
    if (inserted || !is_current) return absl::OkStatus();
    // FOR UPDATE: the row stays locked from the check to the update, so two daemons refreshing
    // the same stale graph do not interleave.
    absl::StatusOr<PgResult> stored =
        conn.Query("SELECT graph FROM kernel_graphs WHERE kernel_key = $1 FOR UPDATE",
                   {PgParam::Text(record.kernel_key)});
    if (!stored.ok()) return stored.status();
    if (stored->rows() == 0) return absl::OkStatus();
    absl::StatusOr<std::string> graph = stored->Bytes(0, 0);
    if (!graph.ok()) return graph.status();
    if (is_current(*graph)) return absl::OkStatus();
    absl::Status s = conn.Query("UPDATE kernel_graphs SET graph = $2 WHERE kernel_key = $1",
                                {PgParam::Text(record.kernel_key), PgParam::Bytes(record.graph)})
                         .status();
    if (!s.ok()) return s;
    inserted = true;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return inserted;
}

absl::StatusOr<std::optional<KernelGraphRecord>> PgStore::GetKernelGraph(
    const std::string& kernel_key) {
  if (kernel_key.empty()) return absl::InvalidArgumentError("GetKernelGraph: kernel_key is empty");
  std::optional<KernelGraphRecord> out;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> rows = conn.Query(
        "SELECT graph, target, module, module_fingerprint, kernel, created_ms FROM kernel_graphs "
        "WHERE kernel_key = $1",
        {PgParam::Text(kernel_key)});
    if (!rows.ok()) return rows.status();
    if (rows->rows() == 0) return absl::OkStatus();
    absl::StatusOr<std::string> graph = rows->Bytes(0, 0);
    if (!graph.ok()) return graph.status();
    absl::StatusOr<int64_t> created = rows->Int(0, 5);
    if (!created.ok()) return created.status();
    KernelGraphRecord& r = out.emplace();
    r.kernel_key = kernel_key;
    r.graph = *std::move(graph);
    r.target = rows->Text(0, 1);
    r.module = rows->Text(0, 2);
    r.module_fingerprint = rows->Text(0, 3);
    r.kernel = rows->Text(0, 4);
    r.created_ms = *created;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<int64_t> PgStore::CountKernelGraphs() {
  return QueryCount("SELECT count(*) FROM kernel_graphs", {});
}

}  // namespace mltune::storage
