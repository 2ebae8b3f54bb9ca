// PgStore's measurement log: batches appended with one INSERT ... unnest() per chunk, queried by
// measurements.cc's filters.
#include <algorithm>
#include <charconv>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "storage/internal.h"
#include "storage/pg_store.h"
#include "storage/postgres.h"
#include "storage/store.h"

namespace mltune::storage {
namespace {

// Rows per INSERT: a batch of any size is a few round trips, each statement a few MB at most.
constexpr size_t kRowsPerStatement = 5000;

// A PostgreSQL array literal, {"a","b\"c"}, of one text field of `records`: every element is
// quoted, so commas, braces, spaces and the word NULL stay data. A NUL byte (which PostgreSQL
// text cannot hold) ends the parameter early: the literal is malformed and the batch fails
// (InvalidArgument) rather than storing truncated text.
std::string TextArray(std::span<const MeasurementRecord> records,
                      std::string MeasurementRecord::*field) {
  std::string out = "{";
  for (size_t i = 0; i < records.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.push_back('"');
    for (char c : records[i].*field) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

// {1.5,2,...}: the shortest text that reads back as the same double (validation has ruled out
// NaN and infinities).
std::string DoubleArray(std::span<const MeasurementRecord> records) {
  std::string out = "{";
  char buf[32];
  for (size_t i = 0; i < records.size(); ++i) {
    if (i > 0) out.push_back(',');
    out.append(buf, std::to_chars(buf, buf + sizeof buf, records[i].value).ptr);
  }
  out.push_back('}');
  return out;
}

std::string TimeArray(std::span<const MeasurementRecord> records, int64_t now) {
  std::string out = "{";
  for (size_t i = 0; i < records.size(); ++i) {
    if (i > 0) out.push_back(',');
    absl::StrAppend(&out, records[i].time_ms != 0 ? records[i].time_ms : now);
  }
  out.push_back('}');
  return out;
}

// " WHERE ..." for the set fields of `filter`, appending their parameters to `params`, or "".
std::string WhereClause(const MeasurementFilter& filter, std::vector<PgParam>& params) {
  std::vector<std::string> conditions;
  auto add = [&](const char* column, const char* op, PgParam param) {
    params.push_back(std::move(param));
    conditions.push_back(absl::StrCat(column, " ", op, " $", params.size()));
  };
  if (filter.graph_key) add("graph_key", "=", PgParam::Text(*filter.graph_key));
  if (filter.task) add("task", "=", PgParam::Text(*filter.task));
  if (filter.target) add("target", "=", PgParam::Text(*filter.target));
  if (filter.worker) add("worker", "=", PgParam::Text(*filter.worker));
  if (filter.after_ms) add("time_ms", ">", PgParam::Int(*filter.after_ms));
  if (conditions.empty()) return "";
  return absl::StrCat(" WHERE ", absl::StrJoin(conditions, " AND "));
}

}  // namespace

absl::Status PgStore::AppendMeasurements(std::span<const MeasurementRecord> records) {
  // Validate everything before writing: a bad record writes nothing.
  for (size_t i = 0; i < records.size(); ++i) {
    if (absl::Status s = ValidateMeasurement(records[i], i); !s.ok()) return s;
  }
  if (records.empty()) return absl::OkStatus();
  return Transaction([&](PgConnection& conn) -> absl::Status {
    const int64_t now = NowMs();
    for (size_t start = 0; start < records.size(); start += kRowsPerStatement) {
      std::span<const MeasurementRecord> chunk =
          records.subspan(start, std::min(kRowsPerStatement, records.size() - start));
      // WITH ORDINALITY ... ORDER BY: ids follow the batch's order, so queries (ORDER BY id)
      // return rows in insertion order as SQLite does.
      absl::Status s =
          conn.Query(
                  "INSERT INTO measurements (graph_key, task, target, configuration, value, "
                  "worker, time_ms) SELECT g, t, tg, c, v, w, tm FROM unnest($1::text[], "
                  "$2::text[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::int8[]) "
                  "WITH ORDINALITY AS u(g, t, tg, c, v, w, tm, n) ORDER BY n",
                  {PgParam::Text(TextArray(chunk, &MeasurementRecord::graph_key)),
                   PgParam::Text(TextArray(chunk, &MeasurementRecord::task)),
                   PgParam::Text(TextArray(chunk, &MeasurementRecord::target)),
                   PgParam::Text(TextArray(chunk, &MeasurementRecord::configuration)),
                   PgParam::Text(DoubleArray(chunk)),
                   PgParam::Text(TextArray(chunk, &MeasurementRecord::worker)),
                   PgParam::Text(TimeArray(chunk, now))})
              .status();
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<MeasurementRecord>> PgStore::QueryMeasurements(
    const MeasurementFilter& filter) {
  if (filter.limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("QueryMeasurements: limit is ", filter.limit, " (< 0)"));
  }
  std::vector<PgParam> params;
  std::string sql = absl::StrCat(
      "SELECT id, graph_key, task, target, configuration, value, worker, time_ms "
      "FROM measurements",
      WhereClause(filter, params), " ORDER BY id");
  if (filter.limit > 0) {
    params.push_back(PgParam::Int(filter.limit));
    absl::StrAppend(&sql, " LIMIT $", params.size());
  }
  std::vector<MeasurementRecord> out;
  absl::Status status = WithConnection([&](PgConnection& conn) -> absl::Status {
    absl::StatusOr<PgResult> rows = conn.Query(sql, params);
    if (!rows.ok()) return rows.status();
    out.reserve(rows->rows());
    for (int i = 0; i < rows->rows(); ++i) {
      absl::StatusOr<int64_t> id = rows->Int(i, 0);
      absl::StatusOr<double> value = rows->Double(i, 5);
      absl::StatusOr<int64_t> time_ms = rows->Int(i, 7);
      for (const absl::Status& s : {id.status(), value.status(), time_ms.status()}) {
        if (!s.ok()) return s;
      }
      MeasurementRecord& m = out.emplace_back();
      m.id = *id;
      m.graph_key = rows->Text(i, 1);
      m.task = rows->Text(i, 2);
      m.target = rows->Text(i, 3);
      m.configuration = rows->Text(i, 4);
      m.value = *value;
      m.worker = rows->Text(i, 6);
      m.time_ms = *time_ms;
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

absl::StatusOr<int64_t> PgStore::CountMeasurements(const MeasurementFilter& filter) {
  std::vector<PgParam> params;
  const std::string sql =
      absl::StrCat("SELECT count(*) FROM measurements", WhereClause(filter, params));
  return QueryCount(sql, params);
}

}  // namespace mltune::storage
