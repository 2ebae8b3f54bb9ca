// PgStore's learned-model checkpoints ((name, version) -> bytes + JSON metadata, written once)
// and the daemon's retrainings, under models.cc's and model_trainings.cc's rules.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/internal.h"
#include "storage/pg_store.h"
#include "storage/postgres.h"
#include "storage/store.h"

namespace mltune::storage {
namespace {

// The first key of PutModelNextVersion's advisory locks (the second is the model name's hash):
// any constant would do, as long as it is mltune's alone.
constexpr int kModelVersionLock = 70861171;

// InvalidArgument naming `what` unless `metadata` parses as JSON. A statement of its own, so the
// error cannot be confused with another one of the INSERT's (the table's CHECK casts it too).
absl::Status CheckJson(PgConnection& conn, const std::string& metadata, const std::string& what) {
  absl::Status s = conn.Query("SELECT $1::jsonb IS NOT NULL", {PgParam::Text(metadata)}).status();
  if (absl::IsInvalidArgument(s)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": metadata_json is not valid JSON (", std::string(s.message()), ")"));
  }
  return s;
}

}  // namespace

absl::Status PgStore::PutModel(const std::string& name, int64_t version, std::string_view data,
                               const std::string& metadata_json) {
  if (absl::Status s = ValidateModel(name, version); !s.ok()) return s;
  const std::string what = absl::StrCat("PutModel(", name, " v", version, ")");
  const std::string metadata = metadata_json.empty() ? "{}" : metadata_json;
  return WithConnection([&](PgConnection& conn) -> absl::Status {
    if (absl::Status s = CheckJson(conn, metadata, what); !s.ok()) return s;
    absl::Status s = conn.Query(
                             "INSERT INTO models (name, version, data, metadata_json, created_ms) "
                             "VALUES ($1, $2, $3, $4, $5)",
                             {PgParam::Text(name), PgParam::Int(version), PgParam::Bytes(data),
                              PgParam::Text(metadata), PgParam::Int(NowMs())})
                         .status();
    if (absl::IsAlreadyExists(s)) {
      return absl::AlreadyExistsError(what + ": this version is already stored");
    }
    return s;
  });
}

absl::StatusOr<int64_t> PgStore::PutModelNextVersion(const std::string& name, std::string_view data,
                                                     const std::string& metadata_json) {
  if (absl::Status s = ValidateModel(name, 0); !s.ok()) return s;
  const std::string what = absl::StrCat("PutModelNextVersion(", name, ")");
  const std::string metadata = metadata_json.empty() ? "{}" : metadata_json;
  int64_t version = 0;
  absl::Status put;
  // Writers of the same name take turns under an advisory lock held to COMMIT, so each reads the
  // version the previous one committed; a PutModel of an explicit version takes no lock, and
  // taking the version first makes this one retry with the next.
  for (int attempt = 0; attempt < 5; ++attempt) {
    put = Transaction([&](PgConnection& conn) -> absl::Status {
      if (absl::Status s = CheckJson(conn, metadata, what); !s.ok()) return s;
      absl::Status s = conn.Query(absl::StrCat("SELECT pg_advisory_xact_lock(", kModelVersionLock,
                                               ", hashtext($1))"),
                                  {PgParam::Text(name)})
                           .status();
      if (!s.ok()) return s;
      absl::StatusOr<PgResult> inserted = conn.Query(
          "INSERT INTO models (name, version, data, metadata_json, created_ms) "
          "SELECT $1, COALESCE(max(version), 0) + 1, $2, $3, $4 FROM models WHERE name = $1 "
          "RETURNING version",
          {PgParam::Text(name), PgParam::Bytes(data), PgParam::Text(metadata),
           PgParam::Int(NowMs())});
      if (!inserted.ok()) return inserted.status();
      absl::StatusOr<int64_t> v = inserted->Int(0, 0);
      if (!v.ok()) return v.status();
      version = *v;
      return absl::OkStatus();
    });
    if (put.ok()) return version;
    if (!absl::IsAlreadyExists(put)) return put;
  }
  return put;
}

absl::StatusOr<std::optional<ModelRecord>> PgStore::LatestModel(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("LatestModel: model name is empty");
  std::optional<ModelRecord> model;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> rows = conn.Query(
        "SELECT version, data, metadata_json, created_ms FROM models WHERE name = $1 "
        "ORDER BY version DESC LIMIT 1",
        {PgParam::Text(name)});
    if (!rows.ok()) return rows.status();
    if (rows->rows() == 0) return absl::OkStatus();
    absl::StatusOr<int64_t> version = rows->Int(0, 0);
    absl::StatusOr<std::string> data = rows->Bytes(0, 1);
    absl::StatusOr<int64_t> created = rows->Int(0, 3);
    for (const absl::Status& s : {version.status(), data.status(), created.status()}) {
      if (!s.ok()) return s;
    }
    ModelRecord& m = model.emplace();
    m.name = name;
    m.version = *version;
    m.data = *std::move(data);
    m.size_bytes = static_cast<int64_t>(m.data.size());
    m.metadata_json = rows->Text(0, 2);
    m.created_ms = *created;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return model;
}

absl::StatusOr<std::vector<ModelRecord>> PgStore::ListModels() {
  std::vector<ModelRecord> models;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    // COLLATE "C": byte order, as SQLite sorts text, whatever the database's locale.
    absl::StatusOr<PgResult> rows = conn.Query(
        "SELECT name, version, octet_length(data), metadata_json, created_ms FROM models "
        "ORDER BY name COLLATE \"C\", version");
    if (!rows.ok()) return rows.status();
    for (int i = 0; i < rows->rows(); ++i) {
      absl::StatusOr<int64_t> version = rows->Int(i, 1);
      absl::StatusOr<int64_t> size = rows->Int(i, 2);
      absl::StatusOr<int64_t> created = rows->Int(i, 4);
      for (const absl::Status& s : {version.status(), size.status(), created.status()}) {
        if (!s.ok()) return s;
      }
      ModelRecord& m = models.emplace_back();
      m.name = rows->Text(i, 0);
      m.version = *version;
      m.size_bytes = *size;
      m.metadata_json = rows->Text(i, 3);
      m.created_ms = *created;
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return models;
}

absl::Status PgStore::RecordModelTraining(const ModelTrainingRecord& record) {
  if (absl::Status s = ValidateModelTraining(record); !s.ok()) return s;
  return WithConnection([&](PgConnection& conn) -> absl::Status {
    return conn
        .Query(
            "INSERT INTO model_trainings (name, outcome, started_ms, ended_ms, new_rows, detail) "
            "VALUES ($1, $2, $3, $4, $5, $6)",
            {PgParam::Text(record.name), PgParam::Text(record.outcome),
             PgParam::Int(record.started_ms), PgParam::Int(record.ended_ms),
             PgParam::Int(record.new_rows), PgParam::Text(record.detail)})
        .status();
  });
}

absl::StatusOr<std::vector<ModelTrainingRecord>> PgStore::LatestModelTrainings() {
  std::vector<ModelTrainingRecord> latest;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    // The newest row per name (ties on ended_ms: the later insert), by name in byte order.
    absl::StatusOr<PgResult> rows = conn.Query(
        "SELECT name, outcome, started_ms, ended_ms, new_rows, detail FROM ("
        "SELECT DISTINCT ON (name) name, outcome, started_ms, ended_ms, new_rows, detail "
        "FROM model_trainings ORDER BY name, ended_ms DESC, id DESC) latest "
        "ORDER BY name COLLATE \"C\"");
    if (!rows.ok()) return rows.status();
    for (int i = 0; i < rows->rows(); ++i) {
      absl::StatusOr<int64_t> started = rows->Int(i, 2);
      absl::StatusOr<int64_t> ended = rows->Int(i, 3);
      absl::StatusOr<int64_t> new_rows = rows->Int(i, 4);
      for (const absl::Status& s : {started.status(), ended.status(), new_rows.status()}) {
        if (!s.ok()) return s;
      }
      ModelTrainingRecord& r = latest.emplace_back();
      r.name = rows->Text(i, 0);
      r.outcome = rows->Text(i, 1);
      r.started_ms = *started;
      r.ended_ms = *ended;
      r.new_rows = *new_rows;
      r.detail = rows->Text(i, 5);
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return latest;
}

}  // namespace mltune::storage
