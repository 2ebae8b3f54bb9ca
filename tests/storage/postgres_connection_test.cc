// storage/postgres.h against a throwaway PostgreSQL server (tests/support/postgres_server.h):
// parameters of every kind and their round trip (NULL, text, integers, binary bytes), SQLSTATEs
// mapped to statuses, a transaction rolled back by its function's error, one that lost a
// serialization conflict run again, and a clear error for a server that is not there.
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "storage/postgres.h"
#include "tests/support/postgres_server.h"

namespace mltune::storage {
namespace {

class PgConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::PostgresServer>> server =
        testing::PostgresServer::Start();
    if (absl::IsUnavailable(server.status())) GTEST_SKIP() << server.status().message();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    absl::StatusOr<std::unique_ptr<PgConnection>> conn = PgConnection::Connect(server_->url());
    ASSERT_TRUE(conn.ok()) << conn.status();
    conn_ = *std::move(conn);
    ASSERT_TRUE(conn_
                    ->Exec("CREATE TABLE kv (k text PRIMARY KEY, n bigint, b bytea, d double "
                           "precision CHECK (d >= 0))")
                    .ok());
  }
  std::unique_ptr<testing::PostgresServer> server_;
  std::unique_ptr<PgConnection> conn_;
};

TEST_F(PgConnectionTest, ParametersRoundTrip) {
  const std::string bytes("\0\x01\xff binary\n", 11);
  absl::StatusOr<PgResult> inserted = conn_->Query(
      "INSERT INTO kv VALUES ($1, $2, $3, $4)",
      {PgParam::Text("key"), PgParam::Int(-42), PgParam::Bytes(bytes), PgParam::Text("2.5")});
  ASSERT_TRUE(inserted.ok()) << inserted.status();
  EXPECT_EQ(inserted->affected(), 1);
  absl::StatusOr<PgResult> row =
      conn_->Query("SELECT k, n, b, d, NULL FROM kv WHERE k = $1", {PgParam::Text("key")});
  ASSERT_TRUE(row.ok()) << row.status();
  ASSERT_EQ(row->rows(), 1);
  EXPECT_EQ(row->Text(0, 0), "key");
  EXPECT_EQ(*row->Int(0, 1), -42);
  EXPECT_EQ(*row->Bytes(0, 2), bytes);
  EXPECT_DOUBLE_EQ(*row->Double(0, 3), 2.5);
  EXPECT_TRUE(row->IsNull(0, 4));
  EXPECT_FALSE(row->Int(0, 0).ok());  // "key" is not an integer
}

TEST_F(PgConnectionTest, SqlStatesBecomeStatuses) {
  ASSERT_TRUE(conn_->Query("INSERT INTO kv (k) VALUES ('a')").ok());
  absl::StatusOr<PgResult> twice = conn_->Query("INSERT INTO kv (k) VALUES ('a')");
  EXPECT_TRUE(absl::IsAlreadyExists(twice.status())) << twice.status();
  EXPECT_NE(twice.status().message().find("duplicate key"), std::string::npos);
  absl::StatusOr<PgResult> check = conn_->Query("INSERT INTO kv (k, d) VALUES ('b', -1)");
  EXPECT_TRUE(absl::IsFailedPrecondition(check.status())) << check.status();
  absl::StatusOr<PgResult> bad = conn_->Query("SELECT $1::bigint", {PgParam::Text("x")});
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_TRUE(absl::IsInternal(conn_->Exec("SELEC 1")));
  // The connection stays usable after errors.
  EXPECT_TRUE(conn_->Query("SELECT 1").ok());
}

TEST_F(PgConnectionTest, TransactionsRollBackOnErrorAndRetryConflicts) {
  absl::Status failed = conn_->Transaction([&] {
    EXPECT_TRUE(conn_->Query("INSERT INTO kv (k) VALUES ('t')").ok());
    return absl::InvalidArgumentError("changed my mind");
  });
  EXPECT_TRUE(absl::IsInvalidArgument(failed));
  EXPECT_EQ(conn_->Query("SELECT count(*) FROM kv")->Text(0, 0), "0");

  // A serializable transaction that loses to a concurrent one is run again and then commits.
  ASSERT_TRUE(conn_->Query("INSERT INTO kv (k, n) VALUES ('c', 0)").ok());
  absl::StatusOr<std::unique_ptr<PgConnection>> other = PgConnection::Connect(server_->url());
  ASSERT_TRUE(other.ok()) << other.status();
  int runs = 0;
  absl::Status s = conn_->Transaction([&] {
    ++runs;
    if (absl::Status t = conn_->Exec("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"); !t.ok()) {
      return t;
    }
    absl::StatusOr<PgResult> read = conn_->Query("SELECT n FROM kv WHERE k = 'c'");
    if (!read.ok()) return read.status();
    if (runs == 1) {  // another client commits a change to the row in between
      EXPECT_TRUE((*other)->Query("UPDATE kv SET n = n + 10 WHERE k = 'c'").ok());
    }
    absl::StatusOr<PgResult> write =
        conn_->Query("UPDATE kv SET n = $1 WHERE k = 'c'", {PgParam::Int(*read->Int(0, 0) + 1)});
    return write.status();
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(conn_->Query("SELECT n FROM kv WHERE k = 'c'")->Text(0, 0), "11");
}

TEST(PgConnectionConnectTest, AnAbsentServerIsUnavailableNamingWhere) {
  absl::StatusOr<std::unique_ptr<PgConnection>> conn =
      PgConnection::Connect("postgresql:///x?host=/nonexistent-mltune&port=1&connect_timeout=2");
  EXPECT_TRUE(absl::IsUnavailable(conn.status())) << conn.status();
  EXPECT_NE(conn.status().message().find("cannot connect to PostgreSQL at"), std::string::npos);
}

}  // namespace
}  // namespace mltune::storage
