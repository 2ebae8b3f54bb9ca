#include "storage/sqlite.h"

#include <sqlite3.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace mltune::storage {
namespace {

// The SQL of a statement, shortened for messages.
std::string SqlForMessage(sqlite3_stmt* stmt) {
  const char* sql = sqlite3_sql(stmt);
  std::string text = sql != nullptr ? sql : "";
  constexpr size_t kMax = 80;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

}  // namespace

absl::StatusCode StatusCodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_OK:
    case SQLITE_ROW:
    case SQLITE_DONE:
      return absl::StatusCode::kOk;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::StatusCode::kUnavailable;  // another writer held the lock past the timeout
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kDataLoss;
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
        return absl::StatusCode::kAlreadyExists;
      }
      return absl::StatusCode::kInvalidArgument;
    case SQLITE_MISMATCH:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return absl::StatusCode::kInvalidArgument;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::StatusCode::kResourceExhausted;
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return absl::StatusCode::kPermissionDenied;
    case SQLITE_CANTOPEN:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_INTERRUPT:
      return absl::StatusCode::kCancelled;
    default:
      return absl::StatusCode::kInternal;
  }
}

// --- Statement

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      bind_rc_(other.bind_rc_),
      bind_index_(other.bind_index_) {}

Statement::~Statement() {
  if (stmt_ == nullptr) return;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void Statement::NoteBind(int rc, int index) {
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) {
    bind_rc_ = rc;
    bind_index_ = index;
  }
}

Statement& Statement::BindInt(int index, int64_t value) {
  NoteBind(sqlite3_bind_int64(stmt_, index, value), index);
  return *this;
}

Statement& Statement::BindDouble(int index, double value) {
  NoteBind(sqlite3_bind_double(stmt_, index, value), index);
  return *this;
}

Statement& Statement::BindOptionalDouble(int index, std::optional<double> value) {
  return value.has_value() ? BindDouble(index, *value) : BindNull(index);
}

Statement& Statement::BindText(int index, std::string_view value) {
  NoteBind(sqlite3_bind_text64(stmt_, index, value.empty() ? "" : value.data(), value.size(),
                               SQLITE_TRANSIENT, SQLITE_UTF8),
           index);
  return *this;
}

Statement& Statement::BindBlob(int index, std::string_view value) {
  // sqlite3_bind_blob with a null pointer binds NULL; zeroblob(0) is an empty blob.
  NoteBind(value.empty()
               ? sqlite3_bind_zeroblob(stmt_, index, 0)
               : sqlite3_bind_blob64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT),
           index);
  return *this;
}

Statement& Statement::BindNull(int index) {
  NoteBind(sqlite3_bind_null(stmt_, index), index);
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  if (bind_rc_ != SQLITE_OK) {
    return absl::Status(StatusCodeFor(bind_rc_),
                        absl::StrCat(db_->path(), ": binding parameter ", bind_index_, " of `",
                                     SqlForMessage(stmt_), "`: ", sqlite3_errstr(bind_rc_)));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  absl::Status status = db_->Error(rc, absl::StrCat("`", SqlForMessage(stmt_), "`"));
  Reset();
  return status;
}

absl::Status Statement::Run() {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
  }
  Reset();
  return absl::OkStatus();
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  bind_rc_ = SQLITE_OK;
  bind_index_ = 0;
}

int64_t Statement::ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }

double Statement::ColumnDouble(int column) const { return sqlite3_column_double(stmt_, column); }

std::optional<double> Statement::ColumnOptionalDouble(int column) const {
  if (ColumnIsNull(column)) return std::nullopt;
  return ColumnDouble(column);
}

std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(size));
}

std::string Statement::ColumnBlob(int column) const {
  // Order matters: sqlite3_column_bytes after sqlite3_column_blob.
  const void* data = sqlite3_column_blob(stmt_, column);
  int size = sqlite3_column_bytes(stmt_, column);
  if (data == nullptr) return "";
  return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
}

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

// --- Database

absl::StatusOr<std::unique_ptr<Database>> Database::Open(const std::string& path,
                                                         int busy_timeout_ms, bool query_only) {
  sqlite3* raw = nullptr;
  // NOMUTEX (multi-thread mode): the Store guarantees one thread per connection at a time.
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  std::unique_ptr<Database> db(new Database(raw, path));
  if (raw == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(path, ": cannot open: out of memory"));
  }
  if (rc != SQLITE_OK) return db->Error(rc, "cannot open");
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, busy_timeout_ms);
  if (query_only) {
    if (absl::Status s = db->Exec("PRAGMA query_only = ON"); !s.ok()) return s;
  }
  return db;
}

Database::~Database() {
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  // close_v2: never fails with SQLITE_BUSY; the last connection to a WAL file checkpoints it.
  sqlite3_close_v2(db_);
}

absl::Status Database::Error(int rc, std::string_view what) const {
  const char* message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  std::string detail = message != nullptr ? message : "";
  std::string name = sqlite3_errstr(rc);
  if (detail != name) detail = absl::StrCat(detail, " (", name, ")");
  if ((rc & 0xff) == SQLITE_NOTADB) {
    detail = absl::StrCat(detail, " (not an SQLite database, or its header is corrupt)");
  } else if ((rc & 0xff) == SQLITE_CORRUPT) {
    detail =
        absl::StrCat(detail, " (the file is corrupt: restore it from a backup or move it away)");
  }
  return absl::Status(StatusCodeFor(rc),
                      absl::StrCat(path_, ": ", std::string(what), ": ", detail));
}

absl::Status Database::Exec(const std::string& sql) {
  char* message = nullptr;
  int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
  sqlite3_free(message);  // Error() reads the same text from sqlite3_errmsg
  if (rc != SQLITE_OK) return Error(rc, absl::StrCat("`", sql.substr(0, 80), "`"));
  return absl::OkStatus();
}

absl::StatusOr<std::string> Database::QueryText(const std::string& sql) {
  absl::StatusOr<Statement> stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::string();
  return stmt->ColumnText(0);
}

absl::StatusOr<Statement> Database::Prepare(const std::string& sql) {
  auto it = statements_.find(sql);
  if (it == statements_.end()) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size() + 1),
                                SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) {
      return Error(rc, absl::StrCat("preparing `", sql.substr(0, 80), "`"));
    }
    it = statements_.emplace(sql, stmt).first;
  }
  return Statement(this, it->second);
}

absl::Status Database::RunTransaction(const char* begin, const std::function<absl::Status()>& fn) {
  if (absl::Status s = Exec(begin); !s.ok()) return s;
  absl::Status status = fn();
  if (status.ok()) status = Exec("COMMIT");
  if (!status.ok() && sqlite3_get_autocommit(db_) == 0) {
    // SQLite may already have rolled back (after SQLITE_FULL, IOERR, ...): only roll back an
    // open transaction. A failed ROLLBACK leaves nothing better to report than `status`.
    Exec("ROLLBACK").IgnoreError();
  }
  return status;
}

absl::Status Database::WriteTransaction(const std::function<absl::Status()>& fn) {
  // IMMEDIATE takes the write lock up front (waiting up to the busy timeout), so a read followed
  // by a write inside fn cannot fail with SQLITE_BUSY when another connection wrote in between.
  return RunTransaction("BEGIN IMMEDIATE", fn);
}

absl::Status Database::ReadTransaction(const std::function<absl::Status()>& fn) {
  return RunTransaction("BEGIN", fn);
}

int64_t Database::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

int64_t Database::Changes() const { return sqlite3_changes64(db_); }

}  // namespace mltune::storage
