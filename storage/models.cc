// Checkpoints of learned models: (name, version) -> bytes + JSON metadata, written once.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"
#include "storage/store.h"

namespace mltune::storage {

absl::Status SqliteStore::PutModel(const std::string& name, int64_t version, std::string_view data,
                                   const std::string& metadata_json) {
  if (absl::Status s = ValidateModel(name, version); !s.ok()) return s;
  const std::string what = absl::StrCat("PutModel(", name, " v", version, ")");
  const std::string metadata = metadata_json.empty() ? "{}" : metadata_json;
  return Write([&](Database& db) -> absl::Status {
    {
      absl::StatusOr<Statement> check = db.Prepare(
          "SELECT json_valid(?1), EXISTS (SELECT 1 FROM models WHERE name = ?2 AND version = ?3)");
      if (!check.ok()) return check.status();
      check->BindText(1, metadata).BindText(2, name).BindInt(3, version);
      absl::StatusOr<bool> row = check->Step();
      if (!row.ok()) return row.status();
      if (check->ColumnInt(0) == 0) {
        return absl::InvalidArgumentError(what + ": metadata_json is not valid JSON");
      }
      if (check->ColumnInt(1) != 0) {
        return absl::AlreadyExistsError(what + ": this version is already stored");
      }
    }
    absl::StatusOr<Statement> insert = db.Prepare(
        "INSERT INTO models (name, version, data, metadata_json, created_ms) "
        "VALUES (?1, ?2, ?3, ?4, ?5)");
    if (!insert.ok()) return insert.status();
    return insert->BindText(1, name)
        .BindInt(2, version)
        .BindBlob(3, data)
        .BindText(4, metadata)
        .BindInt(5, NowMs())
        .Run();
  });
}

absl::StatusOr<int64_t> SqliteStore::PutModelNextVersion(const std::string& name,
                                                         std::string_view data,
                                                         const std::string& metadata_json) {
  absl::Status put;
  for (int attempt = 0; attempt < 5; ++attempt) {
    absl::StatusOr<std::optional<ModelRecord>> latest = LatestModel(name);
    if (!latest.ok()) return latest.status();
    const int64_t version = latest->has_value() ? (*latest)->version + 1 : 1;
    put = PutModel(name, version, data, metadata_json);
    if (put.ok()) return version;
    if (!absl::IsAlreadyExists(put)) return put;
  }
  return put;
}

absl::StatusOr<std::optional<ModelRecord>> SqliteStore::LatestModel(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("LatestModel: model name is empty");
  std::optional<ModelRecord> model;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare(
        "SELECT version, data, metadata_json, created_ms FROM models WHERE name = ?1 "
        "ORDER BY version DESC LIMIT 1");
    if (!stmt.ok()) return stmt.status();
    stmt->BindText(1, name);
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
    ModelRecord& m = model.emplace();
    m.name = name;
    m.version = stmt->ColumnInt(0);
    m.data = stmt->ColumnBlob(1);
    m.size_bytes = static_cast<int64_t>(m.data.size());
    m.metadata_json = stmt->ColumnText(2);
    m.created_ms = stmt->ColumnInt(3);
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return model;
}

absl::StatusOr<std::vector<ModelRecord>> SqliteStore::ListModels() {
  std::vector<ModelRecord> models;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare(
        "SELECT name, version, length(data), metadata_json, created_ms FROM models "
        "ORDER BY name, version");
    if (!stmt.ok()) return stmt.status();
    while (true) {
      absl::StatusOr<bool> row = stmt->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      ModelRecord& m = models.emplace_back();
      m.name = stmt->ColumnText(0);
      m.version = stmt->ColumnInt(1);
      m.size_bytes = stmt->ColumnInt(2);
      m.metadata_json = stmt->ColumnText(3);
      m.created_ms = stmt->ColumnInt(4);
    }
  });
  if (!status.ok()) return status;
  return models;
}

}  // namespace mltune::storage
