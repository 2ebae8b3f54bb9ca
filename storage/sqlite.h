// A thin RAII layer over the SQLite C API, internal to storage/: a connection that caches its
// prepared statements, a borrowed statement handle that resets itself, transactions, and the
// mapping of SQLite result codes to absl::Status. sqlite3.h is included only by sqlite.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct sqlite3;
struct sqlite3_stmt;

namespace mltune::storage {

class Database;

// A prepared statement borrowed from its connection's cache. Destruction resets it and clears
// its bindings (ending any read it started) but keeps it prepared for the next use. Bind errors
// are remembered and reported by the next Step. Columns and parameters are 0- and 1-based, as in
// SQLite.
class Statement {
 public:
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  ~Statement();

  Statement& BindInt(int index, int64_t value);
  Statement& BindDouble(int index, double value);
  Statement& BindOptionalDouble(int index, std::optional<double> value);
  Statement& BindText(int index, std::string_view value);
  Statement& BindBlob(int index, std::string_view value);  // "" binds an empty blob, not NULL
  Statement& BindNull(int index);

  // true: a row is available; false: done.
  absl::StatusOr<bool> Step();
  // Steps to completion, ignoring rows (INSERT/UPDATE/DELETE), then resets the statement so it
  // can be bound and run again (bindings are kept).
  absl::Status Run();
  // Rewinds the statement (ending any read it started); bindings are kept.
  void Reset();

  int64_t ColumnInt(int column) const;
  double ColumnDouble(int column) const;
  std::optional<double> ColumnOptionalDouble(int column) const;
  std::string ColumnText(int column) const;
  std::string ColumnBlob(int column) const;
  bool ColumnIsNull(int column) const;

 private:
  friend class Database;
  Statement(Database* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  void NoteBind(int rc, int index);

  Database* db_;
  sqlite3_stmt* stmt_;
  int bind_rc_ = 0;  // SQLITE_OK
  int bind_index_ = 0;
};

class Database {
 public:
  // Opens (creating when missing, unless read_only) `path` in multi-thread mode with extended
  // result codes and the busy timeout. `query_only` makes the connection refuse writes.
  static absl::StatusOr<std::unique_ptr<Database>> Open(const std::string& path,
                                                        int busy_timeout_ms, bool query_only);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs SQL without results (may hold several statements; not cached).
  absl::Status Exec(const std::string& sql);
  // A single-row, single-column query as text, e.g. a PRAGMA ("" when it returns no row).
  absl::StatusOr<std::string> QueryText(const std::string& sql);
  // The cached prepared statement for `sql` (prepared on first use). Only one Statement per SQL
  // text may be alive at a time.
  absl::StatusOr<Statement> Prepare(const std::string& sql);

  // BEGIN IMMEDIATE ... COMMIT around fn (ROLLBACK when fn or COMMIT fails).
  absl::Status WriteTransaction(const std::function<absl::Status()>& fn);
  // BEGIN ... COMMIT around fn: every read in fn sees one snapshot.
  absl::Status ReadTransaction(const std::function<absl::Status()>& fn);

  int64_t LastInsertRowId() const;
  int64_t Changes() const;
  const std::string& path() const { return path_; }

  // "path: what: <sqlite message> (<code name>)" with a status code chosen from `rc`.
  absl::Status Error(int rc, std::string_view what) const;

 private:
  Database(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  absl::Status RunTransaction(const char* begin, const std::function<absl::Status()>& fn);

  sqlite3* db_;
  std::string path_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

// The absl status code for an SQLite (extended) result code.
absl::StatusCode StatusCodeFor(int rc);

}  // namespace mltune::storage
