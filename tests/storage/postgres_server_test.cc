// The throwaway PostgreSQL server the PostgreSQL store's tests run against
// (tests/support/postgres_server.h): it starts, answers a query through libpq, and takes a
// second connection; where it cannot start here the test skips, saying why.
#include "tests/support/postgres_server.h"

#include <libpq-fe.h>

#include <string>

#include "gtest/gtest.h"

namespace mltune::testing {
namespace {

// The first cell of `sql`'s answer on `conn`, or the error.
std::string Query(PGconn* conn, const char* sql) {
  PGresult* r = PQexec(conn, sql);
  std::string out = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0
                        ? std::string(PQgetvalue(r, 0, 0))
                        : std::string("error: ") + PQerrorMessage(conn);
  PQclear(r);
  return out;
}

TEST(PostgresServerTest, StartsAndAnswersThroughLibpq) {
  absl::StatusOr<std::unique_ptr<PostgresServer>> server = PostgresServer::Start();
  if (absl::IsUnavailable(server.status())) GTEST_SKIP() << server.status().message();
  ASSERT_TRUE(server.ok()) << server.status();
  PGconn* a = PQconnectdb((*server)->url().c_str());
  PGconn* b = PQconnectdb((*server)->url().c_str());
  ASSERT_EQ(PQstatus(a), CONNECTION_OK) << PQerrorMessage(a);
  ASSERT_EQ(PQstatus(b), CONNECTION_OK) << PQerrorMessage(b);
  EXPECT_EQ(Query(a, "SELECT 1 + 1"), "2");
  EXPECT_EQ(Query(a,
                  "CREATE TABLE t (k text PRIMARY KEY, v int); "
                  "INSERT INTO t VALUES ('x', 1) ON CONFLICT (k) DO UPDATE SET v = t.v + 1 "
                  "RETURNING v"),
            "1");
  EXPECT_EQ(Query(b,
                  "INSERT INTO t VALUES ('x', 1) ON CONFLICT (k) DO UPDATE SET v = t.v + 1 "
                  "RETURNING v"),
            "2");
  EXPECT_EQ(Query(b, "SHOW server_version_num").substr(0, 1).find_first_not_of("0123456789"),
            std::string::npos);
  PQfinish(a);
  PQfinish(b);
}

}  // namespace
}  // namespace mltune::testing
