// SqliteStore: opening, the connection pool, transactions and integrity checks. The tables have
// their own files: results.cc, measurements.cc, jobs.cc, models.cc.
#include "storage/store.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "storage/internal.h"
#include "storage/migrations.h"
#include "storage/sqlite.h"
#include "storage/sqlite_store.h"

namespace mltune::storage {

namespace {

absl::Status WithContext(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(std::string(context), ": ", std::string(status.message())));
}

}  // namespace

SqliteStore::SqliteStore(std::string path, StoreOptions options, std::unique_ptr<Database> writer)
    : path_(std::move(path)),
      options_(options),
      in_memory_(path_ == ":memory:"),
      writer_(std::move(writer)) {}

SqliteStore::~SqliteStore() = default;

absl::StatusOr<std::unique_ptr<Store>> SqliteStore::Open(const std::string& path,
                                                         StoreOptions options) {
  if (path.empty()) return absl::InvalidArgumentError("store path is empty");
  if (options.busy_timeout_ms < 0 || options.max_idle_readers < 0) {
    return absl::InvalidArgumentError(
        "StoreOptions: busy_timeout_ms and max_idle_readers must be >= 0");
  }
  const bool in_memory = path == ":memory:";
  std::string file = path;
  if (!in_memory) {
    std::error_code ec;
    // Absolute, so that SQLite (built with URI filenames on) never reads it as a "file:" URI.
    std::filesystem::path absolute = std::filesystem::absolute(path, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat(path, ": ", ec.message()));
    file = absolute.string();
    if (std::filesystem::is_directory(absolute, ec)) {
      return absl::InvalidArgumentError(absl::StrCat(file, ": is a directory, not a store file"));
    }
    if (options.must_exist && !std::filesystem::exists(absolute, ec)) {
      return absl::NotFoundError(absl::StrCat(file, ": no such store file"));
    }
    std::filesystem::create_directories(absolute.parent_path(), ec);
    if (ec) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot create the folder ", absolute.parent_path().string(), ": ", ec.message()));
    }
  }

  constexpr char kContext[] = "cannot open the store";
  absl::StatusOr<std::unique_ptr<Database>> writer =
      Database::Open(file, options.busy_timeout_ms, /*query_only=*/false);
  if (!writer.ok()) return WithContext(writer.status(), kContext);
  Database& db = **writer;
  // WAL: readers keep reading the last commit while a write is open, and a killed process leaves
  // every committed transaction intact (uncommitted WAL frames are ignored on reopen). In WAL
  // mode synchronous=NORMAL loses no commit on a process crash, only on power loss.
  absl::StatusOr<std::string> mode = db.QueryText("PRAGMA journal_mode = WAL");
  if (!mode.ok()) return WithContext(mode.status(), kContext);
  if (!in_memory && *mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat(kContext, ": ", file, ": cannot switch to WAL journal mode (it stays '", *mode,
                     "'); WAL needs a local file system"));
  }
  // journal_size_limit: after a checkpoint, a WAL grown by a large batch is cut back to 64 MiB.
  for (const char* pragma : {"PRAGMA synchronous = NORMAL", "PRAGMA foreign_keys = ON",
                             "PRAGMA journal_size_limit = 67108864"}) {
    if (absl::Status s = db.Exec(pragma); !s.ok()) return WithContext(s, kContext);
  }

  std::unique_ptr<SqliteStore> store(new SqliteStore(file, options, *std::move(writer)));
  if (options.check_on_open) {
    if (absl::Status s = store->CheckIntegrity(); !s.ok()) return WithContext(s, kContext);
  }
  if (absl::Status s = Migrate(*store->writer_); !s.ok()) return WithContext(s, kContext);
  return store;
}

absl::Status SqliteStore::Write(const std::function<absl::Status(Database&)>& fn) {
  std::lock_guard<std::mutex> lock(writer_mu_);
  return writer_->WriteTransaction([&] { return fn(*writer_); });
}

absl::Status SqliteStore::Read(const std::function<absl::Status(Database&)>& fn) {
  if (in_memory_) {
    // Every connection to ":memory:" is a database of its own: read through the writer.
    std::lock_guard<std::mutex> lock(writer_mu_);
    return writer_->ReadTransaction([&] { return fn(*writer_); });
  }
  absl::StatusOr<std::unique_ptr<Database>> reader = AcquireReader();
  if (!reader.ok()) return reader.status();
  absl::Status status = (*reader)->ReadTransaction([&] { return fn(**reader); });
  ReleaseReader(*std::move(reader));
  return status;
}

absl::StatusOr<std::unique_ptr<Database>> SqliteStore::AcquireReader() {
  {
    std::lock_guard<std::mutex> lock(readers_mu_);
    if (!idle_readers_.empty()) {
      std::unique_ptr<Database> reader = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return reader;
    }
  }
  return Database::Open(path_, options_.busy_timeout_ms, /*query_only=*/true);
}

void SqliteStore::ReleaseReader(std::unique_ptr<Database> reader) {
  std::lock_guard<std::mutex> lock(readers_mu_);
  if (idle_readers_.size() < static_cast<size_t>(options_.max_idle_readers)) {
    idle_readers_.push_back(std::move(reader));
  }
}

absl::StatusOr<int> SqliteStore::SchemaVersion() {
  int version = 0;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare("PRAGMA user_version");
    if (!stmt.ok()) return stmt.status();
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return row.status();
    version = *row ? static_cast<int>(stmt->ColumnInt(0)) : 0;
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return version;
}

absl::Status SqliteStore::CheckIntegrity() {
  std::vector<std::string> problems;
  absl::Status status = Read([&](Database& db) -> absl::Status {
    absl::StatusOr<Statement> stmt = db.Prepare("PRAGMA quick_check(10)");
    if (!stmt.ok()) return stmt.status();
    while (true) {
      absl::StatusOr<bool> row = stmt->Step();
      if (!row.ok()) return row.status();
      if (!*row) return absl::OkStatus();
      problems.push_back(stmt->ColumnText(0));
    }
  });
  if (!status.ok()) return status;
  if (problems.size() == 1 && problems[0] == "ok") return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat(path_, ": integrity check failed: ", absl::StrJoin(problems, "; "),
                   "; restore the file from a backup or move it away"));
}

}  // namespace mltune::storage
