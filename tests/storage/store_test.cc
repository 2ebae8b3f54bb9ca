// Store: opening (WAL, migrations, refusal of newer schemas, garbage and corrupt files), the
// results cache and its budget rule, the measurement log and model checkpoints.
#include "storage/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tests/storage/store_records.h"

namespace mltune::storage {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test temp dir, removed afterwards.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("mltune_storage_") + info->name() + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string StorePath() const { return (dir_ / "store.db").string(); }

  std::unique_ptr<Store> MustOpen(const std::string& path) {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  fs::path dir_;
};

// One text value from a query on a connection of the test's own (not the Store's).
std::string RawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string out = "<error>";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, 0);
      out = text != nullptr ? reinterpret_cast<const char*>(text) : "";
    } else if (rc == SQLITE_DONE) {
      out = "";
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// --- Opening and migrations.

TEST_F(StoreTest, MustExistRefusesAMissingStoreAndCreatesNothing) {
  const std::string path = (dir_ / "missing" / "store.db").string();
  StoreOptions options;
  options.must_exist = true;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path, options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(store.status().message().find("no such store file"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "missing"));
  // Once it exists, it opens.
  ASSERT_NE(MustOpen(path), nullptr);
  EXPECT_TRUE(Store::Open(path, options).ok());
}

TEST_F(StoreTest, OpenCreatesFoldersAndAWalDatabaseAtTheCurrentSchema) {
  const std::string path = (dir_ / "a" / "b" / "store.db").string();
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(store->path(), fs::absolute(path).string());
  EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), std::to_string(Store::kSchemaVersion));
  absl::StatusOr<int> version = store->SchemaVersion();
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, Store::kSchemaVersion);
  EXPECT_TRUE(store->CheckIntegrity().ok());
  // Every table is STRICT.
  EXPECT_EQ(RawQuery(path,
                     "SELECT count(*) FROM pragma_table_list WHERE schema = 'main' AND "
                     "name NOT LIKE 'sqlite_%' AND strict = 0"),
            "0");
  EXPECT_EQ(RawQuery(path,
                     "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema "
                     "WHERE type = 'table' ORDER BY name)"),
            "graph_pieces,graphs,jobs,kernel_graphs,measurements,model_trainings,models,results,"
            "results_artifacts");
}

TEST_F(StoreTest, ReopeningIsANoOpAndKeepsTheData) {
  {
    std::unique_ptr<Store> store = MustOpen(StorePath());
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutResult(Result(5, 10)).ok());
  }
  const std::string schema = RawQuery(StorePath(), "SELECT group_concat(sql) FROM sqlite_schema");
  for (int i = 0; i < 2; ++i) {
    std::unique_ptr<Store> store = MustOpen(StorePath());
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(MustLookup(*store, Key()).tuned_score, 5);
  }
  EXPECT_EQ(RawQuery(StorePath(), "PRAGMA user_version"), std::to_string(Store::kSchemaVersion));
  EXPECT_EQ(RawQuery(StorePath(), "SELECT group_concat(sql) FROM sqlite_schema"), schema);
}

TEST_F(StoreTest, RefusesAStoreWithANewerSchema) {
  fs::create_directories(dir_);
  RawExec(StorePath(), "CREATE TABLE future (x INTEGER); PRAGMA user_version = 99;");
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(StorePath());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(store.status().message());
  EXPECT_NE(message.find("schema version 99"), std::string::npos) << message;
  EXPECT_NE(message.find("newer than this mltune"), std::string::npos) << message;
  EXPECT_NE(message.find(StorePath()), std::string::npos) << message;
  // Untouched.
  EXPECT_EQ(RawQuery(StorePath(), "PRAGMA user_version"), "99");
  EXPECT_EQ(RawQuery(StorePath(), "SELECT count(*) FROM sqlite_schema"), "1");
}

TEST_F(StoreTest, AVersion1StoreMigratesKeepingItsResults) {
  // A results row as schema version 1 wrote it (no original_score column).
  fs::create_directories(dir_);
  RawExec(StorePath(),
          "CREATE TABLE results (id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, task TEXT NOT "
          "NULL, target TEXT NOT NULL, search_version TEXT NOT NULL, baseline_score REAL NOT NULL, "
          "tuned_score REAL NOT NULL, budget_steps INTEGER NOT NULL, strategy TEXT NOT NULL, "
          "worker TEXT NOT NULL, mltune_version TEXT NOT NULL, created_ms INTEGER NOT NULL, "
          "updated_ms INTEGER NOT NULL, hit_count INTEGER NOT NULL DEFAULT 0, UNIQUE "
          "(fingerprint, task, target, search_version)) STRICT;"
          "CREATE TABLE results_artifacts (result_id INTEGER NOT NULL, name TEXT NOT NULL, data "
          "BLOB NOT NULL, PRIMARY KEY (result_id, name)) STRICT;"
          "CREATE TABLE measurements (id INTEGER PRIMARY KEY, graph_key TEXT NOT NULL, task TEXT "
          "NOT NULL, target TEXT NOT NULL, configuration TEXT NOT NULL, value REAL NOT NULL, "
          "worker TEXT NOT NULL, time_ms INTEGER NOT NULL) STRICT;"
          "CREATE TABLE jobs (id TEXT PRIMARY KEY, state TEXT NOT NULL, fingerprint TEXT NOT NULL, "
          "task TEXT NOT NULL, target TEXT NOT NULL, search_version TEXT NOT NULL, budget_steps "
          "INTEGER NOT NULL, strategy TEXT NOT NULL, request BLOB NOT NULL, progress REAL NOT NULL "
          "DEFAULT 0, best_score REAL, error TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL "
          "DEFAULT 0, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, started_ms INTEGER "
          "NOT NULL DEFAULT 0, finished_ms INTEGER NOT NULL DEFAULT 0) STRICT;"
          "CREATE TABLE models (name TEXT NOT NULL, version INTEGER NOT NULL, data BLOB NOT NULL, "
          "metadata_json TEXT NOT NULL, created_ms INTEGER NOT NULL, PRIMARY KEY (name, version)) "
          "STRICT;"
          "INSERT INTO results VALUES (1, 'fp1', 'pass-order', 'cpu', '1', 100, 7, 50, 'beam', "
          "'w1', '0.1.0', 1, 1, 3);"
          "PRAGMA user_version = 1;");
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RawQuery(StorePath(), "PRAGMA user_version"), std::to_string(Store::kSchemaVersion));
  ResultRecord old = MustLookup(*store, Key());
  EXPECT_EQ(old.tuned_score, 7);
  EXPECT_EQ(old.hit_count, 3);
  EXPECT_FALSE(old.original_score.has_value());
  // A better result written now keeps its original score.
  ResultRecord better = Result(5, 60);
  better.original_score = 140;
  ASSERT_TRUE(store->PutResult(better).ok());
  EXPECT_EQ(MustLookup(*store, Key()).original_score, std::optional<double>(140));
  // Later migrations ran too: the kernel graph table is there and empty.
  EXPECT_EQ(store->CountKernelGraphs().value(), 0);
}

TEST_F(StoreTest, AGarbageFileIsAClearErrorAndStaysUntouched) {
  fs::create_directories(dir_);
  std::string garbage(64 * 1024, '\0');
  std::mt19937 rng(42);
  for (char& c : garbage) c = static_cast<char>(rng());
  std::ofstream(StorePath(), std::ios::binary) << garbage;

  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(StorePath());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  const std::string message(store.status().message());
  EXPECT_NE(message.find(StorePath()), std::string::npos) << message;
  EXPECT_NE(message.find("not a database"), std::string::npos) << message;
  EXPECT_EQ(ReadBytes(StorePath()), garbage);
}

TEST_F(StoreTest, ACorruptPageIsReportedOnOpen) {
  {
    std::unique_ptr<Store> store = MustOpen(StorePath());
    ASSERT_NE(store, nullptr);
    std::vector<MeasurementRecord> batch(5000);
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i] = {0,
                  "graph" + std::to_string(i % 7),
                  "pass-order",
                  "cpu",
                  std::string(40, 'x') + std::to_string(i),
                  1.0 * i,
                  "w",
                  1};
    }
    ASSERT_TRUE(store->AppendMeasurements(batch).ok());
  }  // the last connection checkpoints the WAL into the file
  ASSERT_FALSE(fs::exists(StorePath() + "-wal"));
  const uintmax_t size = fs::file_size(StorePath());
  ASSERT_GT(size, 40u * 4096);
  {
    // Scribble over pages 10..19 (table and index b-tree pages).
    std::fstream f(StorePath(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(9 * 4096);
    const std::string junk(10 * 4096, '\xa5');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(StorePath());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_NE(store.status().message().find(StorePath()), std::string::npos) << store.status();
}

TEST_F(StoreTest, ADirectoryOrAnEmptyPathIsRefused) {
  fs::create_directories(dir_);
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(store.status().message().find("is a directory"), std::string::npos);
  EXPECT_EQ(Store::Open("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, InMemoryStoreWorks) {
  std::unique_ptr<Store> store = MustOpen(":memory:");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutResult(Result(3, 7)).ok());
  EXPECT_EQ(MustLookup(*store, Key()).tuned_score, 3);
  EXPECT_EQ(*store->SchemaVersion(), Store::kSchemaVersion);
  EXPECT_TRUE(store->CheckIntegrity().ok());
}

// --- Results cache.

TEST(CacheKeyTest, ToStringJoinsTheFourFields) {
  EXPECT_EQ(Key("abc", "pass-order", "cpu", "2").ToString(), "abc/pass-order/cpu/2");
}

TEST(DecideTest, SameOrSmallerBudgetHitsLargerContinuesNothingMisses) {
  EXPECT_EQ(Decide(std::nullopt, 100), CacheDecision::kMiss);
  ResultRecord cached = Result(1, 100);
  EXPECT_EQ(Decide(cached, 0), CacheDecision::kHit);
  EXPECT_EQ(Decide(cached, 50), CacheDecision::kHit);
  EXPECT_EQ(Decide(cached, 100), CacheDecision::kHit);
  EXPECT_EQ(Decide(cached, -5), CacheDecision::kHit);
  EXPECT_EQ(Decide(cached, 101), CacheDecision::kContinueFromBest);
  cached.budget_steps = 0;
  EXPECT_EQ(Decide(cached, 0), CacheDecision::kHit);
  EXPECT_EQ(Decide(cached, 1), CacheDecision::kContinueFromBest);
  EXPECT_EQ(CacheDecisionName(CacheDecision::kContinueFromBest), "continue-from-best");
}

// --- Kernel graphs.

KernelGraphRecord Graph(const std::string& key, const std::string& bytes) {
  KernelGraphRecord r;
  r.kernel_key = key;
  r.graph = bytes;
  r.target = "cpu";
  r.module = "softmax";
  r.module_fingerprint = "fp1";
  r.kernel = "fusion.1";
  return r;
}

TEST_F(StoreTest, BadKernelGraphsAreRejected) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->PutKernelGraph(Graph("", "x")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutKernelGraph(Graph("k", "")).status().code(),
            absl::StatusCode::kInvalidArgument);
  KernelGraphRecord no_target = Graph("k", "x");
  no_target.target = "";
  EXPECT_EQ(store->PutKernelGraph(no_target).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->GetKernelGraph("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->CountKernelGraphs().value(), 0);
}

}  // namespace
}  // namespace mltune::storage
