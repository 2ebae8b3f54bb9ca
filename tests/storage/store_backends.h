// A test fixture that runs a Store test on both backends through Store::Open: a fresh SQLite file,
// or a fresh database on a throwaway PostgreSQL server shared by the suite (skipped, saying why,
// where none can start or the build has no libpq). Instantiate with kStoreBackends.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "storage/store.h"
#include "tests/support/postgres_server.h"
#ifdef MLTUNE_HAVE_POSTGRES
#include "storage/postgres.h"
#endif

namespace mltune::storage {

inline constexpr char kSqliteBackend[] = "sqlite";
inline constexpr char kPostgresBackend[] = "postgresql";
inline const auto kStoreBackends = ::testing::Values(kSqliteBackend, kPostgresBackend);

class StoreBackendsTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void TearDownTestSuite() {
    server_.reset();
    server_status_ = absl::OkStatus();
  }

  void SetUp() override {
    if (GetParam() == kSqliteBackend) {
      dir_ = std::filesystem::path(::testing::TempDir()) /
             ("mltune_backends_" + std::to_string(getpid()) + "_" + std::to_string(++counter_));
      std::filesystem::remove_all(dir_);
      url_ = (dir_ / "store.db").string();
      return;
    }
#ifndef MLTUNE_HAVE_POSTGRES
    GTEST_SKIP() << "this build has no libpq, so no PostgreSQL store";
#else
    if (server_ == nullptr && server_status_.ok()) {
      absl::StatusOr<std::unique_ptr<testing::PostgresServer>> server =
          testing::PostgresServer::Start();
      if (server.ok()) {
        server_ = *std::move(server);
      } else {
        server_status_ = server.status();
      }
    }
    if (absl::IsUnavailable(server_status_)) GTEST_SKIP() << server_status_.message();
    ASSERT_TRUE(server_status_.ok()) << server_status_;
    const std::string db = "t_" + std::to_string(++counter_);
    absl::StatusOr<std::unique_ptr<PgConnection>> admin = PgConnection::Connect(server_->url());
    ASSERT_TRUE(admin.ok()) << admin.status();
    ASSERT_TRUE((*admin)->Exec("CREATE DATABASE " + db).ok());
    url_ = DatabaseUrl(db);
#endif
  }

  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  bool postgres() const { return GetParam() == kPostgresBackend; }

  // server->url() is postgresql:///postgres?host=DIR&...: the same server, database `db`, with
  // `userinfo` ("user:password@") before the (empty) host when given.
  static std::string DatabaseUrl(const std::string& db, const std::string& userinfo = "") {
    const std::string& url = server_->url();
    return "postgresql://" + userinfo + "/" + db + url.substr(url.find('?'));
  }

  // Another Store on the test's store: another daemon's view of it.
  std::unique_ptr<Store> MustOpen() {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(url_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  static inline std::unique_ptr<testing::PostgresServer> server_;
  static inline absl::Status server_status_;
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  std::string url_;
};

}  // namespace mltune::storage
