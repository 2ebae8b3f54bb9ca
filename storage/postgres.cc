#include "storage/postgres.h"

#include <libpq-fe.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace mltune::storage {
namespace {

// libpq's messages end in a newline.
std::string Trimmed(const char* message) {
  std::string s = message != nullptr ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

absl::Status PgStatus(std::string_view sqlstate, std::string_view what, std::string_view message) {
  const std::string text = absl::StrCat(std::string(what), ": ", std::string(message));
  const std::string_view cls = sqlstate.substr(0, 2);
  if (sqlstate == "23505") return absl::AlreadyExistsError(text);
  if (cls == "23") return absl::FailedPreconditionError(text);
  if (cls == "22") return absl::InvalidArgumentError(text);
  if (sqlstate == "40001" || sqlstate == "40P01") return absl::AbortedError(text);
  // 55P03: lock_timeout expired, the counterpart of SQLite's busy timeout.
  if (cls == "08" || sqlstate.substr(0, 4) == "57P0" || sqlstate == "55P03") {
    return absl::UnavailableError(text);
  }
  return absl::InternalError(text);
}

PgResult::PgResult(pg_result* result) : result_(result) {}
PgResult::PgResult(PgResult&& other) noexcept : result_(other.result_) { other.result_ = nullptr; }
PgResult::~PgResult() {
  if (result_ != nullptr) PQclear(result_);
}

int PgResult::rows() const { return PQntuples(result_); }
int PgResult::columns() const { return PQnfields(result_); }
bool PgResult::IsNull(int row, int column) const { return PQgetisnull(result_, row, column) != 0; }
std::string PgResult::Text(int row, int column) const {
  return std::string(PQgetvalue(result_, row, column),
                     static_cast<size_t>(PQgetlength(result_, row, column)));
}

absl::StatusOr<int64_t> PgResult::Int(int row, int column) const {
  int64_t v = 0;
  if (!absl::SimpleAtoi(Text(row, column), &v)) {
    return absl::InternalError(absl::StrCat("column ", PQfname(result_, column), ": '",
                                            Text(row, column), "' is not an integer"));
  }
  return v;
}

absl::StatusOr<double> PgResult::Double(int row, int column) const {
  double v = 0;
  if (!absl::SimpleAtod(Text(row, column), &v)) {
    return absl::InternalError(absl::StrCat("column ", PQfname(result_, column), ": '",
                                            Text(row, column), "' is not a number"));
  }
  return v;
}

absl::StatusOr<std::string> PgResult::Bytes(int row, int column) const {
  size_t size = 0;
  unsigned char* bytes = PQunescapeBytea(
      reinterpret_cast<const unsigned char*>(PQgetvalue(result_, row, column)), &size);
  if (bytes == nullptr) {
    return absl::InternalError(
        absl::StrCat("column ", PQfname(result_, column), ": not bytea text"));
  }
  std::string out(reinterpret_cast<const char*>(bytes), size);
  PQfreemem(bytes);
  return out;
}

int64_t PgResult::affected() const { return std::atoll(PQcmdTuples(result_)); }

absl::StatusOr<std::unique_ptr<PgConnection>> PgConnection::Connect(const std::string& url) {
  pg_conn* conn = PQconnectdb(url.c_str());
  if (conn == nullptr) return absl::ResourceExhaustedError("libpq: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    absl::Status s = absl::UnavailableError(
        absl::StrCat("cannot connect to PostgreSQL at ", url, ": ", Trimmed(PQerrorMessage(conn))));
    PQfinish(conn);
    return s;
  }
  return std::unique_ptr<PgConnection>(new PgConnection(conn));
}

PgConnection::~PgConnection() { PQfinish(conn_); }

namespace {

// What an error names: the statement's start.
std::string What(const std::string& sql) {
  return sql.size() <= 60 ? sql : sql.substr(0, 57) + "...";
}

// OK for a result that completed, else the error from its SQLSTATE (a lost connection, which
// leaves no result, is Unavailable).
absl::Status Check(pg_conn* conn, const pg_result* result, const std::string& sql) {
  if (result == nullptr) {
    return absl::UnavailableError(absl::StrCat(What(sql), ": ", Trimmed(PQerrorMessage(conn))));
  }
  switch (PQresultStatus(result)) {
    case PGRES_COMMAND_OK:
    case PGRES_TUPLES_OK:
    case PGRES_EMPTY_QUERY:
      return absl::OkStatus();
    default:
      break;
  }
  const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
  return PgStatus(state != nullptr ? state : "", What(sql), Trimmed(PQresultErrorMessage(result)));
}

}  // namespace

absl::Status PgConnection::Exec(const std::string& sql) {
  PgResult r(PQexec(conn_, sql.c_str()));
  return Check(conn_, r.raw(), sql);
}

absl::StatusOr<PgResult> PgConnection::Query(const std::string& sql,
                                             const std::vector<PgParam>& params) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (const PgParam& p : params) {
    values.push_back(p.value.has_value() ? p.value->data() : nullptr);
    lengths.push_back(p.value.has_value() ? static_cast<int>(p.value->size()) : 0);
    formats.push_back(p.binary ? 1 : 0);
  }
  PgResult r(PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                          values.data(), lengths.data(), formats.data(), /*resultFormat=*/0));
  if (absl::Status s = Check(conn_, r.raw(), sql); !s.ok()) return s;
  return r;
}

absl::Status PgConnection::Transaction(const std::function<absl::Status()>& fn, int attempts) {
  absl::Status last;
  for (int i = 0; i < std::max(1, attempts); ++i) {
    if (absl::Status s = Exec("BEGIN"); !s.ok()) return s;
    last = fn();
    if (last.ok()) last = Exec("COMMIT");
    if (!last.ok()) Exec("ROLLBACK").IgnoreError();
    if (!absl::IsAborted(last)) return last;
  }
  return last;
}

}  // namespace mltune::storage
