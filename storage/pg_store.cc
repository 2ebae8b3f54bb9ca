// PgStore: opening, migrations, the connection pool and transactions. The tables have their own
// files: pg_results.cc, pg_measurements.cc, pg_kernel_graphs.cc, pg_models.cc, pg_jobs.cc.
#include "storage/pg_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "storage/pg_migrations.h"

namespace mltune::storage {
namespace {

absl::Status WithContext(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(std::string(context), ": ", std::string(status.message())));
}

}  // namespace

std::string RedactPassword(const std::string& url) {
  // scheme://[user[:password]@]host...: the password ends at the last '@' before the path.
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  const size_t start = scheme + 3;
  const size_t path = url.find_first_of("/?", start);
  const size_t at = url.rfind('@', path == std::string::npos ? std::string::npos : path);
  if (at == std::string::npos || at < start) return url;
  const size_t colon = url.find(':', start);
  if (colon == std::string::npos || colon > at) return url;
  return absl::StrCat(url.substr(0, colon + 1), "***", url.substr(at));
}

PgStore::PgStore(std::string url, StoreOptions options)
    : url_(std::move(url)), display_url_(RedactPassword(url_)), options_(options) {}

PgStore::~PgStore() = default;

absl::StatusOr<std::unique_ptr<Store>> PgStore::Open(const std::string& url, StoreOptions options) {
  if (options.busy_timeout_ms < 0 || options.max_idle_readers < 0) {
    return absl::InvalidArgumentError(
        "StoreOptions: busy_timeout_ms and max_idle_readers must be >= 0");
  }
  std::unique_ptr<PgStore> store(new PgStore(url, options));
  const std::string context = absl::StrCat("cannot open the store ", store->display_url_);
  absl::StatusOr<std::unique_ptr<PgConnection>> conn = store->Acquire();
  if (!conn.ok()) return WithContext(conn.status(), context);
  if (options.must_exist) {
    absl::StatusOr<int> version = PostgresSchemaVersion(**conn);
    if (!version.ok()) return WithContext(version.status(), context);
    if (*version == 0) {
      return absl::NotFoundError(
          absl::StrCat(context, ": the database holds no mltune store (no mltune_schema table)"));
    }
  }
  if (absl::Status s = MigratePostgres(**conn, store->display_url_); !s.ok()) {
    return WithContext(s, context);
  }
  store->Release(*std::move(conn));
  return store;
}

absl::StatusOr<std::unique_ptr<PgConnection>> PgStore::Acquire() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!idle_.empty()) {
      std::unique_ptr<PgConnection> conn = std::move(idle_.back());
      idle_.pop_back();
      return conn;
    }
  }
  absl::StatusOr<std::unique_ptr<PgConnection>> conn = PgConnection::Connect(url_);
  if (!conn.ok()) {
    // The message repeats the URL, password included: it says where with the password hidden.
    return absl::Status(conn.status().code(),
                        absl::StrReplaceAll(conn.status().message(), {{url_, display_url_}}));
  }
  // extra_float_digits = 3: doubles come back exactly, whatever the server's default. A write
  // that waits on a lock longer than the busy timeout fails (Unavailable) rather than hanging, as
  // a SQLite write does (0: no limit).
  absl::Status s = (*conn)->Exec(
      absl::StrCat("SET extra_float_digits = 3; SET lock_timeout = ", options_.busy_timeout_ms));
  if (!s.ok()) return s;
  return conn;
}

void PgStore::Release(std::unique_ptr<PgConnection> conn) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (static_cast<int>(idle_.size()) < std::max(1, options_.max_idle_readers)) {
    idle_.push_back(std::move(conn));
  }
}

absl::Status PgStore::WithConnection(const std::function<absl::Status(PgConnection&)>& fn) {
  absl::StatusOr<std::unique_ptr<PgConnection>> conn = Acquire();
  if (!conn.ok()) return conn.status();
  absl::Status s = fn(**conn);
  // A connection that failed to reach the server is dropped; the next call connects anew.
  if (!absl::IsUnavailable(s)) Release(*std::move(conn));
  return s;
}

absl::Status PgStore::Transaction(const std::function<absl::Status(PgConnection&)>& fn) {
  return WithConnection(
      [&](PgConnection& conn) { return conn.Transaction([&] { return fn(conn); }); });
}

absl::StatusOr<int64_t> PgStore::QueryCount(const std::string& sql,
                                            const std::vector<PgParam>& params) {
  int64_t count = 0;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> rows = conn.Query(sql, params);
    if (!rows.ok()) return rows.status();
    absl::StatusOr<int64_t> n = rows->Int(0, 0);
    if (!n.ok()) return n.status();
    count = *n;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return count;
}

absl::StatusOr<int> PgStore::SchemaVersion() {
  int version = 0;
  absl::Status s = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<int> v = PostgresSchemaVersion(conn);
    if (!v.ok()) return v.status();
    version = *v;
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return version;
}

absl::Status PgStore::CheckIntegrity() {
  // Page integrity is the server's business (checksums, WAL); what mltune can check is that the
  // schema it expects is there.
  return WithConnection([&](PgConnection& conn) -> absl::Status {
    for (const char* table : {"results", "results_artifacts", "measurements", "jobs", "models",
                              "kernel_graphs", "model_trainings"}) {
      absl::StatusOr<PgResult> r =
          conn.Query("SELECT to_regclass($1) IS NOT NULL", {PgParam::Text(table)});
      if (!r.ok()) return r.status();
      if (r->Text(0, 0) != "t") {
        return absl::DataLossError(
            absl::StrCat(display_url_, ": the mltune table '", table, "' is missing"));
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace mltune::storage
