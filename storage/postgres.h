// A thin RAII layer over libpq, internal to storage/ (the PostgreSQL store's foundation): a
// connection, parameterized queries (text or binary parameters, text results, bytea decoded),
// transactions, and SQLSTATE codes mapped to absl::Status. libpq-fe.h stays in postgres.cc.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"

struct pg_conn;
struct pg_result;

namespace mltune::storage {

// One query parameter: text, binary (bytea), or NULL.
struct PgParam {
  std::optional<std::string> value;  // nullopt: NULL
  bool binary = false;
  static PgParam Text(std::string_view v) { return {std::string(v), false}; }
  static PgParam Int(int64_t v) { return {std::to_string(v), false}; }
  // %.17g: the text PostgreSQL parses back to the same double.
  static PgParam Double(double v) { return {absl::StrFormat("%.17g", v), false}; }
  static PgParam OptionalDouble(std::optional<double> v) {
    return v.has_value() ? Double(*v) : Null();
  }
  static PgParam Bytes(std::string_view v) { return {std::string(v), true}; }
  static PgParam Null() { return {std::nullopt, false}; }
};

// A query's rows, as text; owns the libpq result.
class PgResult {
 public:
  explicit PgResult(pg_result* result);
  PgResult(PgResult&& other) noexcept;
  PgResult& operator=(PgResult&&) = delete;
  ~PgResult();

  int rows() const;
  int columns() const;
  bool IsNull(int row, int column) const;
  std::string Text(int row, int column) const;
  absl::StatusOr<int64_t> Int(int row, int column) const;
  absl::StatusOr<double> Double(int row, int column) const;
  // A bytea column's bytes (its text form decoded).
  absl::StatusOr<std::string> Bytes(int row, int column) const;
  int64_t affected() const;  // rows an INSERT/UPDATE/DELETE touched
  const pg_result* raw() const { return result_; }

 private:
  pg_result* result_;
};

class PgConnection {
 public:
  // A libpq connection string or URI ("postgresql://user@host/db", "host=/tmp dbname=x");
  // Unavailable when the server cannot be reached, naming where and why.
  static absl::StatusOr<std::unique_ptr<PgConnection>> Connect(const std::string& url);
  ~PgConnection();
  PgConnection(const PgConnection&) = delete;
  PgConnection& operator=(const PgConnection&) = delete;

  // SQL without parameters or results; may hold several statements.
  absl::Status Exec(const std::string& sql);
  // One statement with $1, $2, ... bound to `params`.
  absl::StatusOr<PgResult> Query(const std::string& sql, const std::vector<PgParam>& params = {});
  // BEGIN, `fn`, then COMMIT, or ROLLBACK when `fn` or the commit fails. A transaction that
  // lost to a concurrent one (serialization failure, deadlock: Aborted) is run again, up to
  // `attempts` times in all.
  absl::Status Transaction(const std::function<absl::Status()>& fn, int attempts = 3);

 private:
  explicit PgConnection(pg_conn* conn) : conn_(conn) {}
  pg_conn* conn_;
};

// The absl::Status for a SQLSTATE: 23505 (unique violation) AlreadyExists, 23xxx other integrity
// errors FailedPrecondition, 22xxx InvalidArgument, 40001/40P01 Aborted, 08xxx, 57P0x and 55P03
// Unavailable, anything else Internal; `message` follows "what: ".
absl::Status PgStatus(std::string_view sqlstate, std::string_view what, std::string_view message);

}  // namespace mltune::storage
